"""Reordering-aware baseline encoders from the papers (the decoder stays stock).

* ``disan``: directional self-attention with DiSAN's fusion gate in every layer (Shen et al. 2018;
  baseline of Ding et al. 2020, Tab. 1–2). See :mod:`onmt_xl.modules.disan`.
* ``reordering_embedding``: encoder reordering embeddings (Chen et al. 2019, Eq. 6–9).
* ``additional_pe``: the control of Chen et al. 2019: the plain PE added in every layer instead of RE.
* ``exgre`` / ``refsr``: explicit global reordering and reordering fusion (Chen et al. 2020, Eq. 5–11),
  trained with the reordering loss of Eq. 9.
* ``encoder_free``: no encoder layers; the source embeddings (+ no / absolute / InXL PE, option
  ``-encoder_free_pe``) go straight to the decoder (Tang et al. 2019; Ding et al. 2020, Tab. 4).

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
from onmt.encoders.encoder import EncoderBase
from onmt.encoders.transformer import TransformerEncoder, TransformerEncoderLayer

from onmt_xl.encoders.common import embed_words, padding_mask, split_xl
from onmt_xl.modules.disan import FusionGate, directional_masks
from onmt_xl.modules.explicit_reordering import (
    ReorderedPositionPredictor,
    ReorderingFusionGate,
    gaussian_window_pe,
    reordering_loss,
    reordering_similarity,
)
from onmt_xl.modules.inxl import InXLPositionFusion
from onmt_xl.modules.reordering_embedding import PositionalPenalty
from onmt_xl.positions import sinusoid


def _attend(layer: TransformerEncoderLayer, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Dropped-out self-attention output of a stock layer on its normalised input ``h = LN(x)``,
    ``(batch, src_len, d_model)``."""
    context, _ = layer.self_attn(h, h, h, mask=mask)
    return layer.dropout(context) if layer.dropout_p > 0 else context


@register_encoder("disan")
class DiSANEncoder(TransformerEncoder):
    """Transformer encoder whose self-attention is directional (DiSAN, Shen et al. 2018).

    Each layer is a stock pre-norm layer whose attention block is
    ``x + Dropout(Fusion(MHA_dir(h), h))`` with ``h = LN(x)``: half of the heads under DiSAN's forward
    mask, half under its backward mask (:func:`directional_masks`), fused with the block input ``h`` by
    DiSAN's gate (:class:`FusionGate`, started at ``F = 0.95``); the feed-forward block is stock.
    ``-disan_fusion none`` drops the gate (``x + Dropout(MHA_dir(h))``).

    Deviations, because OpenNMT's layers are pre-norm and DiSAN is not a Transformer layer: the gate reads
    the normalised block input ``h`` (DiSAN's input is its embedding layer's output), and it sits inside
    the residual block rather than replacing it, which keeps the Transformer's identity path.
    """

    @classmethod
    def from_opt(cls, opt, embeddings):
        encoder = super().from_opt(opt, embeddings)
        encoder.heads = opt.heads
        use_gate = getattr(opt, "disan_fusion", "gate") == "gate"
        encoder.gates = nn.ModuleList(FusionGate(opt.enc_hid_size) for _ in encoder.transformer) if use_gate else None
        return encoder

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        x = self.embeddings(src)
        mask = directional_masks(padding_mask(src_len, src.size(1)), self.heads)
        for n, layer in enumerate(self.transformer):
            if self.gates is None:
                x = layer(x, mask)  # the stock layer, with directional heads
                continue
            h = layer.layer_norm(x)
            s, _ = layer.self_attn(h, h, h, mask=mask)
            u = self.gates[n](s, h)
            x = layer.feed_forward(x + (layer.dropout(u) if layer.dropout_p > 0 else u))
        return self.layer_norm(x), None, src_len


@register_encoder("reordering_embedding")
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
        pe = sinusoid(torch.arange(src.size(1), device=src.device), x.size(-1), self.pe_type)  # (src_len, d)
        for n, layer in enumerate(self.transformer):
            h_tilde = x + _attend(layer, layer.layer_norm(x), mask)
            re = pe * self.penalties[n](x, h_tilde) if self.penalties is not None else pe  # Eq. 6-7
            c = h_tilde + re  # Eq. 8
            x = h_tilde + (layer.feed_forward(c) - c)  # Eq. 9: FFN(C) on the H~ residual
        return self.layer_norm(x), None, src_len


@register_encoder("additional_pe")
class AdditionalPEEncoder(ReorderingEmbeddingEncoder):
    """Chen et al. 2019's control: ``C = H̃ + PE`` in every layer (no positional penalty)."""

    use_penalty = False


