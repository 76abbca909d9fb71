"""Explicit global reordering (ExGRE) and reordering fusion (ReFSR), Chen et al. 2020, Eq. 5–11."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt_xl.positions import sinusoid


class ReorderedPositionPredictor(nn.Module):
    """Eq. 5: ``b_j = J · sigmoid(v · tanh(W · h_j))``, the reordered position of word ``j``.

    The paper's positions run over ``1 … J``; ours are 0-based, so ``b_j = (J − 1) · sigmoid(·)`` with ``J``
    each sentence's own length. ``W`` is ``d×d`` and ``v`` ``d×1`` (as in Luong et al.'s local attention,
    which the paper follows). ``h`` ``(batch, src_len, d_model)``, ``src_len`` ``(batch,)`` -> ``(batch, src_len)``.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.W = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, 1, bias=False)

    def forward(self, h: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        span = (src_len - 1).clamp(min=0).to(h.dtype)[:, None]
        return span * torch.sigmoid(self.v(torch.tanh(self.W(h)))).squeeze(-1)


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


class ReorderingFusionGate(nn.Module):
    """Eq. 10–11: ``g = sigmoid(U_g H^N + W_g H̄^N)`` (a scalar per word), ``g · H̄^N + (1 − g) · H^N``.

    ``h`` (original order) and ``h_bar`` (ExGRE): ``(batch, src_len, d_model)``.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.U_g = nn.Linear(d_model, 1, bias=False)
        self.W_g = nn.Linear(d_model, 1, bias=False)

    def forward(self, h: torch.Tensor, h_bar: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.U_g(h) + self.W_g(h_bar))
        return g * h_bar + (1 - g) * h


def reordering_similarity(pr: torch.Tensor, pos_xl: torch.Tensor, valid: torch.Tensor, kind: str) -> torch.Tensor:
    """``Σ_j Sim(pr_j^N, re_j)`` over valid words (Eq. 9 and the Sim metric of Eq. 12), cosine similarity.

    ``pr`` ``(batch, src_len, d_model)``; ``pos_xl`` ``(batch, src_len)`` alignment-derived reordered positions
    ``r_j`` whose sinusoid is ``re_j`` (Eq. 4); ``valid`` ``(batch, src_len)`` bool. Returns a scalar sum.
    """
    re = sinusoid(pos_xl, pr.size(-1), kind)
    return (F.cosine_similarity(pr, re, dim=-1) * valid).sum()
