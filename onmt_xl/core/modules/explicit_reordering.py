"""Explicit global reordering (ExGRE) and reordering fusion (ReFSR), Chen et al. 2020, Eq. 5–11."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt_xl.core.modules.reordering_embedding import layer_normalised
from onmt_xl.core.positions import sinusoid

#: How the reordering loss (Eq. 9) supervises the predicted positions ``b_j``:
#: ``position`` (the default): the squared distance between ``b_j`` and ``r_j`` over ``J − 1``; ``soft``: Eq. 9
#: on the Gaussian-weighted mean of the PEs of all of the sentence's positions (the weights of Eq. 6,
#: normalised over ``s = 0 … J−1``); ``literal``: Eq. 9 on ``pr_j`` of Eq. 6, which with ``D = 0.5`` gives
#: ``b_j`` no gradient.
REORDERING_LOSSES = ("position", "soft", "literal")


class ReorderedPositionPredictor(nn.Module):
    """Eq. 5: ``b_j = J · sigmoid(v · tanh(W · h_j))``, the reordered position of word ``j``.

    The paper's positions run over ``1 … J``; ours are 0-based, so ``b_j = (J − 1) · sigmoid(·)`` with ``J``
    each sentence's own length. ``W`` is ``d×d`` and ``v`` ``d×1`` (as in Luong et al.'s local attention,
    which the paper follows). The paper's ``H^n`` is a post-norm layer's output, so ``h`` is normalised
    here (no gain or bias): OpenNMT's pre-norm stream grows with depth.
    ``h`` ``(batch, src_len, d_model)``, ``src_len`` ``(batch,)`` -> ``(batch, src_len)``.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.W = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, 1, bias=False)

    def forward(self, h: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        span = (src_len - 1).clamp(min=0).to(h.dtype)[:, None]
        return span * torch.sigmoid(self.v(torch.tanh(self.W(layer_normalised(h))))).squeeze(-1)


def gaussian_window_pe(b: torch.Tensor, pe: torch.Tensor, window: float = 0.5) -> torch.Tensor:
    """Eq. 6: ``pr_j = Σ_s pe_s · exp(−(s − b_j)² / (2σ))`` over integers ``s ∈ [b_j − D, b_j + D]``, ``σ = D/2``.

    ``b`` ``(batch, src_len)``, ``pe`` ``(max_pos, d_model)`` (the sinusoid of positions ``0 … max_pos−1``)
    -> ``(batch, src_len, d_model)``. The gradient reaches ``b`` through the Gaussian weights.
    """
    sigma = window / 2
    s = torch.arange(pe.size(0), device=b.device, dtype=b.dtype)
    diff = s[None, None, :] - b[:, :, None]  # (batch, src_len, max_pos)
    weights = torch.exp(-(diff**2) / (2 * sigma)) * (diff.abs() <= window)
    return weights @ pe


def soft_window_pe(b: torch.Tensor, pe: torch.Tensor, src_len: torch.Tensor, window: float = 0.5) -> torch.Tensor:
    """Eq. 6's Gaussian weights ``exp(−(s − b_j)² / (2σ))``, ``σ = D/2``, normalised over every position
    ``s = 0 … J−1`` of the sentence: a soft selection of ``pe_s`` around ``b_j`` whose mix, unlike Eq. 6's
    window for ``D = 0.5``, moves with ``b_j``, so a loss on it reaches ``b_j``.

    ``b`` ``(batch, src_len)``, ``pe`` ``(max_pos, d_model)``, ``src_len`` ``(batch,)`` -> ``(batch, src_len,
    d_model)``.
    """
    sigma = window / 2
    s = torch.arange(pe.size(0), device=b.device, dtype=b.dtype)
    logits = -((s[None, None, :] - b[:, :, None]) ** 2) / (2 * sigma)  # (batch, src_len, max_pos)
    outside = s[None, None, :] >= src_len.to(b.dtype)[:, None, None]
    return torch.softmax(logits.masked_fill(outside, float("-inf")), dim=-1) @ pe


class ReorderingFusionGate(nn.Module):
    """Eq. 10–11: ``g = sigmoid(U_g H^N + W_g H̄^N)`` (a scalar per word), ``g · H̄^N + (1 − g) · H^N``.

    ``h`` (original order) and ``h_bar`` (ExGRE): ``(batch, src_len, d_model)``. The paper's states are
    post-norm layer outputs, so ``g`` reads them normalised (no gain or bias); the mix is of the states as given.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.U_g = nn.Linear(d_model, 1, bias=False)
        self.W_g = nn.Linear(d_model, 1, bias=False)

    def forward(self, h: torch.Tensor, h_bar: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.U_g(layer_normalised(h)) + self.W_g(layer_normalised(h_bar)))
        return g * h_bar + (1 - g) * h


def reordering_similarity(pr: torch.Tensor, pos_xl: torch.Tensor, valid: torch.Tensor, kind: str) -> torch.Tensor:
    """``Σ_j Sim(pr_j^N, re_j)`` over valid words (Eq. 9 and the Sim metric of Eq. 12), cosine similarity.

    ``pr`` ``(batch, src_len, d_model)``; ``pos_xl`` ``(batch, src_len)`` alignment-derived reordered positions
    ``r_j`` whose sinusoid is ``re_j`` (Eq. 4); ``valid`` ``(batch, src_len)`` bool. Returns a scalar sum.
    """
    re = sinusoid(pos_xl, pr.size(-1), kind)
    return (F.cosine_similarity(pr, re, dim=-1) * valid).sum()


def reordering_loss(kind: str, b: torch.Tensor, pr: torch.Tensor, pe: torch.Tensor, pos_xl: torch.Tensor,
                    src_len: torch.Tensor, valid: torch.Tensor, window: float, pe_type: str) -> torch.Tensor:
    """The reordering loss ``Σ_j ℓ_j`` over valid words, to minimise (Eq. 9 and the forms of :data:`REORDERING_LOSSES`).

    ``b`` ``(batch, src_len)`` predicted positions of the last layer (Eq. 5) and ``pr`` their PE of Eq. 6
    ``(batch, src_len, d_model)``; ``pe`` ``(max_pos, d_model)``; ``pos_xl`` ``(batch, src_len)`` the oracle
    positions ``r_j``; ``valid`` ``(batch, src_len)`` bool. Returns a scalar sum (not yet weighted by λ).
    """
    if kind == "literal":
        return valid.sum() - reordering_similarity(pr, pos_xl, valid, pe_type)
    if kind == "soft":
        return valid.sum() - reordering_similarity(soft_window_pe(b, pe, src_len, window), pos_xl, valid, pe_type)
    if kind == "position":
        span = (src_len - 1).clamp(min=1).to(b.dtype)[:, None]
        return ((((b - pos_xl.to(b.dtype)) / span) ** 2) * valid).sum()
    raise ValueError(f"unknown reordering loss {kind!r}; choose one of {REORDERING_LOSSES}")


def explicit_reordering(layers: Sequence[Callable], predictors: Sequence[ReorderedPositionPredictor],
                        gate: Optional[ReorderingFusionGate], x0: torch.Tensor, mask, src_len: torch.Tensor,
                        pe: torch.Tensor, window: float):
    """ExGRE's stack (Eq. 5–7): after every layer ``H̄^n = H^n + PR^n``; with ``gate`` (ReFSR) the same layers also
    run over the original order (Eq. 2) and are fused with ExGRE's output (Eq. 10–11).

    ``layers``: the framework's encoder layers, each called ``layer(x, mask)``, one per predictor; ``x0``
    ``(batch, src_len, d_model)`` the embedded source with its absolute PE; ``src_len`` ``(batch,)``; ``pe``
    ``(max_pos, d_model)``. Returns ``(out, b, pr)``: ``out`` ``(batch, src_len, d_model)`` before the final
    norm, and the last layer's ``b`` ``(batch, src_len)`` (Eq. 5) and ``pr`` ``(batch, src_len, d_model)`` (Eq. 6).
    """
    x = x0
    for layer, predictor in zip(layers, predictors):
        h = layer(x, mask)
        b = predictor(h, src_len)  # Eq. 5
        pr = gaussian_window_pe(b, pe, window)  # Eq. 6
        x = h + pr  # Eq. 7
    if gate is None:
        return x, b, pr
    h = x0
    for layer in layers:
        h = layer(h, mask)
    return gate(h, x), b, pr


def reordering_supervision(kind: str, weight: float, b: torch.Tensor, pr: torch.Tensor, pe: torch.Tensor,
                           pos_xl: Optional[torch.Tensor], src_len: torch.Tensor, valid: torch.Tensor, window: float,
                           pe_type: str):
    """``(λ · Σ_j ℓ_j, (Σ_j Sim, words))`` of one batch: the weighted reordering loss (Eq. 9,
    :func:`reordering_loss`) and the Sim metric of Eq. 12 on ``pr_j^N`` (no gradient); ``(None, None)`` for a batch
    without ``r_j`` (``pos_xl`` None: translation). Shapes as in :func:`reordering_loss`."""
    if pos_xl is None:
        return None, None
    pos_xl = pos_xl.to(b.device)
    similarity = (reordering_similarity(pr.detach(), pos_xl, valid, pe_type), valid.sum())
    return weight * reordering_loss(kind, b, pr, pe, pos_xl, src_len, valid, window, pe_type), similarity
