"""Each comparison of an evidence report as ``onmt-xl papers`` reads it (``reports/PAPERS.md``).

The evidence report gives every comparison the seed-pooled paired bootstrap's 95 % interval, its p and a Holm p
within its family. The papers' report reads them in three steps:

1. **Seed variance where seeds are few.** A side with fewer than :data:`~onmt_xl.experiments.stats.FULL_SEEDS`
   runs carries the seed variance pooled over the same study's systems with the most runs
   (:func:`pooled_seed_variance`), in place of what the bootstrap saw of its own few runs
   (:func:`~onmt_xl.experiments.stats.with_seed_variance`): its interval widens and its p grows.
2. **Holm again**, over each family with those p (the evidence report's families, unchanged).
3. **The Holm-adjusted interval** (:func:`~onmt_xl.experiments.stats.holm_interval`), the one interval every
   verdict of the papers' report reads.

A system whose mean test BLEU is below :data:`UNTRAINED_SHARE` of the study baseline's is *far from trained*
(:func:`far_from_trained`): a comparison against it says little about the claim, and the report labels it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from onmt_xl.experiments.stats import FULL_SEEDS, holm, holm_interval, pooled_variance, with_seed_variance

#: a pooled seed variance needs systems with at least this many runs (two degrees of freedom each)
MIN_POOL_RUNS = 3
#: a system scoring below this share of the study baseline's mean test BLEU is far from trained
UNTRAINED_SHARE = 0.5
#: the evidence report's attention-AER keys (their deltas are AER fractions, their runs' values too)
AER_KEYS = ("attention_aer", "attention_aer_test")
PLATEAU_SUFFIX = "_plateau"


@dataclass(frozen=True)
class RowInterval:
    """One comparison as read: Δ, the 95 % interval and p (seed variance carried where ``carried``), Holm p over its
    family, and the Holm-adjusted interval [``adj_low``, ``adj_high``] the verdicts read."""

    delta: float
    low: float
    high: float
    p: float
    p_holm: float
    adj_low: float
    adj_high: float
    carried: bool = False


def bleu_values(report: Dict[str, Any], system: str) -> Optional[List[float]]:
    """The test BLEU of each of ``system``'s runs (``NAME_plateau``: the runs of ``NAME`` at its plateau)."""
    if system.endswith(PLATEAU_SUFFIX):
        runs = ((report.get("plateaus") or {}).get(system[: -len(PLATEAU_SUFFIX)]) or {}).get("runs") or {}
    else:
        runs = (report.get("systems") or {}).get(system) or {}
    return (runs.get("test_bleu") or {}).get("values")


def pooled_seed_variance(groups: Sequence[Sequence[float]]) -> Tuple[Optional[float], int]:
    """The seed variance pooled over the groups (one per system: its runs' values) with the most runs, at least
    :data:`MIN_POOL_RUNS` (the decisive design's 8-seed systems), and its degrees of freedom; ``(None, 0)``
    where no system has that many."""
    most = max((len(g) for g in groups), default=0)
    if most < MIN_POOL_RUNS:
        return None, 0
    return pooled_variance([g for g in groups if len(g) == most])


def _plugin_variance(values: Optional[Sequence[float]], runs: int) -> float:
    """What the bootstrap saw of a side's seed variance: its runs' plug-in variance ((k − 1)/k · s²); 0 for one run,
    or where the report does not list exactly its ``runs`` values."""
    if values is None or len(values) != runs or runs < 2:
        return 0.0
    return statistics.pvariance(values)


