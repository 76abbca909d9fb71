"""Scores, significance, tables and plots of ``onmt-xl experiments`` (read from its work directory).

BLEU and chrF are sacrebleu's; significance against the baseline is sacrebleu's paired bootstrap
resampling (1,000 samples) and the sign test of Collins et al. (2005) that the papers use: for each
sentence, does putting the system's translation in place of the baseline's raise or lower corpus BLEU?
The counts of raises and drops go to a two-sided binomial test (ties left out).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from onmt_xl.experiments.plan import MAIN_SYSTEMS, NOISE_RATIOS, SIM_SYSTEMS, SWAP_RATIOS, Job


def _lines(path: Path) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


# --- significance ------------------------------------------------------------------------------------


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value of ``k`` successes in ``n`` trials at p = 1/2."""
    if n == 0:
        return 1.0
    probs = [math.comb(n, i) / 2.0**n for i in range(n + 1)]
    observed = probs[k]
    return min(1.0, sum(p for p in probs if p <= observed * (1 + 1e-9)))


@dataclass
class SignTest:
    better: int
    worse: int
    ties: int
    p_value: float


def sign_test(system: Sequence[str], baseline: Sequence[str], refs: Sequence[str]) -> SignTest:
    """Collins et al. (2005) sign test on corpus BLEU: sentence ``i`` counts as better (worse) when
    replacing the baseline's translation of ``i`` by the system's raises (lowers) corpus BLEU."""
    import numpy as np
    from sacrebleu.metrics import BLEU

    bleu = BLEU()
    base = np.asarray(bleu._extract_corpus_statistics(list(baseline), [list(refs)]), dtype=float)
    sys_ = np.asarray(bleu._extract_corpus_statistics(list(system), [list(refs)]), dtype=float)
    total = base.sum(axis=0)
    ref_score = bleu._compute_score_from_stats(total.tolist()).score
    better = worse = 0
    for b, s in zip(base, sys_):
        if np.array_equal(b, s):
            continue
        score = bleu._compute_score_from_stats((total - b + s).tolist()).score
        better += score > ref_score + 1e-12
        worse += score < ref_score - 1e-12
    ties = len(base) - better - worse
    return SignTest(better, worse, ties, binomial_two_sided(better, better + worse))


def paired_bootstrap(systems: Dict[str, List[str]], baseline: List[str], refs: List[str], n_samples: int = 1000,
                     seed: int = 12345) -> Dict[str, float]:
    """sacrebleu's paired bootstrap resampling p-value of each system's BLEU against ``baseline``."""
    if not systems:
        return {}
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    named = [("baseline", baseline)] + list(systems.items())
    test = PairedTest(named, {"BLEU": BLEU()}, references=[refs], test_type="bs", n_samples=n_samples)
    import numpy as np

    state = np.random.get_state()
    np.random.seed(seed)  # sacrebleu draws from numpy's global generator
    try:
        _, scores = test()
    finally:
        np.random.set_state(state)
    return {name: res.p_value for (name, _), res in zip(named[1:], scores["BLEU"][1:])}


# --- collecting ------------------------------------------------------------------------------------


def _job_info(workdir: Path, job: Job) -> Optional[Dict[str, Any]]:
    done = workdir / "jobs" / job.name / "done.json"
    return json.loads(done.read_text()) if done.exists() else None


def _speed_marks(info: Dict[str, Any]) -> str:
    """† trained beside other jobs (``--parallel``), ‡ resumed: its tok/s is not a clean single-job figure."""
    return ("†" if (info.get("concurrent_jobs") or 1) > 1 else "") + ("‡" if info.get("resumed_from") else "")


def _hyp(workdir: Path, job: Job, variant: str) -> Optional[List[str]]:
    path = workdir / "jobs" / job.name / f"hyp.{variant}"
    return _lines(path) if path.exists() else None


def attention_aer(hyp_lines: Sequence[str], sure, possible):
    """AER of the alignments ``onmt_translate -report_align -gold_align`` appends after `` ||| ``."""
    from onmt_xl.align.aer import score_alignments

    links = []
    for line in hyp_lines:
        _, _, text = line.partition(" ||| ")
        links.append({(int(a), int(b)) for a, b in (tok.split("-") for tok in text.split())})
    return score_alignments(links, sure, possible)


