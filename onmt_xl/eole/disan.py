"""``xl_disan`` in Eole: directional self-attention with DiSAN's fusion gate in every layer (Shen et al. 2018;
baseline of Ding et al. 2020, Tab. 1 row 8), from the portable :mod:`onmt_xl.core.modules.disan` on Eole's layers. The
OpenNMT-py twin (and the deviations from DiSAN it documents) is ``onmt_xl/opennmt/encoders/disan.py``.

Contract with the model: ``emb`` is the stock ``src_emb`` output (``X·√d + PE_abs``, dropout), ``pad_mask``
``(batch, 1, src_len)`` True on padding.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from eole.encoders.transformer import TransformerEncoder

from onmt_xl.eole.output import encoder_output
from onmt_xl.core.modules.disan import FusionGate, directional_masks


def directional_attn_mask(pad_mask: torch.Tensor, heads: int) -> torch.Tensor:
    """Eole's ``pad_mask`` ``(batch, 1, src_len)`` -> the directional masks as Eole's attention reads them,
    ``(batch, heads, src_len, src_len)``, True where a head may look (forward heads first)."""
    length = pad_mask.size(-1)
    return ~directional_masks(pad_mask.unsqueeze(1).expand(-1, 1, length, -1), heads)


class DiSANEncoder(TransformerEncoder):
    """Each layer: ``x + Dropout(Fusion(MHA_dir(h), h))``, ``h = LN(x)``, then Eole's feed-forward block;
    ``xl_disan_fusion: none``: Eole's stock layer with directional heads."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__(encoder_config, running_config)
        self.heads = encoder_config.heads
        use_gate = encoder_config.xl_disan_fusion == "gate"
        self.gates = (nn.ModuleList(FusionGate(encoder_config.hidden_size) for _ in self.transformer_layers)
                      if use_gate else None)

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                **kwargs):
        assert pad_mask is not None, "DiSANEncoder requires pad_mask"
        attn_mask = directional_attn_mask(pad_mask, self.heads)
        x = emb
        hidden_states = [emb] if return_hidden_states else None
        for n, layer in enumerate(self.transformer_layers):
            if self.gates is None:
                x = layer(x, attn_mask)
            else:
                h = layer.input_layernorm(x)
                s, _ = layer.self_attn(h, attn_mask=attn_mask)
                u = self.gates[n](s, h)
                x = x + (layer.dropout(u) if layer.dropout_p > 0 else u)
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            if hidden_states is not None:
                hidden_states.append(x)
        return encoder_output(self, x, hidden_states)
