"""``onmt-xl evidence --stage payoff``: the payoff curve of ``reports/PREREG_xlpos.md``.

Test BLEU of finished models when the test positions move from the preorderer's (what the ``test`` variant
translates with) toward the BTG oracle's of the test pairs' eflomal links (what the ``oracle`` variant translates
with), along a shortest path in Kendall distance (:func:`onmt_xl.core.reorder.interpolate.kendall_path`): level
``alpha`` applies the first ``round(alpha * d)`` of the ``d`` adjacent swaps of a bubble sort from one order to the
other, per sentence; :data:`LEVELS`. Each level's positions go to ``data/test.src`` + :func:`level_suffix` (an
``.xlpos`` file, :mod:`onmt_xl.core.reorder.positions_file`), which ``onmt_translate -xl_positions_suffix`` reads for
its input; each job's translation of a level is its variant ``payoffNNN`` (``jobs/NAME/hyp.payoff050``, kept like every
variant, so the stage resumes). Level 0 gives the model the very positions of the ``test`` variant, level 1 those of
``oracle``.

Each level is reported with the Kendall τ of its positions against the test pairs' eflomal links (the mean of the
sentences' τ, the figure stage 2 chose the source on, and the corpus τ that ``preorderer.json`` reports), per-job
BLEU (sacrebleu, scored as the ``test`` variant is: :func:`onmt_xl.experiments.scoring.text_scores`), their mean and
sd over seeds: ``payoff.json``, ``payoff.md`` and ``payoff.png`` (BLEU against τ, mean ± sd, the baseline's mean
test BLEU as a line where its runs are found) in the work directory, and in ``--archive``.
"""

from __future__ import annotations

import json
import shutil
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from onmt_xl.core.errors import XLInputError, XLUsageError, count
from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.stock import read_lines, say
from onmt_xl.experiments.systems import SYSTEMS

#: the preregistered levels: alpha = 0 (the preorderer's positions) to 1 (the BTG oracle's)
LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: the variant names and file suffixes start with this
PREFIX = "payoff"
#: the variant each end of the path must reproduce word for word
ENDS = {0.0: "test", 1.0: "oracle"}


def level_variant(alpha: float) -> str:
    """The variant (and ``hyp.`` file) of level ``alpha``: ``payoff050`` for 0.5."""
    return f"{PREFIX}{round(100 * alpha):03d}"


def level_suffix(alpha: float) -> str:
    """The ``-xl_positions_suffix`` of level ``alpha``: ``.payoff050.xlpos`` (beside ``data/test.src``)."""
    return f".{level_variant(alpha)}.xlpos"


def is_level_variant(variant: str) -> bool:
    return variant.startswith(PREFIX) and variant[len(PREFIX):].isdigit()


@dataclass
class Level:
    """One level's positions, scored against the test pairs' eflomal links."""

    alpha: float
    mean_tau: float  # the mean of the sentences' τ (those with an aligned pair of distinct ranks), as stage 2's
    corpus_tau: float  # τ over all aligned pairs of the test set (micro-averaged), as preorderer.json's
    exact_match: float
    swaps: int  # adjacent swaps applied, over the test set
    discordant: int  # pairs still ordered otherwise than the oracle, over the test set


