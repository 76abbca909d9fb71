"""Statistics over seeds and sentences: mean ± sd, a seed-pooled paired bootstrap of ΔBLEU, Holm's correction, and
the two readings of a bootstrap interval the papers' report uses (:func:`with_seed_variance`, :func:`holm_interval`).

A comparison of two systems trained with several seeds each has two sources of chance: which sentences the
test set holds, and which seed a model was trained with. :func:`seed_pooled_bootstrap` resamples both in
every replicate: the test sentences (the same draw for every model, so the comparison stays paired) and, per
system, its seed runs (with replacement). Δ is the mean corpus BLEU of the system's runs minus that of the
baseline's. The random draws come from one ``numpy.random.Generator`` seeded with ``seed``, so a p-value
reproduces exactly from the recorded seed.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from statistics import NormalDist

import numpy as np

#: the bootstrap seed when none is given; the report records the one it used
DEFAULT_SEED = 12345
#: a side with fewer seed runs than this has its seed variance taken from the pooled estimate
#: (:func:`with_seed_variance`); the decisive design's precision rule settled on 8 seeds per system
FULL_SEEDS = 8


def mean_sd(values: Sequence[float]) -> Tuple[float, Optional[float]]:
    """Mean and sample standard deviation (None for a single value)."""
    if not values:
        raise ValueError("mean_sd of no values")
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else None)


def holm(p_values: Mapping[str, float]) -> Dict[str, float]:
    """Holm–Bonferroni adjusted p-values of a family of tests (step-down, kept monotone, capped at 1)."""
    order = sorted(p_values, key=lambda k: p_values[k])
    m, running, out = len(order), 0.0, {}
    for i, name in enumerate(order):
        running = max(running, min(1.0, (m - i) * p_values[name]))
        out[name] = running
    return out


def bleu_statistics(hyps: Sequence[str], refs: Sequence[str], tokenize: str = "13a") -> np.ndarray:
    """sacrebleu's per-sentence BLEU statistics, ``(sentences, 2 + 2·4)``: hypothesis and reference length, then
    matching and total n-grams for n = 1..4 (the same tokenization as ``sacrebleu.corpus_bleu``, its ``tokenize``).
    Read-only and memoised: a report compares each run with several others, and tokenizing dominates."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses for {len(refs)} references")
    return _bleu_statistics(tuple(hyps), tuple(refs), tokenize)


@functools.lru_cache(maxsize=256)
def _bleu_statistics(hyps: Tuple[str, ...], refs: Tuple[str, ...], tokenize: str) -> np.ndarray:
    from sacrebleu.metrics import BLEU

    # force: tokenized text is scored on purpose; it only silences sacrebleu's detokenization warning
    bleu = BLEU(tokenize=tokenize, force=True)
    stats = np.asarray(bleu._extract_corpus_statistics(list(hyps), [list(refs)]), dtype=np.int64)
    stats.setflags(write=False)
    return stats


@functools.lru_cache(maxsize=1)
def _bleu_scorer():
    from sacrebleu.metrics import BLEU

    return BLEU()


def bleu_from_statistics(stats: np.ndarray) -> float:
    """Corpus BLEU of summed statistics (``(10,)``), as sacrebleu computes it."""
    return _bleu_scorer()._compute_score_from_stats([int(x) for x in stats]).score


@dataclass(frozen=True)
class Comparison:
    """ΔBLEU of a system against the baseline, both averaged over their seed runs, with its bootstrap interval."""

    delta: float
    low: float
    high: float
    p_value: float
    system_runs: int
    baseline_runs: int
    sentences: int
    n_samples: int
    seed: int

    def format(self) -> str:
        return f"{self.delta:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"


