"""Every named system of the workbench, declared once (like fairseq's named architectures).

A :class:`System` is a name, the model options it sets over the shared Transformer
(:data:`onmt_xl.experiments.configs.MODEL`), the transform its source goes through and the result it
reproduces. Adding a system is one entry in :data:`SYSTEMS` (then ``onmt-xl write-configs`` renders
its YAML into ``yaml_configs/``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

#: Source transforms: ``XL`` = xl_position from the preorderer (training, validation and translation);
#: ``PREREORDER`` = the source itself reordered by the preorderer (idem); ``ALIGNED_R`` = xl_position from
#: the training corpus' alignments (``workdir/align/train.gdfa``), training corpus only: ExGRE/ReFSR's r_j.
XL, PREREORDER, ALIGNED_R = "xl_position", "xl_prereorder", "aligned_r"


@dataclass(frozen=True)
class System:
    """One named system: ``options`` override the shared model settings; ``transform`` is one of
    ``XL``, ``PREREORDER``, ``ALIGNED_R`` or None; ``reproduces`` names the paper result it stands for;
    ``over_preset``: options that also win over the preset's sizes (a model of another family, e.g. the LSTM's
    layer count; :func:`onmt_xl.experiments.configs.config`)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    transform: Optional[str] = None
    reproduces: str = ""
    over_preset: Mapping[str, Any] = field(default_factory=dict)

    @property
    def translate_transform(self) -> Optional[str]:
        """The transform ``onmt_translate`` needs on the source (ALIGNED_R only concerns training), or None."""
        return self.transform if self.transform in (XL, PREREORDER) else None

    @property
    def uses_preorderer(self) -> bool:
        return self.transform in (XL, PREREORDER)


def _systems(*systems: System) -> Dict[str, System]:
    return {s.name: s for s in systems}


SYSTEMS: Dict[str, System] = _systems(
    System("baseline", {}, None, "Vaswani et al. 2017; the baseline of Ding et al. 2020 Tab. 1–2"),
    System("relative_pe", {"encoder_type": "xl_relative", "xl_enc_max_relative_positions": 16}, None,
           "Shaw et al. 2018; Ding et al. 2020 Tab. 1"),
    System("inxl", {"encoder_type": "xl_inxl", "xl_inxl_fusion": "block"}, XL, "Ding et al. 2020 Tab. 1–2 (InXL)"),
    # xl_heads: the plug-in's default (onmt_xl.opennmt.encoders.options.default_xl_heads)
    System("headxl", {"encoder_type": "xl_headxl"}, XL, "Ding et al. 2020 Tab. 1–2 (HeadXL)"),
    System("combination", {"encoder_type": "xl_combination", "xl_inxl_fusion": "block"}, XL,
           "Ding et al. 2020 Tab. 1–2 (Combination)"),
    System("disan", {"encoder_type": "xl_disan"}, None, "Shen et al. 2018; Ding et al. 2020 Tab. 1 row 8"),
    # directional heads without the fusion gate: our variant of DiSAN
    System("disan_nogate", {"encoder_type": "xl_disan", "xl_disan_fusion": "none"}, None, "ours (DiSAN without its "
           "gate)"),
    System("enc_re", {"encoder_type": "xl_reordering_embedding"}, None, "Chen et al. 2019a Tab. 1 (encoder RE)"),
    System("dec_re", {"decoder_type": "xl_reordering_embedding"}, None, "Chen et al. 2019a Tab. 1 (decoder RE)"),
    System("both_re", {"encoder_type": "xl_reordering_embedding", "decoder_type": "xl_reordering_embedding"}, None,
           "Chen et al. 2019a Tab. 1 (encoder and decoder RE)"),
    System("additional_pe", {"encoder_type": "xl_additional_pe"}, None, "Chen et al. 2019a Tab. 1 (additional PE)"),
    System("exgre", {"encoder_type": "xl_exgre", "xl_reordering_loss_weight": 0.6}, ALIGNED_R,
           "Chen et al. 2020 Tab. 1 (ExGRE)"),
    System("refsr", {"encoder_type": "xl_refsr", "xl_reordering_loss_weight": 0.6}, ALIGNED_R,
           "Chen et al. 2020 Tab. 1 (ReFSR)"),
    # Eq. 9 as written: with D = 0.5 its loss gives the predicted positions no gradient (see ExGREEncoder)
    System("exgre_literal",
           {"encoder_type": "xl_exgre", "xl_reordering_loss_weight": 0.6, "xl_reordering_loss": "literal"},
           ALIGNED_R, "Chen et al. 2020 Eq. 9 as written (ours, for the Sim metric)"),
    System("encoder_free", {"encoder_type": "xl_encoder_free", "xl_encoder_free_pe": "absolute"}, None,
           "Tang et al. 2019; Ding et al. 2020 Tab. 4 (absolute PE)"),
    System("encoder_free_none", {"encoder_type": "xl_encoder_free", "xl_encoder_free_pe": "none"}, None,
           "Ding et al. 2020 Tab. 4 (BIG-noEnc-noPos: no source position information)"),
    # relative PE without encoder self-attention: Shaw et al.'s Eq. 3-4 once over the embeddings (encoder_free.py)
    System("encoder_free_relative", {"encoder_type": "xl_encoder_free", "xl_encoder_free_pe": "relative",
                                     "xl_enc_max_relative_positions": 16}, None,
           "Ding et al. 2020 Tab. 4 (Relative PE)"),
    System("encoder_free_inxl",
           {"encoder_type": "xl_encoder_free", "xl_encoder_free_pe": "inxl", "xl_inxl_fusion": "block"}, XL,
           "Ding et al. 2020 Tab. 4 (InXL PE)"),
    # OpenNMT-py's stock attentional LSTM (Luong et al. 2015): a bidirectional encoder, an input-feeding decoder;
    # hidden size the preset's d_model (the paper: hidden 1024 beside BIG), 6 layers as the paper's, which puts its
    # parameters near the Transformer's at the enja preset (tools/bench/count_params.py --preset enja;
    # reports/RESULTS.md)
    System("lstm", {"encoder_type": "brnn", "decoder_type": "rnn", "rnn_type": "LSTM", "global_attention": "general",
                    "position_encoding": False}, None, "Ding et al. 2020 Tab. 4 (LSTM, 6 layers)",
           over_preset={"enc_layers": 6, "dec_layers": 6}),
    System("prereorder", {}, PREREORDER, "pre-reordering: the source itself reordered by the preorderer (a baseline of "
           "Ding et al. 2020)"),
)


def system(name: str) -> System:
    """The system called ``name``; a ValueError listing the names otherwise."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose one of {sorted(SYSTEMS)}")
    return SYSTEMS[name]
