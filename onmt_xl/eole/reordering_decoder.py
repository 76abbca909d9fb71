"""``decoder_type: xl_reordering_embedding`` in Eole: decoder reordering embeddings (Chen et al. 2019, "Decoder
REs"; with the encoder's, "Both REs"), from the portable
:class:`~onmt_xl.core.modules.reordering_embedding.PositionalPenalty` on Eole's pre-norm encoder-decoder layers. The
OpenNMT-py twin is ``onmt_xl/opennmt/decoders/reordering_embedding.py``.

Every layer: ``H̃ = H + Dropout(SelfAttn(LN(H)))``; ``C = H̃ + RE`` with ``RE = PE · PP(H, H̃)`` (Eq. 6-8) is what the
encoder-decoder attention reads (through its pre-norm); ``H̃`` stays on the residual path (Eq. 9):
``X = H̃ + Dropout(CtxAttn(LN(C)))``, ``H' = X + FFN(LN(X))``.

**PE at decoding step t.** Eole's decoder calls each layer with the cache length ``cache_seqlens`` ``(batch,)`` (the
position of the layer input's first token; ``None`` in training) and the layer's ``_forward_eager`` pops it before the
sub-layer function (``_forward_cross_attn`` in the stock layer) runs. Our layer reads it first and hands
``PE_{t..t+S-1}`` on, so step-by-step decoding with the cache sees exactly the training-time layer. ``PP`` depends
only on each position's own states, so nothing else needs caching.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from eole.decoders.transformer import TransformerDecoder, TransformerDecoderLayer

from onmt_xl.eole.baseline_config import pe_name
from onmt_xl.core.modules.reordering_embedding import PositionalPenalty
from onmt_xl.core.positions import absolute_pe, sinusoid

_PE_KEY = "xl_reordering_pe"


class ReorderingEmbeddingDecoderLayer(TransformerDecoderLayer):
    """Eole's encoder-decoder layer with a positional penalty after self-attention (``self.penalty``, ``3·d²``)."""

    def __init__(self, decoder_config, idx: int, running_config=None):
        super().__init__(decoder_config, idx, running_config=running_config)
        if self.context_attn is None:
            raise ValueError(f"decoder_type {decoder_config.decoder_type} needs an encoder-decoder model "
                             "(cross-attention reads C = H~ + RE)")
        self.penalty = PositionalPenalty(decoder_config.hidden_size)
        self.pe_type = pe_name(decoder_config.position_encoding_type)
        self._forward = self._forward_reordering  # the stock layer chose _forward_cross_attn in __init__

    def step_pe(self, layer_in: torch.Tensor, cache_seqlens: Optional[torch.Tensor]) -> torch.Tensor:
        """``PE`` of the positions of ``layer_in`` ``(batch, S, d)``: ``(S, d)`` for ``0 .. S-1`` without a cache
        (training, teacher forcing), else ``(batch, S, d)`` for ``cache_seqlens[b] + 0 .. S-1``."""
        n, dim = layer_in.size(1), layer_in.size(-1)
        if cache_seqlens is None:
            return absolute_pe(n, dim, self.pe_type, layer_in.device).to(layer_in.dtype)
        pos = cache_seqlens.view(-1, 1).long() + torch.arange(n, device=layer_in.device)  # (batch, S)
        return sinusoid(pos, dim, self.pe_type).to(layer_in.dtype)

    def _forward_eager(self, layer_in, **kwargs):
        kwargs[_PE_KEY] = self.step_pe(layer_in, kwargs.get("cache_seqlens"))  # the stock method pops the position
        return super()._forward_eager(layer_in, **kwargs)

    def _forward_reordering(self, layer_in, norm_layer_in, self_attn, attns, **kwargs):
        """After self-attention (``self_attn`` = its dropped-out output), as the stock ``_forward_cross_attn``."""
        pe = kwargs.pop(_PE_KEY)
        enc_out, src_pad_mask = kwargs.pop("enc_out", None), kwargs.pop("src_pad_mask", None)
        h_tilde = self_attn + layer_in
        c = h_tilde + pe * self.penalty(layer_in, h_tilde)  # Eq. 6-8
        ctx_attn, attns = self.context_attn(enc_out, enc_out, self.precontext_layernorm(c), attn_mask=~src_pad_mask,
                                            return_attn=kwargs.pop("return_attn", False))
        if self.dropout_p > 0:
            ctx_attn = self.dropout(ctx_attn)
        x = ctx_attn + h_tilde  # Eq. 9: H~ on the residual path
        return x + self.mlp(self.post_attention_layernorm(x)), attns


class ReorderingEmbeddingDecoder(TransformerDecoder):
    """Eole's Transformer decoder whose layers add reordering embeddings."""

    def __init__(self, decoder_config, running_config=None):
        super().__init__(decoder_config, running_config=running_config)
        # the stock decoder hard-codes its layer class: rebuild the layers as ours (same config, same names)
        self.transformer_layers = nn.ModuleList(
            ReorderingEmbeddingDecoderLayer(decoder_config, idx=i, running_config=running_config)
            for i in range(decoder_config.layers))
