"""The BTG oracle: the source reordering closest to target order under word alignments.

Target ranks (as in lader's ``Ranks`` over ``CombinedAlign`` spans, Neubig et al. 2012):
source word ``i`` aligned to target positions ``A_i`` gets the span ``(min A_i, max A_i)``;
spans are compared lexicographically by ``(lo, hi)`` and turned into dense ranks, equal spans
sharing a rank. So

* many-to-one / many-to-many links: every source word keeps its own span; words aligned to the
  same target words tie (their relative order is free), overlapping spans are ordered by
  ``(lo, hi)``;
* unaligned source words get rank ``-1`` and take part in no pair: the loss never asks to move
  them, they go wherever the tree puts them (the tie-break keeps them in source order when
  nothing forces a move). ``attach_null="left"|"right"`` gives them the span of a neighbour
  instead, as lader's ``attach_null`` option does; the preorderer trains that way (right by
  default) so that unaligned words move with a neighbour rather than anywhere.

Kendall loss of an order: the number of pairs of aligned words put in the wrong relative order
(``a`` placed before ``b`` with ``rank_a > rank_b``); ties and unaligned words never count.
The oracle minimizes it over all BTG trees by CKY (the criterion of Neubig et al. 2012);
ties prefer fewer inverted nodes, then the left-most split, so the result is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from onmt_xl.core.reorder.btg import BTGNode, order_to_pos_xl, tree_from_splits
from onmt_xl.core.reorder.jit import njit

Links = Sequence[Tuple[int, int]]


ATTACH_NULL = ("none", "left", "right")


def target_ranks(src_len: int, links: Iterable[Tuple[int, int]], attach_null: str = "none") -> np.ndarray:
    """Dense target ranks of the source words, shape ``(src_len,)`` int64; ``-1`` = unaligned.

    ``attach_null="left"``/``"right"`` instead gives an unaligned word the span of its nearest
    aligned neighbour on that side (the other side at the sentence edge), as lader's
    ``CombinedAlign`` does: it then ties with that neighbour and counts in the loss.
    """
    if attach_null not in ATTACH_NULL:
        raise ValueError(f"attach_null must be one of {ATTACH_NULL}, got {attach_null!r}")
    spans: List[Optional[Tuple[int, int]]] = [None] * src_len
    for i, j in links:
        if not 0 <= i < src_len:
            raise ValueError(f"link {i}-{j}: source index out of range for a {src_len}-token sentence")
        if j < 0:
            raise ValueError(f"link {i}-{j}: negative target index")
        sp = spans[i]
        spans[i] = (j, j) if sp is None else (min(sp[0], j), max(sp[1], j))
    if attach_null != "none":
        _attach_null(spans, attach_null == "right")
    dense = {sp: r for r, sp in enumerate(sorted({sp for sp in spans if sp is not None}))}
    return np.array([-1 if sp is None else dense[sp] for sp in spans], dtype=np.int64)


def _attach_null(spans: List[Optional[Tuple[int, int]]], right: bool) -> None:
    """Copy spans into unaligned positions from the ``right`` (else left) neighbour, then the other way."""
    n = len(spans)
    sweeps = ((range(n - 2, -1, -1), 1), (range(1, n), -1))
    for sweep, step in sweeps if right else sweeps[::-1]:
        for i in sweep:
            if spans[i] is None:
                spans[i] = spans[i + step]


def kendall_loss(order: Sequence[int], ranks: np.ndarray) -> int:
    """Pairs of aligned words placed out of target order (``rank_a > rank_b``, a before b)."""
    r = np.asarray(ranks, dtype=np.int64)[np.asarray(order, dtype=np.int64)]
    r = r[r >= 0]
    if r.size < 2:
        return 0
    return int(np.triu(r[:, None] > r[None, :], k=1).sum())


def ordered_pairs(ranks: np.ndarray) -> int:
    """Pairs of aligned words with distinct ranks: the most pairs an order can get right."""
    r = np.asarray(ranks)
    r = r[r >= 0]
    k = r.size
    if k < 2:
        return 0
    _, counts = np.unique(r, return_counts=True)
    return int(k * (k - 1) // 2 - (counts * (counts - 1) // 2).sum())


@njit(cache=True)
def pair_prefix(ranks: np.ndarray) -> np.ndarray:
    """2D prefix sums ``P[a, b] = #{i < a, j < b : rank_i > rank_j >= 0}``, shape ``(n+1, n+1)``.

    Then the cost of yielding ``[s, m)`` before ``[m, e)`` is ``rect(P, s, m, m, e)``.
    """
    n = ranks.shape[0]
    P = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i in range(n):
        row = 0
        for j in range(n):
            if ranks[j] >= 0 and ranks[i] > ranks[j]:
                row += 1
            P[i + 1, j + 1] = P[i, j + 1] + row
    return P


@njit(cache=True)
def rect(P: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> int:
    """Sum of the pair matrix over rows ``[r0, r1)`` and columns ``[c0, c1)``."""
    return P[r1, c1] - P[r0, c1] - P[r1, c0] + P[r0, c0]


@njit(cache=True)
def oracle_chart(ranks: np.ndarray):
    """CKY over spans minimizing (Kendall loss, #inverted nodes); ``O(n^3)``.

    Returns ``(split, inv, loss)``: ``split[s, e]`` / ``inv[s, e]`` back-pointers, shape
    ``(n+1, n+1)``, and the minimal loss of the whole sentence.
    """
    n = ranks.shape[0]
    P = pair_prefix(ranks)
    loss = np.zeros((n + 1, n + 1), dtype=np.int64)
    ninv = np.zeros((n + 1, n + 1), dtype=np.int64)
    split, inv = backpointers(n + 1, n + 1)
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            e = s + length
            best_l = np.int64(1) << 62
            best_i = np.int64(1) << 62
            for m in range(s + 1, e):
                base_l = loss[s, m] + loss[m, e]
                base_i = ninv[s, m] + ninv[m, e]
                cl = base_l + rect(P, s, m, m, e)  # straight: left before right
                if cl < best_l or (cl == best_l and base_i < best_i):
                    best_l, best_i = cl, base_i
                    split[s, e], inv[s, e] = m, 0
                cl = base_l + rect(P, m, e, s, m)  # inverted: right before left
                if cl < best_l or (cl == best_l and base_i + 1 < best_i):
                    best_l, best_i = cl, base_i + 1
                    split[s, e], inv[s, e] = m, 1
            loss[s, e], ninv[s, e] = best_l, best_i
    return split, inv, loss[0, n] if n > 0 else np.int64(0)


@njit(cache=True)
def backpointers(rows: int, cols: int):
    """Empty back-pointer charts ``(split, inv)`` of a CKY over BTG trees, shape ``(rows, cols)``."""
    return np.zeros((rows, cols), dtype=np.int64), np.zeros((rows, cols), dtype=np.int8)


@njit(cache=True)
def walk_spans(split, inv, s0: int, e0: int, by_width: bool, order, k: int, nodes, nn: int):
    """Append to ``order[k:]`` the order yielded by back-pointers ``split``/``inv`` below span ``[s0, e0)``,
    depth first with an explicit stack, and, when ``nodes`` has rows, each internal node ``(s, m, e, inverted)``
    to ``nodes[nn:]`` in pre-order. The charts are indexed ``[s, e]``, or ``[s, e - s]`` with ``by_width``
    (the span-limited parser's). Returns the new ``(k, nn)``."""
    if e0 <= s0:
        return k, nn
    stack_s = np.empty(2 * (e0 - s0), dtype=np.int64)
    stack_e = np.empty(2 * (e0 - s0), dtype=np.int64)
    stack_s[0], stack_e[0] = s0, e0
    top = 1
    while top > 0:
        top -= 1
        s, e = stack_s[top], stack_e[top]
        if e - s == 1:
            order[k] = s
            k += 1
            continue
        c = e - s if by_width else e
        m, t = split[s, c], inv[s, c]
        if nodes.shape[0] > 0:
            nodes[nn, 0], nodes[nn, 1], nodes[nn, 2], nodes[nn, 3] = s, m, e, t
            nn += 1
        if t:  # yield [m, e) first: push it last
            stack_s[top], stack_e[top] = s, m
            stack_s[top + 1], stack_e[top + 1] = m, e
        else:
            stack_s[top], stack_e[top] = m, e
            stack_s[top + 1], stack_e[top + 1] = s, m
        top += 2
    return k, nn


@njit(cache=True)
def chart_order(split: np.ndarray, inv: np.ndarray, s0: int, e0: int) -> np.ndarray:
    """The order yielded by back-pointers ``split``/``inv`` (indexed ``[s, e]``) below span ``[s0, e0)``."""
    out = np.empty(max(e0 - s0, 0), dtype=np.int64)
    walk_spans(split, inv, s0, e0, False, out, 0, np.empty((0, 4), dtype=np.int64), 0)
    return out


def chart_tree(split: np.ndarray, inv: np.ndarray, n: int) -> Optional[BTGNode]:
    """Build the :class:`BTGNode` tree from the chart's back-pointers ``split[s, e]`` and ``inv[s, e]``."""
    return tree_from_splits(n, lambda s, e: (int(split[s, e]), bool(inv[s, e])))


@dataclass
class OracleResult:
    """Oracle reordering of one sentence. ``order``/``pos_xl``: lists of length n."""

    order: List[int]
    pos_xl: List[int]
    loss: int
    tree: Optional[BTGNode] = field(repr=False, default=None)


def btg_oracle_ranks(ranks: np.ndarray, with_tree: bool = True) -> OracleResult:
    """Oracle from precomputed :func:`target_ranks` (shape ``(n,)``)."""
    ranks = np.ascontiguousarray(ranks, dtype=np.int64)
    n = ranks.shape[0]
    if n <= 1:
        order = list(range(n))
        return OracleResult(order, order[:], 0, BTGNode(0, 1) if n == 1 else None)
    split, inv, loss = oracle_chart(ranks)
    order = chart_order(split, inv, 0, n).tolist()
    tree = chart_tree(split, inv, n) if with_tree else None
    return OracleResult(order, order_to_pos_xl(order), int(loss), tree)


def btg_oracle(
    src_len: int, links: Iterable[Tuple[int, int]], with_tree: bool = True, attach_null: str = "none"
) -> OracleResult:
    """The BTG tree whose order has minimal Kendall loss w.r.t. the target ranks of ``links``.

    ``links``: Pharaoh pairs ``(src_index, tgt_index)``, 0-indexed. Exact, ``O(n^3)``.
    """
    return btg_oracle_ranks(target_ranks(src_len, links, attach_null), with_tree)
