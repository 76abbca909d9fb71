"""CKY over BTG trees with a hashed linear model, and the latent-oracle perceptron (numba).

Shapes: a sentence (or chunk) of ``L`` tokens has padded id arrays ``w``, ``c`` (``(L + 4,)``), its
other views ``g`` (``(L + 4, N_VIEWS)``) and offset ``lo`` (see :mod:`onmt_xl.core.reorder.features`); ``fset``
is the model's feature-set bit mask (0: the base templates); weights ``W`` have shape ``(size, 2)``, column 0
straight, column 1 inverted. With a span limit ``K`` (``K = L``: exact), the tables are banded:
``A[s, d, t]`` scores the left child ``[s, s+d)``, ``B[m, d, t]`` the right child ``[m, m+d)``,
``D[s, d, t]`` the node ``[s, s+d)``, ``C[m, t]`` the split, each of shape ``(L+1, K+1, 2)`` or
``(L+1, 2)``; one-position features are folded in (start into ``A``, end into ``B``).

**Span limit.** The chart covers every BTG tree over spans of at most ``K`` tokens. A longer
input is covered by a left-branching chain of *straight* glue nodes ``(0, m, e)`` whose right
children are chart spans of at most ``K`` tokens, chosen by a segmentation DP: so no inverted
node spans more than ``K`` tokens, the cost is ``O(L K^2)`` instead of ``O(L^3)``, and the
result is still a BTG tree. ``K >= L`` is exact CKY.

**Training** (Neubig et al. 2012, Sec. 3-4): the target tree is *latent*: the highest-scoring
tree among those with minimal loss (CKY, lexicographic on ``(loss, -score)``, exact). An
averaged structured perceptron (Collins 2002) updates toward it whenever the predicted tree
(loss-augmented: ``score + aug * loss``) has a larger loss. The loss is an integer
``primary * KB + secondary`` over two rank arrays (Kendall loss over the aligned words, then over
the words with null attachment), so the secondary loss only breaks ties of the primary one.
Training runs in mini-batches: the trees of a batch are found in parallel (``prange``) with the
weights fixed, then the updates are applied in corpus order -- the same result for any number
of threads.
"""

from __future__ import annotations

import numpy as np

from onmt_xl.core.reorder.features import (
    MAX_FEATS_GROUP,
    MAX_FEATS_NODE,
    feats_end,
    feats_left,
    feats_right,
    feats_span,
    feats_split,
    feats_start,
    node_features,
)
from onmt_xl.core.reorder.jit import njit, prange
from onmt_xl.core.reorder.oracle import backpointers, pair_prefix, rect, walk_spans

_NEG = -1e300
_BIG = np.int64(1) << 62


@njit(cache=True, inline="always")
def _sum(W, buf, n: int):
    a0 = a1 = 0.0
    for k in range(n):
        a0 += W[buf[k], 0]
        a1 += W[buf[k], 1]
    return a0, a1