def path_ends(runner) -> Tuple[List[List[str]], List[List[int]], List[List[int]], list]:
    """``(src, predicted, oracle, links)`` of ``data/test.src``: the preorderer's ``pos_XL`` (``preorderer.xlp``, as
    the ``test`` variant's transform computes them), the BTG oracle's of ``align/test.gdfa`` (as the ``oracle``
    variant's, ``-xl_source align``), and the parsed links."""
    from onmt_xl.core.align.pharaoh import parse_pharaoh_line
    from onmt_xl.core.reorder.crossfit import predict_positions
    from onmt_xl.core.reorder.oracle import btg_oracle
    from onmt_xl.core.reorder.preorderer import Preorderer
    from onmt_xl.core.reorder.threads import set_threads

    src_path, align_path = runner.path("data", "test.src"), runner.path("align", "test.gdfa")
    for path in (src_path, align_path, runner.preorderer_path()):
        if not path.exists():
            raise XLUsageError(str(path), None, "not found: --stage payoff needs the prepared test split, its eflomal "
                               "links and the preorderer (--stage prepare)")
    src = [line.split() for line in read_lines(src_path)]
    align = read_lines(align_path)
    if len(align) != len(src):
        raise XLInputError(str(align_path), None, f"{count(len(align), 'line')} for the {len(src):,} of {src_path}")
    links = [parse_pharaoh_line(a, len(s), None, path=str(align_path), lineno=k + 1)
             for k, (a, s) in enumerate(zip(align, src))]
    oracle = [list(btg_oracle(len(s), l).pos_xl) for s, l in zip(src, links)]
    set_threads(runner.threads or 1)  # the parse beside the training: the stage's thread share
    predicted = predict_positions(Preorderer.load(str(runner.preorderer_path())), src)
    return src, predicted, oracle, links


def level_rows(predicted: Sequence[Sequence[int]], oracle: Sequence[Sequence[int]], alpha: float) -> List[List[int]]:
    """Each sentence's ``pos_XL`` at level ``alpha`` of the path from ``predicted`` to ``oracle``."""
    from onmt_xl.core.reorder.interpolate import kendall_path

    return [kendall_path(p, o, alpha) for p, o in zip(predicted, oracle)]


def score_level(alpha: float, rows, predicted, oracle, src, links) -> Level:
    """:class:`Level` of ``rows`` (``pos_XL`` per sentence)."""
    from onmt_xl.core.reorder.btg import order_to_pos_xl
    from onmt_xl.core.reorder.interpolate import discordant_pairs
    from onmt_xl.core.reorder.metrics import evaluate, sentence_taus
    from onmt_xl.core.reorder.oracle import target_ranks

    orders = [order_to_pos_xl(r) for r in rows]  # pos_xl and order are inverse permutations of each other
    ranks = [target_ranks(len(s), l) for s, l in zip(src, links)]
    scores = evaluate(orders, ranks)
    taus = [t for t in sentence_taus(orders, ranks) if t is not None]
    left = sum(discordant_pairs(r, o) for r, o in zip(rows, oracle))
    total = sum(discordant_pairs(p, o) for p, o in zip(predicted, oracle))
    return Level(alpha, statistics.fmean(taus) if taus else 1.0, scores.tau, scores.exact_match, total - left, left)


def write_level(runner, alpha: float, rows: Sequence[Sequence[int]]) -> Path:
    """``data/test.src`` + :func:`level_suffix`, written unless it holds these positions already."""
    from onmt_xl.core.reorder.positions_file import PositionsHeader, read_positions, scan_corpus, write_positions

    src = runner.path("data", "test.src")
    out = src.with_name(src.name + level_suffix(alpha))
    rows = [list(r) for r in rows]
    scan = scan_corpus(str(src))
    if out.exists():
        try:
            header, old = read_positions(str(out))
            if header.sha256 == scan.sha256 and old == rows:
                return out
        except XLInputError:
            pass
    made = {"method": PREFIX, "alpha": alpha, "from": runner.preorderer_path().name,
            "to": "BTG oracle of align/test.gdfa", "path": "bubble-sort swaps (onmt_xl.core.reorder.interpolate)"}
    partial = out.with_name(out.name + ".partial")
    write_positions(str(partial), PositionsHeader(src.name, scan.lines, scan.sha256, made), rows)
    partial.replace(out)
    return out


def skip_reason(runner, job: Job, variants: Sequence[str]) -> Optional[str]:
    """Why the stage leaves ``job`` alone (None: it translates its levels, or has): not finished, its own variants
    not all translated yet (the main stage is at it), positions it does not read, or no model left to translate with."""
    if not SYSTEMS[job.system].uses_preorderer:
        return "reads no XL positions"
    if job.xl_train == "align":
        return "trained on oracle positions (translated with the oracle's only)"
    if job.preorder_pairs:
        return "translated with a preorderer of its own (preorder_pairs): the levels start from preorderer.xlp's"
    if not runner.path("jobs", job.name, "done.json").exists():
        return "not finished"
    missing = runner.outputs_missing(job)
    if missing:
        return f"finished, but {', '.join(missing)} not translated yet"
    done = all(runner.variant_output(job, v).exists() for v in variants)
    if not done and not runner.has_final_model(job):
        return f"no checkpoint ({runner.final_model_path(job).name} and its checkpoints are gone)"
    return None