@register_encoder("encoder_free")
class EncoderFreeEncoder(EncoderBase):
    """No encoder layers: ``(batch, src_len, d_model)`` source embeddings (+ PE) go to the decoder.

    ``-encoder_free_pe none | absolute | inxl``: no position information, ``X + PE_abs``, or
    ``X + PE_IN-XL`` (Eq. 7–8, needs the ``xl_position`` transform).
    """

    def __init__(self, embeddings, pe: str, pe_type: str, inxl_fusion: str, inxl_init: str = "identity"):
        super().__init__()
        self.embeddings, self.pe, self.pe_type = embeddings, pe, pe_type
        d_model = embeddings.embedding_size
        self.inxl = InXLPositionFusion(d_model, inxl_fusion, pe_type, inxl_init) if pe == "inxl" else None

    @classmethod
    def from_opt(cls, opt, embeddings):
        return cls(embeddings, opt.encoder_free_pe, opt.position_encoding_type, opt.inxl_fusion,
                   opt.inxl_init)

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        src, pos_xl = split_xl(self, src, missing=(
            "encoder_free with -encoder_free_pe inxl needs cross-lingual positions: add the xl_position transform "
            "(onmt_translate ... -transforms xl_position -xl_preorderer FILE)"
        ) if self.pe == "inxl" else None)
        x = embed_words(self.embeddings, src)
        d_model = x.size(-1)
        if self.pe != "none":
            abs_pos = torch.arange(src.size(1), device=src.device).expand(src.size(0), -1)
            pe = sinusoid(abs_pos, d_model, self.pe_type)
            x = x + (self.inxl(pe, sinusoid(pos_xl, d_model, self.pe_type)) if self.inxl is not None else pe)
        return self.embeddings.dropout(x), None, src_len

    def update_dropout(self, dropout, attention_dropout):
        self.embeddings.update_dropout(dropout)


@register_encoder("exgre")
class ExGREEncoder(TransformerEncoder):
    """Explicit global reordering (Chen et al. 2020, Eq. 5–8): after every layer each word predicts its
    reordered position ``b_j`` and adds the Gaussian-windowed PE around it, ``H̄^n = H^n + PR^n``.

    Training adds ``λ · Σ_j ℓ_j`` to OpenNMT's loss (``-reordering_loss_weight`` λ), where the reordered
    position ``r_j`` (its sinusoid is ``re_j``) is attached at training time by the ``xl_position`` transform
    (``-xl_source align``: from the alignments). Translation needs nothing but the source: without XL
    positions in the batch there is simply no loss. ``B^n`` reads the normalised ``H^n`` (post-norm's layer
    output; see :class:`ReorderedPositionPredictor`).

    Deviation from Eq. 9 (``-reordering_loss``). With the paper's window ``D = 0.5`` at most one integer
    position lies in ``[b_j − D, b_j + D]``, so ``pr_j = w · pe_s`` and the cosine ``ℓ_j = 1 − Sim(pr_j^N, re_j)``
    does not depend on ``b_j``: the supervision never reaches ``B^N``. The forward pass keeps Eq. 5–8; the
    loss is taken on ``position`` (the default): ``((b_j − r_j) / (J − 1))²``, or ``soft``: Eq. 9 on a soft
    selection over all of the sentence's positions with Eq. 6's Gaussian weights (:func:`soft_window_pe`);
    ``literal`` is Eq. 9 as written. The default is the form that trained best on a tuning split carved from
    the synthetic corpus' training data (``reports/TUNING.md``). The Sim metric (Eq. 12) is always that of
    ``pr_j^N``, as in the paper.
    """

    fuse = False

    @classmethod
    def from_opt(cls, opt, embeddings):
        encoder = super().from_opt(opt, embeddings)
        d_model = opt.enc_hid_size
        encoder.pe_type, encoder.window = opt.position_encoding_type, opt.exgre_window
        encoder.loss_weight, encoder.loss_kind = opt.reordering_loss_weight, opt.reordering_loss
        encoder.predictors = nn.ModuleList(ReorderedPositionPredictor(d_model) for _ in encoder.transformer)
        encoder.gate = ReorderingFusionGate(d_model) if cls.fuse else None
        encoder.reordering_loss = None  # set by forward when the batch carries r_j
        encoder.similarity = None  # (Σ_j Sim, number of words) of the last such batch: the Sim metric, Eq. 12
        encoder.predicted_positions = None  # B^N of the last batch, (batch, src_len)
        return encoder

    def forward(self, src: torch.Tensor, src_len: Optional[torch.Tensor] = None):
        src, pos_xl = split_xl(self, src)  # r_j attached by xl_position, or None
        x0 = self.embeddings(src)
        pad = padding_mask(src_len, src.size(1))
        pe = sinusoid(torch.arange(src.size(1), device=src.device), x0.size(-1), self.pe_type)
        x = x0
        for layer, predictor in zip(self.transformer, self.predictors):
            h = layer(x, pad)
            b = predictor(h, src_len)  # Eq. 5
            pr = gaussian_window_pe(b, pe, self.window)  # Eq. 6
            x = h + pr  # Eq. 7
        out = x
        if self.gate is not None:  # ReFSR: the same layers over the original order (Eq. 2), fused (Eq. 10-11)
            h = x0
            for layer in self.transformer:
                h = layer(h, pad)
            out = self.gate(h, x)
        self.reordering_loss = self.similarity = None
        self.predicted_positions = b.detach()
        if pos_xl is not None:
            valid = ~pad[:, 0, 0, :]
            self.similarity = (reordering_similarity(pr.detach(), pos_xl, valid, self.pe_type), valid.sum())
            loss = reordering_loss(self.loss_kind, b, pr, pe, pos_xl, src_len, valid, self.window, self.pe_type)
            self.reordering_loss = self.loss_weight * loss
        return self.layer_norm(out), None, src_len


@register_encoder("refsr")
class ReFSREncoder(ExGREEncoder):
    """Reordering fusion-based source representation (Chen et al. 2020, Eq. 10–11) over ExGRE."""

    fuse = True
