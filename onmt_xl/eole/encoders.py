"""Eole encoders with cross-lingual position encoding (Ding et al. 2020): ``xl_inxl``, ``xl_headxl``,
``xl_combination``.

The same equations as the OpenNMT-py adapter's :mod:`onmt_xl.opennmt.encoders.xl_transformer`, from the same portable
modules (:mod:`onmt_xl.core.positions`, :class:`~onmt_xl.core.modules.inxl.InXLPositionFusion`,
:class:`~onmt_xl.core.modules.headxl.HeadSplitLinear`), on Eole's layers (``input_layernorm``, ``SelfMHA``,
``post_attention_layernorm``, ``mlp``).

Contract with the model (kept by :mod:`onmt_xl.eole.seams`, ``reports/EOLE.md``):

* ``emb``: the *raw* source word embeddings, ``(batch, src_len, d)``. Eole's model applies ``src_emb`` (``X·√d +
  PE_abs``, then dropout) before it calls the encoder; an XL encoder needs ``X`` alone, so an XL model's ``src_emb``
  is an :class:`XLSourceEmbeddings` (a stock ``Embeddings`` whose forward is the table look-up; same parameters and
  buffers, so its checkpoints keep stock names), and the encoder adds ``√d``, the positions and the dropout.
* ``pad_mask``: Eole's ``(batch, 1, src_len)``, True on padding.
* ``pos_xl``: ``(batch, src_len)`` long, as the keyword ``xl_pos`` or, when the model's stock forward calls us,
  fed by :func:`onmt_xl.core.channel.feeding_xl_positions` around the call (the same channel as in OpenNMT-py).
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
from eole.encoders.transformer import TransformerEncoder
from eole.modules.embeddings import Embeddings

from onmt_xl.core.channel import MissingXLPositionsError, fed_xl_positions
from onmt_xl.eole import registry
from onmt_xl.eole.config import XL_ENCODERS, XLTransformerEncoderConfig  # noqa: F401  (public here too)
from onmt_xl.eole.output import encoder_output
from onmt_xl.core.modules.headxl import HeadSplitLinear
from onmt_xl.core.modules.inxl import InXLPositionFusion
from onmt_xl.core.positions import absolute_pe, sinusoid

MISSING = ("encoder_type {enc} needs cross-lingual positions but the batch has none: add the xl_position transform "
           "(last) to the source transforms, with transforms_configs.xl_position.xl_preorderer")


class XLSourceEmbeddings(Embeddings):
    """The source embeddings of an XL model: the word look-up only (``X`` before ``√d``, PE and dropout), which the XL
    encoder applies itself. Same parameters and buffers as Eole's ``Embeddings``."""

    def forward(self, source, step=None):
        return self.embeddings(source)

    @classmethod
    def adopt(cls, emb: Embeddings) -> "XLSourceEmbeddings":
        """Turn a stock ``Embeddings`` (as ``build_src_emb`` made it) into this class, in place."""
        if type(emb) is not Embeddings:
            raise TypeError(f"XL encoders need Eole's standard Embeddings, got {type(emb).__name__}")
        emb.__class__ = cls
        return emb


def _keep_split(self) -> None:
    """``_fuse_KVQ`` of a HeadXL attention: left unfused (Eole's inference fuses K, V, Q into one ``nn.Linear``, which
    would drop the head split)."""


def split_attention(attn, xl_heads: int):
    """Eole's ``SelfMHA`` -> HeadXL self-attention (Eq. 10-11), in place: heads ``0 … τ−1`` project ``Z_XL``, the
    others ``Z_abs``; parameters keep their names and shapes. Call it with ``[Z_XL ; Z_abs]`` packed on the last axis.
    (The OpenNMT-py twin is :func:`onmt_xl.core.modules.headxl.make_headxl_attention`, which reads OpenNMT's
    ``head_count``.)"""
    if not 0 <= xl_heads <= attn.heads:
        raise ValueError(f"HeadXL needs 0 <= xl_heads <= heads, got xl_heads={xl_heads}, heads={attn.heads}")
    n_first = xl_heads * attn.dim_per_head
    for name in ("linear_query", "linear_keys", "linear_values"):
        setattr(attn, name, HeadSplitLinear.from_linear(getattr(attn, name), n_first))
    attn._fuse_KVQ = _keep_split.__get__(attn)
    attn.xl_heads = xl_heads
    return attn


