"""The third look at the decisive design's primary question (``reports/PREREG_xlpos.md``, issue 76): Combination
trained on cross-fitted positions from the chosen source (``combination_xfit_sSEED``) against the design's baseline.

    python3 -m onmt_xl.experiments.xlpos_report --data runs/decisive_jaen_xlpos_src \\
        --design reports/decisive_jaen_xlpos_src --control reports/decisive_jaen --drift reports/decisive_jaen_xlpos \\
        --tuned reports/decisive_jaen_tuned --looks reports/DECISIVE_jaen.json,reports/DECISIVE_jaen_tuned.json \\
        --report reports/DECISIVE_jaen_xlpos.md

In the preregistered order:

1. **The drift check of the control**: Δ_drift = mean test BLEU of the baseline seeds retrained on the current code
   (``--drift``) − that of the same seeds in the control archive (``--control``). Beyond ``DRIFT_LIMIT`` the
   preregistration has baseline seeds 3–8 retrained and the primary use the current-code runs: the tool then
   refuses to read the archived control (``--control`` must name an archive holding the retrained seeds).
2. **The primary**: the evidence report of the assembled work directory ``--workdir`` (the design's data, the
   control's ``baseline_sK`` and the design's ``combination_xfit_sK`` as ``combination_sK``), through ``onmt-xl
   evidence --stage report`` with the design's statistic (seed-pooled paired bootstrap, ``--samples``,
   ``--bootstrap-seed``); its verdict by the preregistered rule (:func:`verdict`).
3. **Multiplicity**: the primary p of each look (``--looks``: the reports of the earlier looks, then this one), Holm
   over the looks; the verdicts stand side by side.
4. **Descriptive**: against the second look's Combination (``--tuned``, not paired by seed); τ of the training and
   test positions for each source (seen, cross-fitted, unseen; the archives' ``crossfit.json`` and
   ``preorderer.json``); the payoff curve (``--payoff``, the JSON of ``onmt-xl evidence --stage payoff``).
5. **The pipeline's default** (``reports/XLPOS.md``, not preregistered): the same comparison with ``--tuned`` on the
   validation split, which decides ``onmt-xl pipeline --training-positions``'s default (:func:`pipeline_default`).

The Markdown (``--report``) opens with these and goes on with the evidence report of step 2; its JSON sits beside it.
Nothing here is chosen on the test split: every figure is read once from finished runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments.stats import bleu_from_statistics, bleu_statistics, holm, seed_pooled_bootstrap
from onmt_xl.experiments.stock import read_lines

#: reports/PREREG_xlpos.md, stage 3: |Δ_drift| above this (about twice the baseline's seed sd) retrains seeds 3-8
DRIFT_LIMIT = 0.5
#: Ding et al. 2020 Tab. 2, ja→en: Combination's gain, the size the design resolves
PAPER_GAIN = 0.63
SEEDS = tuple(range(1, 9))
DRIFT_SEEDS = (1, 2)
#: files of a finished job that the evidence report reads (stored gzip-compressed in an archive)
JOB_FILES = ("done.json", "hyp.test", "hyp.valid", "hyp.oracle", "train.log", "curve.jsonl")
#: the payoff stage's last level (α = 1: the oracle's positions, onmt_xl.experiments.payoff): the oracle row where a
#: job has no ``hyp.oracle`` of its own
ORACLE_LEVEL = "hyp.payoff100"


def verdict(low: float, high: float, paper_gain: float = PAPER_GAIN) -> str:
    """The preregistered decision rule on the 95 % interval [``low``, ``high``] of Δ test BLEU."""
    if low > 0:
        return "helps"
    if high < 0:
        return "hurts"
    if high < paper_gain:
        return f"an effect of the paper's size (+{paper_gain:.2f} BLEU) is excluded at this data size"
    return "inconclusive"


def _read_hyp(job_dir: Path, split: str = "test") -> Optional[List[str]]:
    for path in (job_dir / f"hyp.{split}", job_dir / f"hyp.{split}.gz"):
        if path.exists():
            if path.suffix == ".gz":
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    return f.read().splitlines()
            return read_lines(path)
    return None


def seed_hyps(archive: Path, job: str, seeds: Sequence[int], split: str = "test") -> Dict[int, List[str]]:
    """Seed -> the ``split`` translation of each finished ``jobs/JOB_sSEED`` of ``archive`` (plain or ``.gz``)."""
    out = {}
    for seed in seeds:
        jd = archive / "jobs" / f"{job}_s{seed}"
        hyps = _read_hyp(jd, split) if (jd / "done.json").exists() or (jd / "done.json.gz").exists() else None
        if hyps is not None:
            out[seed] = hyps
    return out


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """sacrebleu's corpus BLEU of tokenized text, as the evidence report scores it."""
    return float(bleu_from_statistics(bleu_statistics(hyps, refs).sum(axis=0)))


