"""CKY over BTG trees with a hashed linear model, and the latent-oracle perceptron (numba).

Shapes: a sentence (or chunk) of ``L`` tokens has padded id arrays ``w``, ``c`` and offset
``lo`` (see :mod:`onmt_xl.reorder.features`); weights ``W`` have shape ``(size, 2)``,
column 0 straight, column 1 inverted. Tables (the factorization of features.py):
``A[s, m, t]``, ``B[m, e, t]``, ``D[s, e, t]`` of shape ``(L+1, L+1, 2)``, ``C[m, t]`` of
shape ``(L+1, 2)``. Back-pointers ``split[s, e]``, ``inv[s, e]`` as in oracle.py.

Training (Neubig et al. 2012, Sec. 3-4): the target tree is *latent*: the highest-scoring tree
among those with minimal Kendall loss (CKY, lexicographic on ``(loss, -score)``, exact). An
averaged structured perceptron (Collins 2002) updates toward it whenever the predicted tree
(optionally loss-augmented: ``score + aug * loss``) has a larger loss.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onmt_xl.reorder.features import (
    N_FEATS_A,
    N_FEATS_B,
    N_FEATS_C,
    N_FEATS_D,
    N_FEATS_NODE,
    feats_left,
    feats_right,
    feats_span,
    feats_split,
    node_features,
)
from onmt_xl.reorder.oracle import chart_order, pair_prefix, rect

_NEG = -1e300
_BIG = np.int64(1) << 62


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
def tree_nodes(split, inv, L: int):
    """Internal nodes of the back-pointer tree: array ``(L - 1, 4)`` of ``(s, m, e, t)``."""
    out = np.empty((max(L - 1, 0), 4), dtype=np.int64)
    if L < 2:
        return out
    st_s = np.empty(L, dtype=np.int64)
    st_e = np.empty(L, dtype=np.int64)
    st_s[0], st_e[0] = 0, L
    top, k = 1, 0
    while top > 0:
        top -= 1
        s, e = st_s[top], st_e[top]
        m = split[s, e]
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = s, m, e, inv[s, e]
        k += 1
        if m - s > 1:
            st_s[top], st_e[top] = s, m
            top += 1
        if e - m > 1:
            st_s[top], st_e[top] = m, e
            top += 1
    return out


@njit(cache=True)
def update(W, U, w, c, lo: int, nodes, delta: float, step: float, mask: int) -> None:
    """Perceptron update ``W[f, t] += delta`` for every feature of every node; ``U`` keeps
    ``step * delta`` sums for averaging (``W_avg = W - U / step``)."""
    buf = np.empty(N_FEATS_NODE, dtype=np.int64)
    for k in range(nodes.shape[0]):
        s, m, e, t = nodes[k, 0], nodes[k, 1], nodes[k, 2], nodes[k, 3]
        node_features(w, c, lo, s, m, e, mask, buf)
        for j in range(N_FEATS_NODE):
            W[buf[j], t] += delta
            U[buf[j], t] += step * delta


@njit(cache=True)
def train_chunk(ws, cs, pad_off, ranks, rank_off, idx, W, U, step: float, aug: float, mask: int):
    """One perceptron pass over sentences ``idx`` (flat corpus arrays, see preorderer.py).

    Returns ``(step, sum of predicted losses, sum of oracle losses, #updates)``.
    """
    pred_loss = 0
    gold_loss = 0
    n_upd = 0
    for q in range(idx.shape[0]):
        k = idx[q]
        lo = pad_off[k]
        L = rank_off[k + 1] - rank_off[k]
        step += 1.0
        if L < 2:
            continue
        w = ws[lo : lo + L + 2]
        c = cs[lo : lo + L + 2]
        P = pair_prefix(ranks[rank_off[k] : rank_off[k + 1]])
        A, B, C, D = score_tables(w, c, 0, L, W, mask)
        sp_p, iv_p, l_p, _ = cky(A, B, C, D, P, aug, False)
        sp_g, iv_g, l_g, _ = cky(A, B, C, D, P, 0.0, True)
        pred_loss += l_p
        gold_loss += l_g
        if l_p > l_g:
            n_upd += 1
            update(W, U, w, c, 0, tree_nodes(sp_g, iv_g, L), 1.0, step, mask)
            update(W, U, w, c, 0, tree_nodes(sp_p, iv_p, L), -1.0, step, mask)
    return step, pred_loss, gold_loss, n_upd


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


@njit(cache=True)
def decode_batch(ws, cs, pad_off, lens, W, mask: int, max_len: int):
    """Orders of a batch (flat padded arrays); returns a flat int64 array, sentence ``k`` at
    ``[sum(lens[:k]), sum(lens[:k+1]))``."""
    total = 0
    for k in range(lens.shape[0]):
        total += lens[k]
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for k in range(lens.shape[0]):
        L = lens[k]
        lo = pad_off[k]
        decode_sentence(ws[lo : lo + L + 2], cs[lo : lo + L + 2], L, W, mask, max_len, out[pos : pos + L])
        pos += L
    return out
