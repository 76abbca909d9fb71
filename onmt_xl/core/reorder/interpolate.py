"""Positions part way from a predicted order to a reference order, along a shortest path in Kendall distance (the
payoff curve of ``reports/PREREG_xlpos.md``: test BLEU as the test positions move from the preorderer's toward the
BTG oracle's).

The predicted order is turned into the reference order by the adjacent transpositions of a bubble sort (passes left
to right, each swapping a neighbouring pair the reference orders the other way). Every such swap removes exactly
one discordant pair, so a bubble sort takes ``d`` swaps, ``d`` the number of pairs the two orders disagree on (their
Kendall distance), and no path of adjacent swaps is shorter. Level ``alpha`` applies the first ``round(alpha * d)``
of them (half-way rounding to even, as Python's ``round``): ``alpha = 0`` is the prediction, ``alpha = 1`` the
reference, and the Kendall distance to the reference falls linearly in ``alpha`` in between. Deterministic.

Positions are ``pos_xl`` (paper Eq. 6): ``pos[j]`` is the place of source token ``j`` in target order.
"""

from __future__ import annotations

from typing import List, Sequence

from onmt_xl.core.reorder.btg import is_permutation


def discordant_pairs(pos_a: Sequence[int], pos_b: Sequence[int]) -> int:
    """Number of token pairs ``pos_a`` and ``pos_b`` (two permutations of one sentence) order differently."""
    n = len(pos_a)
    return sum(1 for i in range(n) for j in range(i + 1, n)
               if (pos_a[i] - pos_a[j]) * (pos_b[i] - pos_b[j]) < 0)


def kendall_path(pred: Sequence[int], ref: Sequence[int], alpha: float) -> List[int]:
    """``pos_xl`` after the first ``round(alpha * d)`` bubble-sort swaps from ``pred`` toward ``ref``.

    ``pred``, ``ref``: ``(n,)`` permutations of ``0..n-1`` (``pos_xl`` of one sentence); ``alpha`` in ``[0, 1]``.
    Returns ``(n,)``: a permutation whose Kendall distance to ``ref`` is ``d - round(alpha * d)``.
    """
    n = len(pred)
    if len(ref) != n:
        raise ValueError(f"the two orders have {n} and {len(ref)} tokens")
    if not (is_permutation(list(pred)) and is_permutation(list(ref))):
        raise ValueError("both orders must be permutations of 0..n-1")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], not {alpha}")
    # the predicted order as token ids by place, each token labelled with its place in the reference order
    order = [0] * n
    for token, place in enumerate(pred):
        order[place] = token
    key = [ref[token] for token in order]
    swaps = round(alpha * discordant_pairs(pred, ref))
    done = 0
    while done < swaps:
        for i in range(n - 1):
            if key[i] > key[i + 1]:
                key[i], key[i + 1] = key[i + 1], key[i]
                order[i], order[i + 1] = order[i + 1], order[i]
                done += 1
                if done == swaps:
                    break
    pos = [0] * n
    for place, token in enumerate(order):
        pos[token] = place
    return pos