class _RunSums:
    """Each seed run's statistics summed with one weight per sentence: ``stats`` ``(runs, sentences, k)``, integer.
    Summed in float64 when every sum is an integer below 2**53 (then exact, and one matrix product for all runs),
    else in int64."""

    def __init__(self, stats: np.ndarray):
        if not np.issubdtype(stats.dtype, np.integer):
            raise TypeError(f"per-sentence statistics must be integer counts, not {stats.dtype}")
        self.runs, self.n, self.k = stats.shape
        exact = self.n * max(int(np.abs(stats).max(initial=0)), 1) < 2 ** 53
        dtype = np.float64 if exact else np.int64
        self.flat = np.ascontiguousarray(stats.transpose(1, 0, 2).reshape(self.n, self.runs * self.k), dtype=dtype)

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        """``(runs, k)`` int64 sums of the sentences counted ``weights`` ``(sentences,)`` times."""
        return (weights.astype(self.flat.dtype) @ self.flat).reshape(self.runs, self.k).astype(np.int64)


def _mean_metric(sums: np.ndarray, runs: np.ndarray, metric: Callable[[np.ndarray], float]) -> float:
    """Mean corpus ``metric`` of the seed runs ``runs`` (with repeats) of ``sums`` ``(runs, k)``; each distinct run
    scored once."""
    scores = {int(r): float(metric(sums[r])) for r in np.unique(runs)}
    return statistics.mean(scores[int(r)] for r in runs)


def pooled_bootstrap(system: np.ndarray, baseline: np.ndarray, metric: Callable[[np.ndarray], float],
                     n_samples: int = 1000, seed: int = DEFAULT_SEED, confidence: float = 0.95) -> Comparison:
    """The seed-pooled paired bootstrap of any corpus metric computed from summed per-sentence statistics:
    ``system`` and ``baseline`` are ``(runs, sentences, k)``, ``metric`` maps summed statistics ``(k,)`` to the
    corpus score. Per replicate: the sentences (one draw for both sides), then each side's runs with replacement.
    Returns Δ (system mean − baseline mean), its percentile interval at ``confidence`` and the two-sided p-value of
    Δ = 0 (share of replicates whose centred Δ is at least as far from 0 as Δ)."""
    if len(system) == 0 or len(baseline) == 0:
        raise ValueError("each side needs at least one seed run")
    n = system.shape[1]
    if baseline.shape[1] != n:
        raise ValueError(f"{n} sentences against the baseline's {baseline.shape[1]}")
    sys_sums, base_sums = _RunSums(system), _RunSums(baseline)
    ones = np.ones(n, dtype=np.int64)
    delta = (_mean_metric(sys_sums(ones), np.arange(len(system)), metric)
             - _mean_metric(base_sums(ones), np.arange(len(baseline)), metric))
    rng = np.random.Generator(np.random.PCG64(seed))
    draws: List[float] = []
    for _ in range(n_samples):
        weights = np.bincount(rng.integers(0, n, n), minlength=n)
        sys_runs = rng.integers(0, len(system), len(system))
        base_runs = rng.integers(0, len(baseline), len(baseline))
        draws.append(_mean_metric(sys_sums(weights), sys_runs, metric)
                     - _mean_metric(base_sums(weights), base_runs, metric))
    d = np.asarray(draws)
    tail = (1 - confidence) / 2
    low, high = np.quantile(d, [tail, 1 - tail])
    extreme = int(np.sum(np.abs(d - d.mean()) >= abs(delta) - 1e-12))
    p = min(1.0, (extreme + 1) / (n_samples + 1))
    return Comparison(delta, float(low), float(high), p, len(system), len(baseline), n, n_samples, seed)


def seed_pooled_bootstrap(system: Sequence[Sequence[str]], baseline: Sequence[Sequence[str]], refs: Sequence[str],
                          n_samples: int = 1000, seed: int = DEFAULT_SEED, confidence: float = 0.95,
                          tokenize: str = "13a") -> Comparison:
    """:func:`pooled_bootstrap` of corpus BLEU (sacrebleu's, its ``tokenize``): ``system`` and ``baseline`` hold one
    hypothesis list per seed run."""
    if not system or not baseline:
        raise ValueError("each side needs at least one seed run")
    sys_stats = np.stack([bleu_statistics(h, refs, tokenize) for h in system])
    base_stats = np.stack([bleu_statistics(h, refs, tokenize) for h in baseline])
    return pooled_bootstrap(sys_stats, base_stats, bleu_from_statistics, n_samples, seed, confidence)


