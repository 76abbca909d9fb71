"""Sinusoidal position encoding of an arbitrary index tensor (paper Eq. 1 and Eq. 6).

``PE_abs = sinusoid(arange(T))`` (Eq. 1) and ``PE_XL = sinusoid(pos_XL)`` (Eq. 6) share this one
function, so both are bit-identical to OpenNMT-py's own ``PositionalEncoding`` buffer.
"""

from __future__ import annotations

import math

import torch

SINUSOID_KINDS = ("SinusoidalInterleaved", "SinusoidalConcat")


def sinusoid(pos: torch.Tensor, dim: int, kind: str = "SinusoidalInterleaved") -> torch.Tensor:
    """Encode integer positions with sines and cosines (Eq. 1).

    Args:
        pos: integer positions of any shape ``(...)`` (e.g. ``(batch, src_len)``).
        dim: ``d_model``; must be even.
        kind: ``"SinusoidalInterleaved"`` (Vaswani et al.: ``sin`` on even, ``cos`` on odd
            dimensions, OpenNMT's default) or ``"SinusoidalConcat"`` (all sines then all cosines).

    Returns:
        ``(..., dim)`` float32 tensor on ``pos.device``.
    """
    if dim % 2 != 0:
        raise ValueError(f"sinusoidal position encoding needs an even dimension, got {dim}")
    half = dim // 2
    if kind == "SinusoidalInterleaved":
        div = torch.exp(
            torch.arange(0, dim, 2, dtype=torch.float, device=pos.device) * -(math.log(10000.0) / dim)
        )
    elif kind == "SinusoidalConcat":
        div = torch.exp(
            torch.arange(half, dtype=torch.float, device=pos.device) * -(math.log(10000) / (half - 1))
        )
    else:
        raise ValueError(f"unknown position encoding type {kind!r}; choose one of {SINUSOID_KINDS}")
    angles = pos.float().unsqueeze(-1) * div  # (..., dim/2)
    if kind == "SinusoidalInterleaved":
        return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
    return torch.cat((torch.sin(angles), torch.cos(angles)), dim=-1)