@njit(cache=True)
def score_tables(w, c, g, lo: int, L: int, K: int, W, mask: int, fset: int):
    """``(A, B, C, D, GA, GD)`` for the chunk of ``L`` tokens at ``lo`` with span limit ``K <= L``.

    ``GA[m]`` / ``GD[e]``: left-child / node features of the glue nodes ``(0, m, e)`` (only filled
    when ``K < L``). ``O(L K)`` hash look-ups per template.
    """
    buf = np.empty(MAX_FEATS_GROUP, dtype=np.int64)
    S = np.zeros((L + 1, 2))
    E = np.zeros((L + 1, 2))
    C = np.zeros((L + 1, 2))
    for s in range(L - 1):
        nf = feats_start(w, c, g, lo, s, mask, fset, buf, 0)
        S[s, 0], S[s, 1] = _sum(W, buf, nf)
    for m in range(1, L):
        nf = feats_split(w, c, g, lo, m, mask, fset, buf, 0)
        C[m, 0], C[m, 1] = _sum(W, buf, nf)
    for e in range(2, L + 1):
        nf = feats_end(w, c, g, lo, e, mask, fset, buf, 0)
        E[e, 0], E[e, 1] = _sum(W, buf, nf)
    A = np.zeros((L + 1, K + 1, 2))
    B = np.zeros((L + 1, K + 1, 2))
    D = np.zeros((L + 1, K + 1, 2))
    for s in range(L - 1):
        for d in range(1, min(K, L - 1 - s) + 1):  # left child [s, s+d), right child starts < L
            nf = feats_left(w, c, g, lo, s, s + d, mask, fset, buf, 0)
            a0, a1 = _sum(W, buf, nf)
            A[s, d, 0], A[s, d, 1] = a0 + S[s, 0], a1 + S[s, 1]
    for m in range(1, L):
        for d in range(1, min(K, L - m) + 1):
            nf = feats_right(w, c, g, lo, m, m + d, mask, fset, buf, 0)
            b0, b1 = _sum(W, buf, nf)
            B[m, d, 0], B[m, d, 1] = b0 + E[m + d, 0], b1 + E[m + d, 1]
    for s in range(L - 1):
        for d in range(2, min(K, L - s) + 1):
            nf = feats_span(w, c, g, lo, s, s + d, mask, fset, buf, 0)
            D[s, d, 0], D[s, d, 1] = _sum(W, buf, nf)
    GA = np.zeros(L + 1)
    GD = np.zeros(L + 1)
    if K < L:
        for m in range(1, L):
            nf = feats_left(w, c, g, lo, 0, m, mask, fset, buf, 0)
            GA[m] = _sum(W, buf, nf)[0] + S[0, 0]
        for e in range(2, L + 1):
            nf = feats_span(w, c, g, lo, 0, e, mask, fset, buf, 0)
            GD[e] = _sum(W, buf, nf)[0]
    return A, B, C, D, GA, GD


@njit(cache=True)
def cky(A, B, C, D, GA, GD, P, aug: float, lexicographic: bool, loss_scale: float):
    """Best BTG tree under span limit ``K = A.shape[1] - 1``; ``O(L K^2)``.

    * ``lexicographic=False``: maximize ``score + aug * loss / loss_scale`` (``aug = 0``: plain
      decoding; the loss needs the pair prefix sums ``P``, an empty ``(0, 0)`` array when unused);
    * ``lexicographic=True``: minimal loss first, then maximal score (the latent oracle).

    Ties prefer the left-most split, then straight. Returns ``(split, inv, gsplit, loss, score)``:
    banded back-pointers ``split[s, d]``, ``inv[s, d]`` of span ``[s, s+d)`` and the glue
    back-pointers ``gsplit[e]`` (0: ``[0, e)`` is a chart span).
    """
    L = A.shape[0] - 1
    K = A.shape[1] - 1
    obj, sco, los, split, inv = _chart(A, B, C, D, P, aug, lexicographic, loss_scale)
    if K >= L:
        return split, inv, np.zeros(L + 1, dtype=np.int64), los[0, L], sco[0, L]
    gsplit, glos, gsco = _glue(obj, sco, los, B, C, GA, GD, P, aug, lexicographic, loss_scale)
    return split, inv, gsplit, glos[L], gsco[L]