def pooled_variance(groups: Sequence[Sequence[float]]) -> Tuple[Optional[float], int]:
    """The pooled sample variance of several groups, Σ (kᵢ − 1) sᵢ² / Σ (kᵢ − 1), and its degrees of freedom
    Σ (kᵢ − 1); ``(None, 0)`` when no group has two values."""
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    if df == 0:
        return None, 0
    return sum((len(g) - 1) * statistics.variance(g) for g in groups if len(g) > 1) / df, df


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def scale_interval(delta: float, low: float, high: float, factor: float) -> Tuple[float, float]:
    """[``low``, ``high``] widened about ``delta`` by ``factor`` on each side (a percentile interval's asymmetry
    kept)."""
    return delta - (delta - low) * factor, delta + (high - delta) * factor


@dataclass(frozen=True)
class SeedCarried:
    """:func:`with_seed_variance`'s answer: the interval and p with the pooled seed variance where a side lacks seeds,
    ``added`` the variance it added to Δ's (0: the bootstrap's interval and p unchanged)."""

    low: float
    high: float
    p: float
    added: float


def with_seed_variance(delta: float, low: float, high: float, p: float, sides: Sequence[Tuple[int, float]],
                       pooled: Optional[float], confidence: float = 0.95, full: int = FULL_SEEDS) -> SeedCarried:
    """The seed-pooled bootstrap's interval [``low``, ``high``] (at ``confidence``) and p of Δ, widened to carry seed
    variance on each side with fewer than ``full`` runs.

    A side of k runs enters Δ as the mean of its runs, and the bootstrap, resampling those runs, sees their seed
    variance as v/k, v the runs' own plug-in variance ((k − 1)/k · s², 0 for one run): with two runs an estimate on
    one degree of freedom, often near 0. Each such side (``sides``: ``(k, v)`` per side) is given instead the larger
    of v and ``pooled`` (the seed variance pooled over systems with enough runs, :func:`pooled_variance`), so Δ's
    variance grows by max(0, ``pooled`` − v) / k per side. Taking the bootstrap's Δ as normal with standard error
    SE = (``high`` − ``low``) / (2 z), the new SE′ = √(SE² + added); the interval is widened about Δ by SE′/SE and p
    is the two-sided normal p of Δ / SE′, never below the bootstrap's. Sides with ``full`` runs or more, a missing
    ``pooled`` or nothing added leave the interval and p as they were."""
    added = 0.0 if pooled is None else sum(max(0.0, pooled - v) / k for k, v in sides if 0 < k < full)
    se = (high - low) / (2 * _z(confidence))
    if added <= 0 or se <= 0:
        return SeedCarried(low, high, p, 0.0)
    se_carried = math.sqrt(se * se + added)
    new_low, new_high = scale_interval(delta, low, high, se_carried / se)
    p_normal = 2 * (1 - NormalDist().cdf(abs(delta) / se_carried))
    return SeedCarried(new_low, new_high, max(p, p_normal), added)


def holm_interval(delta: float, low: float, high: float, p: float, p_holm: float, alpha: float = 0.05,
                  confidence: float = 0.95) -> Tuple[float, float]:
    """The interval of Δ at the level Holm's procedure tests it at, α · ``p`` / ``p_holm`` (α/m for the smallest
    of m p-values, α for a family of one; smaller where the step-down's monotonicity or the cap at 1 raised
    ``p_holm``): the interval [``low``, ``high``] at ``confidence``, taken as normal about Δ, widened by
    z₁₋α′/₂ / z at each side. It holds 0 exactly when Δ's normal p ≥ α′, i.e. where its Holm-adjusted p would be
    ≥ α, so one interval answers both whether a row is significant after correction and which effects it
    excludes."""
    if p_holm <= p or p <= 0:
        level = alpha
    else:
        level = alpha * p / p_holm
    return scale_interval(delta, low, high, _z(1 - level) / _z(confidence))


def significance_stars(p: Optional[float]) -> str:
    if p is None or math.isnan(p):
        return ""
    return " **" if p < 0.01 else " *" if p < 0.05 else ""
