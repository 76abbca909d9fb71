"""Head-level XL self-attention (paper Eq. 9–11): τ heads read ``X+PE_XL``, H−τ heads ``X+PE_abs``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

if TYPE_CHECKING:  # no onmt import at run time: see onmt_xl/opennmt/encoders/common.py
    from onmt.modules.multi_headed_attn import MultiHeadedAttention


class HeadSplitLinear(nn.Module):
    """A ``d×d`` projection whose first ``n_first`` outputs read one input and the rest another.

    This is ``W_i = [W_i^XL ; W_i^abs]`` of Eq. 10 (``i ∈ {Q, K, V}``). It takes the two inputs packed
    along the last dimension, ``(..., 2·d_in) = [Z_XL ; Z_abs]``, and costs exactly the FLOPs of one
    ``d_in × d_out`` projection. Parameter names and shapes equal ``nn.Linear``'s, so a stock
    checkpoint loads unchanged.
    """

    def __init__(self, weight: nn.Parameter, bias: Optional[nn.Parameter], n_first: int):
        super().__init__()
        self.d_out, self.d_in = weight.shape
        self.n_first = n_first
        self.weight = weight
        self.bias = bias

    @classmethod
    def from_linear(cls, linear: nn.Linear, n_first: int) -> "HeadSplitLinear":
        """Share ``linear``'s parameters (``weight`` ``(d_out, d_in)``, optional ``bias``)."""
        return cls(linear.weight, linear.bias, n_first)

    def forward(self, packed: torch.Tensor) -> torch.Tensor:
        z_xl, z_abs = packed[..., : self.d_in], packed[..., self.d_in :]
        n = self.n_first
        b_xl = self.bias[:n] if self.bias is not None else None
        b_abs = self.bias[n:] if self.bias is not None else None
        if n == 0:
            return F.linear(z_abs, self.weight, self.bias)
        if n == self.d_out:
            return F.linear(z_xl, self.weight, self.bias)
        return torch.cat(
            (F.linear(z_xl, self.weight[:n], b_xl), F.linear(z_abs, self.weight[n:], b_abs)), dim=-1
        )

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, xl_outputs={self.n_first}"


def make_headxl_attention(attn: "MultiHeadedAttention", xl_heads: int) -> "MultiHeadedAttention":
    """Turn OpenNMT's multi-head self-attention into HeadXL self-attention (Eq. 10–11), in place.

    Heads ``0 … τ−1`` then compute ``Q, K, V`` from ``Z_XL`` (Eq. 10) and heads ``τ … H−1`` from
    ``Z_abs``; concatenation and ``W_O`` are unchanged (Eq. 11). The module must then be called with
    ``query = key = value = torch.cat([Z_XL, Z_abs], -1)`` of shape ``(batch, src_len, 2·d_model)``.
    The parameters are kept (same names and shapes), so τ = 0 is exactly the stock attention and a
    stock checkpoint loads unchanged; τ = H puts XL on every head.
    """
    if not 0 <= xl_heads <= attn.head_count:
        raise ValueError(f"HeadXL needs 0 <= xl_heads <= heads, got xl_heads={xl_heads}, heads={attn.head_count}")
    n_first = xl_heads * attn.dim_per_head
    for name in ("linear_query", "linear_keys", "linear_values"):
        stock = getattr(attn, name)
        setattr(attn, name, HeadSplitLinear.from_linear(stock, n_first))
    attn.xl_heads = xl_heads
    return attn
