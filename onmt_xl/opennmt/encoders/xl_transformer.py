"""Transformer encoders with cross-lingual position encoding (Ding et al. 2020).

Registered ``encoder_type`` names (the decoder stays stock):

* ``xl_inxl``: ``Z = X + tanh(PE_abs U + PE_XL V)`` (Eq. 7–8), then stock layers.
* ``xl_headxl``: first-layer self-attention with τ heads on ``X + PE_XL`` and H−τ heads on
  ``X + PE_abs`` (Eq. 9–11); the residual of that layer is ``X + PE_abs``.
* ``xl_combination``: HeadXL with ``PE_XL`` replaced by ``PE_IN-XL`` (footnote 2).
* ``xl_relative``: encoder-only relative position representations (Shaw et al. 2018), no absolute PE
  in the encoder; the decoder keeps OpenNMT's absolute PE.

XL encoders read ``pos_XL`` (attached by the ``xl_position`` transform as ``batch["xl_pos"]``, see
:mod:`onmt_xl.opennmt.seams.positions`) through :func:`~onmt_xl.opennmt.encoders.common.split_xl`; ``src`` holds token
ids only.
"""

from __future__ import annotations

import copy
from typing import Optional, Tuple

import torch
from onmt.encoders import register_encoder
from onmt.encoders.transformer import TransformerEncoder, TransformerEncoderLayer

from onmt_xl.core import options_table
from onmt_xl.opennmt.opts import add_all
from onmt_xl.opennmt.encoders.common import embed_words, padding_mask, split_xl
from onmt_xl.opennmt.encoders.options import check_bounds, default_xl_heads, require_xl_position
from onmt_xl.core.modules.headxl import make_headxl_attention
from onmt_xl.core.modules.inxl import InXLPositionFusion
from onmt_xl.core.positions import absolute_pe, sinusoid

#: encoder_type -> (uses InXL fusion, uses HeadXL split, reads XL positions)
XL_ENCODERS = {
    "xl_inxl": (True, False, True),
    "xl_headxl": (False, True, True),
    "xl_combination": (True, True, True),
}
RELATIVE_ENCODER = "xl_relative"
ENCODERS = tuple(XL_ENCODERS) + (RELATIVE_ENCODER,)


OPTIONS = options_table.XL_TRANSFORMER


def add_options(group) -> None:
    add_all(group, OPTIONS)


def resolve_xl_heads(opt) -> int:
    """τ of ``opt``: ``-xl_heads``, or :func:`~onmt_xl.opennmt.encoders.options.default_xl_heads` when unset."""
    tau = getattr(opt, "xl_heads", None)
    return default_xl_heads(opt.heads) if tau is None else tau


def validate(opt) -> None:
    enc = opt.encoder_type
    if enc in XL_ENCODERS:
        require_xl_position(opt, (
            f"-encoder_type {enc} reads cross-lingual positions, but corpus '{{name}}' does not list the "
            "xl_position transform: add it (last) to its transforms"
        ))
        if XL_ENCODERS[enc][1]:
            opt.xl_heads = resolve_xl_heads(opt)
            if not 0 <= opt.xl_heads <= opt.heads:
                raise ValueError(f"-xl_heads must be in [0, heads={opt.heads}], got {opt.xl_heads}")
    if enc == RELATIVE_ENCODER:
        check_bounds(opt, "xl_enc_max_relative_positions")


