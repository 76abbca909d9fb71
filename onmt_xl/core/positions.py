"""Sinusoidal position encoding of an arbitrary index tensor (paper Eq. 1 and Eq. 6).

``PE_abs = sinusoid(arange(T))`` (Eq. 1) and ``PE_XL = sinusoid(pos_XL)`` (Eq. 6) share this one
function, so both are bit-identical to OpenNMT-py's own ``PositionalEncoding`` buffer.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import torch

SINUSOID_KINDS = ("SinusoidalInterleaved", "SinusoidalConcat")


_TABLES: Dict[Tuple[int, str, torch.device], torch.Tensor] = {}


def sinusoid_table(length: int, dim: int, kind: str = "SinusoidalInterleaved",
                   device: Optional[torch.device] = None) -> torch.Tensor:
    """``sinusoid(arange(length))``, ``(length, dim)``, cached per ``(dim, kind, device)`` and grown on demand."""
    device = torch.device(device or "cpu")
    key = (dim, kind, device)
    table = _TABLES.get(key)
    if table is None or table.size(0) < length:
        size = max(length, 256, 0 if table is None else 2 * table.size(0))
        table = _sinusoid(torch.arange(size, device=device), dim, kind)
        _TABLES[key] = table
    return table


def sinusoid(pos: torch.Tensor, dim: int, kind: str = "SinusoidalInterleaved") -> torch.Tensor:
    """Encode integer positions with sines and cosines (Eq. 1).

    Args:
        pos: integer positions of any shape ``(...)`` (e.g. ``(batch, src_len)``).
        dim: ``d_model``; must be even.
        kind: ``"SinusoidalInterleaved"`` (Vaswani et al.: ``sin`` on even, ``cos`` on odd
            dimensions, OpenNMT's default) or ``"SinusoidalConcat"`` (all sines then all cosines).

    Returns:
        ``(..., dim)`` float32 tensor on ``pos.device``. On the CPU, non-negative integer positions are
        rows of a cached :func:`sinusoid_table` (no sin/cos per call); elsewhere (a GPU) the formula is
        computed on the device, since choosing the table's rows would read ``max(pos)`` back to the host
        and wait for the device on every forward pass.
    """
    if pos.device.type == "cpu" and not pos.dtype.is_floating_point and pos.numel() > 0:
        lo, hi = torch.aminmax(pos)
        if int(lo) >= 0:  # integer positions: rows of a cached table (same values, no sin/cos per call)
            return sinusoid_table(int(hi) + 1, dim, kind, pos.device)[pos]
    return _sinusoid(pos, dim, kind)


def absolute_pe(length: int, dim: int, kind: str = "SinusoidalInterleaved",
                device: Optional[torch.device] = None) -> torch.Tensor:
    """``PE_abs`` of positions ``0 .. length-1`` (Eq. 1), ``(length, dim)``: the first rows of the cached
    table, the same values as ``sinusoid(arange(length))`` on the CPU and never waiting for a device."""
    return sinusoid_table(length, dim, kind, device)[:length]


_FREQUENCIES: Dict[Tuple[int, str, torch.device], torch.Tensor] = {}


def _frequencies(pos: torch.Tensor, dim: int, kind: str) -> torch.Tensor:
    """The sinusoid's ``dim/2`` angular frequencies for positions on ``pos.device``, computed once per ``(dim, kind,
    device)`` (three operators, each a kernel on a GPU, fewer per call; the same values as computing them each
    time)."""
    if dim % 2 != 0:
        raise ValueError(f"sinusoidal position encoding needs an even dimension, got {dim}")
    if kind not in SINUSOID_KINDS:
        raise ValueError(f"unknown position encoding type {kind!r}; choose one of {SINUSOID_KINDS}")
    key = (dim, kind, pos.device)
    div = _FREQUENCIES.get(key)
    if div is None:
        with torch.inference_mode(False), torch.no_grad():  # a plain tensor, whatever mode the first call ran in
            if kind == "SinusoidalInterleaved":
                div = torch.exp(
                    torch.arange(0, dim, 2, dtype=torch.float, device=pos.device) * -(math.log(10000.0) / dim)
                )
            else:
                half = dim // 2
                div = torch.exp(
                    torch.arange(half, dtype=torch.float, device=pos.device) * -(math.log(10000) / (half - 1))
                )
        _FREQUENCIES[key] = div
    return div


def _sinusoid(pos: torch.Tensor, dim: int, kind: str) -> torch.Tensor:
    div = _frequencies(pos, dim, kind)
    angles = pos.float().unsqueeze(-1) * div  # (..., dim/2)
    if kind == "SinusoidalInterleaved":
        return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
    return torch.cat((torch.sin(angles), torch.cos(angles)), dim=-1)