def headxl_layer_forward(layer, z_abs: torch.Tensor, z_xl: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
    """Eole's pre-norm ``TransformerEncoderLayer.forward`` with the packed ``[LN(Z_XL) ; LN(Z_abs)]`` for the split
    attention and ``Z_abs`` on the residual path (Eq. 9-11)."""
    norm_abs = layer.input_layernorm(z_abs)
    packed = torch.cat((layer.input_layernorm(z_xl), norm_abs), dim=-1)
    context, _ = layer.self_attn(packed, attn_mask=attn_mask)
    if layer.dropout_p > 0:
        context = layer.dropout(context)
    hidden = context + z_abs
    ff_in = norm_abs if layer.parallel_residual else layer.post_attention_layernorm(hidden)
    return hidden + layer.mlp(ff_in)


class XLTransformerEncoder(TransformerEncoder):
    """Eole's Transformer encoder whose input positions are cross-lingual (see the module docstring)."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__(encoder_config, running_config)
        enc = encoder_config.encoder_type
        if enc not in XL_ENCODERS:
            raise ValueError(f"not an XL encoder_type: {enc!r}")
        use_inxl, use_headxl = XL_ENCODERS[enc]
        self.encoder_type = enc
        self.d_model = encoder_config.hidden_size
        self.pe_type = str(getattr(encoder_config.position_encoding_type, "value",
                                   encoder_config.position_encoding_type))
        self.inxl = (InXLPositionFusion(self.d_model, encoder_config.xl_inxl_fusion, self.pe_type,
                                        encoder_config.xl_inxl_init) if use_inxl else None)
        self.xl_heads = encoder_config.resolved_xl_heads if use_headxl else None
        if use_headxl:
            split_attention(self.transformer_layers[0].self_attn, self.xl_heads)
        # the embedding dropout, which Eole's src_emb applies for stock encoders
        self.emb_dropout = nn.Dropout(getattr(running_config, "dropout", [0.0])[0] if running_config else 0.0)

    def positions(self, pos_xl: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(``PE_abs``, ``PE_XL`` or ``PE_IN-XL``), each ``(batch, src_len, d)`` (Eq. 1, 6, 7)."""
        pe_abs = absolute_pe(pos_xl.size(1), self.d_model, self.pe_type, pos_xl.device).expand(pos_xl.size(0), -1, -1)
        pe_xl = sinusoid(pos_xl, self.d_model, self.pe_type)
        if self.inxl is not None:
            pe_xl = self.inxl(pe_abs, pe_xl)
        return pe_abs, pe_xl

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                xl_pos: Optional[torch.Tensor] = None, **kwargs):
        assert pad_mask is not None, "XLTransformerEncoder requires pad_mask"
        pos_xl = xl_pos if xl_pos is not None else fed_xl_positions()
        if pos_xl is None:
            raise MissingXLPositionsError(MISSING.format(enc=self.encoder_type))
        if tuple(pos_xl.shape) != tuple(emb.shape[:2]):
            raise ValueError(f"XL positions of shape {tuple(pos_xl.shape)} for a source batch of shape "
                             f"{tuple(emb.shape[:2])}")
        x = emb * math.sqrt(self.d_model)
        pe_abs, pe_xl = self.positions(pos_xl.to(emb.device))
        pe_abs, pe_xl = pe_abs.to(x.dtype), pe_xl.to(x.dtype)
        attn_mask = ~pad_mask.unsqueeze(1)  # (batch, 1, 1, src_len), True where attention may look
        layers = iter(self.transformer_layers)
        hidden_states = [] if return_hidden_states else None
        if self.xl_heads is None:  # InXL: Eq. 8
            out = self.emb_dropout(x + pe_xl)
        else:  # HeadXL / Combination: Eq. 9, then the split first layer
            out = headxl_layer_forward(next(layers), self.emb_dropout(x + pe_abs), self.emb_dropout(x + pe_xl),
                                       attn_mask)
            if hidden_states is not None:
                hidden_states.append(out)
        for layer in layers:
            out = layer(out, attn_mask, position_embeddings=None)
            if hidden_states is not None:
                hidden_states.append(out)
        return encoder_output(self, out, hidden_states)

    def update_dropout(self, dropout: float, attention_dropout: float) -> None:
        super().update_dropout(dropout, attention_dropout)
        self.emb_dropout.p = dropout


ENCODER_CLASSES = {name: XLTransformerEncoder for name in XL_ENCODERS}


registry.add(encoders=ENCODER_CLASSES)  # completes the str2enc seam if it ran while we imported Eole
