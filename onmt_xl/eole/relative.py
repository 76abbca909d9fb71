"""``xl_relative`` in Eole: encoder-only relative position representations (Shaw et al. 2018), the Relative PE
baseline of Ding et al. 2020 (Tab. 1); the OpenNMT-py twin is ``RelativeTransformerEncoder`` in
``onmt_xl/opennmt/encoders/xl_transformer.py``.

The encoder's layers are Eole's, with Eole's own ``position_encoding_type: Relative`` self-attention (clipping
``n_positions = xl_enc_max_relative_positions``); the model's ``src_emb`` is the look-up only
(:class:`~onmt_xl.eole.encoders.XLSourceEmbeddings`), so the source gets ``X·√d`` and dropout, no absolute PE, while
the decoder keeps the embeddings' absolute PE.

One difference between the frameworks is undone here. Shaw et al.'s logits (their Eq. 4) are
``q·(k + a^K) / √d_head``; OpenNMT-py 3.5.1 computes exactly that (it divides the query before both products),
but Eole 0.6.4 scales ``q·k`` only and adds ``q·a^K`` unscaled (``MultiHeadedAttention._compute_attention``).
:func:`shaw_scaled` puts the scale back on the query (and sets Eole's own factor to 1), so the same weights give
the same output in both frameworks.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
from eole.constants import PositionEncodingType
from eole.encoders.transformer import TransformerEncoder


def _keep_unfused(self) -> None:
    """``_fuse_KVQ`` of a Shaw-scaled attention: left unfused (the query's scale is a hook on ``linear_query``)."""


def shaw_scaled(attn):
    """Eole's relative self-attention (``SelfMHA``) with Shaw et al.'s scale on the relative-key term too, in place:
    the query is divided by ``√d_head`` as it leaves ``linear_query`` (a forward hook), so it is scaled in both
    ``q·k`` and ``q·a^K`` (as in OpenNMT-py), and Eole's own factor is 1. Parameters and their names are unchanged;
    inference leaves K, V, Q unfused. (``SelfMHA.forward`` calls ``super()._prepare_inputs``, so an instance
    override of that method would not be seen.)"""
    if attn.relative_positions_embeddings is None:
        raise ValueError("shaw_scaled needs a self-attention built with position_encoding_type: Relative")
    root = math.sqrt(attn.dim_per_head)
    attn.scale = 1.0
    attn.linear_query.register_forward_hook(lambda module, args, out: out / root)
    attn._fuse_KVQ = _keep_unfused.__get__(attn)
    return attn


class RelativeEncoder(TransformerEncoder):
    """Eole's Transformer encoder with relative self-attention in every layer and no absolute PE on the source.

    ``forward(emb, pad_mask)``: ``emb`` the raw word embeddings ``(batch, src_len, d)`` (look-up only),
    ``pad_mask`` ``(batch, 1, src_len)`` True on padding -> ``((batch, src_len, d), None)``.
    """

    def __init__(self, encoder_config, running_config=None):
        relative = encoder_config.model_copy(update={"position_encoding_type": PositionEncodingType.Relative,
                                                     "n_positions": encoder_config.xl_enc_max_relative_positions})
        super().__init__(relative, running_config)
        for layer in self.transformer_layers:
            shaw_scaled(layer.self_attn)
        self.d_model = encoder_config.hidden_size
        self.emb_dropout = nn.Dropout(getattr(running_config, "dropout", [0.0])[0] if running_config else 0.0)

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                **kwargs):
        return super().forward(self.emb_dropout(emb * math.sqrt(self.d_model)), pad_mask=pad_mask,
                               return_hidden_states=return_hidden_states)

    def update_dropout(self, dropout: float, attention_dropout: float) -> None:
        super().update_dropout(dropout, attention_dropout)
        self.emb_dropout.p = dropout