def drift_check(control: Path, drift: Path, refs: Sequence[str], seeds: Sequence[int] = DRIFT_SEEDS,
                limit: float = DRIFT_LIMIT) -> Dict[str, Any]:
    """Δ_drift = mean test BLEU of ``drift``'s ``baseline_sK`` − that of ``control``'s, over ``seeds``."""
    now, then = seed_hyps(drift, "baseline", seeds), seed_hyps(control, "baseline", seeds)
    missing = [f"{side} baseline_s{s}" for side, runs in (("current-code", now), ("archived", then))
               for s in seeds if s not in runs]
    if missing:
        return {"status": "pending", "missing": missing}
    bleu_now = {s: corpus_bleu(now[s], refs) for s in seeds}
    bleu_then = {s: corpus_bleu(then[s], refs) for s in seeds}
    delta = statistics.mean(bleu_now.values()) - statistics.mean(bleu_then.values())
    return {"status": "done", "seeds": list(seeds), "current": bleu_now, "archived": bleu_then, "delta": delta,
            "limit": limit, "exceeded": abs(delta) > limit,
            "identical": [s for s in seeds if list(now[s]) == list(then[s])]}


def assemble(workdir: Path, data: Path, control: Path, design: Path, seeds: Sequence[int] = SEEDS,
             job: str = "combination_xfit", as_system: str = "combination") -> Dict[str, List[int]]:
    """Fill ``workdir`` for the evidence report: ``data/`` (and ``align/``) link to ``data``'s, ``jobs/baseline_sK``
    from ``control``, ``jobs/AS_SYSTEM_sK`` from ``design``'s ``JOB_sK`` (gzip files unpacked; the payoff stage's α = 1
    translation as ``hyp.oracle`` where there is none); the seeds found."""
    if not (data / "data" / "test.ref").exists():
        raise XLUsageError(str(data), None, "holds no staged data (data/test.ref): give the design's work directory")
    workdir.mkdir(parents=True, exist_ok=True)
    link = workdir / "data"
    if link.is_symlink() or link.exists():
        if link.resolve() != (data / "data").resolve():
            raise XLUsageError(str(workdir), None, f"its data/ is not {data / 'data'}: give an empty --workdir")
    else:
        link.symlink_to((data / "data").resolve(), target_is_directory=True)
    align = workdir / "align"  # the test pairs' eflomal links: the more and less reordered halves
    if (data / "align").is_dir() and not (align.is_symlink() or align.exists()):
        align.symlink_to((data / "align").resolve(), target_is_directory=True)
    found: Dict[str, List[int]] = {}
    for archive, name, target in ((control, "baseline", "baseline"), (design, job, as_system)):
        found[target] = []
        for seed in seeds:
            src, dst = archive / "jobs" / f"{name}_s{seed}", workdir / "jobs" / f"{target}_s{seed}"
            if not src.is_dir():
                continue
            if dst.exists():
                shutil.rmtree(dst)
            dst.mkdir(parents=True)
            for base, name_there in (*((b, b) for b in JOB_FILES), ("hyp.oracle", ORACLE_LEVEL)):
                plain, packed, out_file = src / name_there, src / f"{name_there}.gz", dst / base
                if out_file.exists():
                    continue  # hyp.oracle itself comes before the payoff stage's last level
                if plain.exists():
                    shutil.copyfile(plain, out_file)
                elif packed.exists():
                    with gzip.open(packed, "rb") as f_in, open(out_file, "wb") as f_out:
                        shutil.copyfileobj(f_in, f_out)
            if (dst / "done.json").exists():
                found[target].append(seed)
    return found


