"""Decoder reordering embeddings (Chen et al. 2019, "Decoder REs" and, with the encoder, "Both REs").

Each decoder layer adds ``RE^n = PE · PP^n`` (Eq. 6–7) to its self-attention output ``H̃^n`` before
the encoder–decoder attention reads it (Eq. 8); ``H̃^n`` stays on the residual path (Eq. 9). ``PP^n``
depends only on each position's own states, so step-by-step beam search is exact: at decoding step
``t`` the layer uses ``PE_t``.
"""

from __future__ import annotations

from onmt.decoders import register_decoder
from onmt.decoders.transformer import TransformerDecoder, TransformerDecoderLayer

from onmt_xl.core.modules.reordering_embedding import PositionalPenalty
from onmt_xl.core.positions import absolute_pe


class ReorderingEmbeddingDecoderLayer(TransformerDecoderLayer):
    """A stock pre-norm decoder layer with a positional penalty after self-attention (``self.penalty``)."""

    penalty: PositionalPenalty
    pe_type: str

    def _forward(self, layer_in, enc_out, src_pad_mask, tgt_pad_mask, step=None, future=False, return_attn=False):
        """Same contract as ``TransformerDecoderLayer._forward``; ``layer_in`` ``(batch, T, d_model)``."""
        if self.parallel_residual:
            raise ValueError("xl_reordering_embedding decoder does not support -parallel_residual")
        dec_mask = None
        src_pad_mask = src_pad_mask.unsqueeze(1)
        if layer_in.size(1) > 1:
            dec_mask = self._compute_dec_mask(tgt_pad_mask, future).unsqueeze(1)
            dec_mask = dec_mask.expand(-1, -1, dec_mask.size(3), -1)
            src_pad_mask = src_pad_mask.expand(-1, -1, dec_mask.size(3), -1)
        self_attn, _ = self._forward_self_attn(self.layer_norm_1(layer_in), dec_mask, step, return_attn=return_attn)
        if self.dropout_p > 0:
            self_attn = self.dropout(self_attn)
        h_tilde = self_attn + layer_in
        start = step or 0
        pe = absolute_pe(start + layer_in.size(1), layer_in.size(-1), self.pe_type, layer_in.device)[start:]
        c = h_tilde + pe * self.penalty(layer_in, h_tilde)  # Eq. 6-8
        ctx_attn, attns = self.context_attn(
            enc_out, enc_out, self.layer_norm_2(c), mask=src_pad_mask, return_attn=return_attn
        )
        if self.dropout_p > 0:
            ctx_attn = self.dropout(ctx_attn)
        return self.feed_forward(ctx_attn + h_tilde), attns  # Eq. 9: H~ on the residual path


@register_decoder("xl_reordering_embedding")
class ReorderingEmbeddingDecoder(TransformerDecoder):
    """Stock Transformer decoder whose layers add reordering embeddings (``3·d_model²`` parameters each)."""

    @classmethod
    def from_opt(cls, opt, embeddings):
        decoder = super().from_opt(opt, embeddings)
        for layer in decoder.transformer_layers:
            # The stock decoder hard-codes its layer class: extend each built layer in place.
            layer.__class__ = ReorderingEmbeddingDecoderLayer
            layer.penalty = PositionalPenalty(opt.dec_hid_size)
            layer.pe_type = opt.position_encoding_type
        return decoder


def _register_legacy_name() -> None:
    """``-decoder_type reordering_embedding`` (the name before the ``xl_`` prefix), where no one else has it."""
    from onmt.decoders import str2dec

    from onmt_xl.opennmt.names import LEGACY_DECODERS, register_aliases

    register_aliases(str2dec, LEGACY_DECODERS)


_register_legacy_name()