def collect(workdir: Path, jobs: Sequence[Job]) -> Dict[str, Any]:
    """Everything measured so far: per job its info, and per variant BLEU/chrF/timing (and AER, Sim)."""
    import sacrebleu

    workdir = Path(workdir)
    refs = {"test": _lines(workdir / "data" / "test.ref")}
    out: Dict[str, Any] = {"jobs": {}}
    pre = workdir / "preorderer.json"
    if pre.exists():
        out["preorderer"] = json.loads(pre.read_text())
    for job in jobs:
        info = _job_info(workdir, job)
        if info is None:
            continue
        jd = workdir / "jobs" / job.name
        timing = json.loads((jd / "translate_seconds.json").read_text()) if (jd / "translate_seconds.json").exists() else {}
        entry = dict(info, variants={})
        for variant in job.variants:
            if variant == "sim":
                if (jd / "sim.json").exists():
                    entry["sim"] = json.loads((jd / "sim.json").read_text())
                continue
            hyp = _hyp(workdir, job, variant)
            if hyp is None:
                continue
            v: Dict[str, Any] = {"translate_seconds": timing.get(variant)}
            if variant in ("gold_align", "test_align"):
                v.update(_aer(workdir, variant, hyp))
            else:
                ref = _refs(workdir, variant, refs)
                if len(hyp) != len(ref):
                    raise ValueError(f"{jd / ('hyp.' + variant)}: {len(hyp)} lines but {len(ref)} references")
                v["bleu"] = sacrebleu.corpus_bleu(hyp, [ref], force=True).score  # tokenized on purpose
                v["chrf"] = sacrebleu.corpus_chrf(hyp, [ref]).score
            entry["variants"][variant] = v
        out["jobs"][job.name] = entry
    _significance(workdir, jobs, out, refs)
    if any("aer" in j.experiments for j in jobs):
        out["aer_references"] = aer_references(workdir)
    (workdir / "results.json").write_text(json.dumps(out, indent=2))
    return out


def _refs(workdir: Path, variant: str, cache: Dict[str, List[str]]) -> List[str]:
    """References of a BLEU variant: the validation targets for ``valid``, else the test references."""
    key = "valid" if variant == "valid" else "test"
    if key not in cache:
        cache[key] = _lines(workdir / "data" / "valid.tgt")
    return cache[key]


#: AER variant -> (source, target) text the alignments are read on, under ``workdir/data``
AER_TEXTS = {"gold_align": ("gold.src", "gold.tgt"), "test_align": ("test.src", "test.ref")}


def _aer_reference(workdir: Path, variant: str):
    """The reference links (sure, possible) of an AER variant: the gold set, or the test set's eflomal links."""
    from onmt_xl.align.aer import read_gold
    from onmt_xl.align.pharaoh import read_pharaoh

    data = workdir / "data"
    if variant == "gold_align":
        sure, possible = read_gold(str(data / "gold.align"))
        keep = [int(k) for k in (data / "gold.keep").read_text().split()]
        return [sure[k] for k in keep], [possible[k] for k in keep]
    src = [l.split() for l in _lines(data / "test.src")]
    sure = [set(ls) for ls in read_pharaoh(str(workdir / "align" / "test.gdfa"), [len(s) for s in src])]
    return sure, sure


def _aer(workdir: Path, variant: str, hyp: List[str]) -> Dict[str, Any]:
    s = attention_aer(hyp, *_aer_reference(workdir, variant))
    return dict(aer=s.aer, precision=s.precision, recall=s.recall, sentences=s.n_sentences)


def reference_alignments(src_lens: Sequence[int], tgt_lens: Sequence[int], seed: int = 0) -> Dict[str, List[set]]:
    """Chance-level links in the form attention gives (one source word per target word): ``random`` (uniform,
    seeded) and ``diagonal`` (target word j of m to source word ⌊(j + ½)·n/m⌋)."""
    import random

    rng = random.Random(seed)
    out: Dict[str, List[set]] = {"random": [], "diagonal": []}
    for n, m in zip(src_lens, tgt_lens):
        out["random"].append({(rng.randrange(n), j) for j in range(m)} if n else set())
        out["diagonal"].append({(int((j + 0.5) * n / m), j) for j in range(m)} if n else set())
    return out


