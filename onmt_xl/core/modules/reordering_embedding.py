"""Reordering embeddings (Chen et al. 2019, Eq. 6–9)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def layer_normalised(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``LN(x)`` without gain and bias, ``(..., d_model)``: what a post-norm layer's equations read, on a
    pre-norm residual stream whose scale grows with depth."""
    return F.layer_norm(x, x.shape[-1:], eps=eps)


class PositionalPenalty(nn.Module):
    """``PP^n = sigmoid(V^n · tanh(W^n · H^{n−1} + W̃^n · H̃^n))`` (Eq. 6); ``3·d_model²`` parameters.

    ``h_prev`` (``H^{n−1}``) and ``h_tilde`` (``H̃^n``, after self-attention): ``(batch, src_len, d_model)``;
    returns ``PP^n`` of the same shape, each element in (0, 1). ``RE^n = PE · PP^n`` (Eq. 7).

    Chen et al.'s layers are post-norm, so ``H^{n−1}`` and ``H̃^n`` are LayerNorm outputs. OpenNMT's layers
    are pre-norm and pass the raw residual stream, so both inputs are normalised here (without gain and bias:
    ``W`` and ``W̃`` absorb a gain), which makes ``PP^n`` independent of the stream's scale.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.W = nn.Linear(d_model, d_model, bias=False)
        self.W_tilde = nn.Linear(d_model, d_model, bias=False)
        self.V = nn.Linear(d_model, d_model, bias=False)

    def forward(self, h_prev: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        inner = self.W(layer_normalised(h_prev)) + self.W_tilde(layer_normalised(h_tilde))
        return torch.sigmoid(self.V(torch.tanh(inner)))
