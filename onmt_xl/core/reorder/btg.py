"""Bracketing transduction grammar (BTG, Wu 1997) trees over a source sentence.

A reordering is an ``order``: the source indices listed in reordered (target-like) order.
Its inverse is ``pos_xl``: ``pos_xl[j]`` is the position of source token ``j`` in the reordered
sentence, i.e. the index the NMT encoder feeds to the sinusoid (Ding et al. 2020, Eq. 6).

A BTG tree has leaves over source spans (kept in source order) and binary nodes that are either
*straight* (``[L R]``: left child then right child) or *inverted* (``<L R>``: right then left).
The permutations a BTG tree can produce are exactly those avoiding the patterns 2413 and 3142
(the *separable* permutations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class BTGNode:
    """A node over the source span ``[start, end)``.

    A leaf has no children and yields ``start..end-1`` in source order; a binary node has
    ``left`` over ``[start, split)`` and ``right`` over ``[split, end)`` and yields
    ``right`` before ``left`` iff ``inverted``.
    """

    start: int
    end: int
    inverted: bool = False
    left: Optional["BTGNode"] = None
    right: Optional["BTGNode"] = None

    @property
    def is_leaf(self) -> bool:
        return self.left is None

    @property
    def split(self) -> int:
        """Start of the right child (binary nodes only)."""
        assert self.right is not None, "a leaf has no split"
        return self.right.start

    def nodes(self) -> List["BTGNode"]:
        """All nodes, pre-order (iterative, so deep trees are fine)."""
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            out.append(node)
            if not node.is_leaf:
                stack.append(node.right)  # type: ignore[arg-type]
                stack.append(node.left)  # type: ignore[arg-type]
        return out

    def num_inverted(self) -> int:
        return sum(1 for node in self.nodes() if node.inverted)


def leaf(start: int, end: Optional[int] = None) -> BTGNode:
    """A leaf over ``[start, end)`` (one token if ``end`` is omitted)."""
    return BTGNode(start, start + 1 if end is None else end)


def node(left: BTGNode, right: BTGNode, inverted: bool = False) -> BTGNode:
    """A binary node over two adjacent children."""
    if left.end != right.start:
        raise ValueError(f"children [{left.start},{left.end}) and [{right.start},{right.end}) are not adjacent")
    return BTGNode(left.start, right.end, inverted, left, right)


def tree_to_order(tree: Optional[BTGNode]) -> List[int]:
    """Source indices in the order the tree yields them (``None`` -> ``[]``)."""
    if tree is None:
        return []
    order: List[int] = []
    stack = [tree]
    while stack:
        cur = stack.pop()
        if cur.is_leaf:
            order.extend(range(cur.start, cur.end))
        else:
            first, second = (cur.right, cur.left) if cur.inverted else (cur.left, cur.right)
            stack.append(second)  # type: ignore[arg-type]
            stack.append(first)  # type: ignore[arg-type]
    return order


def is_permutation(order: Sequence[int]) -> bool:
    n = len(order)
    seen = [False] * n
    for v in order:
        if not (0 <= v < n) or seen[v]:
            return False
        seen[v] = True
    return True


def is_btg_permutation(order: Sequence[int]) -> bool:
    """True iff ``order`` is a permutation of ``range(n)`` that a BTG tree yields (avoids 2413, 3142).

    Shift-reduce in O(n): push each value as the interval ``[v, v]`` and merge the top two
    intervals while they are adjacent; the permutation is BTG-valid iff one interval is left.
    Reducing eagerly is safe because a merged block stays adjacent to anything its parts were.
    """
    if not is_permutation(order):
        return False
    stack: List[Tuple[int, int]] = []
    for v in order:
        lo, hi = v, v
        while stack and (stack[-1][1] + 1 == lo or hi + 1 == stack[-1][0]):
            plo, phi = stack.pop()
            lo, hi = min(lo, plo), max(hi, phi)
        stack.append((lo, hi))
    return len(stack) <= 1


def order_to_tree(order: Sequence[int]) -> Optional[BTGNode]:
    """A BTG tree yielding ``order`` (shift-reduce as in :func:`is_btg_permutation`).

    Adjacent runs ``k, k+1`` become straight nodes, ``k+1, k`` inverted ones; leaves are single
    tokens. Returns ``None`` for the empty order; raises ``ValueError`` if it is not BTG-valid.
    """
    if not is_permutation(order):
        raise ValueError(f"not a permutation of range({len(order)}): {list(order)}")
    # stack items: (value lo, value hi, subtree); tree spans are over *source* indices = values
    stack: List[Tuple[int, int, BTGNode]] = []
    for v in order:
        lo, hi, sub = v, v, leaf(v)
        while stack and (stack[-1][1] + 1 == lo or hi + 1 == stack[-1][0]):
            plo, phi, prev = stack.pop()
            if phi + 1 == lo:  # prev block comes first in the source too: straight
                sub = node(prev, sub, inverted=False)
            else:  # current block precedes prev in the source, but is yielded after: inverted
                sub = node(sub, prev, inverted=True)
            lo, hi = min(lo, plo), max(hi, phi)
        stack.append((lo, hi, sub))
    if len(stack) > 1:
        raise ValueError(f"not a BTG permutation (contains 2413 or 3142): {list(order)}")
    return stack[0][2] if stack else None


def tree_from_splits(n: int, split: Callable[[int, int], Tuple[int, bool]]) -> Optional[BTGNode]:
    """The tree over ``[0, n)`` whose span ``[s, e)`` (``e - s > 1``) splits at ``m`` with orientation
    ``inverted``, ``(m, inverted) = split(s, e)``: a parser's back-pointers. Iterative, post-order."""
    if n == 0:
        return None
    built: Dict[Tuple[int, int], BTGNode] = {}
    stack = [(0, n, False)]
    while stack:
        s, e, ready = stack.pop()
        if e - s == 1:
            built[s, e] = BTGNode(s, e)
            continue
        m, inverted = split(s, e)
        if ready:
            built[s, e] = BTGNode(s, e, inverted, built.pop((s, m)), built.pop((m, e)))
        else:
            stack.extend([(s, e, True), (s, m, False), (m, e, False)])
    return built[0, n]


def order_to_pos_xl(order: Sequence[int]) -> List[int]:
    """Inverse permutation: ``pos_xl[order[k]] = k`` (the cross-lingual positions of Eq. 6)."""
    pos = [0] * len(order)
    for k, j in enumerate(order):
        pos[j] = k
    return pos


def pos_xl_to_order(pos_xl: Sequence[int]) -> List[int]:
    """Inverse of :func:`order_to_pos_xl`."""
    return order_to_pos_xl(pos_xl)


def tree_to_str(tree: Optional[BTGNode], tokens: Optional[Sequence[str]] = None) -> str:
    """Bracket form: ``[L R]`` straight, ``<L R>`` inverted, e.g. ``[I <ate [the apple]>]``.

    Leaves print their tokens (or source indices when ``tokens`` is None), space-separated.
    """
    if tree is None:
        return "[]"

    def word(i: int) -> str:
        return tokens[i] if tokens is not None else str(i)

    out: List[str] = []
    # iterative walk: items are either a node or a closing bracket string
    stack: list = [tree]
    while stack:
        cur = stack.pop()
        if isinstance(cur, str):
            out.append(cur)
        elif cur.is_leaf:
            out.append(" ".join(word(i) for i in range(cur.start, cur.end)))
        else:
            op, cl = ("<", ">") if cur.inverted else ("[", "]")
            out.append(op)
            stack.extend([cl, cur.right, " ", cur.left])
    return "".join(out)
