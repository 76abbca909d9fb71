"""Reordering quality: normalized Kendall's tau, exact match and the fuzzy reordering score.

All figures compare a predicted source order with the target ranks of
:func:`onmt_xl.core.reorder.oracle.target_ranks` (unaligned words and ties never count):

* **tau** (normalized Kendall's tau, as in Neubig et al. 2012), micro-averaged over the corpus:
  ``sum(#aligned pairs put in target order) / sum(#aligned pairs with distinct ranks)``;
  1.0 = every pair in target order. It is the fraction of concordant pairs in ``[0, 1]``,
  not the ``[-1, 1]`` correlation coefficient.
* **exact**: fraction of sentences whose order has zero Kendall loss.
* **per-sentence tau** (:func:`sentence_taus`): the same fraction within each sentence, for a mean over
  sentences (each sentence weighs the same, whatever its length) and paired resampling of sentences.
* **FRS**, the fuzzy reordering score of Talbot et al. (2011): ``1 - (C - 1) / (M - 1)`` where
  ``M`` is the number of words and ``C`` the number of chunks the predicted order splits into
  such that each chunk is contiguous and in order in the *reference* order. The reference is the
  BTG oracle order (the best order a BTG preorderer can reach; unaligned words sit where the
  oracle put them). No sentence-boundary markers; micro-averaged:
  ``1 - sum(C - 1) / sum(M - 1)``. Unaligned words count too, so a prediction with zero
  Kendall loss can still lose FRS by putting an unaligned word elsewhere than the oracle did.
* **FRS over aligned words** (``frs_aligned``): the same on the subsequences of aligned words
  only (both orders with the unaligned words deleted), so it does not depend on where the oracle's
  tie-breaking happened to put the words no link constrains.

The same figures are reported for the monotone (identity) order, the baseline a preorderer must
beat, and for the oracle itself (the upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from onmt_xl.core.reorder.btg import is_permutation
from onmt_xl.core.reorder.oracle import btg_oracle_ranks, kendall_loss, ordered_pairs


def count_chunks(order: Sequence[int], ref_order: Sequence[int]) -> int:
    """Number of maximal runs of ``order`` that appear contiguously and in order in ``ref_order``."""
    if len(order) == 0:
        return 0
    ref_pos = np.empty(len(ref_order), dtype=np.int64)
    ref_pos[np.asarray(ref_order, dtype=np.int64)] = np.arange(len(ref_order))
    p = ref_pos[np.asarray(order, dtype=np.int64)]
    return 1 + int(np.count_nonzero(p[1:] != p[:-1] + 1))


def _aligned_subsequences(order: Sequence[int], ref_order: Sequence[int], ranks: np.ndarray):
    """``order`` and ``ref_order`` without unaligned words, relabelled ``0..k-1``."""
    keep = np.asarray(ranks) >= 0
    label = np.cumsum(keep) - 1
    o = [int(label[i]) for i in order if keep[i]]
    r = [int(label[i]) for i in ref_order if keep[i]]
    return o, r


def fuzzy_reordering_score(order: Sequence[int], ref_order: Sequence[int]) -> float:
    """Sentence-level FRS (Talbot et al. 2011): ``1 - (C - 1) / (M - 1)``; 1.0 when ``M <= 1``."""
    m = len(order)
    return 1.0 if m <= 1 else 1.0 - (count_chunks(order, ref_order) - 1) / (m - 1)


@dataclass
class _Tally:
    concordant: int = 0
    exact: int = 0
    chunk_breaks: int = 0  # sum of C - 1
    chunk_breaks_aligned: int = 0  # the same over aligned words only

    def add(self, order: Sequence[int], ranks: np.ndarray, ref: Sequence[int], pairs: int) -> None:
        loss = kendall_loss(order, ranks)
        self.concordant += pairs - loss
        self.exact += int(loss == 0)
        self.chunk_breaks += max(count_chunks(order, ref) - 1, 0)
        o, r = _aligned_subsequences(order, ref, ranks)
        self.chunk_breaks_aligned += max(count_chunks(o, r) - 1, 0)


@dataclass
class ReorderScores:
    """Corpus-level reordering figures of a model, the monotone baseline and the BTG oracle."""

    n_sentences: int
    n_pairs: int  # aligned pairs with distinct ranks (denominator of tau)
    tau: float
    exact_match: float
    frs: float
    monotone_tau: float
    monotone_exact_match: float
    monotone_frs: float
    oracle_tau: float
    oracle_exact_match: float
    frs_aligned: float = 1.0
    monotone_frs_aligned: float = 1.0

    def format(self) -> str:
        """A small table, one row per system."""
        rows = [
            ("model", self.tau, self.exact_match, self.frs, self.frs_aligned),
            ("monotone", self.monotone_tau, self.monotone_exact_match, self.monotone_frs, self.monotone_frs_aligned),
            ("oracle", self.oracle_tau, self.oracle_exact_match, 1.0, 1.0),
        ]
        lines = [
            f"{self.n_sentences:,} sentences, {self.n_pairs:,} aligned pairs",
            f"{'':10s} {'tau':>7s} {'exact':>7s} {'FRS':>7s} {'FRS-al':>7s}",
        ]
        lines += [f"{name:10s} {t:7.4f} {x:7.4f} {f:7.4f} {fa:7.4f}" for name, t, x, f, fa in rows]
        lines.append("(FRS-al: FRS over the aligned words only)")
        return "\n".join(lines)


def evaluate(
    pred_orders: Sequence[Sequence[int]],
    ranks_list: Sequence[np.ndarray],
    ref_orders: Optional[Sequence[Sequence[int]]] = None,
) -> ReorderScores:
    """Score predicted orders against target ranks (one array of shape ``(n_i,)`` per sentence).

    ``ref_orders`` (the FRS reference) default to the BTG oracle orders of ``ranks_list``.
    Raises ``ValueError`` if a prediction is not a permutation of its sentence's indices.
    """
    if len(pred_orders) != len(ranks_list):
        raise ValueError(f"{len(pred_orders)} predicted orders but {len(ranks_list)} rank arrays")
    if ref_orders is not None and len(ref_orders) != len(ranks_list):
        raise ValueError(f"{len(ref_orders)} reference orders but {len(ranks_list)} rank arrays")
    model, mono, oracle = _Tally(), _Tally(), _Tally()
    n_pairs = n_words_minus_one = n_aligned_minus_one = 0
    for k, (pred, ranks) in enumerate(zip(pred_orders, ranks_list)):
        ranks = np.asarray(ranks, dtype=np.int64)
        n = ranks.shape[0]
        if len(pred) != n or not is_permutation(pred):
            raise ValueError(f"sentence {k + 1}: predicted order is not a permutation of range({n}): {list(pred)}")
        ref: List[int] = list(ref_orders[k]) if ref_orders is not None else btg_oracle_ranks(ranks, False).order
        pairs = ordered_pairs(ranks)
        n_pairs += pairs
        n_words_minus_one += max(n - 1, 0)
        n_aligned_minus_one += max(int((ranks >= 0).sum()) - 1, 0)
        model.add(pred, ranks, ref, pairs)
        mono.add(range(n), ranks, ref, pairs)
        oracle.add(ref, ranks, ref, pairs)

    def ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    def frs(breaks: int, gaps: int) -> float:  # 1 when no sentence has a gap between two (aligned) words
        return 1.0 - breaks / gaps if gaps else 1.0

    n_sent = len(ranks_list)
    return ReorderScores(
        n_sentences=n_sent,
        n_pairs=n_pairs,
        tau=ratio(model.concordant, n_pairs),
        exact_match=ratio(model.exact, n_sent),
        frs=frs(model.chunk_breaks, n_words_minus_one),
        monotone_tau=ratio(mono.concordant, n_pairs),
        monotone_exact_match=ratio(mono.exact, n_sent),
        monotone_frs=frs(mono.chunk_breaks, n_words_minus_one),
        oracle_tau=ratio(oracle.concordant, n_pairs),
        oracle_exact_match=ratio(oracle.exact, n_sent),
        frs_aligned=frs(model.chunk_breaks_aligned, n_aligned_minus_one),
        monotone_frs_aligned=frs(mono.chunk_breaks_aligned, n_aligned_minus_one),
    )


def sentence_taus(pred_orders: Sequence[Sequence[int]], ranks_list: Sequence[np.ndarray]) -> List[Optional[float]]:
    """Each sentence's tau: ``#aligned pairs put in target order / #aligned pairs with distinct ranks``;
    ``None`` for a sentence with no such pair (it says nothing about an order)."""
    if len(pred_orders) != len(ranks_list):
        raise ValueError(f"{len(pred_orders)} predicted orders but {len(ranks_list)} rank arrays")
    out: List[Optional[float]] = []
    for pred, ranks in zip(pred_orders, ranks_list):
        pairs = ordered_pairs(ranks)
        out.append((pairs - kendall_loss(pred, ranks)) / pairs if pairs else None)
    return out