def baseline_runs(dirs: Sequence[Path], refs: List[str], tokenization) -> Tuple[Optional[Path], Dict[str, float]]:
    """``(where, {job: test BLEU})`` of the finished ``baseline_s*`` jobs of the first of ``dirs`` (work directories or
    archives) that has any (``hyp.test``, gzipped in an archive), scored against ``refs``; ``(None, {})`` when none."""
    from onmt_xl.experiments.scoring import text_scores

    for d in dirs:
        found = {}
        for jd in sorted(Path(d).glob("jobs/baseline_s*")):
            hyp = next((p for p in (jd / "hyp.test", jd / "hyp.test.gz") if p.exists()), None)
            if hyp is None or not (jd / "done.json").exists():
                continue
            lines = read_lines(hyp)
            if len(lines) != len(refs):
                raise XLInputError(str(hyp), None, f"{count(len(lines), 'line')}, but this work directory's test "
                                   f"split has {len(refs):,}: --baseline-from must name runs of the same test split")
            found[jd.name] = text_scores(lines, refs, tokenization)["bleu"]
        if found:
            return Path(d), found
    return None, {}


def _mean_sd(values: Sequence[float]) -> Tuple[Optional[float], Optional[float]]:
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def translate_all(runner, jobs: List[Job], variants: Sequence[str]) -> Dict[Tuple[str, str], Optional[float]]:
    """Each of ``variants`` of each of ``jobs`` translated unless it exists, ``runner.parallel`` at a time (each
    ``onmt_translate`` with one torch thread), level by level, so that the translations running together are other
    jobs'; ``{(job name, variant): seconds, or None where it existed}``. A failure is raised after the other
    translations (each one that finished is kept: the stage resumes)."""
    tasks = [(job, variant) for variant in variants for job in jobs]
    with ThreadPoolExecutor(max_workers=max(1, runner.parallel or 1)) as pool:
        seconds = list(pool.map(lambda task: runner.translate_missing(*task), tasks))
    return {(job.name, variant): t for (job, variant), t in zip(tasks, seconds)}