def aer_references(workdir: Path) -> Dict[str, Any]:
    """Per AER variant whose data exists: the AER of chance-level links (:func:`reference_alignments`), and the
    share of source/target tokens outside the trained vocabularies (what attention has to align)."""
    from onmt_xl.align.aer import score_alignments

    workdir, out = Path(workdir), {}
    vocabs = {side: workdir / f"vocab.{side}" for side in ("src", "tgt")}
    known = {side: {l.split("\t")[0].split(" ")[0] for l in _lines(p)} for side, p in vocabs.items() if p.exists()}
    for variant, (src_name, tgt_name) in AER_TEXTS.items():
        src_path, tgt_path = workdir / "data" / src_name, workdir / "data" / tgt_name
        if not (src_path.exists() and tgt_path.exists()) or (variant == "test_align" and not (workdir / "align" / "test.gdfa").exists()):
            continue
        src, tgt = [l.split() for l in _lines(src_path)], [l.split() for l in _lines(tgt_path)]
        sure, possible = _aer_reference(workdir, variant)
        entry: Dict[str, Any] = {"sentences": len(src), "src_words_per_sentence": sum(map(len, src)) / max(1, len(src))}
        for name, links in reference_alignments([len(x) for x in src], [len(y) for y in tgt]).items():
            sc = score_alignments(links, sure, possible)
            entry[name] = dict(aer=sc.aer, precision=sc.precision, recall=sc.recall)
        for side, words in (("src", src), ("tgt", tgt)):
            if side in known:
                flat = [w for ws in words for w in ws]
                entry[f"{side}_oov"] = sum(w not in known[side] for w in flat) / max(1, len(flat))
        out[variant] = entry
    return out


def _significance(workdir: Path, jobs: Sequence[Job], out: Dict[str, Any], refs: Dict[str, List[str]]) -> None:
    """p-values against the baseline for every BLEU variant: against the baseline's translation of the same
    sources (``test``, ``swapNN``), or of the clean test set where the baseline has no such variant (``oracle``)."""
    base_job = next((j for j in jobs if j.name == "baseline"), None)
    if base_job is None or _hyp(workdir, base_job, "test") is None:
        return
    variants = sorted({v for j in jobs for v in j.variants if v not in ("gold_align", "test_align", "sim")})
    for variant in variants:
        base_variant = variant if variant in base_job.variants else "test"
        base = _hyp(workdir, base_job, base_variant)
        if base is None:
            continue
        others = {j.name: _hyp(workdir, j, variant) for j in jobs
                  if (j.name, variant) != ("baseline", base_variant) and variant in j.variants and j.name in out["jobs"]}
        others = {k: v for k, v in others.items() if v is not None}
        ref = _refs(workdir, variant, refs)
        boot = paired_bootstrap(others, base, ref)
        for name, hyp in others.items():
            st = sign_test(hyp, base, ref)
            out["jobs"][name]["variants"][variant].update(p_bootstrap=boot[name], sign_better=st.better,
                                                          sign_worse=st.worse, p_sign=st.p_value)


# --- the report --------------------------------------------------------------------------------------


def _fmt(x: Optional[float], spec: str = ".2f") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _bleu(res, name: str, variant: str = "test") -> Optional[float]:
    return res["jobs"].get(name, {}).get("variants", {}).get(variant, {}).get("bleu")


def _p(p: Optional[float]) -> str:
    if p is None:
        return "–"
    return f"{p:.3f}" + (" **" if p < 0.01 else " *" if p < 0.05 else "")


