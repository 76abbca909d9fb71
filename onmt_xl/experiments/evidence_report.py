"""The convergence study's verdict, from the work directory of ``onmt-xl evidence --stage main``.

Per system: test and validation BLEU and chrF as mean ± sd over its seed runs, trainable parameters (buffers
apart), and BLEU on the *novel* test pairs (those whose reference is not a training target); the number of test
pairs whose *source* is a training source verbatim is stated beside it (novelty is by the reference). Per comparison
with the baseline: Δ test BLEU with the 95 % interval of the seed-pooled paired bootstrap
(:func:`onmt_xl.experiments.stats.seed_pooled_bootstrap`, seed recorded), its p-value and the Holm-corrected
p-value within its family of comparisons (fixed in advance by the caller; the oracle rows, each sweep and the
preorderer rows are families of their own). A verdict says "helps" or "hurts" only where the
corrected p-value is below ``alpha``. A run whose training was resumed other than exactly (``done.json``'s
``resumed_exactly`` false) saw another data order: it is listed and left out of the statistics.
What a better preorderer buys: Combination trained with preorderers of other quality, and translated with
oracle indices, each against Combination with the study's preorderer (:func:`preorder_quality`). Where the gain
would be, if anywhere: each XL variant against the baseline on the more and the less reordered half of the test
pairs (:func:`by_reordering`). Ding et al. 2020 Tab. 3: the attention AER on the gold alignment set of the runs
``--stage aer`` translated it with, Δ AER against the baseline with its own bootstrap (:func:`attention_alignment`).

The test split is read once per finished model here; every choice (steps, options) was made before, on the
validation and tuning splits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from onmt_xl.experiments import stats
from onmt_xl.experiments.curve import plateau_step, plot_curves, read_curve
from onmt_xl.experiments.evidence_markdown import XL_VARIANTS, markdown
from onmt_xl.experiments.jobs import resolved_cpu
from onmt_xl.experiments.paper_figures import DING_TAB2_JAEN, gain
from onmt_xl.experiments.stock import read_lines

SPLITS = ("test", "valid")


@dataclass
class Run:
    """One finished model: a system trained with one seed, its translations of the splits."""

    job: str
    system: str
    seed: int
    hyps: Dict[str, List[str]]
    params: Optional[int] = None
    buffers: Optional[int] = None
    resumed_exactly: Optional[bool] = True
    info: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sweep:
    """One setting of one system varied over runs of a single seed (τ sweep, noise attack): ``points`` are
    ``(setting, job name)`` in order, the default setting's run (``default``, a job name) among them."""

    title: str
    setting: str
    points: Sequence[Tuple[str, str]]
    default: str


def references(workdir: Path) -> Dict[str, List[str]]:
    """The references of the scored splits, ``{"test": ..., "valid": ...}``."""
    data = workdir / "data"
    return {"test": read_lines(data / "test.ref"), "valid": read_lines(data / "valid.tgt")}


def novel_indices(refs: Sequence[str], train_targets: Sequence[str]) -> List[int]:
    """Indices of the references that do not occur verbatim (whitespace-normalised) among the training targets."""
    seen = {" ".join(t.split()) for t in train_targets}
    return [i for i, r in enumerate(refs) if " ".join(r.split()) not in seen]


def seen_source_indices(test_sources: Sequence[str], train_sources: Sequence[str]) -> List[int]:
    """Indices of the test sources that occur verbatim (whitespace-normalised) among the training sources: pairs
    whose input the models saw in training, although their reference may be novel (:func:`novel_indices`)."""
    seen = {" ".join(t.split()) for t in train_sources}
    return [i for i, s in enumerate(test_sources) if " ".join(s.split()) in seen]


def read_run(jd: Path, system: str, seed: int, needs: Sequence[str] = SPLITS) -> Optional[Run]:
    """The run in job directory ``jd`` once finished (``done.json``, each split of ``needs`` translated); the
    translation with oracle XL indices (``hyp.oracle``) too where there is one."""
    if not (jd / "done.json").exists() or not all((jd / f"hyp.{s}").exists() for s in needs):
        return None
    info = json.loads((jd / "done.json").read_text(encoding="utf-8"))
    if "cpu" not in info and (info.get("device") or "cpu") == "cpu" and (jd / "train.log").exists():
        info["cpu"] = resolved_cpu((jd / "train.log").read_text(encoding="utf-8"))  # recorded since 2026-12-02
    hyps = {s: read_lines(jd / f"hyp.{s}") for s in (*SPLITS, "oracle") if (jd / f"hyp.{s}").exists()}
    return Run(jd.name, system, seed, hyps, info.get("parameters"), info.get("buffers"),
               info.get("resumed_exactly", True) is not False, info)


