"""``xl_exgre`` / ``xl_refsr`` in Eole: explicit global reordering and reordering fusion (Chen et al. 2020,
Eq. 5-11), from the portable :mod:`onmt_xl.core.modules.explicit_reordering` on Eole's layers. The OpenNMT-py twin (and
its documented deviation from Eq. 9) is ``onmt_xl/opennmt/encoders/explicit_reordering.py``.

Contract with the model: ``emb`` is the stock ``src_emb`` output (``X·√d + PE_abs``, dropout), ``pad_mask``
``(batch, 1, src_len)`` True on padding (right padding: ``J`` of Eq. 5 is each row's count of non-padding tokens).
The reordered positions ``r_j`` ``(batch, src_len)``, where the batch has them (``xl_position`` with alignments, in
training), come as the keyword ``xl_pos`` or through :func:`~onmt_xl.core.channel.feeding_xl_positions`; then the
encoder keeps ``λ · Σ_j ℓ_j`` in ``reordering_loss`` and ``(Σ_j Sim, words)`` in ``similarity`` (Eq. 9, 12).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from eole.encoders.transformer import TransformerEncoder

from onmt_xl.core.channel import fed_xl_positions
from onmt_xl.eole.baseline_config import pe_name
from onmt_xl.core.modules.explicit_reordering import (
    ReorderedPositionPredictor,
    ReorderingFusionGate,
    explicit_reordering,
    reordering_supervision,
)
from onmt_xl.core.positions import absolute_pe


class ExplicitReorderingEncoder(TransformerEncoder):
    """ExGRE: after every layer ``H̄^n = H^n + PR^n`` (Eq. 5-7); ReFSR (``xl_refsr``): the same layers also over the
    original order, fused with ExGRE's output by the gate of Eq. 10-11."""

    def __init__(self, encoder_config, running_config=None):
        super().__init__(encoder_config, running_config)
        d_model = encoder_config.hidden_size
        self.pe_type, self.window = pe_name(encoder_config.position_encoding_type), encoder_config.xl_exgre_window
        self.loss_weight, self.loss_kind = encoder_config.xl_reordering_loss_weight, encoder_config.xl_reordering_loss
        self.predictors = nn.ModuleList(ReorderedPositionPredictor(d_model) for _ in self.transformer_layers)
        self.gate = ReorderingFusionGate(d_model) if encoder_config.encoder_type == "xl_refsr" else None
        self.reordering_loss = self.similarity = self.predicted_positions = None

    def forward(self, emb: torch.Tensor, pad_mask: Optional[torch.Tensor] = None, return_hidden_states: bool = False,
                xl_pos: Optional[torch.Tensor] = None, **kwargs):
        assert pad_mask is not None, "ExplicitReorderingEncoder requires pad_mask"
        pos_xl = xl_pos if xl_pos is not None else fed_xl_positions()
        valid = ~pad_mask[:, 0]  # (batch, src_len)
        src_len = valid.sum(-1)
        attn_mask = valid[:, None, None, :]
        pe = absolute_pe(emb.size(1), emb.size(-1), self.pe_type, emb.device).to(emb.dtype)
        out, b, pr = explicit_reordering(self.transformer_layers, self.predictors, self.gate, emb, attn_mask,
                                         src_len, pe, self.window)
        self.predicted_positions = b.detach()
        self.reordering_loss, self.similarity = reordering_supervision(
            self.loss_kind, self.loss_weight, b, pr, pe, pos_xl, src_len, valid, self.window, self.pe_type)
        output = self.layer_norm(out)
        if return_hidden_states:
            return output, None, [output]
        return output, None
