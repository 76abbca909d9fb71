"""``xl_encoder_free``: no encoder layers; the source embeddings (+ no / absolute / InXL PE, option
``-xl_encoder_free_pe``) go straight to the decoder (Tang et al. 2019; Ding et al. 2020, Tab. 4)."""

from __future__ import annotations

from typing import Optional

import torch
from onmt.encoders import register_encoder
from onmt.encoders.encoder import EncoderBase

from onmt_xl.encoders.common import embed_words, split_xl
from onmt_xl.encoders.options import require_xl_position
from onmt_xl.modules.inxl import InXLPositionFusion
from onmt_xl.opts import add
from onmt_xl.positions import absolute_pe, sinusoid

ENCODERS = ("xl_encoder_free",)
ENCODER_FREE_PES = ("none", "absolute", "inxl")


def add_options(group) -> None:
    add(
        group, "xl_encoder_free_pe", type=str, default="absolute", choices=ENCODER_FREE_PES,
        help="xl_encoder_free (Tang et al. 2019): position information added to the source embeddings: none, "
        "absolute PE, or InXL PE (Eq. 7-8; needs the xl_position transform).",
    )


def validate(opt) -> None:
    if getattr(opt, "xl_encoder_free_pe", None) == "inxl":
        require_xl_position(opt, (
            "-encoder_type xl_encoder_free reads cross-lingual positions, but corpus '{name}' does not list the "
            "xl_position transform: add it (last) to its transforms"
        ))


@register_encoder("xl_encoder_free")
class EncoderFreeEncoder(EncoderBase):
    """No encoder layers: ``(batch, src_len, d_model)`` source embeddings (+ PE) go to the decoder.

    ``-xl_encoder_free_pe none | absolute | inxl``: no position information, ``X + PE_abs``, or
    ``X + PE_IN-XL`` (Eq. 7–8, needs the ``xl_position`` transform).
    """

    def __init__(self, embeddings, pe: str, pe_type: str, inxl_fusion: str, inxl_init: str = "identity"):
        super().__init__()
        self.embeddings, self.pe, self.pe_type = embeddings, pe, pe_type
        d_model = embeddings.embedding_size
        self.inxl = InXLPositionFusion(d_model, inxl_fusion, pe_type, inxl_init) if pe == "inxl" else None

    @classmethod
    def from_opt(cls, opt, embeddings):
        return cls(embeddings, opt.xl_encoder_free_pe, opt.position_encoding_type, opt.xl_inxl_fusion,
                   opt.xl_inxl_init)

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        src, pos_xl = split_xl(self, src, missing=(
            "xl_encoder_free with -xl_encoder_free_pe inxl needs cross-lingual positions: add the xl_position transform "
            "(onmt_translate ... -transforms xl_position -xl_preorderer FILE)"
        ) if self.pe == "inxl" else None)
        x = embed_words(self.embeddings, src)
        d_model = x.size(-1)
        if self.pe != "none":
            pe = absolute_pe(src.size(1), d_model, self.pe_type, src.device).expand(src.size(0), -1, -1)
            x = x + (self.inxl(pe, sinusoid(pos_xl, d_model, self.pe_type)) if self.inxl is not None else pe)
        return self.embeddings.dropout(x), None, src_len

    def update_dropout(self, dropout, attention_dropout):
        self.embeddings.update_dropout(dropout)