def seed_runs(workdir: Path, job: str, system: str, seeds: Sequence[int],
              needs: Sequence[str] = SPLITS) -> List[Run]:
    """The finished runs ``jobs/JOB_sSEED`` of ``system`` over ``seeds``, in seed order (:func:`read_run`)."""
    runs = (read_run(workdir / "jobs" / f"{job}_s{seed}", system, seed, needs) for seed in seeds)
    return [run for run in runs if run is not None]


def collect_runs(workdir: Path, systems: Sequence[str], seeds: Sequence[int]) -> Dict[str, List[Run]]:
    """The finished runs of each system (``jobs/SYSTEM_sSEED``)."""
    return {system: runs for system in systems if (runs := seed_runs(workdir, system, system, seeds))}


def preorder_runs(workdir: Path, pairs: int) -> List[Run]:
    """The finished Combination runs whose preorderer was trained on the first ``pairs`` training pairs."""
    runs = []
    for jd in sorted((workdir / "jobs").glob(f"combination_pre{pairs}_s*")):
        run = read_run(jd, "combination", int(jd.name.rsplit("_s", 1)[1]))
        if run is not None:
            runs.append(run)
    return runs


def _scores(hyps: List[str], refs: List[str]) -> Dict[str, float]:
    import sacrebleu

    # force: the study scores tokenized text (as the curve stage does), so sacrebleu's detokenization warning is noise
    return {"bleu": sacrebleu.corpus_bleu(hyps, [refs], force=True).score,
            "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score}


def _mean_sd(values: List[float]) -> Dict[str, Any]:
    mean, sd = stats.mean_sd(values)
    return {"mean": mean, "sd": sd, "values": values}


def verdict(delta: float, p_holm: float, alpha: float) -> str:
    if p_holm < alpha:
        return "helps" if delta > 0 else "hurts"
    return "no evidence either way"


def preorder_quality(workdir: Path, pairs: Sequence[int], combination: List[Run], refs: List[str], n_samples: int,
                     seed: int, alpha: float) -> List[Dict[str, Any]]:
    """Combination's test BLEU against its preorderer's tau (tuning split and test), for preorderers trained on
    the first N of ``pairs`` training pairs, on all of them (``combination``'s runs), and with oracle indices.
    Each row but the study's (all pairs) is compared with it: Δ test BLEU with its seed-pooled bootstrap
    interval, Holm over these rows (a family of their own: what a better or worse preorderer buys, not whether XL
    PE helps), Δ test tau and Δ BLEU per +0.01 test tau."""
    def tau(name: str) -> Dict[str, Any]:
        path = workdir / name
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def row(name: str, tune_tau, test_tau, runs: List[Run], split: str = "test"):
        runs = [r for r in runs if split in r.hyps and r.resumed_exactly]
        hyps = [r.hyps[split] for r in runs]
        return {"preorderer": name, "tune_tau": tune_tau, "test_tau": test_tau, "seeds": [r.seed for r in runs],
                "test_bleu": _mean_sd([_scores(h, refs)["bleu"] for h in hyps]) if hyps else None}, hyps

    n_train = len(read_lines(workdir / "data" / "train.tgt"))
    smaller = [row(f"first {n:,} pairs", scores.get("tune", {}).get("tau"), scores.get("tau"),
                   preorder_runs(workdir, n))
               for n, scores in ((n, tau(f"preorderer_{n}.json")) for n in pairs)]
    scores = tau("preorderer.json")
    ref, ref_hyps = row(f"all {n_train:,} pairs", scores.get("tune", {}).get("tau"), scores.get("tau"), combination)
    oracle = row("oracle (test-side links)", None, scores.get("oracle_tau"), combination, "oracle")
    family = {}
    for other, hyps in ([*smaller, oracle] if ref_hyps else []):
        if not hyps:
            continue
        vs = family[other["preorderer"]] = other["vs_all"] = compare(hyps, ref_hyps, refs, n_samples, seed)
        if other["test_tau"] is not None and ref["test_tau"] is not None and other["test_tau"] != ref["test_tau"]:
            vs["delta_tau"] = other["test_tau"] - ref["test_tau"]
            vs["bleu_per_0_01_tau"] = vs["delta"] / vs["delta_tau"] / 100
    correct(family, alpha)
    return [r for r, _ in smaller] + [ref, oracle[0]]


def monotone_taus(workdir: Path) -> Optional[List[float]]:
    """Per test pair, Kendall tau of the source order against the target order of the pair's eflomal links
    (``align/test.gdfa``): 1 for a monotone pair, lower the more it reorders (1 where fewer than two aligned words
    have distinct ranks). None without the links."""
    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.core.reorder.oracle import kendall_loss, ordered_pairs, target_ranks

    gdfa = workdir / "align" / "test.gdfa"
    if not gdfa.exists():
        return None
    src = [line.split() for line in read_lines(workdir / "data" / "test.src")]
    taus = []
    for words, links in zip(src, read_pharaoh(str(gdfa), [len(w) for w in src])):
        ranks = target_ranks(len(words), links)
        pairs = ordered_pairs(ranks)
        taus.append(1.0 - kendall_loss(range(len(words)), ranks) / pairs if pairs else 1.0)
    return taus


def by_reordering(workdir: Path, kept: Dict[str, List[Run]], baseline: str, refs: List[str], n_samples: int,
                  seed: int, alpha: float) -> Optional[Dict[str, Any]]:
    """Each XL variant against ``baseline`` on the more reordered half of the test pairs (the lower half by
    :func:`monotone_taus`, ties kept in corpus order) and on the other half: Δ test BLEU with the seed-pooled
    bootstrap on each half, Holm over every row of this family. Combination with oracle indices against its
    predicted ones, likewise. Test-side links only place a pair in a half; nothing is chosen on them."""
    import numpy as np

    taus = monotone_taus(workdir)
    if taus is None or baseline not in kept or not kept[baseline] or len(taus) != len(refs):
        return None
    order = np.argsort(np.asarray(taus), kind="stable")
    halves = {"more": sorted(order[: len(order) // 2].tolist()), "less": sorted(order[len(order) // 2:].tolist())}

    def on(idx: List[int], runs: List[Run], split: str = "test") -> List[List[str]]:
        return [[r.hyps[split][i] for i in idx] for r in runs]

    pairs = [(key, kept[key], kept[baseline], "test") for key, _ in XL_VARIANTS if kept.get(key)]
    comb = [r for r in kept.get("combination", []) if "oracle" in r.hyps]
    if comb:
        pairs.append(("combination_oracle_vs_predicted", comb, comb, "oracle"))
    family, rows = {}, []
    for name, runs, against, split in pairs:
        row: Dict[str, Any] = {"system": name}
        for half, idx in halves.items():
            family[f"{name} {half}"] = row[half] = compare(on(idx, runs, split), on(idx, against),
                                                           [refs[i] for i in idx], n_samples, seed)
        rows.append(row)
    correct(family, alpha)
    tau = np.asarray(taus)
    return {"median_tau": float(np.median(tau)),
            "halves": {h: {"sentences": len(idx), "mean_tau": float(tau[idx].mean())} for h, idx in halves.items()},
            "rows": rows}


#: Ding et al. 2020 Tab. 2, ja→en: each XL variant's gain over the Transformer, the sizes the decisive design resolves
PAPER_GAINS = {system: gain(DING_TAB2_JAEN, system) for system in ("combination", "headxl", "inxl")}
#: reports/PREREG_decisive.md: the half-width the design was sized for, and the primary comparison
TARGET_HALF_WIDTH = 0.50
PRIMARY = "combination"
#: reports/PREREG_decisive.md: the training steps S, fixed whatever the plateau check on the new split gives
PREREGISTERED_STEPS = 8000
#: the preregistration a decisive reading cites unless told another (an addendum: ``--prereg``)
DEFAULT_PREREG = "reports/PREREG_decisive.md"
#: reports/PREREG_decisive.md's precision rule: seeds per system once the primary half-width exceeds the target at 5
EXTENDED_SEEDS = 8


def decision(low: float, high: float, gain: float) -> List[str]:
    """reports/PREREG_decisive.md's decision rule on a 95 % interval [``low``, ``high``] of Δ BLEU and the paper's
    ``gain``: ``helps`` (low > 0; "by less than the paper reports" if high < gain as well), else ``hurts`` (high < 0),
    with "an effect of the paper's size is excluded" wherever high < gain; ``inconclusive`` otherwise."""
    if low > 0:
        return ["helps" + (", by less than the paper reports" if high < gain else "")]
    out = ["hurts"] if high < 0 else []
    if high < gain:
        out.append(f"an effect of the paper's size (+{gain:.2f} BLEU) is excluded")
    return out or ["inconclusive"]


def plateau_check(curves: Dict[str, List[Dict[str, Any]]],
                  steps: int = PREREGISTERED_STEPS) -> Optional[Dict[str, Any]]:
    """The decisive design's diagnostic plateau check (``curves``: the seed-1 jobs' validation points past
    ``steps``): the step rule's answer on the new split (:func:`plateau_step`, None when not reached), the last
    step scored, and per curve the validation BLEU gained from ``steps`` to its last point. None without curves."""
    if not curves:
        return None
    late = {}
    for name, rows in curves.items():
        at = next((r["bleu"] for r in rows if r["step"] == steps), None)
        if at is not None and rows[-1]["step"] > steps:
            late[name] = {"to_step": rows[-1]["step"], "gain": rows[-1]["bleu"] - at}
    return {"steps": steps, "rule_step": plateau_step(curves),
            "last_step": min(rows[-1]["step"] for rows in curves.values() if rows), "late_gain": late}


def decisive_design(workdir: Path, kept: Dict[str, List[Run]], baseline: str, comparisons: Dict[str, Dict[str, Any]],
                    refs: List[str], n_samples: int, seed: int,
                    curves: Optional[Dict[str, List[Dict[str, Any]]]] = None,
                    prereg: str = DEFAULT_PREREG) -> Optional[Dict[str, Any]]:
    """The decisive design's reading (a work directory staged with ``--test-from-train``, ``data/carve.json``): per
    XL variant compared with the baseline, the achieved half-width against :data:`TARGET_HALF_WIDTH` and the
    preregistered decision (:func:`decision`; binding for :data:`PRIMARY`, exploratory for the others), as
    description only Δ on the corpus' own test pairs (the first lines) and on the carved ones apart, and the
    diagnostic plateau check on ``curves`` (:func:`plateau_check`). ``extension_pending``: the precision rule
    requires :data:`EXTENDED_SEEDS` seeds and fewer have run, so the reading is interim. ``prereg``: the
    preregistration cited (kept in the reading where it is not :data:`DEFAULT_PREREG`)."""
    carve_file = workdir / "data" / "carve.json"
    if not carve_file.exists() or baseline not in kept:
        return None
    carve = json.loads(carve_file.read_text(encoding="utf-8"))
    given = int(carve["test_given"])
    parts = {"given": list(range(given)), "carved": list(range(given, len(refs)))}

    def on(idx: List[int], runs: List[Run]) -> List[List[str]]:
        return [[r.hyps["test"][i] for i in idx] for r in runs]

    rows = {}
    for system, paper_gain in PAPER_GAINS.items():
        c = comparisons.get(system)
        if c is None or not kept.get(system):
            continue
        half = (c["high"] - c["low"]) / 2
        rows[system] = {"paper_gain": paper_gain, "primary": system == PRIMARY, "half_width": half,
                        "target_met": half <= TARGET_HALF_WIDTH,
                        "decision": decision(c["low"], c["high"], paper_gain),
                        "parts": {name: compare(on(idx, kept[system]), on(idx, kept[baseline]), [refs[i] for i in idx],
                                                n_samples, seed) for name, idx in parts.items() if idx}}
    primary = rows.get(PRIMARY)
    seeds = min(comparisons[PRIMARY]["system_runs"], comparisons[PRIMARY]["baseline_runs"]) if primary else None
    reading = {"carve": carve, "target_half_width": TARGET_HALF_WIDTH, "rows": rows,
               "plateau": plateau_check(curves or {}), "seeds": seeds, "extended_seeds": EXTENDED_SEEDS,
               "extension_pending": bool(primary and not primary["target_met"] and seeds < EXTENDED_SEEDS)}
    return reading if prereg == DEFAULT_PREREG else {**reading, "prereg": prereg}


def resumed_otherwise(workdir: Path) -> List[str]:
    """The finished jobs whose training was resumed other than exactly (another data order): left out."""
    out = []
    for done in sorted((workdir / "jobs").glob("*/done.json")):
        if json.loads(done.read_text(encoding="utf-8")).get("resumed_exactly", True) is False:
            out.append(done.parent.name)
    return out


def learning_curves(workdir: Path) -> Dict[str, List[Dict[str, Any]]]:
    """The validation points of every job that has a ``curve.jsonl`` (``--stage curve-score``)."""
    jobs = workdir / "jobs"
    return {jd.name: read_curve(jd) for jd in sorted(jobs.glob("*")) if (jd / "curve.jsonl").exists()} \
        if jobs.exists() else {}


def compare(system: List[List[str]], baseline: List[List[str]], refs: List[str], n_samples: int,
            seed: int) -> Dict[str, Any]:
    """Δ test BLEU of ``system``'s runs against ``baseline``'s (hypothesis lists, one per seed run): the seed-pooled
    bootstrap's Δ, 95 % interval, p-value and run counts."""
    return _comparison(stats.seed_pooled_bootstrap(system, baseline, refs, n_samples, seed))


def _comparison(cmp) -> Dict[str, Any]:
    """A bootstrap comparison (BLEU or AER) as the report stores it."""
    return {"delta": cmp.delta, "low": cmp.low, "high": cmp.high, "p": cmp.p_value,
            "system_runs": cmp.system_runs, "baseline_runs": cmp.baseline_runs}


def correct(family: Dict[str, Dict[str, Any]], alpha: float,
            words: Callable[[float, float, float], str] = verdict) -> None:
    """Holm's correction over the comparisons of ``family`` (``{name: compare(...)}``), in place, with the verdicts
    that ``words(delta, p_holm, alpha)`` gives."""
    for name, p_holm in stats.holm({k: c["p"] for k, c in family.items()}).items():
        family[name]["p_holm"] = p_holm
        family[name]["verdict"] = words(family[name]["delta"], p_holm, alpha)


def oracle_rows(workdir: Path, systems: Sequence[str], seeds: Sequence[int], kept: Dict[str, List[Run]],
                table: Dict[str, Dict[str, Any]], refs: List[str], n_samples: int, seed: int,
                alpha: float) -> List[Dict[str, Any]]:
    """Each system of ``systems`` trained and tested on oracle XL indices (``jobs/SYSTEM_oracle_sSEED``, the BTG
    oracle of eflomal links: test-side information, an upper bound) against its runs on predicted indices
    (``kept``), with their scores (``table``, the main table's rows) on predicted indices and on oracle indices at
    test time only beside them; Holm over these rows."""
    rows, family = [], {}
    for system in systems:
        runs = [r for r in seed_runs(workdir, f"{system}_oracle", system, seeds, ("oracle",)) if r.resumed_exactly]
        if not runs:
            continue
        main, scored = kept.get(system, []), table.get(system, {})
        row = {"system": system, "seeds": [r.seed for r in runs],
               "oracle_trained": _mean_sd([_scores(r.hyps["oracle"], refs)["bleu"] for r in runs]),
               "predicted": scored.get("test_bleu"), "oracle_at_test": scored.get("oracle_bleu")}
        if main:
            family[system] = row["vs_predicted"] = compare([r.hyps["oracle"] for r in runs],
                                                           [r.hyps["test"] for r in main], refs, n_samples, seed)
        rows.append(row)
    correct(family, alpha)
    return rows


def _aer_verdict(delta: float, p_holm: float, alpha: float) -> str:
    if p_holm < alpha:
        return "lower AER" if delta < 0 else "higher AER"
    return "no evidence either way"


def attention_alignment(workdir: Path, systems: Sequence[str], seeds: Sequence[int], baseline: str, n_samples: int,
                        seed: int, alpha: float, variant: str = "gold_align") -> Optional[Dict[str, Any]]:
    """Ding et al. 2020 Tab. 3 (``--stage aer``'s ``jobs/SYSTEM_sSEED/hyp.VARIANT``): ``gold_align`` against the gold
    set, ``test_align`` against the test pairs' eflomal links. Per system AER, precision and recall (fractions) as
    mean ± sd over its seed runs; the chance rows and the share of unknown tokens
    (:func:`onmt_xl.experiments.scoring.aer_references`); per system Δ AER against ``baseline`` with the seed-pooled
    paired bootstrap over the sentences (:func:`onmt_xl.experiments.scoring.aer_bootstrap`, the report's samples and
    seed), Holm over these comparisons as a family of their own. None without such a run. Runs resumed other than
    exactly are left out, as everywhere in the report."""
    from onmt_xl.experiments.scoring import aer_bootstrap, aer_counts, aer_from_counts, aer_references, link_reference

    reference = link_reference(workdir, variant)
    if reference is None:
        return None
    counts: Dict[str, List[Tuple[int, Any]]] = {}
    for system in systems:
        for s in seeds:
            jd = workdir / "jobs" / f"{system}_s{s}"
            if not ((jd / "done.json").exists() and (jd / f"hyp.{variant}").exists()):
                continue
            if json.loads((jd / "done.json").read_text(encoding="utf-8")).get("resumed_exactly", True) is False:
                continue
            counts.setdefault(system, []).append((s, aer_counts(read_lines(jd / f"hyp.{variant}"), *reference)))
    if not counts:
        return None
    table = {}
    for system, runs in counts.items():
        aer, precision, recall = (list(map(float, x)) for x in zip(*(aer_from_counts(c.sum(axis=0)) for _, c in runs)))
        table[system] = {"aer": _mean_sd(aer), "precision": _mean_sd(precision), "recall": _mean_sd(recall),
                         "seeds": [s for s, _ in runs]}
    family: Dict[str, Dict[str, Any]] = {}
    if baseline in counts:
        for system, runs in counts.items():
            if system == baseline:
                continue
            cmp = aer_bootstrap([c for _, c in runs], [c for _, c in counts[baseline]], n_samples, seed)
            family[system] = _comparison(cmp)
        correct(family, alpha, _aer_verdict)
    refs = aer_references(workdir, (variant,)).get(variant, {})
    return {"reference": variant, "systems": table, "comparisons": family,
            "chance": {name: refs[name] for name in ("random", "diagonal") if name in refs},
            "sentences": len(reference[0]),
            "unknown_tokens": {side: refs.get(f"{side}_oov") for side in ("src", "tgt")},
            "src_words_per_sentence": refs.get("src_words_per_sentence")}


#: the family of :func:`pair_rows`, Holm-corrected apart
ORDERINGS_FAMILY = "orderings among systems"
#: the orderings among systems the papers claim, "A scores above B" (Ding et al. 2020 Tab. 2 and 4, Chen et al.
#: 2019a Tab. 3, Chen et al. 2020 Tab. 1 and Fig. 2; onmt_xl.experiments.papers quotes their figures), each measured
#: by the report where both sides have finished runs; ``SYSTEM_oracle``: trained and tested on oracle indices
ORDERINGS = (
    ("combination", "inxl"), ("combination", "headxl"),
    ("encoder_free", "encoder_free_none"), ("encoder_free_relative", "encoder_free"),
    ("encoder_free_inxl", "encoder_free"), ("encoder_free_inxl", "lstm"),
    ("both_re", "enc_re"), ("refsr", "exgre"), ("prereorder_oracle", "baseline"),
)


#: the orderings read against a system trained on to its own plateau (onmt_xl.experiments.plateau; the LSTM of Tab. 4,
#: reports/PREREG_decisive_baselines.md, Deviations): a family of their own, outside the preregistered orderings
PLATEAU_ORDERINGS = (("encoder_free_inxl", "lstm_plateau"),)
PLATEAU_FAMILY = "against a system trained on to its plateau (deviation)"


def plateau_states(workdir: Path, refs: Dict[str, List[str]]) -> Dict[str, Dict[str, Any]]:
    """Where each system trained on to its plateau stands (``plateau_SYSTEM.json``, by system), with the validation
    and test BLEU of its finished, exactly resumed runs (``jobs/SYSTEM_plateau_sSEED``) once translated."""
    out = {}
    for path in sorted(workdir.glob("plateau_*.json")):
        state = json.loads(path.read_text(encoding="utf-8"))
        system = path.stem[len("plateau_"):]
        runs = [r for r in seed_runs(workdir, f"{system}_plateau", system, state.get("seeds") or ())
                if r.resumed_exactly]
        if runs:
            state["runs"] = {"seeds": [r.seed for r in runs], "precision": sorted({_kernels(r.info) for r in runs}),
                             **{f"{split}_bleu": _mean_sd([_scores(r.hyps[split], refs[split])["bleu"] for r in runs])
                                for split in SPLITS}}
        out[system] = state
    return out


def pair_name(a: str, b: str) -> str:
    """The key of the ordering "``a`` scores above ``b``" in the report's ``pairs``."""
    return f"{a} > {b}"


def side_runs(workdir: Path, side: str, seeds: Sequence[int]) -> List[List[str]]:
    """The test translations of ``side``'s finished, exactly resumed runs, one list per seed; ``SYSTEM_oracle`` is
    that system trained and translated on oracle XL indices (``jobs/SYSTEM_oracle_sSEED``, its ``oracle``
    translation: test-side information)."""
    oracle = side.endswith("_oracle")
    split = "oracle" if oracle else "test"
    system = side[: -len("_oracle")] if oracle else side
    return [run.hyps[split] for run in seed_runs(workdir, side, system, seeds, (split,)) if run.resumed_exactly]


def among(pairs: Sequence[Tuple[str, str]], systems: Sequence[str]) -> List[Tuple[str, str]]:
    """The pairs of ``pairs`` whose two sides (``SYSTEM_oracle``: ``SYSTEM``) are of ``systems``: a report measures
    orderings among the systems it reports only (a secondary left out until all its runs are finished stays out of
    them too); the declared ``orderings`` stay whole, so the family's rows read as partial meanwhile."""
    return [(a, b) for a, b in pairs if all(side.removesuffix("_oracle") in systems for side in (a, b))]


def pair_rows(workdir: Path, pairs: Sequence[Tuple[str, str]], seeds: Sequence[int], refs: List[str], n_samples: int,
              seed: int, alpha: float, family_name: str = ORDERINGS_FAMILY) -> Dict[str, Dict[str, Any]]:
    """The orderings the papers claim, "A scores above B" for each ``(A, B)`` of ``pairs`` whose two sides have
    finished runs: Δ test BLEU = A − B with the seed-pooled bootstrap (:func:`compare`), Holm over the orderings
    found, a family of their own (``family_name``)."""
    family: Dict[str, Dict[str, Any]] = {}
    for a, b in pairs:
        ra, rb = side_runs(workdir, a, seeds), side_runs(workdir, b, seeds)
        if ra and rb:
            family[pair_name(a, b)] = {"a": a, "b": b, "family": family_name, **compare(ra, rb, refs, n_samples, seed)}
    correct(family, alpha)
    return family


def sweep_rows(workdir: Path, sweep: Sweep, refs: Dict[str, List[str]], n_samples: int, seed: int,
               alpha: float) -> Dict[str, Any]:
    """A sweep's finished points: validation and test BLEU, Δ test BLEU against the default setting's run
    (paired bootstrap over sentences; Holm over the sweep's points) and how each trained (:func:`_kernels`)."""
    runs = {name: read_run(workdir / "jobs" / name, name, 0) for _, name in sweep.points}
    default = runs.get(sweep.default)
    points, family = [], {}
    for setting, name in sweep.points:
        run = runs[name]
        if run is None or not run.resumed_exactly:
            continue
        point = {"setting": setting, "job": name, "default": name == sweep.default,
                 "valid_bleu": _scores(run.hyps["valid"], refs["valid"])["bleu"],
                 "test_bleu": _scores(run.hyps["test"], refs["test"])["bleu"], "training": _kernels(run.info)}
        if default is not None and default.resumed_exactly and name != sweep.default:
            family[name] = point["vs_default"] = compare([run.hyps["test"]], [default.hyps["test"]], refs["test"],
                                                         n_samples, seed)
        points.append(point)
    correct(family, alpha)
    return {"title": sweep.title, "setting": sweep.setting, "default_job": sweep.default, "points": points}


def build_report(workdir: Path, systems: Sequence[str], seeds: Sequence[int], baseline: str = "baseline",
                 n_samples: int = 1000, seed: int = stats.DEFAULT_SEED, alpha: float = 0.05,
                 preorder_pairs: Sequence[int] = (), families: Optional[Sequence[Tuple[str, Sequence[str]]]] = None,
                 oracle_systems: Sequence[str] = (), sweeps: Sequence[Sweep] = (),
                 orderings: Sequence[Tuple[str, str]] = (), prereg: str = DEFAULT_PREREG,
                 plateau_orderings: Sequence[Tuple[str, str]] = (),
                 declared_families: Optional[Sequence[Tuple[str, Sequence[str]]]] = None) -> Dict[str, Any]:
    """Everything the report says, as JSON-able data (see the module docstring). ``families``: the families of
    comparisons with the baseline, ``(name, systems)``, each corrected apart (default: one of every system);
    ``declared_families``: the families as declared in advance, whole (default ``families``): a member left out of
    this report (its runs not finished) still belongs to its family, which a later report corrects over;
    ``oracle_systems``: systems also trained on oracle indices; ``sweeps``: single-seed sweeps of a setting;
    ``orderings``: the pairs ``(A, B)`` whose "A above B" is measured (:func:`pair_rows`); ``prereg``: the
    preregistration a decisive reading cites (:func:`decisive_design`); ``plateau_orderings``: pairs against a
    system trained on to its plateau, a family of their own (:data:`PLATEAU_ORDERINGS`)."""
    refs = references(workdir)
    novel = novel_indices(refs["test"], read_lines(workdir / "data" / "train.tgt"))
    seen_sources = seen_source_indices(read_lines(workdir / "data" / "test.src"),
                                       read_lines(workdir / "data" / "train.src"))
    runs = collect_runs(workdir, systems, seeds)
    kept = {s: [r for r in rs if r.resumed_exactly] for s, rs in runs.items()}
    left_out = resumed_otherwise(workdir)
    table = {}
    for system, rs in kept.items():
        if not rs:
            continue
        row: Dict[str, Any] = {"seeds": [r.seed for r in rs], "params": rs[0].params, "buffers": rs[0].buffers,
                               "precision": sorted({_kernels(r.info) for r in rs})}
        for split in SPLITS:
            scores = [_scores(r.hyps[split], refs[split]) for r in rs]
            for metric in ("bleu", "chrf"):
                row[f"{split}_{metric}"] = _mean_sd([s[metric] for s in scores])
        oracle = [_scores(r.hyps["oracle"], refs["test"])["bleu"] for r in rs if "oracle" in r.hyps]
        row["oracle_bleu"] = _mean_sd(oracle) if oracle else None
        row["novel_bleu"] = _mean_sd([_scores([r.hyps["test"][i] for i in novel], [refs["test"][i] for i in novel])
                                      ["bleu"] for r in rs])
        table[system] = row
    comparisons: Dict[str, Dict[str, Any]] = {}
    if families is None:
        families = [("comparisons", [s for s in systems if s != baseline])]
    if baseline in table:
        for name, members in families:
            family = {s: {"family": name, **compare([r.hyps["test"] for r in kept[s]],
                                                    [r.hyps["test"] for r in kept[baseline]], refs["test"],
                                                    n_samples, seed)}
                      for s in members if s in table and s != baseline}
            correct(family, alpha)
            comparisons.update(family)
    quality = preorder_quality(workdir, preorder_pairs, kept.get("combination", []), refs["test"], n_samples, seed,
                               alpha)
    curves = learning_curves(workdir)
    spread_file = workdir / "preorder_spread.jsonl"  # tools/study/preorder_spread.py
    spread_rows = [json.loads(x) for x in spread_file.read_text().splitlines()] if spread_file.exists() else []
    spread = {f"{split}_tau": _mean_sd([r[f"{split}_tau"] for r in spread_rows]) for split in ("tune", "test")
              if spread_rows and all(f"{split}_tau" in r for r in spread_rows)}
    return {"workdir": workdir.name, "baseline": baseline, "systems": table, "comparisons": comparisons,
            "preorder_quality": quality, "preorder_spread": spread, "curves": curves,
            "plateau_step": plateau_step(curves) if curves else None,
            "oracle_rows": oracle_rows(workdir, oracle_systems, seeds, kept, table, refs["test"], n_samples, seed,
                                      alpha),
            "sweeps": [sweep_rows(workdir, sw, refs, n_samples, seed, alpha) for sw in sweeps],
            "by_reordering": by_reordering(workdir, kept, baseline, refs["test"], n_samples, seed, alpha),
            "pairs": pair_rows(workdir, among(orderings, systems), seeds, refs["test"], n_samples, seed, alpha),
            "plateau_pairs": pair_rows(workdir, plateau_orderings, seeds, refs["test"], n_samples, seed, alpha,
                                       PLATEAU_FAMILY),
            "plateaus": plateau_states(workdir, refs),
            "decisive": decisive_design(workdir, kept, baseline, comparisons, refs["test"], n_samples, seed, curves,
                                        prereg),
            "attention_aer": attention_alignment(workdir, systems, seeds, baseline, n_samples, seed, alpha),
            "attention_aer_test": attention_alignment(workdir, systems, seeds, baseline, n_samples, seed, alpha,
                                                      "test_align"),
            "family_members": {name: list(members) for name, members in families},
            "families_declared": {name: list(members) for name, members in
                                  (families if declared_families is None else declared_families)},
            "orderings": [list(pair) for pair in orderings],
            "left_out": left_out, "test_sentences": len(refs["test"]), "novel_sentences": len(novel),
            "seen_source_sentences": len(seen_sources),
            "valid_sentences": len(refs["valid"]), "bootstrap": {"samples": n_samples, "seed": seed},
            "alpha": alpha}


def _kernels(info: Dict[str, Any]) -> str:
    """A run's training precision, the CPU it ran on and its dropout masks, each per attempt and where recorded
    (:func:`~onmt_xl.experiments.jobs.resolved_cpu`): "bf16 (AVX512-BF16); fast masks"; a run trained on a GPU
    names it: "fp32 on NVIDIA H200; stock masks"."""
    mask, device, cpu = info.get("dropout_mask"), info.get("device") or "cpu", info.get("cpu")
    where = (f" ({cpu})" if cpu and cpu != "?" else "") if device == "cpu" else f" on {device}"
    return f"{info.get('precision') or '?'}{where}" + (f"; {mask} masks" if mask else "")


def write_report(workdir: Path, out: Path, **kwargs) -> Dict[str, Any]:
    """Write ``out`` (Markdown) and ``out`` with suffix ``.json``; return the report."""
    report = build_report(workdir, **kwargs)
    out.parent.mkdir(parents=True, exist_ok=True)
    if report["curves"] and plot_curves(report["curves"], out.with_name(out.stem + "_curve.png")):
        report["curve_plot"] = out.stem + "_curve.png"
    out.write_text(markdown(report), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report