def payoff_stage(runner, jobs: List[Job], baseline_from: Sequence[str] = ()) -> int:
    """``--stage payoff``: the level files, each finished job of ``jobs`` translated at each level (one torch thread
    each, ``runner.parallel`` at a time, :func:`translate_all`; resumable, no lock: it writes into finished jobs and
    ``data/`` only), then
    ``payoff.json``/``.md``/``.png``. ``baseline_from``: work directories or archives whose ``baseline_s*`` jobs
    give the baseline's line (default: this work directory, then its archive)."""
    from onmt_xl.experiments.archive import save_job
    from onmt_xl.experiments.scoring import text_scores, tokenization_of

    tokenization = tokenization_of(runner.workdir)
    if tokenization is not None:
        raise XLUsageError(str(runner.workdir), None, "holds raw text (onmt-xl pipeline's tokenization): the payoff "
                           "levels are positions of tokenized test sources, as the oracle variant's; give tokenized "
                           "input (--tokenize none)")
    for d in baseline_from:
        if not Path(d).is_dir():
            raise XLUsageError(d, None, "--baseline-from: no such directory (a work directory or an archive)")
    runner.threads = 1  # beside the training: one core per translation
    src, predicted, oracle, links = path_ends(runner)
    levels: Dict[float, Level] = {}
    for alpha in LEVELS:
        rows = level_rows(predicted, oracle, alpha)
        levels[alpha] = score_level(alpha, rows, predicted, oracle, src, links)
        path = write_level(runner, alpha, rows)
        say(f"  level {alpha:.2f}: mean Kendall tau {levels[alpha].mean_tau:.4f} (corpus "
            f"{levels[alpha].corpus_tau:.4f}), {levels[alpha].swaps} swaps applied, {path.name}")
    variants = [level_variant(a) for a in LEVELS]
    refs = read_lines(runner.path("data", "test.ref"))
    dirs = [Path(d) for d in baseline_from] or [runner.workdir] + ([runner.archive] if runner.archive else [])
    where, base = baseline_runs(dirs, refs, tokenization)  # before any translation: a wrong directory fails at once
    bleu: Dict[float, Dict[str, float]] = {a: {} for a in LEVELS}
    ends: Dict[str, Dict[str, Optional[bool]]] = {}
    skipped: Dict[str, str] = {}
    signature = None
    ready = []
    for job in jobs:
        reason = skip_reason(runner, job, variants)
        if reason:
            say(f"  {job.name}: skipped ({reason})")
            skipped[job.name] = reason
        else:
            ready.append(job)
    took = translate_all(runner, ready, variants)
    for job in ready:
        for alpha, variant in zip(LEVELS, variants):
            seconds = took[job.name, variant]
            hyp = runner.variant_output(job, variant)
            lines = read_lines(hyp)
            if len(lines) != len(refs):
                raise XLInputError(str(hyp), None, f"{count(len(lines), 'line')} for "
                                   f"{count(len(refs), 'reference')}: delete it to translate it again")
            scores = text_scores(lines, refs, tokenization)
            bleu[alpha][job.name], signature = scores["bleu"], scores["bleu_signature"]
            say(f"  {job.name} [{variant}]: BLEU {scores['bleu']:.2f} ("
                + (f"{seconds:.0f} s)" if seconds is not None else "translated before)"))
        ends[job.name] = {}
        for alpha, variant in ENDS.items():
            other = runner.variant_output(job, variant)
            same = (read_lines(other) == read_lines(runner.variant_output(job, level_variant(alpha)))
                    if other is not None and other.exists() else None)
            ends[job.name][f"{level_variant(alpha)} = {variant}"] = same
            if same is False:
                say(f"  {job.name}: warning: {level_variant(alpha)} differs from the {variant} variant's translation")
        if runner.archive is not None:
            save_job(runner.workdir, runner.archive, job.name, runner.corpus_dir())
    result = payoff_result(levels, bleu, ends, skipped, where, base, len(src), signature, runner.workdir)
    result["beam_size"] = runner.beam_size
    out = write_outputs(runner.workdir, result)
    if runner.archive is not None:
        runner.archive.mkdir(parents=True, exist_ok=True)
        for path in out:
            shutil.copyfile(path, runner.archive / path.name)
    say(f"payoff curve: {', '.join(str(p) for p in out)}")
    return 0


def payoff_result(levels: Dict[float, Level], bleu: Dict[float, Dict[str, float]], ends, skipped,
                  baseline_where: Optional[Path], baseline: Dict[str, float], sentences: int,
                  signature: Optional[str], workdir: Path) -> Dict[str, Any]:
    """``payoff.json``'s content."""
    out: Dict[str, Any] = {
        "what": "test BLEU when the test positions move from the preorderer's toward the BTG oracle's along a "
                "shortest Kendall path (reports/PREREG_xlpos.md)",
        "test_pairs": sentences, "tau_against": "the test pairs' eflomal links (align/test.gdfa)",
        "bleu_signature": signature, "levels": {}, "ends": ends, "skipped": skipped, "baseline": None,
    }
    for alpha, level in levels.items():
        mean, sd = _mean_sd(list(bleu[alpha].values()))
        out["levels"][f"{alpha:.2f}"] = {**asdict(level), "bleu": bleu[alpha], "mean": mean, "sd": sd,
                                         "runs": len(bleu[alpha])}
    if baseline:
        mean, sd = _mean_sd(list(baseline.values()))
        where = baseline_where
        try:
            where = where.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            where = Path(where.name)
        out["baseline"] = {"from": str(where), "bleu": baseline, "mean": mean, "sd": sd, "runs": len(baseline)}
    return out


