"""Does the preorderer beat the monotone order? The check run before any training, on held-out pairs.

XL PE (Ding et al. 2020) gives the encoder the preorderer's target-order positions; where they are no closer to
the target order than the source's own order, it has nothing to add. The check compares the preorderer's
Kendall tau (:mod:`onmt_xl.core.reorder.metrics`: micro-averaged share of aligned word pairs in target order) with the
monotone order's on the same held-out sentences, and reports the BTG oracle's tau (the best a preorderer can do)
to say why.

**The margin.** The preorderer *clearly* beats the monotone order when both hold:

* the gain is real: a paired bootstrap over sentences (:data:`RESAMPLES` resamples, fixed seed) of
  ``tau_pre - tau_mono`` has its lower 95 % bound above 0. The two taus are paired (the same sentences, the same
  word pairs), so the bootstrap resamples sentences and recomputes both on each resample;
* the gain is worth having: at least :data:`MIN_GAIN` (0.01, one aligned word pair in a hundred more in target
  order). Below that the positions XL PE would get are nearly the monotone ones, however many pairs make it
  significant.

When it does not, the reason the line gives follows from the oracle: when even the oracle gains less than
:data:`NEAR_MONOTONE` (0.05) over the monotone order, the language pair is nearly monotone on this data and no
preorderer can help much; otherwise the preorderer has not learnt the reordering the oracle shows is there.
numpy only; imports no framework.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder.btg import is_permutation
from onmt_xl.core.reorder.oracle import btg_oracle_ranks, kendall_loss, ordered_pairs

#: bootstrap resamples of the sentences
RESAMPLES = 1000
#: the smallest gain in Kendall tau that counts as beating the monotone order
MIN_GAIN = 0.01
#: an oracle gain over the monotone order below this: the language pair is nearly monotone on this data
NEAR_MONOTONE = 0.05


@dataclass(frozen=True)
class MonotoneCheck:
    """The check's figures (see the module docstring); ``beats``: the preorderer clearly beats the monotone order."""

    sentences: int
    pairs: int  # aligned word pairs with distinct target ranks (the denominator of tau)
    tau: float
    monotone_tau: float
    oracle_tau: float
    gain_low: float  # the 95 % paired-bootstrap interval of tau - monotone_tau
    gain_high: float
    where: str = "held-out pairs"

    @property
    def gain(self) -> float:
        return self.tau - self.monotone_tau

    @property
    def beats(self) -> bool:
        return self.gain_low > 0 and self.gain >= MIN_GAIN

    @property
    def near_monotone(self) -> bool:
        return self.oracle_tau - self.monotone_tau < NEAR_MONOTONE

    def _figures(self) -> str:
        return (f"gain {self.gain:+.4f}, 95% interval [{self.gain_low:+.4f}, {self.gain_high:+.4f}]; "
                f"the best BTG order reaches {self.oracle_tau:.4f}")

    def format(self) -> str:
        """One line: the figures and what they mean for XL PE (``warning: ...`` when it does not clearly beat)."""
        on = f"on {self.sentences:,} {self.where}"
        if self.beats:
            share = self.gain / max(self.oracle_tau - self.monotone_tau, 1e-12)  # the oracle is >= any BTG order
            return (f"the preorderer (Kendall tau {self.tau:.4f}) beats the monotone order ({self.monotone_tau:.4f}) "
                    f"{on} ({self._figures()}, so it recovers {share:.0%} of what reordering can gain)")
        verb = "does not beat" if self.gain <= 0 else "does not clearly beat"
        if self.near_monotone:
            meaning = ("this language pair is nearly monotone here, and XL PE has little to gain; consider the "
                       "baseline")
        else:
            meaning = ("the preorderer has not learnt the reordering the alignments show, so XL PE would get "
                       "near-monotone positions; train it on more (or better aligned) pairs, or consider the baseline")
        return (f"warning: the preorderer (Kendall tau {self.tau:.4f}) {verb} the monotone order "
                f"({self.monotone_tau:.4f}) {on} ({self._figures()}): {meaning}")

    def to_dict(self) -> Dict[str, Any]:
        return dict(asdict(self), gain=self.gain, beats=self.beats, min_gain=MIN_GAIN, resamples=RESAMPLES)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "MonotoneCheck":
        return cls(**{k: d[k] for k in ("sentences", "pairs", "tau", "monotone_tau", "oracle_tau", "gain_low",
                                         "gain_high", "where") if k in d})


def paired_gain_interval(model: np.ndarray, mono: np.ndarray, pairs: np.ndarray, resamples: int = RESAMPLES,
                         seed: int = 1) -> Tuple[float, float]:
    """The 95 % percentile interval of the micro-averaged ``tau_model - tau_mono`` over ``resamples`` resamples of
    the sentences: ``model[i]``, ``mono[i]``: sentence ``i``'s pairs in target order; ``pairs[i]``: its pairs."""
    diff, pairs = np.asarray(model, np.float64) - np.asarray(mono, np.float64), np.asarray(pairs, np.float64)
    n = diff.shape[0]
    if n == 0 or pairs.sum() == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    gains = np.empty(resamples)
    for b in range(resamples):
        idx = rng.integers(0, n, n)
        total = pairs[idx].sum()
        gains[b] = diff[idx].sum() / total if total else 0.0
    low, high = np.percentile(gains, [2.5, 97.5])
    return float(low), float(high)


def check_monotone(pred_orders: Sequence[Sequence[int]], ranks_list: Sequence[np.ndarray],
                   where: str = "held-out pairs", resamples: int = RESAMPLES, seed: int = 1) -> MonotoneCheck:
    """The check of ``pred_orders`` (the preorderer's orders) against the target ranks of the same sentences
    (:func:`onmt_xl.core.reorder.oracle.target_ranks`); ``where`` names the sentences in the message."""
    if len(pred_orders) != len(ranks_list):
        raise ValueError(f"{len(pred_orders)} predicted orders but {len(ranks_list)} rank arrays")
    n = len(ranks_list)
    model, mono, oracle, pairs = (np.zeros(n, dtype=np.int64) for _ in range(4))
    for k, (pred, ranks) in enumerate(zip(pred_orders, ranks_list)):
        ranks = np.asarray(ranks, dtype=np.int64)
        if len(pred) != ranks.shape[0] or not is_permutation(pred):
            raise ValueError(f"sentence {k + 1}: predicted order is not a permutation of range({ranks.shape[0]})")
        pairs[k] = ordered_pairs(ranks)
        model[k] = pairs[k] - kendall_loss(pred, ranks)
        mono[k] = pairs[k] - kendall_loss(range(ranks.shape[0]), ranks)
        oracle[k] = pairs[k] - kendall_loss(btg_oracle_ranks(ranks, False).order, ranks)
    total = int(pairs.sum())
    tau = (lambda c: float(c.sum()) / total if total else 1.0)
    low, high = paired_gain_interval(model, mono, pairs, resamples, seed)
    return MonotoneCheck(n, total, tau(model), tau(mono), tau(oracle), low, high, where)
