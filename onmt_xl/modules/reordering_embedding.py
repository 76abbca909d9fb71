"""Reordering embeddings (Chen et al. 2019, Eq. 6–9)."""

from __future__ import annotations

import torch
import torch.nn as nn


class PositionalPenalty(nn.Module):
    """``PP^n = sigmoid(V^n · tanh(W^n · H^{n−1} + W̃^n · H̃^n))`` (Eq. 6); ``3·d_model²`` parameters.

    ``h_prev`` (``H^{n−1}``) and ``h_tilde`` (``H̃^n``, after self-attention): ``(batch, src_len, d_model)``;
    returns ``PP^n`` of the same shape, each element in (0, 1). ``RE^n = PE · PP^n`` (Eq. 7).
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.W = nn.Linear(d_model, d_model, bias=False)
        self.W_tilde = nn.Linear(d_model, d_model, bias=False)
        self.V = nn.Linear(d_model, d_model, bias=False)

    def forward(self, h_prev: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.V(torch.tanh(self.W(h_prev) + self.W_tilde(h_tilde))))