def markdown(result: Dict[str, Any]) -> str:
    """``payoff.md``: one row per level."""
    jobs = sorted({j for level in result["levels"].values() for j in level["bleu"]})
    lines = ["# Payoff curve", "", result["what"] + f"; {result['test_pairs']} test pairs, Kendall τ against "
             f"{result['tau_against']}.", "",
             "| α | mean τ | corpus τ | swaps applied | runs | BLEU mean ± sd | " + " | ".join(jobs)
             + (" |" if jobs else "|"),
             "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(jobs)]
    for key, level in result["levels"].items():
        mean = "–" if level["mean"] is None else f"{level['mean']:.2f}"
        sd = "" if level["sd"] is None else f" ± {level['sd']:.2f}"
        cells = [f"{level['bleu'][j]:.2f}" if j in level["bleu"] else "–" for j in jobs]
        lines.append(f"| {key} | {level['mean_tau']:.4f} | {level['corpus_tau']:.4f} | {level['swaps']} | "
                     f"{level['runs']} | {mean}{sd} | " + " | ".join(cells) + (" |" if cells else ""))
    lines.append("")
    base = result["baseline"]
    if base:
        sd = "" if base["sd"] is None else f" ± {base['sd']:.2f}"
        lines.append(f"Baseline (Transformer, no XL positions): {base['mean']:.2f}{sd} test BLEU over {base['runs']} "
                     f"runs ({base['from']}).")
    else:
        lines.append("Baseline: no finished baseline run found (--baseline-from).")
    checks = [(job, name, same) for job, pairs in result["ends"].items() for name, same in pairs.items()]
    if checks:
        bad = [f"{job} ({name})" for job, name, same in checks if same is False]
        unknown = [f"{job} ({name})" for job, name, same in checks if same is None]
        lines.append("")
        lines.append("Ends of the path: " + ("every level-0 translation is the test variant's and every level-1 one "
                                            "the oracle variant's, word for word" if not bad and not unknown else
                                            "; ".join(filter(None, [
                                                f"differ: {', '.join(bad)}" if bad else "",
                                                f"not checked (variant not translated): {', '.join(unknown)}"
                                                if unknown else ""]))) + ".")
    if result["skipped"]:
        lines.append("")
        lines.append("Skipped: " + "; ".join(f"{j} ({r})" for j, r in result["skipped"].items()) + ".")
    lines.append(f"\nBLEU: {result['bleu_signature']}" if result["bleu_signature"] else "")
    return "\n".join(lines).rstrip() + "\n"


def plot(result: Dict[str, Any], out: Path) -> Optional[Path]:
    """``payoff.png``: mean BLEU ± sd over seeds against the levels' mean τ, the baseline's mean as a line; None
    when no level has a translation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(lv["mean_tau"], lv["mean"], lv["sd"] or 0.0, key) for key, lv in result["levels"].items()
              if lv["mean"] is not None]
    if not points:
        return None
    def runs(n: int) -> str:
        return f"{n} run" + ("s" if n != 1 else "")

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], marker="o",
                capsize=3, label=f"XL PE, test positions part way to the oracle (mean ± sd, "
                                 f"{runs(max(lv['runs'] for lv in result['levels'].values()))})")
    for tau, mean, _, key in points:
        ax.annotate(f"α={key}", (tau, mean), textcoords="offset points", xytext=(4, -12), fontsize=8)
    base = result["baseline"]
    if base:
        ax.axhline(base["mean"], color="grey", linestyle="--", label=f"baseline, mean ({runs(base['runs'])})")
    beam = result.get("beam_size")
    ax.set(xlabel="mean Kendall τ of the test positions (per sentence, eflomal links)",
           ylabel="test BLEU" + (f" (beam {beam})" if beam else ""))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120, metadata={"Software": None})
    plt.close(fig)
    return out


def write_outputs(workdir: Path, result: Dict[str, Any]) -> List[Path]:
    """``payoff.json``, ``payoff.md`` and (with a translated level) ``payoff.png`` in ``workdir``."""
    js, md = workdir / "payoff.json", workdir / "payoff.md"
    js.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown(result), encoding="utf-8")
    png = plot(result, workdir / "payoff.png")
    return [js, md] + ([png] if png else [])
