"""``xl_disan``: directional self-attention with DiSAN's fusion gate in every layer (Shen et al. 2018;
baseline of Ding et al. 2020, Tab. 1–2). See :mod:`onmt_xl.core.modules.disan`; the decoder stays stock."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from onmt.encoders import register_encoder
from onmt.encoders.transformer import TransformerEncoder

from onmt_xl.opennmt.encoders.common import padding_mask
from onmt_xl.core import options_table
from onmt_xl.opennmt.opts import add_all
from onmt_xl.core.modules.disan import FusionGate, directional_masks

ENCODERS = ("xl_disan",)


def add_options(group) -> None:
    add_all(group, options_table.DISAN)


def validate(opt) -> None:
    if getattr(opt, "parallel_residual", False):
        raise ValueError(f"-encoder_type {opt.encoder_type} builds on OpenNMT's sequential pre-norm layer: drop "
                         "-parallel_residual")


@register_encoder("xl_disan")
class DiSANEncoder(TransformerEncoder):
    """Transformer encoder whose self-attention is directional (DiSAN, Shen et al. 2018).

    Each layer is a stock pre-norm layer whose attention block is
    ``x + Dropout(Fusion(MHA_dir(h), h))`` with ``h = LN(x)``: half of the heads under DiSAN's forward
    mask, half under its backward mask (:func:`directional_masks`), fused with the block input ``h`` by
    DiSAN's gate (:class:`FusionGate`, started at ``F = 0.95``); the feed-forward block is stock.
    ``-xl_disan_fusion none`` drops the gate (``x + Dropout(MHA_dir(h))``).

    Deviations, because OpenNMT's layers are pre-norm and DiSAN is not a Transformer layer: the gate reads
    the normalised block input ``h`` (DiSAN's input is its embedding layer's output), and it sits inside
    the residual block rather than replacing it, which keeps the Transformer's identity path.
    """

    @classmethod
    def from_opt(cls, opt, embeddings):
        encoder = super().from_opt(opt, embeddings)
        encoder.heads = opt.heads
        use_gate = getattr(opt, "xl_disan_fusion", "gate") == "gate"
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
