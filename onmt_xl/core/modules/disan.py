"""Directional self-attention (DiSAN, Shen et al. 2018) as a Transformer-encoder baseline (Ding et al. 2020,
Tab. 1 row 8).

Half of the heads of each encoder self-attention read only earlier tokens (forward mask), the other half
only later tokens (backward mask); the diagonal is excluded, as in DiSAN (Shen et al. 2018, Sec. 4.1),
except for a token with no key left in its direction (the first token forward, the last backward), which
attends to itself rather than to nothing. DiSAN's fusion gate mixes the directional output ``s`` with the
block's (normalised) input ``h``, element-wise: ``F = sigmoid(s ⊙ w_s + h ⊙ w_h + b)``,
``u = F ⊙ s + (1 − F) ⊙ h``; the layer keeps the Transformer's identity path, ``x + Dropout(u)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

#: The fusion gate starts at ``F = 0.95`` everywhere (``w_s = w_h = 0``, ``b = logit(0.95)``), so that a
#: DiSAN layer starts close to a stock layer ``x + s`` with directional heads, and its token's own
#: content ``h``, which the directional masks keep out of ``s``, enters with a small weight.
GATE_START = 0.95


def directional_masks(pad_mask: torch.Tensor, heads: int) -> torch.Tensor:
    """Per-head masks (True = masked) for forward heads ``[0, heads//2)`` and backward heads after.

    A forward head at query ``i`` reads keys ``j < i``, a backward head keys ``j > i``; a query with no key
    in its direction reads itself (padded queries too, so that no row is empty). ``pad_mask`` ``(batch, 1, src_len,
    src_len)``, True on padded keys -> ``(batch, heads, src_len, src_len)``.
    """
    length = pad_mask.size(-1)
    idx = torch.arange(length, device=pad_mask.device)
    valid = ~pad_mask[:, 0]  # (batch, q, k)
    eye = (idx[:, None] == idx[None, :]).expand_as(valid)
    masks = []
    for allowed in ((idx[None, :] < idx[:, None]), (idx[None, :] > idx[:, None])):
        allowed = allowed & valid
        empty = ~allowed.any(dim=-1, keepdim=True)
        masks.append(~(allowed | (eye & empty)))  # a padded query reads itself: no row is empty (SDPA gives NaN)
    n_fw = heads // 2
    return torch.cat((masks[0][:, None].expand(-1, n_fw, -1, -1),
                      masks[1][:, None].expand(-1, heads - n_fw, -1, -1)), 1)


class FusionGate(nn.Module):
    """DiSAN's fusion gate with element-wise weights (``3·d_model`` parameters).

    ``s``, ``h``: ``(batch, src_len, d_model)`` -> ``F ⊙ s + (1 − F) ⊙ h``, ``F = sigmoid(s ⊙ w_s + h ⊙ w_h + b)``.
    Starts at ``F = start`` for every unit and input (``w_s = w_h = 0``). The paper reports +0.04M
    parameters for DiSAN on Transformer BIG without giving the gate's form; element-wise weights give
    ``6 · 3 · 1024 = 0.018M``.
    """

    def __init__(self, d_model: int, start: float = GATE_START):
        super().__init__()
        if not 0.0 < start < 1.0:
            raise ValueError(f"the fusion gate's start must lie in (0, 1), got {start}")
        self.gate_start = start
        self.w_s = nn.Parameter(torch.empty(d_model))
        self.w_h = nn.Parameter(torch.empty(d_model))
        self.b = nn.Parameter(torch.empty(d_model))  # not named "bias": OpenNMT's -param_init_glorot zeroes those
        self.reset_start()

    def reset_start(self) -> None:
        """Puts the parameters back to the starting point the paper/our tuning uses: ``w_s = w_h = 0``,
        ``b = logit(start)``, so ``F = start`` (0.95 by default) for every unit and input.

        OpenNMT's initialisation of a new model (``-param_init``) overwrites it; the ``init`` seam
        (:mod:`onmt_xl.opennmt.seams.init`) calls this again afterwards."""
        with torch.no_grad():
            self.w_s.zero_()
            self.w_h.zero_()
            self.b.fill_(math.log(self.gate_start / (1 - self.gate_start)))

    def forward(self, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(s * self.w_s + h * self.w_h + self.b)
        return gate * s + (1 - gate) * h