def pipeline_default(data: Path, design: Path, tuned: Path, job: str = "combination_xfit", samples: int = 10000,
                     seed: int = 12345) -> Dict[str, Any]:
    """The rule of ``reports/XLPOS.md`` for ``onmt-xl pipeline --training-positions``'s default: Δ valid BLEU of the
    design's 8 runs against the second look's 8 Combination runs (``tuned``), seed-pooled paired bootstrap; the
    default becomes ``crossfit`` when its 95 % lower bound is above 0. ``{"status": "pending", "missing": [...]}``
    until every run has its ``hyp.valid``."""
    xfit, base = seed_hyps(design, job, SEEDS, "valid"), seed_hyps(tuned, "combination", SEEDS, "valid")
    missing = [f"{name}_s{s}" for name, runs in ((job, xfit), ("combination", base)) for s in SEEDS if s not in runs]
    if missing:
        return {"status": "pending", "missing": missing}
    refs = read_lines(data / "data" / "valid.tgt")
    c = seed_pooled_bootstrap([xfit[s] for s in SEEDS], [base[s] for s in SEEDS], refs, samples, seed)
    return {"status": "done", "delta": c.delta, "low": c.low, "high": c.high, "p": c.p_value,
            "valid_pairs": len(refs), "default": "crossfit" if c.low > 0 else "preorderer"}