def headxl_layer_forward(
    layer: TransformerEncoderLayer, z_abs: torch.Tensor, z_xl: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """One pre-norm encoder layer whose attention was split by :func:`make_headxl_attention`.

    Same computation as ``TransformerEncoderLayer.forward`` with the packed input ``[Z_XL ; Z_abs]``
    for the attention (Eq. 10–11) and ``Z_abs`` on the residual path. ``(batch, src_len, d_model)``.
    """
    norm_abs = layer.layer_norm(z_abs)
    packed = torch.cat((layer.layer_norm(z_xl), norm_abs), dim=-1)
    context, _ = layer.self_attn(packed, packed, packed, mask=mask)
    if layer.dropout_p > 0:
        context = layer.dropout(context)
    if layer.parallel_residual:
        return layer.feed_forward(norm_abs) - norm_abs + z_abs + context
    return layer.feed_forward(context + z_abs)


class XLTransformerEncoder(TransformerEncoder):
    """Stock Transformer encoder whose input positions are cross-lingual (see module docstring)."""

    encoder_type = "xl"

    @classmethod
    def from_opt(cls, opt, embeddings):
        encoder = super().from_opt(opt, embeddings)
        use_inxl, use_headxl, _ = XL_ENCODERS[cls.encoder_type]
        d_model = opt.enc_hid_size
        encoder.pe_type = opt.position_encoding_type
        encoder.inxl = (
            InXLPositionFusion(d_model, opt.xl_inxl_fusion, opt.position_encoding_type, opt.xl_inxl_init)
            if use_inxl else None
        )
        encoder.xl_heads = resolve_xl_heads(opt) if use_headxl else None
        if use_headxl:
            make_headxl_attention(encoder.transformer[0].self_attn, encoder.xl_heads)
        return encoder

    def split_xl(self, src: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(token ids ``(batch, len, 1+n_feats)``, ``pos_XL`` ``(batch, len)``): see
        :func:`~onmt_xl.opennmt.encoders.common.split_xl`."""
        return split_xl(
            self, src,
            missing=f"encoder_type {self.encoder_type} needs cross-lingual positions but the batch has none: "
            "translate with the xl_position transform (e.g. onmt_translate ... -transforms xl_position "
            "-xl_preorderer PREORDERER_FILE), and train with it in the corpus transforms",
        )

    def positions(self, pos_xl: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(``PE_abs``, ``PE_XL`` or ``PE_IN-XL``), each ``(batch, src_len, d_model)`` (Eq. 1, 6, 7)."""
        d_model = self.embeddings.embedding_size
        pe_abs = absolute_pe(pos_xl.size(1), d_model, self.pe_type, pos_xl.device).expand(pos_xl.size(0), -1, -1)
        pe_xl = sinusoid(pos_xl, d_model, self.pe_type)
        if self.inxl is not None:
            pe_xl = self.inxl(pe_abs, pe_xl)
        return pe_abs, pe_xl

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        """See :meth:`onmt.encoders.EncoderBase.forward`; ``pos_XL`` comes through :meth:`split_xl`."""
        tokens, pos_xl = self.split_xl(src)
        x = embed_words(self.embeddings, tokens)
        pe_abs, pe_xl = self.positions(pos_xl)
        drop = self.embeddings.dropout
        mask = padding_mask(src_len, tokens.size(1))
        layers = iter(self.transformer)
        if self.xl_heads is None:  # InXL: Eq. 8
            enc_out = drop(x + pe_xl)
        else:  # HeadXL / Combination: Eq. 9 then the split first layer
            enc_out = headxl_layer_forward(next(layers), drop(x + pe_abs), drop(x + pe_xl), mask)
        for layer in layers:
            enc_out = layer(enc_out, mask)
        return self.layer_norm(enc_out), None, src_len


@register_encoder("xl_inxl")
class InXLTransformerEncoder(XLTransformerEncoder):
    """Inputting-level XL (Eq. 7–8)."""

    encoder_type = "xl_inxl"


@register_encoder("xl_headxl")
class HeadXLTransformerEncoder(XLTransformerEncoder):
    """Head-level XL (Eq. 9–11)."""

    encoder_type = "xl_headxl"


@register_encoder("xl_combination")
class CombinationXLTransformerEncoder(XLTransformerEncoder):
    """HeadXL reading ``PE_IN-XL`` (footnote 2)."""

    encoder_type = "xl_combination"


@register_encoder(RELATIVE_ENCODER)
class RelativeTransformerEncoder(TransformerEncoder):
    """Encoder-only relative position representations (Shaw et al. 2018), the paper's Relative PE baseline.

    OpenNMT's ``-max_relative_positions`` acts on encoder *and* decoder self-attention and forbids
    absolute PE; here only the encoder uses relative positions (clipping ``-xl_enc_max_relative_positions``)
    and no absolute PE, while the stock decoder keeps its absolute PE.
    """

    encoder_type = RELATIVE_ENCODER

    @classmethod
    def from_opt(cls, opt, embeddings):
        enc_opt = copy.copy(opt)
        enc_opt.max_relative_positions = opt.xl_enc_max_relative_positions
        return super().from_opt(enc_opt, embeddings)

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        enc_out = self.embeddings.dropout(embed_words(self.embeddings, src))
        mask = padding_mask(src_len, src.size(1))
        for layer in self.transformer:
            enc_out = layer(enc_out, mask)
        return self.layer_norm(enc_out), None, src_len
