"""Decoding of version-1 preorderer files (onmt_xl 0.x before word clustering), kept so that models
trained with the version-1 format keep loading and reordering exactly as before.

Version 1: one word view (token id) and one class view (the token for the 100 most frequent
tokens, else its shape), one ``BOS``/``EOS`` on each side, 26 two-position feature templates, exact
CKY, sentences longer than ``max_len`` decoded in consecutive chunks joined by straight nodes.
Training always writes the current version (see :mod:`onmt_xl.reorder.preorderer`).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from onmt_xl.reorder.features import BOS, EOS, N_SPECIAL, UNK, shape_class_id
from onmt_xl.reorder.jit import njit, prange
from onmt_xl.reorder.oracle import chart_order, rect

_NEG = -1e300
_BIG = np.int64(1) << 62


class VocabV1:
    """Version-1 vocabulary: ``encode`` gives padded word and class ids, shape ``(n + 2,)``."""

    def __init__(self, tokens: List[str], class_words: int):
        self.tokens = tokens
        self.class_words = class_words
        self.clusters = None
        self.index: Dict[str, int] = {t: i + N_SPECIAL for i, t in enumerate(tokens)}
        cls = np.empty(len(tokens) + N_SPECIAL, dtype=np.int64)
        cls[:N_SPECIAL] = np.arange(N_SPECIAL)
        for i, t in enumerate(tokens):
            cls[i + N_SPECIAL] = i + N_SPECIAL if i < class_words else shape_class_id(t)
        self.classes = cls

    def __len__(self) -> int:
        return len(self.tokens) + N_SPECIAL

    def encode(self, tokens: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        n = len(tokens)
        w = np.empty(n + 2, dtype=np.int64)
        c = np.empty(n + 2, dtype=np.int64)
        w[0] = c[0] = BOS
        w[n + 1] = c[n + 1] = EOS
        for i, tok in enumerate(tokens):
            k = self.index.get(tok, UNK)
            w[i + 1] = k
            c[i + 1] = self.classes[k] if k != UNK else shape_class_id(tok)
        return w, c


_G = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S6, _S2 = np.uint64(6), np.uint64(2)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)

N_FEATS_A = 9
N_FEATS_B = 9
N_FEATS_C = 4
N_FEATS_D = 4
N_FEATS_NODE = N_FEATS_A + N_FEATS_B + N_FEATS_C + N_FEATS_D


@njit(cache=True)
def fhash(template: int, a: int, b: int, mask: int) -> int:
    """Feature index in ``[0, mask]`` of ``(template, a, b)`` (boost-style combine + splitmix64)."""
    x = np.uint64(template) * _G
    x ^= np.uint64(a) + _G + (x << _S6) + (x >> _S2)
    x ^= np.uint64(b) + _G + (x << _S6) + (x >> _S2)
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return np.int64(x & np.uint64(mask))


@njit(cache=True)
def len_bucket(n: int) -> int:
    """1, 2, 3, 4, 5-6, 7-9, 10-14, 15+ -> 0..7."""
    if n <= 4:
        return n - 1
    if n <= 6:
        return 4
    if n <= 9:
        return 5
    if n <= 14:
        return 6
    return 7


# Positions are indices into the padded arrays: token i of the (chunk starting at ``lo``) is
# at ``lo + i + 1``; ``w[lo + s]`` is the word just left of span ``[s, .)``.


@njit(cache=True)
def feats_left(w, c, lo: int, s: int, m: int, mask: int, out, k: int) -> int:
    """Features of the left child ``[s, m)`` -> ``out[k:k+N_FEATS_A]``; returns the new ``k``."""
    f, l, r = lo + s + 1, lo + m, lo + m + 1  # first, last of left; first of right
    out[k + 0] = fhash(1, w[f], 0, mask)
    out[k + 1] = fhash(2, w[l], 0, mask)
    out[k + 2] = fhash(3, c[f], 0, mask)
    out[k + 3] = fhash(4, c[l], 0, mask)
    out[k + 4] = fhash(5, c[f], c[l], mask)
    out[k + 5] = fhash(6, len_bucket(m - s), 0, mask)
    out[k + 6] = fhash(7, c[f], c[r], mask)
    out[k + 7] = fhash(8, w[f - 1], 0, mask)
    out[k + 8] = fhash(9, c[f - 1], c[f], mask)
    return k + N_FEATS_A


@njit(cache=True)
def feats_right(w, c, lo: int, m: int, e: int, mask: int, out, k: int) -> int:
    """Features of the right child ``[m, e)``."""
    f, l, p = lo + m + 1, lo + e, lo + m  # first, last of right; last of left
    out[k + 0] = fhash(11, w[f], 0, mask)
    out[k + 1] = fhash(12, w[l], 0, mask)
    out[k + 2] = fhash(13, c[f], 0, mask)
    out[k + 3] = fhash(14, c[l], 0, mask)
    out[k + 4] = fhash(15, c[f], c[l], mask)
    out[k + 5] = fhash(16, len_bucket(e - m), 0, mask)
    out[k + 6] = fhash(17, c[p], c[l], mask)
    out[k + 7] = fhash(18, w[l + 1], 0, mask)
    out[k + 8] = fhash(19, c[l], c[l + 1], mask)
    return k + N_FEATS_B


@njit(cache=True)
def feats_split(w, c, lo: int, m: int, mask: int, out, k: int) -> int:
    """Features across the split: ``(w_{m-1}, w_m)`` and class variants."""
    p, q = lo + m, lo + m + 1
    out[k + 0] = fhash(21, w[p], w[q], mask)
    out[k + 1] = fhash(22, c[p], c[q], mask)
    out[k + 2] = fhash(23, w[p], c[q], mask)
    out[k + 3] = fhash(24, c[p], w[q], mask)
    return k + N_FEATS_C


@njit(cache=True)
def feats_span(w, c, lo: int, s: int, e: int, mask: int, out, k: int) -> int:
    """Features of the whole span ``[s, e)``."""
    f, l = lo + s + 1, lo + e
    out[k + 0] = fhash(31, 0, 0, mask)
    out[k + 1] = fhash(32, c[f], c[l], mask)
    out[k + 2] = fhash(33, len_bucket(e - s), 0, mask)
    out[k + 3] = fhash(34, c[f - 1], c[l + 1], mask)
    return k + N_FEATS_D



@njit(cache=True)
def score_tables(w, c, lo: int, L: int, W, mask: int):
    """Fill ``A, B, C, D`` for the chunk of ``L`` tokens at ``lo``: ``O(L^2 F)`` lookups."""
    A = np.zeros((L + 1, L + 1, 2), dtype=np.float64)
    B = np.zeros((L + 1, L + 1, 2), dtype=np.float64)
    D = np.zeros((L + 1, L + 1, 2), dtype=np.float64)
    C = np.zeros((L + 1, 2), dtype=np.float64)
    buf = np.empty(max(N_FEATS_A, N_FEATS_B, N_FEATS_C, N_FEATS_D), dtype=np.int64)
    for s in range(L - 1):
        for m in range(s + 1, L):  # left child [s, m), right child starts at m < L
            feats_left(w, c, lo, s, m, mask, buf, 0)
            a0 = a1 = 0.0
            for k in range(N_FEATS_A):
                a0 += W[buf[k], 0]
                a1 += W[buf[k], 1]
            A[s, m, 0], A[s, m, 1] = a0, a1
    for m in range(1, L):
        for e in range(m + 1, L + 1):
            feats_right(w, c, lo, m, e, mask, buf, 0)
            b0 = b1 = 0.0
            for k in range(N_FEATS_B):
                b0 += W[buf[k], 0]
                b1 += W[buf[k], 1]
            B[m, e, 0], B[m, e, 1] = b0, b1
        feats_split(w, c, lo, m, mask, buf, 0)
        c0 = c1 = 0.0
        for k in range(N_FEATS_C):
            c0 += W[buf[k], 0]
            c1 += W[buf[k], 1]
        C[m, 0], C[m, 1] = c0, c1
    for s in range(L - 1):
        for e in range(s + 2, L + 1):
            feats_span(w, c, lo, s, e, mask, buf, 0)
            d0 = d1 = 0.0
            for k in range(N_FEATS_D):
                d0 += W[buf[k], 0]
                d1 += W[buf[k], 1]
            D[s, e, 0], D[s, e, 1] = d0, d1
    return A, B, C, D


@njit(cache=True)
def cky(A, B, C, D, P, aug: float, lexicographic: bool):
    """Best BTG tree: ``O(L^3)``.

    * ``lexicographic=False``: maximize ``score + aug * loss`` (``aug = 0``: plain decoding;
      the loss needs the pair prefix sums ``P``, pass an empty ``(0, 0)`` array when unused);
    * ``lexicographic=True``: minimal loss first, then maximal score (the latent oracle).

    Ties prefer the left-most split, then straight. Returns ``(split, inv, loss, score)``.
    """
    L = A.shape[0] - 1
    use_loss = P.shape[0] > 0
    obj = np.zeros((L + 1, L + 1), dtype=np.float64)  # maximized objective
    sco = np.zeros((L + 1, L + 1), dtype=np.float64)  # model score of the chosen subtree
    los = np.zeros((L + 1, L + 1), dtype=np.int64)
    split = np.zeros((L + 1, L + 1), dtype=np.int64)
    inv = np.zeros((L + 1, L + 1), dtype=np.int8)
    for length in range(2, L + 1):
        for s in range(0, L - length + 1):
            e = s + length
            d0, d1 = D[s, e, 0], D[s, e, 1]
            best_obj, best_sco, best_los = _NEG, _NEG, _BIG
            best_m, best_t = s + 1, 0
            for m in range(s + 1, e):
                base_sco = sco[s, m] + sco[m, e]
                base_obj = obj[s, m] + obj[m, e]
                base_los = los[s, m] + los[m, e]
                for t in range(2):
                    node = A[s, m, t] + B[m, e, t] + C[m, t] + (d0 if t == 0 else d1)
                    cl = base_los
                    if use_loss:
                        cl += rect(P, s, m, m, e) if t == 0 else rect(P, m, e, s, m)
                    if lexicographic:
                        better = cl < best_los or (cl == best_los and base_sco + node > best_sco)
                        o = base_sco + node
                    else:
                        o = base_obj + node + (aug * (cl - base_los) if use_loss else 0.0)
                        better = o > best_obj
                    if better:
                        best_obj, best_sco, best_los = o, base_sco + node, cl
                        best_m, best_t = m, t
            obj[s, e], sco[s, e], los[s, e] = best_obj, best_sco, best_los
            split[s, e], inv[s, e] = best_m, best_t
    return split, inv, los[0, L], sco[0, L]


@njit(cache=True)
def decode_sentence(w, c, L: int, W, mask: int, max_len: int, out) -> None:
    """Best order of one sentence into ``out`` (shape ``(L,)``).

    Sentences longer than ``max_len`` (if ``> 0``) are cut into consecutive chunks of at most
    ``max_len`` tokens, each decoded exactly and joined by straight nodes (still BTG-valid).
    """
    empty = np.zeros((0, 0), dtype=np.int64)
    chunk = L if max_len <= 0 or L <= max_len else max_len
    lo = 0
    while lo < L:
        n = min(chunk, L - lo)
        if n == 1:
            out[lo] = lo
        elif n > 1:
            A, B, C, D = score_tables(w, c, lo, n, W, mask)
            split, inv, _, _ = cky(A, B, C, D, empty, 0.0, False)
            o = chart_order(split, inv, 0, n)
            for i in range(n):
                out[lo + i] = lo + o[i]
        lo += n


@njit(cache=True, parallel=True)
def decode_batch(ws, cs, pad_off, lens, W, mask: int, max_len: int):
    """Orders of a batch (flat padded arrays), sentences in parallel; sentence ``k`` at
    ``[sum(lens[:k]), sum(lens[:k+1]))`` of the returned flat int64 array."""
    n = lens.shape[0]
    off = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        off[k + 1] = off[k] + lens[k]
    out = np.empty(off[n], dtype=np.int64)
    for k in prange(n):
        L = lens[k]
        lo = pad_off[k]
        decode_sentence(ws[lo : lo + L + 2], cs[lo : lo + L + 2], L, W, mask, max_len, out[off[k] : off[k + 1]])
    return out
