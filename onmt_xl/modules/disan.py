"""Directional self-attention (DiSAN, Shen et al. 2018) as a Transformer-encoder baseline.

Half of the heads of each encoder self-attention read only earlier tokens (forward mask), the other
half only later tokens (backward mask). With ``diagonal=False`` (DiSAN's masks, Shen et al. 2018, Sec. 4.1)
the diagonal is excluded, except for a token with no key left in its direction (the first token forward,
the last backward), which attends to itself rather than to nothing; ``diagonal=True`` lets every head
read the token itself too (``j <= i`` forward, ``j >= i`` backward), as left/right-masked Transformer heads do. The attention output ``s`` is fused with the (normalised) layer input ``h`` by DiSAN's
fusion gate, element-wise: ``F = sigmoid(s ⊙ w_s + h ⊙ w_h + b)``, ``u = F ⊙ s + (1 − F) ⊙ h``.
"""

from __future__ import annotations

import torch
import torch.nn as nn


def directional_masks(pad_mask: torch.Tensor, heads: int, diagonal: bool = False) -> torch.Tensor:
    """Per-head masks (True = masked) for forward heads ``[0, heads//2)`` and backward heads after;
    ``diagonal``: whether a head may read the token itself.

    ``pad_mask`` ``(batch, 1, src_len, src_len)``, True on padded keys -> ``(batch, heads, src_len, src_len)``.
    """
    length = pad_mask.size(-1)
    idx = torch.arange(length, device=pad_mask.device)
    valid = ~pad_mask[:, 0]  # (batch, q, k)
    eye = (idx[:, None] == idx[None, :]).expand_as(valid)
    masks = []
    for allowed in ((idx[None, :] < idx[:, None]), (idx[None, :] > idx[:, None])):
        allowed = (allowed | eye if diagonal else allowed) & valid
        empty = ~allowed.any(dim=-1, keepdim=True)
        masks.append(~(allowed | (eye & empty & valid)))
    n_fw = heads // 2
    return torch.cat((masks[0][:, None].expand(-1, n_fw, -1, -1), masks[1][:, None].expand(-1, heads - n_fw, -1, -1)), 1)


class FusionGate(nn.Module):
    """DiSAN's fusion gate with element-wise weights (``3·d_model`` parameters).

    ``s``, ``h``: ``(batch, src_len, d_model)`` -> ``F ⊙ s + (1 − F) ⊙ h``. ``weight_init``: the starting value
    of ``w_s`` and ``w_h`` (``b`` starts at 0); 0 starts every unit at ``F = ½``, away from the sigmoid's flat tails.
    """

    def __init__(self, d_model: int, weight_init: float = 1.0):
        super().__init__()
        self.w_s = nn.Parameter(torch.full((d_model,), float(weight_init)))
        self.w_h = nn.Parameter(torch.full((d_model,), float(weight_init)))
        self.b = nn.Parameter(torch.zeros(d_model))

    def forward(self, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(s * self.w_s + h * self.w_h + self.b)
        return gate * s + (1 - gate) * h
