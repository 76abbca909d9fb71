"""``xl_encoder_free`` in Eole: no encoder layers; the source embeddings (+ no / absolute / relative / InXL PE) go
straight to the decoder (Tang et al. 2019; Ding et al. 2020, Tab. 4). The OpenNMT-py twin, and the reading of Tab. 4's
"+ Relative PE" (Shaw et al. Eq. 3-4 once over the embeddings, no projections, on a residual), is
``onmt_xl/opennmt/encoders/encoder_free.py``.

Contract with the model: ``emb`` is the raw look-up (the model's ``src_emb`` is an
:class:`~onmt_xl.eole.encoders.XLSourceEmbeddings`); this encoder adds ``√d``, the PE and the dropout. With
``xl_encoder_free_pe: inxl`` it reads ``pos_XL`` ``(batch, src_len)`` as the XL encoders do (keyword ``xl_pos`` or
the channel of :func:`~onmt_xl.core.channel.feeding_xl_positions`).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
from eole.encoders.encoder import EncoderBase
from eole.modules.relative_position_bias import gen_relative_positions, relative_matmul

from onmt_xl.core.channel import MissingXLPositionsError, fed_xl_positions
from onmt_xl.eole.baseline_config import pe_name
from onmt_xl.core.modules.inxl import InXLPositionFusion
from onmt_xl.core.positions import absolute_pe, sinusoid

MISSING = ("xl_encoder_free with xl_encoder_free_pe: inxl needs cross-lingual positions but the batch has none: add "
           "the xl_position transform (last) to the source transforms, with "
           "transforms_configs.xl_position.xl_preorderer")


class RelativeSourcePE(nn.Module):
    """Shaw et al. (2018) Eq. 3-4 once over the source embeddings, without projections (``W^Q = W^K = W^V = I``), on a
    residual: ``(batch, src_len, d_model)`` -> ``(batch, src_len, d_model)``::

        e_ij = x_i (x_j + a_clip(j-i, k))^T / sqrt(d_head)            (Eq. 4, per head)
        z_i  = x_i + sum_j softmax_j(e_ij) (x_j + a_clip(j-i, k))      (Eq. 3, plus the residual)

    ``relative_positions_embeddings``: ``(2k + 1, d_model / heads)``, the table ``a`` for keys and values, shared by
    the heads, indexed by ``clip(j - i, -k, k) + k`` (Eole's ``gen_relative_positions``, the same as OpenNMT-py's).
    The same parameter name as the OpenNMT-py twin's, so checkpoints map one to one.
    """

    def __init__(self, d_model: int, heads: int, max_relative_positions: int):
        super().__init__()
        self.heads, self.max_relative_positions = heads, max_relative_positions
        self.relative_positions_embeddings = nn.Embedding(2 * max_relative_positions + 1, d_model // heads)

    def forward(self, x: torch.Tensor, pad_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``pad_mask``: ``(batch, 1, src_len)``, True on padding (Eole's source mask)."""
        batch, length, d_model = x.shape
        d_head = d_model // self.heads
        q = x.view(batch, length, self.heads, d_head).transpose(1, 2)  # (batch, heads, len, d_head)
        a = self.relative_positions_embeddings(
            gen_relative_positions(length, self.max_relative_positions, device=x.device))  # (len, len, d_head)
        scores = (q @ q.transpose(2, 3) + relative_matmul(q, a, True)) / d_head ** 0.5  # Eq. 4
        if pad_mask is not None:
            scores = scores.masked_fill(pad_mask[:, None, :, :], float("-inf"))  # padded keys
        attn = torch.softmax(scores.float(), dim=-1).to(x.dtype)
        z = attn @ q + relative_matmul(attn, a, False)  # Eq. 3, (batch, heads, len, d_head)
        return x + z.transpose(1, 2).reshape(batch, length, d_model)


class EncoderFreeEncoder(EncoderBase):
    """``(batch, src_len, d)`` source embeddings ``Dropout(X·√d [+ PE_abs | + PE_IN-XL])`` or
    ``Dropout(RelativeSourcePE(X·√d))`` for the decoder."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__()
        self.pe, self.d_model = encoder_config.xl_encoder_free_pe, encoder_config.hidden_size
        self.pe_type = pe_name(encoder_config.position_encoding_type)
        self.inxl = (InXLPositionFusion(self.d_model, encoder_config.xl_inxl_fusion, self.pe_type,
                                        encoder_config.xl_inxl_init) if self.pe == "inxl" else None)
        self.relative = (RelativeSourcePE(self.d_model, encoder_config.heads,
                                          encoder_config.xl_enc_max_relative_positions)
                         if self.pe == "relative" else None)
        self.emb_dropout = nn.Dropout(getattr(running_config, "dropout", [0.0])[0] if running_config else 0.0)

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                xl_pos: Optional[torch.Tensor] = None, **kwargs):
        x = emb * math.sqrt(self.d_model)
        if self.relative is not None:
            x = self.relative(x, pad_mask)
        elif self.pe != "none":
            pe = absolute_pe(x.size(1), self.d_model, self.pe_type, x.device).expand(x.size(0), -1, -1)
            if self.inxl is not None:
                pos_xl = xl_pos if xl_pos is not None else fed_xl_positions()
                if pos_xl is None:
                    raise MissingXLPositionsError(MISSING)
                pe = self.inxl(pe, sinusoid(pos_xl.to(x.device), self.d_model, self.pe_type))
            x = x + pe.to(x.dtype)
        out = self.emb_dropout(x)
        if return_hidden_states:
            return out, None, [out]
        return out, None

    def update_dropout(self, dropout: float, attention_dropout: float) -> None:
        self.emb_dropout.p = dropout
