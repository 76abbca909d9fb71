"""``xl_encoder_free``: no encoder layers; the source embeddings (+ no / absolute / relative / InXL PE, option
``-xl_encoder_free_pe``) go straight to the decoder (Tang et al. 2019; Ding et al. 2020, Tab. 4).

Relative PE (Tab. 4's "+ Relative PE", +0.01M parameters) is not defined by the paper for a model without
encoder self-attention. Shaw et al. (2018) define relative positions between a query and the keys *of one
sequence*, inside self-attention; the decoder's cross-attention relates a target step to source positions, whose
distance means nothing without an alignment, and the paper keeps the decoder unchanged ("we keep the Transformer
decoder unchanged and validate different position representation strategies on the encoder", Sec. 4). Its
parameter count, +0.01M (Tab. 4) against +0.06M for relative PE in the six encoder layers (Tab. 1), is one layer's
relative tables and no projection (one attention's W^Q, W^K, W^V, W^O alone would be 4.2M at BIG). We therefore read
"+ Relative PE" as Shaw et al.'s Eq. 3-4 applied once to the source embeddings, without projections
(W^Q = W^K = W^V = I, as OpenNMT's relative attention: one table ``a`` of ``2k + 1`` rows of ``d_model / heads``
for keys and values, shared by the heads), on a residual::

    e_ij = x_i (x_j + a_clip(j-i, k))^T / sqrt(d_head)            (Shaw et al. Eq. 4, per head)
    z_i  = x_i + sum_j softmax_j(e_ij) (x_j + a_clip(j-i, k))      (Eq. 3, plus the residual)

The source then carries order only through relative distances, and, unavoidably (a relative position is a
pair's), each token sees its neighbours: this row is less context-free than the absolute and InXL rows.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from onmt.encoders import register_encoder
from onmt.encoders.encoder import EncoderBase
from onmt.modules.multi_headed_attn import gen_relative_positions, relative_matmul

from onmt_xl.opennmt.encoders.common import embed_words, split_xl
from onmt_xl.opennmt.encoders.options import check_bounds, require_xl_position
from onmt_xl.core.modules.inxl import InXLPositionFusion
from onmt_xl.core import options_table
from onmt_xl.opennmt.opts import add_all
from onmt_xl.core.positions import absolute_pe, sinusoid

ENCODERS = ("xl_encoder_free",)


def add_options(group) -> None:
    add_all(group, options_table.ENCODER_FREE)


def validate(opt) -> None:
    if getattr(opt, "xl_encoder_free_pe", None) == "relative":
        check_bounds(opt, "xl_enc_max_relative_positions")
        if opt.hidden_size % opt.heads:
            raise ValueError(f"-xl_encoder_free_pe relative splits hidden_size {opt.hidden_size} into heads "
                             f"{opt.heads}: make it a multiple")
    if getattr(opt, "xl_encoder_free_pe", None) == "inxl":
        require_xl_position(opt, (
            "-encoder_type xl_encoder_free reads cross-lingual positions, but corpus '{name}' does not list the "
            "xl_position transform: add it (last) to its transforms"
        ))


class RelativeSourcePE(nn.Module):
    """Shaw et al. (2018) Eq. 3-4 once over the source embeddings, without projections, on a residual (see the
    module docstring): ``(batch, src_len, d_model)`` -> ``(batch, src_len, d_model)``.

    ``relative_positions_embeddings``: ``(2k + 1, d_model / heads)``, the table ``a`` for keys and values, indexed by
    ``clip(j - i, -k, k) + k`` (OpenNMT's :func:`~onmt.modules.multi_headed_attn.gen_relative_positions`).
    """

    def __init__(self, d_model: int, heads: int, max_relative_positions: int):
        super().__init__()
        self.heads, self.max_relative_positions = heads, max_relative_positions
        self.relative_positions_embeddings = nn.Embedding(2 * max_relative_positions + 1, d_model // heads)

    def forward(self, x: torch.Tensor, src_len: Optional[torch.Tensor] = None) -> torch.Tensor:
        batch, length, d_model = x.shape
        d_head = d_model // self.heads
        q = x.view(batch, length, self.heads, d_head).transpose(1, 2)  # (batch, heads, len, d_head): W = I
        a = self.relative_positions_embeddings(
            gen_relative_positions(length, self.max_relative_positions, device=x.device))  # (len, len, d_head)
        scores = (q @ q.transpose(2, 3) + relative_matmul(q, a, True)) / d_head ** 0.5  # Eq. 4
        if src_len is not None:
            pad = torch.arange(length, device=x.device)[None, :] >= src_len[:, None]  # (batch, len) padded keys
            scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        attn = torch.softmax(scores.float(), dim=-1).to(x.dtype)
        z = attn @ q + relative_matmul(attn, a, False)  # Eq. 3, (batch, heads, len, d_head)
        return x + z.transpose(1, 2).reshape(batch, length, d_model)


@register_encoder("xl_encoder_free")
class EncoderFreeEncoder(EncoderBase):
    """No encoder layers: ``(batch, src_len, d_model)`` source embeddings (+ PE) go to the decoder.

    ``-xl_encoder_free_pe none | absolute | relative | inxl``: no position information, ``X + PE_abs``,
    :class:`RelativeSourcePE` of ``X`` (module docstring), or ``X + PE_IN-XL`` (Eq. 7–8, needs the ``xl_position``
    transform).
    """

    def __init__(self, embeddings, pe: str, pe_type: str, inxl_fusion: str, inxl_init: str = "absolute",
                 heads: int = 1, max_relative_positions: int = 16):
        super().__init__()
        self.embeddings, self.pe, self.pe_type = embeddings, pe, pe_type
        d_model = embeddings.embedding_size
        self.inxl = InXLPositionFusion(d_model, inxl_fusion, pe_type, inxl_init) if pe == "inxl" else None
        self.relative = RelativeSourcePE(d_model, heads, max_relative_positions) if pe == "relative" else None

    @classmethod
    def from_opt(cls, opt, embeddings):
        return cls(embeddings, opt.xl_encoder_free_pe, opt.position_encoding_type, opt.xl_inxl_fusion,
                   opt.xl_inxl_init, opt.heads, opt.xl_enc_max_relative_positions)

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        src, pos_xl = split_xl(self, src, missing=(
            "xl_encoder_free with -xl_encoder_free_pe inxl needs cross-lingual positions: add the xl_position "
            "transform (onmt_translate ... -transforms xl_position -xl_preorderer FILE)"
        ) if self.pe == "inxl" else None)
        x = embed_words(self.embeddings, src)
        d_model = x.size(-1)
        if self.relative is not None:
            x = self.relative(x, src_len)
        elif self.pe != "none":
            pe = absolute_pe(src.size(1), d_model, self.pe_type, src.device).expand(src.size(0), -1, -1)
            x = x + (self.inxl(pe, sinusoid(pos_xl, d_model, self.pe_type)) if self.inxl is not None else pe)
        return self.embeddings.dropout(x), None, src_len

    def update_dropout(self, dropout, attention_dropout):
        self.embeddings.update_dropout(dropout)