def write_report(workdir: Path, jobs: Sequence[Job], report_dir: str = "reports") -> Path:
    """``report_dir/RESULTS.md`` and its plots from what has run in ``workdir``."""
    workdir = Path(workdir)
    if not (workdir / "data" / "test.ref").exists():
        raise FileNotFoundError(f"{workdir}: no experiments have run there yet (no data/test.ref)")
    res = collect(workdir, jobs)
    manifest = json.loads((workdir / "manifest.json").read_text()) if (workdir / "manifest.json").exists() else {}
    rdir = Path(report_dir)
    rdir.mkdir(parents=True, exist_ok=True)
    by_name = {j.name: j for j in jobs}
    J = res["jobs"]
    md: List[str] = ["# Experiments on Japanese→English (`onmt-xl experiments`)", ""]
    md += _header(manifest, res, jobs)
    md += _claims_section(res, int(manifest.get("model", {}).get("heads", 8)))
    base = J.get("baseline")

    # 1. main table
    md += ["## 1. Main table (Ding et al. 2020 Tab. 1–2; Chen et al. 2019a Tab. 1; Chen et al. 2020 Tab. 1)", "",
           "p-values against the baseline: sacrebleu paired bootstrap (1,000 samples) and the sign test "
           "(better/worse sentences); * p < 0.05, ** p < 0.01. *valid*: the same on the held-out validation pairs "
           "(the last training pairs; used for nothing but validation perplexity, so a second test set). Parameters from the checkpoints; tok/s is the median of OpenNMT's "
           "per-report training source tokens/second (first report left out), as trained here: a † marks a job "
           "trained while another shared the CPU (`--parallel`), a ‡ one resumed from a checkpoint (OpenNMT-py 3.5.1's `-train_from` restarts the corpus at its first line, so a resumed job also saw its data in another order than an uninterrupted one); the machine's speed "
           "also drifts, so × baseline is left out for marked rows and the controlled speed comparison is `tools/bench_xl_step.py` (reports/bench_xl_step_enja.txt). "
           "`disan`: a residual block over directional heads (DiSAN's masks: no head reads the token itself) "
           "with DiSAN's fusion gate mixing in the normalised block input; `disan_nogate` (`-disan_fusion none`, "
           "our variant) drops the gate.", "",
           "| system | params | Δ params | train src tok/s | × baseline | BLEU | Δ BLEU | chrF | p (bootstrap) | sign test +/− | p (sign) | valid BLEU | Δ | p (bootstrap) |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    row = {s: i for i, s in enumerate(MAIN_SYSTEMS)}  # a system's seeds follow it; the sort is stable
    main = sorted((j for j in jobs if "main" in j.experiments), key=lambda j: row.get(j.system, len(row)))
    for j in main:
        e = J.get(j.name)
        if e is None:
            md.append(f"| {j.name} | not run | | | | | | | | | | | | |")
            continue
        t, va = e["variants"].get("test", {}), e["variants"].get("valid", {})
        base_va = base["variants"].get("valid", {}).get("bleu") if base else None
        dv = va["bleu"] - base_va if "bleu" in va and base_va is not None else None
        dp = e["parameters"] - base["parameters"] if base else None
        clean = base and not _speed_marks(e) and not _speed_marks(base)  # a ratio of unlike measurements misleads
        ratio = e["src_tok_s"] / base["src_tok_s"] if clean and e.get("src_tok_s") and base.get("src_tok_s") else None
        db = t["bleu"] - base["variants"]["test"]["bleu"] if base and "bleu" in t and "test" in base["variants"] else None
        md.append(f"| {j.name} | {e['parameters']:,} | {'' if dp is None else f'{dp:+,}'} | {_fmt(e.get('src_tok_s'), ',.0f')}{_speed_marks(e)} | "
                  f"{_fmt(ratio, '.3f')} | {_fmt(t.get('bleu'))} | {_fmt(db, '+.2f')} | {_fmt(t.get('chrf'))} | "
                  f"{_p(t.get('p_bootstrap'))} | {t.get('sign_better', '–')}/{t.get('sign_worse', '–')} | {_p(t.get('p_sign'))} | "
                  f"{_fmt(va.get('bleu'))} | {_fmt(dv, '+.2f')} | {_p(va.get('p_bootstrap'))} |")
    md.append("")
    seeded = {}
    for j in main:
        if j.name in J and "bleu" in J[j.name]["variants"].get("test", {}):
            seeded.setdefault(j.system, []).append((j.seed, J[j.name]["variants"]["test"]["bleu"], J[j.name]["variants"]["test"]["chrf"]))
    rows = [(s, v) for s, v in seeded.items() if len(v) > 1]
    if rows:
        md += ["Seeds (BLEU / chrF per seed; mean ± sample standard deviation):", "",
               "| system | seeds | BLEU per seed | BLEU mean ± sd | chrF mean ± sd |", "| --- | --- | --- | --- | --- |"]
        for s, v in rows:
            b, c = [x[1] for x in v], [x[2] for x in v]
            md.append(f"| {s} | {', '.join(str(x[0]) for x in v)} | {', '.join(f'{x:.2f}' for x in b)} | "
                      f"{statistics.mean(b):.2f} ± {statistics.stdev(b):.2f} | {statistics.mean(c):.2f} ± {statistics.stdev(c):.2f} |")
        md.append("")

    # 2. oracle
    md += ["## 2. Oracle upper bound (Chen et al. 2020 Fig. 2) — uses test-side information", "",
           "`oracle` rows take the test sentences' XL indices (or reordered sources) from the BTG oracle of the "
           "eflomal alignments of the test set itself, i.e. from the reference translations: an upper bound, not a result.",
           "", "| model | training XL / order from | test XL / order from | BLEU | chrF |", "| --- | --- | --- | ---: | ---: |"]
    for name in ("combination", "combination_oracle", "prereorder", "prereorder_oracle"):
        j = by_name.get(name)
        if j is None or "oracle" not in j.experiments:
            continue
        for variant in ("test", "oracle"):
            if variant not in j.variants:
                continue
            v = J.get(name, {}).get("variants", {}).get(variant)
            md.append(f"| {name} | {'alignments (oracle)' if j.xl_train == 'align' else 'preorderer'} | "
                      f"{'test alignments (oracle)' if variant == 'oracle' else 'preorderer'} | "
                      f"{_fmt(v and v.get('bleu'))} | {_fmt(v and v.get('chrf'))} |")
    md.append("")

    # 3. tau sweep
    half = int(manifest.get("model", {}).get("heads", 8)) // 2  # the main HeadXL's tau (configs.XL_HEAD_ENCODERS)
    taus = sorted((j.overrides.get("xl_heads", half), j.name) for j in jobs if "tau" in j.experiments)
    pts = [(t, _bleu(res, n)) for t, n in taus]
    md += ["## 3. τ sweep (Ding et al. 2020 Fig. 3): HeadXL with τ of the H heads reading X+PE_XL", "",
           "| τ | " + " | ".join(str(t) for t, _ in pts) + " |", "| --- |" + " ---: |" * len(pts),
           "| BLEU | " + " | ".join(_fmt(b) for _, b in pts) + " |",
           "| valid BLEU | " + " | ".join(_fmt(_bleu(res, n, "valid")) for _, n in taus) + " |", ""]
    from onmt_xl.experiments.claims import seed_runs

    base_seeds = [(n, _bleu(res, n)) for n in seed_runs(res, "baseline")]
    tau0 = dict(pts).get(0)
    if tau0 is not None and any(b is not None for _, b in base_seeds):
        md += [f"τ = 0 feeds X+PE_abs to every head: the stock encoder, trained with the XL transform in its data "
               f"pipeline. Its {_fmt(tau0)} against the baseline's " +
               ", ".join(f"{_fmt(b)} ({n})" for n, b in base_seeds if b is not None) +
               " shows the run-to-run spread of this setting.", ""]
    if _plot(rdir / "results_tau.png", "τ (XL heads)", {"HeadXL": pts}, "BLEU against τ",
             ("baseline", _bleu(res, "baseline"))):
        md += ["![tau sweep](results_tau.png)", ""]

    # 4. noise
    noise_jobs = ["combination"] + [f"combination_noise{round(100 * r)}" for r in NOISE_RATIOS]
    noise = list(zip([0.0] + list(NOISE_RATIOS), (_bleu(res, n) for n in noise_jobs)))
    md += ["## 4. Noise attack (Ding et al. 2020 Fig. 4): Combination trained on XL indices with a share swapped", "",
           "Training indices only (`-xl_noise`, `round(ratio·n/2)` random swaps per sentence); test indices are clean.", "",
           "| noise | " + " | ".join(f"{round(100 * r)} %" for r, _ in noise) + " |", "| --- |" + " ---: |" * len(noise),
           "| BLEU | " + " | ".join(_fmt(b) for _, b in noise) + " |",
           "| valid BLEU | " + " | ".join(_fmt(_bleu(res, n, "valid")) for n in noise_jobs) + " |", ""]
    if _plot(rdir / "results_noise.png", "noisy XL indices (%)", {"Combination": [(100 * r, b) for r, b in noise]},
             "BLEU against training noise", ("baseline", _bleu(res, "baseline"))):
        md += ["![noise attack](results_noise.png)", ""]

    # 5. AER
    md += ["## 5. Attention alignment quality (Ding et al. 2020 Tab. 3)", "",
           "Alignments read from the decoder's cross-attention, penultimate layer, averaged over heads "
           "(`alignment_layer` = penultimate, `alignment_heads` 0, set on a copy of the checkpoint; `onmt_translate -report_align -gold_align` with the reference as `-tgt`): each target "
           "word is linked to its most attended source word. *gold*: the 582 KFTT pairs of `shared/data/gold` "
           "(Kyoto Wikipedia: a different domain from the training data, many unknown words); *eflomal*: the test set "
           "against its own eflomal grow-diag-final-and links (a noisy reference).", "",
           "| system | AER (gold) | P | R | AER (eflomal, test) | P | R |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for j in jobs:
        if "aer" not in j.experiments:
            continue
        v = J.get(j.name, {}).get("variants", {})
        g, t = v.get("gold_align", {}), v.get("test_align", {})
        md.append(f"| {j.name} | {_fmt(g.get('aer'), '.4f')} | {_fmt(g.get('precision'), '.4f')} | {_fmt(g.get('recall'), '.4f')} | "
                  f"{_fmt(t.get('aer'), '.4f')} | {_fmt(t.get('precision'), '.4f')} | {_fmt(t.get('recall'), '.4f')} |")
    refs = res.get("aer_references", {})
    if refs:
        g, t = refs.get("gold_align", {}), refs.get("test_align", {})
        for name in ("random", "diagonal"):
            a, b = g.get(name, {}), t.get(name, {})
            md.append(f"| *chance: {name}* | {_fmt(a.get('aer'), '.4f')} | {_fmt(a.get('precision'), '.4f')} | {_fmt(a.get('recall'), '.4f')} | "
                      f"{_fmt(b.get('aer'), '.4f')} | {_fmt(b.get('precision'), '.4f')} | {_fmt(b.get('recall'), '.4f')} |")
        md.append("")
        md.append("*chance* rows: links with no model, one per target word as attention gives, to a uniformly random "
                  "source word (seeded) or to the diagonal source word ⌊(j + ½)·n/m⌋. What the models have to align: "
                  + "; ".join(f"{label}: {_fmt(100 * r['src_oov'], '.1f') if 'src_oov' in r else '–'} % of source and "
                              f"{_fmt(100 * r['tgt_oov'], '.1f') if 'tgt_oov' in r else '–'} % of target tokens outside the "
                              f"vocabularies, {r['src_words_per_sentence']:.1f} source words per sentence"
                              for label, r in (("gold", g), ("test", t)) if r) + ".")
    md.append("")

    # 6. encoder-free
    md += ["## 6. Encoder-free Transformer (Ding et al. 2020 Tab. 4)", "",
           "Source embeddings straight to the decoder. Relative PE has no place here (no source self-attention).", "",
           "| PE | params | BLEU | chrF | valid BLEU |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, label in (("encoder_free_none", "none"), ("encoder_free", "absolute"), ("encoder_free_inxl", "InXL"),
                        ("baseline", "*absolute, with the encoder (baseline)*")):
        e = J.get(name)
        t = e["variants"].get("test", {}) if e else {}
        params = f"{e['parameters']:,}" if e else "not run"
        md.append(f"| {label} | {params} | {_fmt(t.get('bleu'))} | {_fmt(t.get('chrf'))} | {_fmt(_bleu(res, name, 'valid'))} |")
    md.append("")
    free, full = _bleu(res, "encoder_free"), _bleu(res, "baseline")
    if free is not None and full is not None and free > full:
        md += [f"Here the encoder-free model beats the Transformer with its encoder ({_fmt(free)} against {_fmt(full)}), "
               "the reverse of Ding et al.'s Tab. 4. Every model trains the same number of steps, short of convergence "
               "at this budget, and the smaller model gets further in them (validation perplexity: each job's train.log).", ""]

    # 7. robustness
    robust = {}
    for j in jobs:
        if "robustness" in j.experiments:
            robust[j.name] = [(0.0, _bleu(res, j.name))] + [(100 * r, _bleu(res, j.name, f"swap{round(100 * r)}")) for r in SWAP_RATIOS]
    md += ["## 7. Robustness to swapped source words (Chen et al. 2019a Sec. 6.5)", "",
           "Test sources with `round(ratio·n/2)` random word pairs swapped (seeded); XL systems preorder the swapped source.", "",
           "| system | " + " | ".join(f"{round(r)} %" for r, _ in next(iter(robust.values()), [])) + " |",
           "| --- |" + " ---: |" * (1 + len(SWAP_RATIOS))]
    for name, pts in robust.items():
        md.append(f"| {name} | " + " | ".join(_fmt(b) for _, b in pts) + " |")
    md.append("")
    if _plot(rdir / "results_robustness.png", "swapped words (%)", robust, "BLEU on swapped test sources"):
        md += ["![robustness](results_robustness.png)", ""]

    # 8. Sim
    md += ["## 8. Sim (Chen et al. 2020 Eq. 12) on the test set", "",
           "Mean cosine between the predicted reordering embedding pr_j^N and the sinusoid of the oracle position "
           "r_j from the test alignments; *PE*: the same with the word's original position's sinusoid in place of "
           "pr_j^N (Fig. 5's reference). With the paper's window D = 0.5 (ours too) at most one integer position lies in "
           "[b_j − D, b_j + D], so pr_j is a scaled pe_s and the cosine loss of Eq. 9 as written gives the position "
           "predictor no gradient (`test_literal_eq9_gives_the_predicted_positions_no_gradient`). `exgre` and `refsr` "
           "therefore keep Eq. 5–8 in the forward pass but take the loss on a deviation (`-reordering_loss`, see "
           "`ExGREEncoder`), which reaches b_j; `exgre_literal` is trained with Eq. 9 as written, so its b_j learns "
           "from the translation loss alone.", "",
           "| system | Sim (pr) | Sim (PE) | words | BLEU | Δ BLEU | p (bootstrap) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    base_bleu = _bleu(res, "baseline")
    for name in SIM_SYSTEMS:
        sim = J.get(name, {}).get("sim") or {}
        t = J.get(name, {}).get("variants", {}).get("test", {})
        delta = t["bleu"] - base_bleu if "bleu" in t and base_bleu is not None else None
        md.append(f"| {name} | {_fmt(sim.get('sim'), '.4f')} | {_fmt(sim.get('pe_sim'), '.4f')} | {sim.get('words', '–')} | "
                  f"{_fmt(t.get('bleu'))} | {_fmt(delta, '+.2f')} | {_p(t.get('p_bootstrap'))} |")
    md.append("")
    out = rdir / "RESULTS.md"
    out.write_text("\n".join(md) + "\n", encoding="utf-8")
    return out


def _claims_section(res: Dict[str, Any], heads: int) -> List[str]:
    from onmt_xl.experiments.claims import check

    claims = check(res, heads)
    counts = {v: sum(c.verdict == v for c in claims) for v in dict.fromkeys(c.verdict for c in claims)}
    md = ["## The papers' claims at this scale", "",
          "Verdicts by fixed rules (`onmt_xl/experiments/claims.py`), not by hand: against the baseline, *held* = better with "
          "sacrebleu's paired bootstrap p < 0.05, *same direction, not significant* = better with p ≥ 0.05, *reversed* = "
          "worse with p < 0.05; comparisons without a test are *held* / *not held* on the numbers alone; an AER comparison "
          "where both systems align no better than diagonal links is *uninformative*. The papers' "
          "figures are for models 10–100× larger trained on 2M–4.5M pairs; ours is one small model on 49k pairs, "
          "one seed (two for the baseline and Combination).", "",
          "Tally: " + ", ".join(f"{v} {n}" for v, n in counts.items()) + ".", "",
          "| source | claim | measured here | verdict |", "| --- | --- | --- | --- |"]
    md += [f"| {c.paper} | {c.claim} | {c.measured} | {c.verdict} |" for c in claims]
    return md + [""]


def _training_time(res: Dict[str, Any]) -> str:
    """Wall time per trained job, split by how many jobs shared the machine (resumed jobs left out)."""
    by_share: Dict[int, List[float]] = {}
    for e in res["jobs"].values():
        if e.get("train_seconds") and not e.get("resumed_from"):
            by_share.setdefault(int(e.get("concurrent_jobs") or 1), []).append(e["train_seconds"] / 60)
    if not by_share:
        return "Training time per job: none measured yet (resumed jobs only time their last attempt)."
    parts = [f"{statistics.median(v):.1f} min median over {len(v)} job(s) trained " + ("alone" if n == 1 else f"{n} at a time")
             for n, v in sorted(by_share.items())]
    return "Training time per job (wall clock, not resumed): " + "; ".join(parts) + "."


def _header(manifest: Dict[str, Any], res: Dict[str, Any], jobs: Sequence[Job]) -> List[str]:
    m = manifest.get("model", {})
    mach = manifest.get("machine", {})
    ran = [j.name for j in jobs if j.name in res["jobs"]]
    left = [j.name for j in jobs if j.name not in res["jobs"]]
    pre = res.get("preorderer", {})
    lines = [
        f"Command: `{manifest.get('command', '?')}` (resumable; the last run's command).", "",
        f"Model (preset `{manifest.get('preset', '?')}`, the same for every system): d_model {m.get('hidden_size')}, "
        f"{m.get('enc_layers')}+{m.get('dec_layers')} layers, {m.get('heads')} heads, FFN {m.get('transformer_ff')}, "
        f"dropout {m.get('dropout')}, Adam β2 {m.get('adam_beta2')}, noam lr {m.get('learning_rate')} / warm-up "
        f"{m.get('warmup_steps')}, {m.get('batch_size')}-token batches, label smoothing {m.get('label_smoothing')}, "
        f"{manifest.get('train_steps')} steps; beam {manifest.get('beam_size')}. Reported on the corpus' test split; the last "
        f"{manifest.get('valid_size')} training pairs validate. BLEU and chrF: sacrebleu's defaults over the corpus' "
        "tokenized text (scores are not comparable with the papers' figures, which are on other data anyway).", "",
        f"Machine: {mach.get('processor')}, {mach.get('cpus')} CPUs, GPU: {mach.get('gpu') or 'none'}. "
        f"Versions: " + ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items()) + ".", "",
        f"Preorderer on the test set (against the test alignments): Kendall tau {_fmt(pre.get('tau'), '.4f')} "
        f"(monotone {_fmt(pre.get('monotone_tau'), '.4f')}, BTG oracle {_fmt(pre.get('oracle_tau'), '.4f')}).", "",
        _training_time(res), "",
        f"Trained so far ({len(ran)} of {len(jobs)} jobs): {', '.join(ran) or 'none'}.", "",
        f"Not run yet: {', '.join(left) or 'none'}.", "",
    ]
    for r in manifest.get("runs", []):
        lines.append(_run_line(r))
    for r in manifest.get("retired", []):  # jobs taken out of the archive because their system changed since
        lines += ["", f"Removed from the archive on {r['date']}: {', '.join(r['jobs'])}. {r['why']}"]
    return lines + [""]


def _run_line(r: Dict[str, Any]) -> str:
    """One run of the manifest's history. ``status`` "running": still running, or stopped from outside (killed)
    after its last update; runs recorded before ``started`` existed only have ``finished``."""
    minutes = f"{r.get('wall_seconds', 0) / 60:.1f} min"
    if "started" not in r:
        when, how = f"finished {r.get('finished')}", ", stopped by the time budget" if r.get("stopped_before") else ""
    elif r.get("status") == "running":
        when, how = f"started {r['started']}", f", no end recorded (still running, or killed; last record {r.get('updated')})"
    else:
        when, how = f"started {r['started']}", f", {r.get('status')}"
    done = r.get("jobs_done")
    jobs = f"; jobs finished: {', '.join(done) if done else 'none'}" if done is not None else ""
    stop = f" before {r['stopped_before']}" if r.get("stopped_before") else ""
    return f"- run {when}: {minutes}{how}{stop}{jobs}"


def _plot(path: Path, xlabel: str, series: Dict[str, List[Tuple[float, Optional[float]]]], title: str,
          reference: Optional[Tuple[str, Optional[float]]] = None) -> bool:
    """Line plot of BLEU against ``xlabel``, ticks at the measured points; ``reference``: a (label, BLEU)
    drawn as a dashed horizontal line (e.g. the baseline). False (nothing written) with < 2 points."""
    pts = {k: [(x, y) for x, y in v if y is not None] for k, v in series.items()}
    if not any(len(v) > 1 for v in pts.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, v in pts.items():
        if v:
            ax.plot([x for x, _ in v], [y for _, y in v], marker="o", label=name)
    with_ref = reference is not None and reference[1] is not None
    if with_ref:
        ax.axhline(reference[1], color="grey", linestyle="--", linewidth=1, label=f"{reference[0]} ({reference[1]:.2f})")
    ax.set_xticks(sorted({x for v in pts.values() for x, _ in v}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("BLEU")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(pts) > 1 or with_ref:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
