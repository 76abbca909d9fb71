"""``xl_exgre`` / ``xl_refsr``: explicit global reordering and reordering fusion (Chen et al. 2020, Eq. 5–11),
trained with the reordering loss of Eq. 9 (the decoder stays stock). Layers are OpenNMT's pre-norm ones
(see :mod:`onmt_xl.opennmt.encoders.reordering_embedding` for how post-norm equations map onto them)."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
from onmt.encoders import register_encoder
from onmt.encoders.transformer import TransformerEncoder

from onmt_xl.core import options_table
from onmt_xl.opennmt.opts import add_all
from onmt_xl.opennmt.encoders.common import padding_mask, split_xl
from onmt_xl.opennmt.encoders.options import check_bounds, require_xl_position
from onmt_xl.core.modules.explicit_reordering import (
    ReorderedPositionPredictor,
    ReorderingFusionGate,
    explicit_reordering,
    reordering_supervision,
)
from onmt_xl.core.positions import absolute_pe

#: encoders trained with the reordering loss of Chen et al. 2020 (Eq. 9), fed r_j by xl_position
ENCODERS = ("xl_exgre", "xl_refsr")


OPTIONS = options_table.EXPLICIT_REORDERING


def add_options(group) -> None:
    add_all(group, OPTIONS)


def validate(opt) -> None:
    check_bounds(opt, "xl_reordering_loss_weight", "xl_exgre_window")
    require_xl_position(opt, (
        f"-encoder_type {opt.encoder_type} learns from reordered positions r_j, but training corpus '{{name}}' does "
        "not list the xl_position transform (with -xl_source align for alignment-derived r_j)"
    ), skip=("valid",))


@register_encoder("xl_exgre")
class ExGREEncoder(TransformerEncoder):
    """Explicit global reordering (Chen et al. 2020, Eq. 5–8): after every layer each word predicts its
    reordered position ``b_j`` and adds the Gaussian-windowed PE around it, ``H̄^n = H^n + PR^n``.

    Training adds ``λ · Σ_j ℓ_j`` to OpenNMT's loss (``-xl_reordering_loss_weight`` λ), where the reordered
    position ``r_j`` (its sinusoid is ``re_j``) is attached at training time by the ``xl_position`` transform
    (``-xl_source align``: from the alignments). Translation needs nothing but the source: without XL
    positions in the batch there is simply no loss. ``B^n`` reads the normalised ``H^n`` (post-norm's layer
    output; see :class:`ReorderedPositionPredictor`).

    Deviation from Eq. 9 (``-xl_reordering_loss``). With the paper's window ``D = 0.5`` at most one integer
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
        encoder.pe_type, encoder.window = opt.position_encoding_type, opt.xl_exgre_window
        encoder.loss_weight, encoder.loss_kind = opt.xl_reordering_loss_weight, opt.xl_reordering_loss
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
        pe = absolute_pe(src.size(1), x0.size(-1), self.pe_type, src.device)
        out, b, pr = explicit_reordering(self.transformer, self.predictors, self.gate, x0, pad, src_len, pe,
                                         self.window)
        self.predicted_positions = b.detach()
        self.reordering_loss, self.similarity = reordering_supervision(
            self.loss_kind, self.loss_weight, b, pr, pe, pos_xl, src_len, ~pad[:, 0, 0, :], self.window, self.pe_type)
        return self.layer_norm(out), None, src_len


@register_encoder("xl_refsr")
class ReFSREncoder(ExGREEncoder):
    """Reordering fusion-based source representation (Chen et al. 2020, Eq. 10–11) over ExGRE."""

    fuse = True