@njit(cache=True)
def _chart(A, B, C, D, P, aug: float, lexicographic: bool, loss_scale: float):
    """The banded chart of :func:`cky`: for every span ``[s, s+d)`` with ``d <= K`` the best objective,
    model score and loss of its subtree and its back-pointers ``(obj, sco, los, split, inv)``."""
    L = A.shape[0] - 1
    K = A.shape[1] - 1
    use_loss = P.shape[0] > 0
    obj = np.zeros((L + 1, K + 1))  # maximized objective
    sco = np.zeros((L + 1, K + 1))  # model score of the chosen subtree
    los = np.zeros((L + 1, K + 1), dtype=np.int64)
    split, inv = backpointers(L + 1, K + 1)
    for d in range(2, K + 1):
        for s in range(0, L - d + 1):
            e = s + d
            best_obj, best_sco, best_los = _NEG, _NEG, _BIG
            best_m, best_t = s + 1, 0
            for m in range(s + 1, e):
                dl, dr = m - s, e - m
                base_sco = sco[s, dl] + sco[m, dr]
                base_obj = obj[s, dl] + obj[m, dr]
                base_los = los[s, dl] + los[m, dr]
                for t in range(2):
                    node = A[s, dl, t] + B[m, dr, t] + C[m, t] + D[s, d, t]
                    cl = base_los
                    if use_loss:
                        cl += rect(P, s, m, m, e) if t == 0 else rect(P, m, e, s, m)
                    if lexicographic:
                        o = base_sco + node
                        better = cl < best_los or (cl == best_los and o > best_sco)
                    else:
                        o = base_obj + node
                        if use_loss:
                            o += aug * (cl - base_los) / loss_scale
                        better = o > best_obj
                    if better:
                        best_obj, best_sco, best_los = o, base_sco + node, cl
                        best_m, best_t = m, t
            obj[s, d], sco[s, d], los[s, d] = best_obj, best_sco, best_los
            split[s, d], inv[s, d] = best_m, best_t
    return obj, sco, los, split, inv


@njit(cache=True)
def _glue(obj, sco, los, B, C, GA, GD, P, aug: float, lexicographic: bool, loss_scale: float):
    """The straight glue of :func:`cky` over chart spans of at most ``K`` tokens, for sentences longer
    than ``K``: back-pointers ``gsplit[e]`` and the loss and score of the best ``[0, e)``."""
    L = obj.shape[0] - 1
    K = obj.shape[1] - 1
    use_loss = P.shape[0] > 0
    gsplit = np.zeros(L + 1, dtype=np.int64)
    gobj = np.zeros(L + 1)
    gsco = np.zeros(L + 1)
    glos = np.zeros(L + 1, dtype=np.int64)
    for e in range(1, K + 1):
        gobj[e], gsco[e], glos[e] = obj[0, e], sco[0, e], los[0, e]
    for e in range(K + 1, L + 1):
        best_obj, best_sco, best_los = _NEG, _NEG, _BIG
        best_m = e - K
        for m in range(e - K, e):
            dr = e - m
            node = GA[m] + B[m, dr, 0] + C[m, 0] + GD[e]
            cl = glos[m] + los[m, dr]
            if use_loss:
                cl += rect(P, 0, m, m, e)
            if lexicographic:
                o = gsco[m] + sco[m, dr] + node
                better = cl < best_los or (cl == best_los and o > best_sco)
            else:
                o = gobj[m] + obj[m, dr] + node
                if use_loss:
                    o += aug * (cl - glos[m] - los[m, dr]) / loss_scale
                better = o > best_obj
            if better:
                best_obj, best_sco, best_los, best_m = o, gsco[m] + sco[m, dr] + node, cl, m
        gobj[e], gsco[e], glos[e], gsplit[e] = best_obj, best_sco, best_los, best_m
    return gsplit, glos, gsco


@njit(cache=True)
def extract(split, inv, gsplit, L: int, K: int, order, nodes) -> None:
    """The tree's order into ``order`` (shape ``(L,)``) and its internal nodes ``(s, m, e, t)``
    into ``nodes`` (shape ``(L - 1, 4)``, glue nodes first, then each segment pre-order)."""
    if L == 0:
        return
    seg = np.empty(L + 1, dtype=np.int64)  # segment boundaries, right to left
    nseg = 0
    e = L
    nn = 0
    while e > 0:
        seg[nseg] = e
        nseg += 1
        if e <= K:
            e = 0
        else:
            m = gsplit[e]
            nodes[nn, 0], nodes[nn, 1], nodes[nn, 2], nodes[nn, 3] = 0, m, e, 0
            nn += 1
            e = m
    k = 0
    for j in range(nseg - 1, -1, -1):  # segments left to right
        k, nn = walk_spans(split, inv, 0 if j == nseg - 1 else seg[j + 1], seg[j], True, order, k, nodes, nn)


@njit(cache=True, inline="always")
def span_limit(L: int, max_span: int) -> int:
    return L if max_span <= 0 or max_span >= L else max_span