def looks_holm(looks: Sequence[Tuple[str, Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """Each look ``(name, its primary comparison {delta, low, high, p})`` with its Holm-corrected p over the looks
    and its verdict by the preregistered rule."""
    adjusted = holm({name: comp["p"] for name, comp in looks})
    return [{"look": name, **{k: comp[k] for k in ("delta", "low", "high", "p")}, "p_holm": adjusted[name],
             "verdict": verdict(comp["low"], comp["high"])} for name, comp in looks]


def tau_rows(sources: Sequence[Tuple[str, Path]]) -> List[Dict[str, Any]]:
    """τ of each source's positions: seen (the full preorderer on its own training sentences), cross-fitted (the
    same sentences), all cross-fitted training sentences, unseen tuning and test (``crossfit.json``,
    ``preorderer.json`` of each archive)."""
    rows = []
    for label, archive in sources:
        cf = _json(archive / "crossfit.json") or {}
        po = _json(archive / "preorderer.json") or {}
        sample = cf.get("sample", {})
        rows.append({"source": label, "options": po.get("options", cf.get("options")),
                     "seen": (sample.get("full_preorderer") or {}).get("tau"),
                     "crossfit_same": (sample.get("crossfit") or {}).get("tau"),
                     "crossfit_all": (cf.get("crossfit") or {}).get("tau"),
                     "tune": (po.get("tune") or {}).get("tau"), "test": po.get("tau")})
    return rows


def _json(path: Path) -> Optional[Dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _f(x: Optional[float], digits: int = 2, sign: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _interval(c: Dict[str, Any]) -> str:
    return f"{c['delta']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]"


def _identical_words(d: Dict[str, Any]) -> str:
    same = d.get("identical") or []
    if not same:
        return ""
    which = "both seeds'" if len(same) == len(d["seeds"]) == 2 else (
        "every seed's" if len(same) == len(d["seeds"]) else "seed " + ", ".join(map(str, same)) + "'s")
    return f" The retrained runs' test translations are the archived ones word for word ({which})."


def extras_markdown(result: Dict[str, Any]) -> List[str]:
    """The sections that open the report: drift, the primary and its verdict, the looks, the descriptive rows."""
    out = []
    d = result["drift"]
    out += ["## The drift check of the control", ""]
    if d["status"] != "done":
        out += [f"Pending: {', '.join(d['missing'])} not finished.", ""]
    else:
        runs = "; ".join(f"seed {s}: {d['current'][s]:.2f} now, {d['archived'][s]:.2f} archived" for s in d["seeds"])
        out += [f"Δ_drift = {d['delta']:+.2f} BLEU ({runs}); the preregistered limit is ±{d['limit']:.1f}: "
                + ("**exceeded**, so the primary uses the baseline retrained on the current code."
                   if d["exceeded"] else "within it, so the primary uses the 8 archived baseline runs.")
                + _identical_words(d), ""]
    p = result.get("primary")
    out += ["## The primary: Combination (cross-fitted positions, chosen source) against the baseline", ""]
    if p is None:
        out += ["Pending: not every run has finished.", ""]
    else:
        out += [f"Δ test BLEU **{_interval(p)}** (seed-pooled paired bootstrap, {p['system_runs']} against "
                f"{p['baseline_runs']} runs, 5,500 test pairs), p = {p['p']:.3f}: **{verdict(p['low'], p['high'])}**"
                + (". The hoped-for lower bound above 0 is not there." if p["low"] <= 0 else "."), ""]
    if result.get("looks"):
        out += ["## The three looks at the primary question", "",
                "| look | Δ test BLEU [95 % CI] | p | p (Holm over the looks) | verdict |",
                "| --- | --- | --- | --- | --- |"]
        out += [f"| {r['look']} | {_interval(r)} | {r['p']:.3f} | {r['p_holm']:.3f} | {r['verdict']} |"
                for r in result["looks"]]
        out += ["", "Each look's interval is its own, unadjusted; the verdicts stand side by side, none replaces "
                "another.", ""]
    t = result.get("tuned")
    if t:
        out += ["## Descriptive", "",
                f"- Against the second look's Combination (tuned start, predicted positions from the full "
                f"preorderer in training; not paired by seed): {_interval(t)}, p = {t['p']:.3f}.", ""]
    d = result.get("pipeline_default")
    if d:
        out += ["## The pipeline's default training positions (validation split; the rule of `reports/XLPOS.md`)", ""]
        if d["status"] != "done":
            out += [f"Pending: {', '.join(d['missing'])} without a validation translation.", ""]
        else:
            out += [f"Δ valid BLEU, the {len(SEEDS)} `combination_xfit` runs against the second look's "
                    f"{len(SEEDS)} Combination runs ({d['valid_pairs']:,} validation pairs): {_interval(d)}, "
                    f"p = {d['p']:.3f}. By the rule (lower bound above 0) the default of `--training-positions` "
                    + ("becomes **crossfit**." if d["default"] == "crossfit" else "stays **preorderer**."), ""]
    if result.get("taus"):
        out += ["Kendall τ of the positions against the BTG oracle of the eflomal links (the first 5,000 training "
                "sentences for *seen* and *cross-fitted*):", "",
                "| source | options | seen | cross-fitted (same) | cross-fitted (all 43,000) | tuning | test |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in result["taus"]:
            opts = ", ".join(f"{k} {v}" for k, v in sorted((r["options"] or {}).items())) or "–"
            out.append(f"| {r['source']} | {opts} | {_f(r['seen'], 4)} | {_f(r['crossfit_same'], 4)} | "
                       f"{_f(r['crossfit_all'], 4)} | {_f(r['tune'], 4)} | {_f(r['test'], 4)} |")
        out.append("")
    pay = result.get("payoff")
    if pay:
        out += ["The payoff curve (test positions moved from the predicted toward the oracle's along a shortest "
                "Kendall path; `onmt-xl evidence --stage payoff`):", "",
                "| α | mean test τ | test BLEU (mean ± sd) | runs |", "| --- | --- | --- | --- |"]
        for level in sorted(pay["levels"], key=float):
            row = pay["levels"][level]
            out.append(f"| {float(level):.2f} | {_f(row.get('mean_tau'), 4)} | {_f(row.get('mean'))} ± "
                       f"{_f(row.get('sd'))} | {len(row.get('bleu') or {})} |")
        out.append("")
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m onmt_xl.experiments.xlpos_report",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="the design's work directory (its data/ holds the test split)")
    p.add_argument("--design", required=True, help="archive of the design's runs (jobs DESIGN_JOB_sSEED)")
    p.add_argument("--design-job", default="combination_xfit", help="the design's job name (default combination_xfit)")
    p.add_argument("--control", required=True, help="archive of the baseline runs the primary compares with")
    p.add_argument("--drift", required=True, help="archive of the baseline seeds retrained on the current code")
    p.add_argument("--tuned", help="archive of the second look's Combination runs (descriptive)")
    p.add_argument("--old-source", help="archive whose crossfit.json/preorderer.json are the old source's (S0)")
    p.add_argument("--looks", default="", help="comma-separated JSON reports of the earlier looks, in order")
    p.add_argument("--payoff", help="the payoff stage's JSON")
    p.add_argument("--workdir", default="runs/decisive_jaen_xlpos_report", help="where the report's runs are assembled")
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--bootstrap-seed", type=int, default=12345)
    p.add_argument("--report", required=True, help="the Markdown file to write (its JSON beside it)")
    args = p.parse_args(argv)
    data, design, control, drift = map(Path, (args.data, args.design, args.control, args.drift))
    for path in (design, control, drift):
        if not (path / "jobs").is_dir() and path != drift:
            raise XLUsageError(str(path), None, "is not an archive: it has no jobs/ directory")
    refs = read_lines(data / "data" / "test.ref") if (data / "data" / "test.ref").exists() else None
    if refs is None:
        raise XLUsageError(str(data), None, "holds no staged data (data/test.ref)")
    result: Dict[str, Any] = {"prereg": "reports/PREREG_xlpos.md", "samples": args.samples,
                              "bootstrap_seed": args.bootstrap_seed}
    result["drift"] = drift_check(control, drift, refs)
    if result["drift"].get("exceeded") and control.resolve() != drift.resolve():
        raise XLUsageError(str(control), None, f"Δ_drift {result['drift']['delta']:+.2f} exceeds "
                           f"±{DRIFT_LIMIT}: the preregistration retrains baseline seeds 3-8 on the current code "
                           f"and compares with those; give --control {drift} once they are finished")
    found = assemble(Path(args.workdir), data, control, design, job=args.design_job)
    out = Path(args.report)
    body: List[str] = []
    if len(found["baseline"]) == len(SEEDS) and len(found["combination"]) == len(SEEDS):
        inner = Path(args.workdir) / "evidence_report.md"
        cmd = [sys.executable, "-m", "onmt_xl.experiments", "evidence", "--workdir", args.workdir, "--stage", "report",
               "--systems", "baseline,combination", "--seeds", ",".join(map(str, SEEDS)),
               "--families", "primary=combination", "--samples", str(args.samples),
               "--bootstrap-seed", str(args.bootstrap_seed), "--prereg", "reports/PREREG_xlpos.md",
               "--report", str(inner)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        evidence = json.loads(inner.with_suffix(".json").read_text(encoding="utf-8"))
        result["primary"] = evidence["comparisons"]["combination"]
        result["evidence"] = evidence  # the whole evidence report: reports/PAPERS.md's rows of this study
        body = inner.read_text(encoding="utf-8").splitlines()
        looks = []
        for i, path in enumerate([s for s in args.looks.split(",") if s], 1):
            looks.append((f"{i}: {Path(path).stem}",
                          json.loads(Path(path).read_text(encoding="utf-8"))["comparisons"]["combination"]))
        looks.append((f"{len(looks) + 1}: this design", result["primary"]))
        result["looks"] = looks_holm(looks)
    else:
        result["primary"] = None
        result["found"] = found
    if args.tuned:
        tuned = seed_hyps(Path(args.tuned), "combination", SEEDS)
        xfit = seed_hyps(design, args.design_job, SEEDS)
        if tuned and xfit:
            c = seed_pooled_bootstrap(list(xfit.values()), list(tuned.values()), refs, args.samples,
                                      args.bootstrap_seed)
            result["tuned"] = {"delta": c.delta, "low": c.low, "high": c.high, "p": c.p_value}
        result["pipeline_default"] = pipeline_default(data, design, Path(args.tuned), args.design_job,
                                                      args.samples, args.bootstrap_seed)
    sources = ([("S0 (current preorderer)", Path(args.old_source))] if args.old_source else []) + [("chosen", design)]
    result["taus"] = tau_rows(sources)
    if args.payoff and Path(args.payoff).exists():
        result["payoff"] = _json(Path(args.payoff))
    head = ["# Decisive design, third look: cross-fitted positions from the chosen source (ja→en)", "",
            "Generated by `python3 -m onmt_xl.experiments.xlpos_report` (reports/PREREG_xlpos.md, its Commands); "
            "do not edit. In the evidence report below, *Combination* is `combination_xfit`: trained on "
            "cross-fitted positions of the chosen source, translated with the full preorderer's.", ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(head + extras_markdown(result) + (["---", ""] + body if body else [])) + "\n",
                   encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(out.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    from onmt_xl.core.errors import install_excepthook

    install_excepthook()
    sys.exit(main())
