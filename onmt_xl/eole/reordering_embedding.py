"""``xl_reordering_embedding`` and ``xl_additional_pe`` in Eole: encoder reordering embeddings (Chen et al. 2019,
Eq. 6-9) and their control (the plain PE added in every layer), from the portable
:class:`~onmt_xl.core.modules.reordering_embedding.PositionalPenalty` on Eole's pre-norm layers. The OpenNMT-py twin,
and how the post-norm equations map onto pre-norm layers, is ``onmt_xl/opennmt/encoders/reordering_embedding.py``.

Contract with the model: ``emb`` is the stock ``src_emb`` output (``X·√d + PE_abs``, dropout), ``pad_mask``
``(batch, 1, src_len)`` True on padding.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from eole.encoders.transformer import TransformerEncoder

from onmt_xl.eole.baseline_config import pe_name
from onmt_xl.eole.output import encoder_output
from onmt_xl.core.modules.reordering_embedding import PositionalPenalty
from onmt_xl.core.positions import absolute_pe


class ReorderingEmbeddingEncoder(TransformerEncoder):
    """Every layer: ``H̃ = H + Dropout(SelfAttn(LN(H)))``; ``C = H̃ + RE`` with ``RE = PE · PP(H, H̃)`` (Eq. 6-8;
    ``RE = PE`` for ``xl_additional_pe``); ``H' = H̃ + FFN(LN(C))`` (Eq. 9)."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__(encoder_config, running_config)
        self.pe_type = pe_name(encoder_config.position_encoding_type)
        use_penalty = encoder_config.encoder_type == "xl_reordering_embedding"
        self.penalties = (nn.ModuleList(PositionalPenalty(encoder_config.hidden_size) for _ in self.transformer_layers)
                          if use_penalty else None)

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                **kwargs):
        assert pad_mask is not None, "ReorderingEmbeddingEncoder requires pad_mask"
        attn_mask = ~pad_mask.unsqueeze(1)  # (batch, 1, 1, src_len), True where attention may look
        pe = absolute_pe(emb.size(1), emb.size(-1), self.pe_type, emb.device).to(emb.dtype)  # (src_len, d)
        x = emb
        hidden_states = [emb] if return_hidden_states else None
        for n, layer in enumerate(self.transformer_layers):
            context, _ = layer.self_attn(layer.input_layernorm(x), attn_mask=attn_mask)
            h_tilde = x + (layer.dropout(context) if layer.dropout_p > 0 else context)
            re = pe * self.penalties[n](x, h_tilde) if self.penalties is not None else pe  # Eq. 6-7
            x = h_tilde + layer.mlp(layer.post_attention_layernorm(h_tilde + re))  # Eq. 8-9
            if hidden_states is not None:
                hidden_states.append(x)
        return encoder_output(self, x, hidden_states)
