"""Word classes for the preorderer: exchange clustering of the training source side (numba).

Predictive exchange clustering (Uszkoreit and Brants 2008) made two-sided: a word ``w`` in class
``c(w)`` is scored by how well its class is predicted from the previous word *and* from the next
word, ``P(c(w) | w_{-1}) P(c(w) | w_{+1})``. The part of the log-likelihood that depends on the
clustering is

    F = sum_{v,c} f(N(v, c)) + sum_{u,c} f(N'(u, c)) - 2 sum_c f(N(c)),     f(x) = x log x

with ``N(v, c)`` the count of ``v`` followed by a word of class ``c``, ``N'(u, c)`` the count of
a word of class ``c`` followed by ``u``, and ``N(c)`` the count of class ``c``. Each pass visits the
words by decreasing frequency and moves each to the class that maximizes ``F`` (exact gain, with a
table of ``x log x``); the gains of the most frequent words (the ~20 with the most contexts in 50k
Japanese sentences, a third of the work) are computed over blocks of classes in parallel
(``prange``; fewer, larger parallel regions stall less on shared cores), so the result does not
depend on the number of threads. Words start in
class ``rank mod n_classes``; the procedure is deterministic and stops after ``passes`` passes or
a pass without moves.

Context words are all token ids (including ``UNK`` for rare words and the sentence boundaries);
the clustered words are the vocabulary entries (ids ``N_SPECIAL..``). Cost per pass:
``O(n_classes x distinct bigrams)``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onmt_xl.core.reorder.jit import njit, prange


@njit(cache=True)
def _bigram_csr(ids, sent_off, n_ids: int):
    """Distinct bigram counts of the padded id sequences as two CSR matrices (by 2nd / by 1st word).

    ``ids[sent_off[k]:sent_off[k+1]]`` is sentence ``k`` *with* its boundary tokens. Returns
    ``(pred_ptr, pred_idx, pred_cnt, succ_ptr, succ_idx, succ_cnt, unigram)``: the predecessors of
    word ``w`` are ``pred_idx[pred_ptr[w]:pred_ptr[w+1]]`` with counts ``pred_cnt[...]``.
    """
    n_big = 0
    for k in range(sent_off.shape[0] - 1):
        n_big += sent_off[k + 1] - sent_off[k] - 1
    keys = np.empty(n_big, dtype=np.int64)
    q = 0
    for k in range(sent_off.shape[0] - 1):
        for i in range(sent_off[k], sent_off[k + 1] - 1):
            keys[q] = ids[i] * n_ids + ids[i + 1]
            q += 1
    keys.sort()
    # unique with counts
    uk = np.empty(n_big, dtype=np.int64)
    uc = np.empty(n_big, dtype=np.int64)
    nu = 0
    for i in range(n_big):
        if nu > 0 and uk[nu - 1] == keys[i]:
            uc[nu - 1] += 1
        else:
            uk[nu] = keys[i]
            uc[nu] = 1
            nu += 1
    uk, uc = uk[:nu], uc[:nu]
    first = uk // n_ids
    second = uk % n_ids
    unigram = np.zeros(n_ids, dtype=np.int64)
    for i in range(ids.shape[0]):
        unigram[ids[i]] += 1
    pred = _csr(second, first, uc, n_ids)
    succ = _csr(first, second, uc, n_ids)
    return pred[0], pred[1], pred[2], succ[0], succ[1], succ[2], unigram


@njit(cache=True)
def _csr(by, other, counts, n_ids: int):
    """Rows ``by``, columns ``other``: ``(ptr, idx, cnt)``."""
    nu = by.shape[0]
    ptr = np.zeros(n_ids + 1, dtype=np.int64)
    for i in range(nu):
        ptr[by[i] + 1] += 1
    for w in range(n_ids):
        ptr[w + 1] += ptr[w]
    fill = ptr[:-1].copy()
    idx = np.empty(nu, dtype=np.int64)
    cnt = np.empty(nu, dtype=np.int64)
    for i in range(nu):
        p = fill[by[i]]
        idx[p] = other[i]
        cnt[p] = counts[i]
        fill[by[i]] += 1
    return ptr, idx, cnt


@njit(cache=True)
def _join_gains(g, b0: int, b1: int, w: int, NL, NR, cls_count, pp, pi, pc, sp, si, sc, nw: int, T) -> None:
    """``g[b]`` for ``b0 <= b < b1``: change of ``F`` when the removed word ``w`` joins class ``b``
    (``T[x] = x log x``; row by row, as the counts of one context are contiguous)."""
    for b in range(b0, b1):
        g[b] = -2.0 * (T[cls_count[b] + nw] - T[cls_count[b]])
    for q in range(pp[w], pp[w + 1]):
        row = NL[pi[q]]
        n = pc[q]
        for b in range(b0, b1):
            g[b] += T[row[b] + n] - T[row[b]]
    for q in range(sp[w], sp[w + 1]):
        row = NR[si[q]]
        n = sc[q]
        for b in range(b0, b1):
            g[b] += T[row[b] + n] - T[row[b]]


@njit(cache=True)
def _stay_gain(w: int, a: int, NL, NR, cls_count, pp, pi, pc, sp, si, sc, nw: int, T) -> float:
    """Change of ``F`` when ``w`` (in class ``a``) left ``a`` and rejoined it."""
    stay = -2.0 * (T[cls_count[a]] - T[cls_count[a] - nw])
    for q in range(pp[w], pp[w + 1]):
        x = NL[pi[q], a]
        stay += T[x] - T[x - pc[q]]
    for q in range(sp[w], sp[w + 1]):
        x = NR[si[q], a]
        stay += T[x] - T[x - sc[q]]
    return stay


@njit(cache=True)
def _move(w: int, a: int, b: int, cls_count, NL, NR, pp, pi, pc, sp, si, sc, nw: int) -> None:
    """Move word ``w`` from class ``a`` (``-1``: from nowhere) to ``b``."""
    for q in range(pp[w], pp[w + 1]):
        if a >= 0:
            NL[pi[q], a] -= pc[q]
        NL[pi[q], b] += pc[q]
    for q in range(sp[w], sp[w + 1]):
        if a >= 0:
            NR[si[q], a] -= sc[q]
        NR[si[q], b] += sc[q]
    if a >= 0:
        cls_count[a] -= nw
    cls_count[b] += nw


_PAR_WORK = 1 << 17  # contexts x classes above which a word's gains are computed in parallel
_BLOCKS = 16


@njit(cache=True, parallel=True)
def _exchange(words, init, n_ids: int, n_classes: int, pp, pi, pc, sp, si, sc, unigram, passes: int):
    """Exchange passes over ``words`` (ids, in visiting order); returns (classes, moves per pass).

    Each word moves to the class with the largest gain (ties: stay, then the lowest index). The
    gains of a frequent word (many contexts) are computed over blocks of classes in parallel;
    the result is the same for any number of threads."""
    cls = np.full(n_ids, -1, dtype=np.int64)
    NL = np.zeros((n_ids, n_classes), dtype=np.int64)
    NR = np.zeros((n_ids, n_classes), dtype=np.int64)
    cls_count = np.zeros(n_classes, dtype=np.int64)
    total = 0
    for k in range(words.shape[0]):
        w = words[k]
        cls[w] = init[k]
        _move(w, -1, init[k], cls_count, NL, NR, pp, pi, pc, sp, si, sc, unigram[w])
        total += unigram[w]
    T = np.zeros(total + 1)
    for x in range(1, total + 1):
        T[x] = x * np.log(x)
    g = np.zeros(n_classes)
    step = (n_classes + _BLOCKS - 1) // _BLOCKS
    moves = np.zeros(passes, dtype=np.int64)
    for it in range(passes):
        for k in range(words.shape[0]):
            w = words[k]
            a = cls[w]
            nw = unigram[w]
            work = (pp[w + 1] - pp[w] + sp[w + 1] - sp[w]) * n_classes
            if work >= _PAR_WORK:
                for blk in prange(_BLOCKS):
                    _join_gains(g, blk * step, min(n_classes, (blk + 1) * step), w, NL, NR, cls_count,
                                pp, pi, pc, sp, si, sc, nw, T)
            else:
                _join_gains(g, 0, n_classes, w, NL, NR, cls_count, pp, pi, pc, sp, si, sc, nw, T)
            best_b, best_g = a, _stay_gain(w, a, NL, NR, cls_count, pp, pi, pc, sp, si, sc, nw, T)
            for b in range(n_classes):
                if b != a and g[b] > best_g + 1e-9:
                    best_b, best_g = b, g[b]
            if best_b != a:
                _move(w, a, best_b, cls_count, NL, NR, pp, pi, pc, sp, si, sc, nw)
                cls[w] = best_b
                moves[it] += 1
        if moves[it] == 0:
            return cls, moves[: it + 1]
    return cls, moves


def exchange_clusters(
    encoded: Sequence[np.ndarray], n_ids: int, first_word: int, n_classes: int = 256, passes: int = 10
) -> np.ndarray:
    """Classes of the word ids ``first_word..n_ids-1`` (array of length ``n_ids - first_word``).

    ``encoded``: one int array per sentence, *with* its boundary tokens (ids below ``first_word``
    are context only: unknown words and sentence boundaries). Fewer words than ``n_classes``:
    every word is its own class.
    """
    n_words = n_ids - first_word
    if n_words <= 0:
        return np.zeros(0, dtype=np.int64)
    if n_words <= n_classes:
        return np.arange(n_words, dtype=np.int64)
    lens = np.array([len(s) for s in encoded], dtype=np.int64)
    sent_off = np.zeros(len(encoded) + 1, dtype=np.int64)
    sent_off[1:] = np.cumsum(lens)
    ids = np.concatenate(encoded).astype(np.int64) if encoded else np.zeros(0, dtype=np.int64)
    from onmt_xl.core.reorder.threads import ensure_threading

    ensure_threading()
    pp, pi, pc, sp, si, sc, unigram = _bigram_csr(ids, sent_off, n_ids)
    words = np.arange(first_word, n_ids, dtype=np.int64)
    # visit by decreasing frequency (ties: by id), start in class rank mod n_classes
    words = words[np.lexsort((words, -unigram[words]))]
    init = np.arange(n_words, dtype=np.int64) % n_classes
    cls, _ = _exchange(words, init, n_ids, n_classes, pp, pi, pc, sp, si, sc, unigram, passes)
    return cls[first_word:].copy()