def _containers(report: Dict[str, Any]) -> Iterator[Tuple[str, str, Dict[str, Any], str, str, str]]:
    """Every comparison of ``report``: ``(container, name, comparison, family, side a, side b)``; ``container`` is
    ``comparisons``, ``pairs``, ``plateau_pairs``, an AER key or ``sweep:SETTING``; side names read their runs'
    values (``""``: a single run)."""
    for key in ("comparisons", "pairs", "plateau_pairs"):
        for name, c in (report.get(key) or {}).items():
            a, b = ((name, report.get("baseline", "baseline")) if key == "comparisons"
                    else (c.get("a", ""), c.get("b", "")))
            yield key, name, c, f"{key}/{c.get('family')}", a, b
    for key in AER_KEYS:
        for name, c in ((report.get(key) or {}).get("comparisons") or {}).items():
            yield key, name, c, key, name, "baseline"
    for sweep in report.get("sweeps") or []:
        for point in sweep.get("points") or []:
            if "vs_default" in point:
                yield (f"sweep:{sweep.get('setting')}", point["setting"], point["vs_default"],
                       f"sweep:{sweep.get('setting')}", "", "")


def _values(report: Dict[str, Any], container: str, system: str) -> Optional[List[float]]:
    if not system:
        return None
    if container in AER_KEYS:
        return (((report.get(container) or {}).get("systems") or {}).get(system) or {}).get("aer", {}).get("values")
    return bleu_values(report, system)


def _pooled(report: Dict[str, Any], container: str) -> Optional[float]:
    if container in AER_KEYS:
        systems = (report.get(container) or {}).get("systems") or {}
        groups = [s.get("aer", {}).get("values") or [] for s in systems.values()]
    else:
        groups = [bleu_values(report, n) or [] for n in (report.get("systems") or {})]
    return pooled_seed_variance(groups)[0]


def read(report: Dict[str, Any], alpha: float = 0.05, pool: bool = True) -> Dict[Tuple[str, str], RowInterval]:
    """Every comparison of ``report`` by ``(container, name)`` (see :func:`_containers`), read in the module
    docstring's three steps (``pool=False``: each side with its own runs' seed variance only, what the bootstrap
    saw). A family whose members do not all record their own p keeps the report's Holm p."""
    rows = list(_containers(report))
    pooled = {container: _pooled(report, container) if pool else None for container, *_ in rows}
    carried: Dict[Tuple[str, str], Any] = {}
    families: Dict[str, Dict[Tuple[str, str], float]] = {}
    for container, name, c, family, a, b in rows:
        p = c.get("p", c["p_holm"])
        sides = [(int(c[k]), _plugin_variance(_values(report, container, side), int(c[k])))
                 for k, side in (("system_runs", a), ("baseline_runs", b)) if k in c]
        carried[container, name] = with_seed_variance(c["delta"], c["low"], c["high"], p, sides, pooled[container])
        families.setdefault(family, {})[container, name] = carried[container, name].p
    recorded = {family: all("p" in c for _, _, c, fam, _, _ in rows if fam == family) for family in families}
    holm_p = {family: holm(ps) for family, ps in families.items()}
    out = {}
    for container, name, c, family, _, _ in rows:
        p_holm = holm_p[family][container, name] if recorded[family] else c["p_holm"]
        s = carried[container, name]
        adj_low, adj_high = holm_interval(c["delta"], s.low, s.high, s.p, p_holm, alpha)
        out[container, name] = RowInterval(c["delta"], s.low, s.high, s.p, p_holm, adj_low, adj_high, s.added > 0)
    return out


def far_from_trained(report: Dict[str, Any], systems: Sequence[str]) -> List[Tuple[str, float, float]]:
    """``(system, its mean test BLEU, the baseline's)`` for each of ``systems`` scoring below
    :data:`UNTRAINED_SHARE` of the study baseline's mean test BLEU."""
    base = bleu_values(report, report.get("baseline", "baseline"))
    if not base:
        return []
    base_mean, out = statistics.mean(base), []
    for system in systems:
        values = bleu_values(report, system)
        if values and statistics.mean(values) < UNTRAINED_SHARE * base_mean:
            out.append((system, statistics.mean(values), base_mean))
    return out


__all__ = ["FULL_SEEDS", "MIN_POOL_RUNS", "UNTRAINED_SHARE", "RowInterval", "bleu_values", "far_from_trained",
           "pooled_seed_variance", "read"]