@njit(cache=True)
def update(W, U, w, c, g, gold, pred, step: float, mask: int, fset: int) -> None:
    """Perceptron update: ``W[f, t] += 1`` for the features of the ``gold`` tree's nodes, ``-= 1``
    for the ``pred`` tree's; nodes in both trees cancel and are skipped. ``U`` keeps ``step * delta``
    sums for averaging (``W_avg = W - U / step``)."""
    buf = np.empty(MAX_FEATS_NODE, dtype=np.int64)
    for side in range(2):
        nodes, other = (gold, pred) if side == 0 else (pred, gold)
        delta = 1.0 if side == 0 else -1.0
        for k in range(nodes.shape[0]):
            s, m, e, t = nodes[k, 0], nodes[k, 1], nodes[k, 2], nodes[k, 3]
            shared = False
            for q in range(other.shape[0]):
                if other[q, 0] == s and other[q, 1] == m and other[q, 2] == e and other[q, 3] == t:
                    shared = True
                    break
            if shared:
                continue
            nf = node_features(w, c, g, 0, s, m, e, mask, fset, buf)
            for j in range(nf):
                W[buf[j], t] += delta
                U[buf[j], t] += step * delta


@njit(cache=True)
def _loss_matrix(r1, r2, use_r2: bool):
    """Integer pair prefix sums ``P1 * KB + P2`` and ``KB`` (``P2`` only breaks ties of ``P1``)."""
    L = r1.shape[0]
    P = pair_prefix(r1)
    if not use_r2:
        return P, np.int64(1)
    kb = np.int64(L) * L + 1
    P2 = pair_prefix(r2)
    for i in range(L + 1):
        for j in range(L + 1):
            P[i, j] = P[i, j] * kb + P2[i, j]
    return P, kb


@njit(cache=True)
def _train_one(ws, cs, gs, lo, L, r1, r2, use_r2, W, aug, mask, fset, max_span, nodes_p, nodes_g):
    """Predicted and latent-oracle trees of one sentence -> ``(pred loss, oracle loss, KB)``."""
    K = span_limit(L, max_span)
    w = ws[lo : lo + L + 4]
    c = cs[lo : lo + L + 4]
    g = gs[lo : lo + L + 4]
    P, kb = _loss_matrix(r1, r2, use_r2)
    A, B, C, D, GA, GD = score_tables(w, c, g, 0, L, K, W, mask, fset)
    order = np.empty(L, dtype=np.int64)
    sp, iv, gsp, l_p, _ = cky(A, B, C, D, GA, GD, P, aug, False, float(kb))
    extract(sp, iv, gsp, L, K, order, nodes_p)
    sp, iv, gsp, l_g, _ = cky(A, B, C, D, GA, GD, P, 0.0, True, float(kb))
    extract(sp, iv, gsp, L, K, order, nodes_g)
    return l_p, l_g, kb


@njit(cache=True)
def _train_slot(j, k, ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2, W, aug, mask, fset, max_span,
                nodes_p, nodes_g, lp, lg, kbs) -> None:
    """Trees of sentence ``k`` into batch slot ``j``."""
    L = lens[k]
    lp[j] = lg[j] = 0
    kbs[j] = 1
    if L >= 2:
        ro = rank_off[k]
        lp[j], lg[j], kbs[j] = _train_one(ws, cs, gs, pad_off[k], L, r1[ro : ro + L], r2[ro : ro + L], use_r2,
                                          W, aug, mask, fset, max_span, nodes_p[j, : L - 1], nodes_g[j, : L - 1])


