"""Reordering embeddings of Chen et al. 2019 in the encoder (the decoder stays stock; its own REs are
:mod:`onmt_xl.opennmt.decoders.reordering_embedding`).

* ``xl_reordering_embedding``: encoder reordering embeddings (Eq. 6–9).
* ``xl_additional_pe``: the paper's control: the plain PE added in every layer instead of RE.

OpenNMT's layers are pre-norm, so the post-norm equations are mapped as follows: Chen et al.'s
``H̃ = LN(SelfAttn(H) + H)`` is the stock ``H̃ = H + SelfAttn(LN(H))``; ``C = LN(H̃ + RE)`` (Eq. 8)
becomes ``C = H̃ + RE`` normalised by the feed-forward block's own pre-norm; and
``H' = LN(FFN(C) + H̃)`` (Eq. 9) keeps ``H̃`` on the residual path.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from onmt.encoders import register_encoder
from onmt.encoders.transformer import TransformerEncoder, TransformerEncoderLayer

from onmt_xl.opennmt.encoders.common import padding_mask
from onmt_xl.core.modules.reordering_embedding import PositionalPenalty
from onmt_xl.core.positions import absolute_pe

ENCODERS = ("xl_reordering_embedding", "xl_additional_pe")


def validate(opt) -> None:
    if getattr(opt, "parallel_residual", False):
        raise ValueError(f"-encoder_type {opt.encoder_type} builds on OpenNMT's sequential pre-norm layer: drop "
                         "-parallel_residual")


def _attend(layer: TransformerEncoderLayer, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Dropped-out self-attention output of a stock layer on its normalised input ``h = LN(x)``,
    ``(batch, src_len, d_model)``."""
    context, _ = layer.self_attn(h, h, h, mask=mask)
    return layer.dropout(context) if layer.dropout_p > 0 else context


@register_encoder("xl_reordering_embedding")
class ReorderingEmbeddingEncoder(TransformerEncoder):
    """Encoder REs (Chen et al. 2019, Eq. 9): every layer adds ``RE^n = PE · PP^n`` after self-attention."""

    use_penalty = True

    @classmethod
    def from_opt(cls, opt, embeddings):
        encoder = super().from_opt(opt, embeddings)
        encoder.pe_type = opt.position_encoding_type
        encoder.penalties = (
            nn.ModuleList(PositionalPenalty(opt.enc_hid_size) for _ in encoder.transformer) if cls.use_penalty else None
        )
        return encoder

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        x = self.embeddings(src)
        mask = padding_mask(src_len, src.size(1))
        pe = absolute_pe(src.size(1), x.size(-1), self.pe_type, src.device)  # (src_len, d)
        for n, layer in enumerate(self.transformer):
            h_tilde = x + _attend(layer, layer.layer_norm(x), mask)
            re = pe * self.penalties[n](x, h_tilde) if self.penalties is not None else pe  # Eq. 6-7
            c = h_tilde + re  # Eq. 8
            x = h_tilde + (layer.feed_forward(c) - c)  # Eq. 9: FFN(C) on the H~ residual
        return self.layer_norm(x), None, src_len


@register_encoder("xl_additional_pe")
class AdditionalPEEncoder(ReorderingEmbeddingEncoder):
    """Chen et al. 2019's control: ``C = H̃ + PE`` in every layer (no positional penalty)."""

    use_penalty = False
