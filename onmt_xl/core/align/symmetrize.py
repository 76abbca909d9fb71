"""Symmetrization of two directional word alignments.

``grow_diag_final_and`` is the heuristic of Koehn, Och & Marcu (2003) / Koehn et al. (2007, Moses),
implemented to give the same links as Moses' ``symal -a=g -d=yes -f=yes -b=yes`` (the
``grow-diag-final-and`` setting of ``train-model.perl``), including symal's visiting order:

1. start from the intersection;
2. grow: scan the current points in (target, source) order; for each point try the neighbours
   (-1,0) (0,-1) (1,0) (0,1) (-1,-1) (-1,1) (1,-1) (1,1) in (target, source) offsets, adding a
   neighbour that is in the union and has its source or its target word still unaligned. Points
   added behind the scan position are visited in the same pass (as with symal's ``std::set``),
   passes repeat until nothing is added;
3. final-and: add the union points of the ``forward`` alignment only, then those of the ``reverse``
   alignment only, each in (target, source) order, when *both* their words are still unaligned.

Links are ``(i, j)`` = (source index, target index), 0-based. ``forward`` is the direction in which
every target word has at most one link (eflomal's / fast_align's forward output; symal's "inverse"
alignment) and ``reverse`` the one in which every source word has at most one link (symal's "direct"
alignment). The inputs need not be one-to-many functions: any link sets are accepted, so
alignments from other aligners can be symmetrized too.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, List, Set, Tuple

Link = Tuple[int, int]
Links = List[Link]

# (target offset, source offset), in symal's order: grow neighbours first, then the diagonals.
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1))
_DIAGONALS = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def _checked(links: Iterable[Link], src_len: int, tgt_len: int, name: str) -> Set[Link]:
    out = set()
    for i, j in links:
        if not (0 <= i < src_len and 0 <= j < tgt_len):
            raise ValueError(f"{name} link {i}-{j} is outside a {src_len}x{tgt_len} (source x target) sentence pair")
        out.add((int(i), int(j)))
    return out


def intersection(forward: Iterable[Link], reverse: Iterable[Link]) -> Links:
    """Links present in both directions, sorted."""
    return sorted(set(forward) & set(reverse))


def union(forward: Iterable[Link], reverse: Iterable[Link]) -> Links:
    """Links present in either direction, sorted."""
    return sorted(set(forward) | set(reverse))


def _grow(
    forward: Iterable[Link],
    reverse: Iterable[Link],
    src_len: int,
    tgt_len: int,
    *,
    diagonal: bool,
    final: bool,
    both_uncovered: bool,
) -> Links:
    """symal's ``printgrow``; see the module docstring."""
    fwd = _checked(forward, src_len, tgt_len, "forward")
    rev = _checked(reverse, src_len, tgt_len, "reverse")
    uni = fwd | rev
    src_cov = [False] * src_len
    tgt_cov = [False] * tgt_len
    # Current points as (target, source), kept sorted like symal's std::set<pair<e, f>>.
    cur = sorted((j, i) for i, j in fwd & rev)
    for j, i in cur:
        src_cov[i] = tgt_cov[j] = True

    neighbours = _NEIGHBOURS + (_DIAGONALS if diagonal else ())
    # Union points not yet in the alignment: the only ones growing can add (a point already in it has
    # both words covered). When none is left, nothing more can be added and the passes stop early.
    cand = uni - fwd.intersection(rev)
    added = True
    while added and cand:
        added = False
        k = 0
        while k < len(cur) and cand:
            j, i = cur[k]
            for dj, di in neighbours:
                nj, ni = j + dj, i + di
                if (ni, nj) in cand and not (tgt_cov[nj] and src_cov[ni]):
                    cand.discard((ni, nj))
                    pos = bisect_left(cur, (nj, ni))
                    cur.insert(pos, (nj, ni))
                    if pos <= k:  # inserted before the scan position: keep pointing at the same point
                        k += 1
                    src_cov[ni] = tgt_cov[nj] = True
                    added = True
            k += 1

    result = {(i, j) for j, i in cur}
    if final:
        for only in (fwd - rev, rev - fwd):
            for j, i in sorted((j, i) for i, j in only):
                if (i, j) in result:
                    continue
                if (both_uncovered and not src_cov[i] and not tgt_cov[j]) or (
                    not both_uncovered and not (src_cov[i] and tgt_cov[j])
                ):
                    result.add((i, j))
                    src_cov[i] = tgt_cov[j] = True
    return sorted(result)


def grow_diag_final_and(forward: Iterable[Link], reverse: Iterable[Link], src_len: int, tgt_len: int) -> Links:
    """Koehn et al.'s grow-diag-final-and, as Moses' ``symal -a=g -d=yes -f=yes -b=yes``."""
    return _grow(forward, reverse, src_len, tgt_len, diagonal=True, final=True, both_uncovered=True)


def grow_diag_final(forward: Iterable[Link], reverse: Iterable[Link], src_len: int, tgt_len: int) -> Links:
    """grow-diag-final (final step adds a union point if *either* word is unaligned): ``symal -d=yes -f=yes``."""
    return _grow(forward, reverse, src_len, tgt_len, diagonal=True, final=True, both_uncovered=False)


def grow_diag(forward: Iterable[Link], reverse: Iterable[Link], src_len: int, tgt_len: int) -> Links:
    """grow-diag (no final step): ``symal -a=g -d=yes``."""
    return _grow(forward, reverse, src_len, tgt_len, diagonal=True, final=False, both_uncovered=False)