@njit(cache=True, parallel=True)
def train_pass(ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2: bool, perm, W, U, step: float,
               aug: float, mask: int, fset: int, max_span: int, batch: int, serial: bool):
    """One perceptron pass over the sentences ``perm`` (flat corpus arrays, see preorderer.py).

    Mini-batches of ``batch`` sentences: trees in parallel (``serial``: in a plain loop, for one
    thread -- a parallel region wakes threads up even then), updates in ``perm`` order.
    Returns ``(step, sum of predicted primary losses, sum of oracle primary losses, #updates)``.
    """
    Lmax = 2
    for k in range(lens.shape[0]):
        Lmax = max(Lmax, lens[k])
    nodes_p = np.zeros((batch, Lmax - 1, 4), dtype=np.int64)
    nodes_g = np.zeros((batch, Lmax - 1, 4), dtype=np.int64)
    lp = np.zeros(batch, dtype=np.int64)
    lg = np.zeros(batch, dtype=np.int64)
    kbs = np.ones(batch, dtype=np.int64)
    pred_loss = 0
    gold_loss = 0
    n_upd = 0
    for b0 in range(0, perm.shape[0], batch):
        nb = min(batch, perm.shape[0] - b0)
        if serial:
            for j in range(nb):
                _train_slot(j, perm[b0 + j], ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2, W, aug, mask,
                            fset, max_span, nodes_p, nodes_g, lp, lg, kbs)
        else:
            for j in prange(nb):
                _train_slot(j, perm[b0 + j], ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2, W, aug, mask,
                            fset, max_span, nodes_p, nodes_g, lp, lg, kbs)
        for j in range(nb):
            step += 1.0
            k = perm[b0 + j]
            L = lens[k]
            if L < 2:
                continue
            pred_loss += lp[j] // kbs[j]
            gold_loss += lg[j] // kbs[j]
            if lp[j] > lg[j]:
                n_upd += 1
                lo = pad_off[k]
                w = ws[lo : lo + L + 4]
                c = cs[lo : lo + L + 4]
                g = gs[lo : lo + L + 4]
                update(W, U, w, c, g, nodes_g[j, : L - 1], nodes_p[j, : L - 1], step, mask, fset)
    return step, pred_loss, gold_loss, n_upd


@njit(cache=True)
def _pass_serial(ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2: bool, perm, W, U, step: float,
                 aug: float, mask: int, fset: int, max_span: int, Lmax: int):
    """The plain online perceptron over ``perm`` (one sentence at a time); as :func:`train_pass`."""
    nodes_p = np.zeros((1, Lmax - 1, 4), dtype=np.int64)
    nodes_g = np.zeros((1, Lmax - 1, 4), dtype=np.int64)
    lp = np.zeros(1, dtype=np.int64)
    lg = np.zeros(1, dtype=np.int64)
    kbs = np.ones(1, dtype=np.int64)
    pred_loss = 0
    gold_loss = 0
    n_upd = 0
    for q in range(perm.shape[0]):
        k = perm[q]
        step += 1.0
        L = lens[k]
        if L < 2:
            continue
        _train_slot(0, k, ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2, W, aug, mask, fset, max_span,
                    nodes_p, nodes_g, lp, lg, kbs)
        pred_loss += lp[0] // kbs[0]
        gold_loss += lg[0] // kbs[0]
        if lp[0] > lg[0]:
            n_upd += 1
            lo = pad_off[k]
            update(W, U, ws[lo : lo + L + 4], cs[lo : lo + L + 4], gs[lo : lo + L + 4], nodes_g[0, : L - 1],
                   nodes_p[0, : L - 1], step, mask, fset)
    return step, pred_loss, gold_loss, n_upd


