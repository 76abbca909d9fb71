"""``xl_encoder_free`` in Eole: no encoder layers; the source embeddings (+ no / absolute / InXL PE) go straight to
the decoder (Tang et al. 2019; Ding et al. 2020, Tab. 4). The OpenNMT-py twin is ``onmt_xl/encoders/encoder_free.py``.

Contract with the model: ``emb`` is the raw look-up (the model's ``src_emb`` is an
:class:`~onmt_xl.eole.encoders.XLSourceEmbeddings`); this encoder adds ``√d``, the PE and the dropout. With
``xl_encoder_free_pe: inxl`` it reads ``pos_XL`` ``(batch, src_len)`` as the XL encoders do (keyword ``xl_pos`` or
the channel of :func:`~onmt_xl.encoders.common.feeding_xl_positions`).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
from eole.encoders.encoder import EncoderBase

from onmt_xl.encoders.common import MissingXLPositionsError, fed_xl_positions
from onmt_xl.eole.baseline_config import pe_name
from onmt_xl.modules.inxl import InXLPositionFusion
from onmt_xl.positions import absolute_pe, sinusoid

MISSING = ("xl_encoder_free with xl_encoder_free_pe: inxl needs cross-lingual positions but the batch has none: add "
           "the xl_position transform (last) to the source transforms, with transforms_configs.xl_position.xl_preorderer")


class EncoderFreeEncoder(EncoderBase):
    """``(batch, src_len, d)`` source embeddings ``Dropout(X·√d [+ PE_abs | + PE_IN-XL])`` for the decoder."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__()
        self.pe, self.d_model = encoder_config.xl_encoder_free_pe, encoder_config.hidden_size
        self.pe_type = pe_name(encoder_config.position_encoding_type)
        self.inxl = (InXLPositionFusion(self.d_model, encoder_config.xl_inxl_fusion, self.pe_type,
                                        encoder_config.xl_inxl_init) if self.pe == "inxl" else None)
        self.emb_dropout = nn.Dropout(getattr(running_config, "dropout", [0.0])[0] if running_config else 0.0)

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                xl_pos: Optional[torch.Tensor] = None, **kwargs):
        x = emb * math.sqrt(self.d_model)
        if self.pe != "none":
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
