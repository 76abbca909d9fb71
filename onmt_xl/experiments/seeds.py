"""``--seeds N`` of ``onmt-xl demo`` and ``onmt-xl pipeline``: every system trained N times, with N training seeds,
and the answer to "does it help?" over them.

A system's first run is named after it (``jobs/SYSTEM/``; Eole's ``eole/models/SYSTEM/``) and trains with the study's
seed (:data:`onmt_xl.experiments.configs.TRAINING`); its k-th run is ``SYSTEM_seedK``, the same model with the seed
k − 1 above it. The runs of every system train together (to the plateau: the rule holds for every run). The
summary gives each system's mean ± sd of test BLEU and chrF over its runs; Δ against the baseline is the difference
of the mean BLEUs, its 95 % interval and p from the seed-pooled paired bootstrap
(:func:`onmt_xl.experiments.stats.seed_pooled_bootstrap`: each replicate draws the test sentences, the same for
every run, and each side's runs with replacement), p Holm-adjusted over the systems compared. The closing commands
(and Eole's ``serve.yaml``) name each system's run best on the validation pairs (:func:`served_runs`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

#: the bootstrap's replicates and seed (sacrebleu's paired bootstrap uses as many)
N_SAMPLES = 1000
BOOTSTRAP_SEED = 12345


def run_names(systems: Sequence[str], seeds: int, first_seed: int) -> Dict[str, Tuple[str, int]]:
    """``{run name: (system, training seed)}`` for ``seeds`` runs of each of ``systems``, the first runs first."""
    runs: Dict[str, Tuple[str, int]] = {}
    for k in range(1, seeds + 1):
        for system in systems:
            runs[system if k == 1 else f"{system}_seed{k}"] = (system, first_seed + k - 1)
    return runs


def describe(seeds: int, first_seed: int) -> str:
    """The line a run with ``--seeds`` opens with; "" for one seed."""
    if seeds <= 1:
        return ""
    later = "SYSTEM_seed2" if seeds == 2 else f"SYSTEM_seed2 to SYSTEM_seed{seeds}"
    return (f"seeds: every system trains {seeds} times (--seeds), with the training seeds {first_seed}-"
            f"{first_seed + seeds - 1}: as SYSTEM, then {later}; the summary pools the runs of each system")


_RUN = re.compile(r"^(.+)_seed(\d+)$")


def split_run(name: str) -> Tuple[str, int]:
    """``(system, k)`` of the k-th run ``name`` (:func:`run_names`: ``SYSTEM`` is the first, ``SYSTEM_seedK``)."""
    m = _RUN.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, 1)


def runs_by_system(runs: Dict[str, Tuple[str, int]]) -> Dict[str, List[str]]:
    """``{system: [its run names, the first first]}``."""
    out: Dict[str, List[str]] = {}
    for name, (system, _) in runs.items():
        out.setdefault(system, []).append(name)
    return out


def served_runs(runs: Dict[str, Tuple[str, int]], workdir: Path, jobs: str = "jobs") -> Dict[str, str]:
    """``{system: its run the closing commands name and Eole's server serves}`` for the systems with several runs: the
    one whose final model scores highest on the validation pairs
    (:func:`onmt_xl.experiments.usage.best_on_validation`; ``workdir`` and ``jobs`` as there), else the first."""
    from onmt_xl.experiments.usage import best_on_validation

    return {system: best_on_validation(names, Path(workdir), jobs) or names[0]
            for system, names in runs_by_system(runs).items() if len(names) > 1}


def seed_results(res: Dict[str, Any], runs: Dict[str, Tuple[str, int]], hyp: Callable[[str], Path], workdir: Path,
                 results: Path) -> None:
    """Add to ``res`` (:func:`onmt_xl.experiments.scoring.collect`'s shape) and to its file ``results``
    ``seed_runs``, ``{system: {"runs": [names], "seeds": [training seeds]}}``, and where there is a baseline
    ``seed_pooled``, ``{system: Δ mean BLEU against it ("delta") with "low", "high" (95 %), "p", the runs of each
    side and the bootstrap's samples and seed}``, and each run's own comparison made against the baseline's run of
    its seed (:func:`pair_runs`). ``hyp(name)``: a run's test translation, scored against ``workdir``'s test
    references as :func:`~onmt_xl.experiments.scoring.text_scores` scores it."""
    from onmt_xl.experiments.scoring import bleu_tokenizer_of, tokenization_of
    from onmt_xl.experiments.stats import seed_pooled_bootstrap
    from onmt_xl.experiments.stock import read_lines

    grouped = runs_by_system(runs)
    res["seed_runs"] = {s: {"runs": names, "seeds": [runs[n][1] for n in names]} for s, names in grouped.items()}
    if "baseline" in grouped:
        refs = read_lines(Path(workdir) / "data" / "test.ref")
        tokenize = bleu_tokenizer_of(tokenization_of(workdir))
        hyps = {n: read_lines(hyp(n)) for n in runs}
        res["seed_pooled"] = {}
        for system, names in grouped.items():
            if system == "baseline":
                continue
            c = seed_pooled_bootstrap([hyps[n] for n in names], [hyps[n] for n in grouped["baseline"]], refs,
                                      N_SAMPLES, BOOTSTRAP_SEED, tokenize=tokenize)
            res["seed_pooled"][system] = dict(delta=c.delta, low=c.low, high=c.high, p=c.p_value, runs=c.system_runs,
                                              baseline_runs=c.baseline_runs, n_samples=c.n_samples, seed=c.seed)
        pair_runs(res, runs, hyps, refs, tokenize)
    Path(results).write_text(json.dumps(res, indent=2))


#: the keys of a run's test scores that compare it with one baseline run (:func:`onmt_xl.experiments.scoring.collect`)
PAIRED_KEYS = ("p_bootstrap", "sign_better", "sign_worse", "p_sign")


def pair_runs(res: Dict[str, Any], runs: Dict[str, Tuple[str, int]], hyps: Dict[str, List[str]], refs: List[str],
              tokenize: str) -> None:
    """Each run's comparison with one baseline run in ``res["jobs"][run]["variants"]["test"]``: the scoring shared with
    single runs compares every run with the baseline's first; here a run is compared with the baseline's run of
    the same training seed (``"baseline_run"``), sacrebleu's paired bootstrap (its ``p_bootstrap``) and, where the
    entry had one, the sign test. The baseline's own runs get none: they are the references."""
    from onmt_xl.experiments.scoring import paired_bootstrap, sign_test

    by_seed = {seed: name for name, (system, seed) in runs.items() if system == "baseline"}
    against: Dict[str, Dict[str, List[str]]] = {}
    for name, (system, seed) in runs.items():
        test = res.get("jobs", {}).get(name, {}).get("variants", {}).get("test")
        if test is None:
            continue
        signed = "p_sign" in test
        for key in PAIRED_KEYS + ("baseline_run",):
            test.pop(key, None)
        if system != "baseline" and seed in by_seed:
            against.setdefault(by_seed[seed], {})[name] = hyps[name]
            test["baseline_run"] = by_seed[seed]
            if signed:
                st = sign_test(hyps[name], hyps[by_seed[seed]], refs, tokenize=tokenize)
                test.update(sign_better=st.better, sign_worse=st.worse, p_sign=st.p_value)
    for base, others in against.items():
        for name, p in paired_bootstrap(others, hyps[base], refs, N_SAMPLES, BOOTSTRAP_SEED, tokenize).items():
            res["jobs"][name]["variants"]["test"]["p_bootstrap"] = p