@njit(cache=True, parallel=True)
def train_pass_mix(ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2: bool, perm, W, Acc, aug: float,
                   mask: int, fset: int, max_span: int, shards: int):
    """One pass with iterative parameter mixing (McDonald et al. 2010): ``perm`` is cut into
    ``shards`` contiguous shards, each trained by the online perceptron on its own copy of ``W`` in
    parallel, and ``W`` becomes the mean of the copies. ``Acc`` accumulates the sum of every
    shard's weights over its steps (for the averaged perceptron: ``W_avg = Acc / total steps``).
    One parallel region per pass, so a thread that the OS deschedules delays the pass by its own
    share only. Deterministic for a given number of shards.
    Returns ``(steps, sum of predicted primary losses, sum of oracle primary losses, #updates)``.
    """
    n = perm.shape[0]
    H = W.shape[0]
    Lmax = 2
    for k in range(lens.shape[0]):
        Lmax = max(Lmax, lens[k])
    Wt = np.empty((shards, H, 2), dtype=W.dtype)
    Ut = np.zeros((shards, H, 2))
    stats = np.zeros((shards, 4), dtype=np.int64)
    for t in prange(shards):
        Wt[t] = W
        a = (t * n) // shards
        b = ((t + 1) * n) // shards
        st, pl, gl, nu = _pass_serial(ws, cs, gs, pad_off, lens, r1, r2, rank_off, use_r2, perm[a:b], Wt[t], Ut[t],
                                      0.0, aug, mask, fset, max_span, Lmax)
        stats[t, 0], stats[t, 1], stats[t, 2], stats[t, 3] = np.int64(st), pl, gl, nu
    for i in prange(H):
        for col in range(2):
            w0 = W[i, col]
            tot = 0.0
            acc = 0.0
            for t in range(shards):
                wt = Wt[t, i, col]
                tot += wt
                # sum over the shard's steps k = 1..n_t of its weights after step k
                acc += (stats[t, 0] + 1) * wt - w0 - Ut[t, i, col]
            W[i, col] = tot / shards
            Acc[i, col] += acc
    return stats[:, 0].sum(), stats[:, 1].sum(), stats[:, 2].sum(), stats[:, 3].sum()


@njit(cache=True)
def decode_sentence(w, c, g, L: int, W, mask: int, fset: int, max_span: int, out) -> None:
    """Best order of one sentence (padded arrays ``w, c, g``) into ``out`` (shape ``(L,)``)."""
    if L == 1:
        out[0] = 0
    if L < 2:
        return
    K = span_limit(L, max_span)
    empty = np.zeros((0, 0), dtype=np.int64)
    A, B, C, D, GA, GD = score_tables(w, c, g, 0, L, K, W, mask, fset)
    split, inv, gsplit, _, _ = cky(A, B, C, D, GA, GD, empty, 0.0, False, 1.0)
    nodes = np.empty((L - 1, 4), dtype=np.int64)
    extract(split, inv, gsplit, L, K, out, nodes)


@njit(cache=True)
def decode_tree(w, c, g, L: int, W, mask: int, fset: int, max_span: int):
    """``(order, nodes, score)`` of the best tree (``nodes`` as in :func:`extract`)."""
    order = np.arange(L)
    nodes = np.zeros((max(L - 1, 0), 4), dtype=np.int64)
    if L < 2:
        return order, nodes, 0.0
    K = span_limit(L, max_span)
    empty = np.zeros((0, 0), dtype=np.int64)
    A, B, C, D, GA, GD = score_tables(w, c, g, 0, L, K, W, mask, fset)
    split, inv, gsplit, _, score = cky(A, B, C, D, GA, GD, empty, 0.0, False, 1.0)
    extract(split, inv, gsplit, L, K, order, nodes)
    return order, nodes, score


@njit(cache=True, parallel=True)
def decode_batch(ws, cs, gs, pad_off, lens, W, mask: int, fset: int, max_span: int, serial: bool):
    """Orders of a batch (flat padded arrays), sentences in parallel (``serial``: in a plain loop);
    returns a flat int64 array, sentence ``k`` at ``[sum(lens[:k]), sum(lens[:k+1]))``."""
    n = lens.shape[0]
    off = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        off[k + 1] = off[k] + lens[k]
    out = np.empty(off[n], dtype=np.int64)
    if serial or n == 1:  # no parallel region: no thread wake-ups
        for k in range(n):
            _decode_slot(k, ws, cs, gs, pad_off, lens, off, W, mask, fset, max_span, out)
    else:
        for k in prange(n):
            _decode_slot(k, ws, cs, gs, pad_off, lens, off, W, mask, fset, max_span, out)
    return out


@njit(cache=True)
def _decode_slot(k, ws, cs, gs, pad_off, lens, off, W, mask: int, fset: int, max_span: int, out) -> None:
    L = lens[k]
    lo = pad_off[k]
    decode_sentence(ws[lo : lo + L + 4], cs[lo : lo + L + 4], gs[lo : lo + L + 4], L, W, mask, fset, max_span,
                    out[off[k] : off[k + 1]])
