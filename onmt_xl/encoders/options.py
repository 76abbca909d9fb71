"""Model options of onmt_xl's encoders (added to ``onmt_train -h`` by :mod:`onmt_xl.plugin`)."""

from __future__ import annotations

from onmt_xl.modules.explicit_reordering import REORDERING_LOSSES
from onmt_xl.modules.inxl import INXL_FUSIONS, INXL_STARTS

#: encoder_type -> (uses InXL fusion, uses HeadXL split, reads XL positions)
XL_ENCODERS = {
    "xl_inxl": (True, False, True),
    "xl_headxl": (False, True, True),
    "xl_combination": (True, True, True),
}
RELATIVE_ENCODER = "xl_relative"
#: encoders that replace the stock absolute PE of the encoder with their own
OWN_PE_ENCODERS = ("disan", "reordering_embedding", "additional_pe", "encoder_free", "exgre", "refsr")
#: encoders trained with the reordering loss of Chen et al. 2020 (Eq. 9), fed r_j by xl_position
REORDERING_LOSS_ENCODERS = ("exgre", "refsr")
ENCODER_FREE_PES = ("none", "absolute", "inxl")
DISAN_FUSIONS = ("gate", "none")


def add_model_options(parser) -> None:
    group = parser.add_argument_group(
        "Model-Encoder-XL",
        "onmt_xl encoders: -encoder_type xl_inxl | xl_headxl | xl_combination (cross-lingual position "
        "encoding, Ding et al. 2020; needs the xl_position transform); baselines: xl_relative (encoder-only "
        "relative PE, Shaw et al. 2018), disan (Shen et al. 2018), reordering_embedding and additional_pe "
        "(Chen et al. 2019), exgre and refsr (Chen et al. 2020), encoder_free (Tang et al. 2019)",
    )
    group.add(
        "--xl_heads", "-xl_heads", type=int, default=4,
        help="HeadXL (Eq. 9-11): number τ of first-layer self-attention heads that read X+PE_XL; the "
        "other heads-τ read X+PE_abs. 0 <= τ <= heads; 0 is the stock encoder, heads puts XL on all heads.",
    )
    group.add(
        "--inxl_fusion", "-inxl_fusion", type=str, default="block", choices=INXL_FUSIONS,
        help="InXL (Eq. 7) parameterisation of U and V: 'block' = one 2x2 matrix per sinusoid "
        "frequency (4*d_model parameters), 'diagonal' = element-wise (2*d_model), 'full' = d_model x "
        "d_model matrices (2*d_model^2).",
    )
    group.add(
        "--inxl_init", "-inxl_init", type=str, default="identity", choices=INXL_STARTS,
        help="InXL (Eq. 7) starting point of U and V: 'identity' = (I, I), tanh(PE_abs + PE_XL), whose "
        "frequencies partly cancel wherever pos_XL differs from the position; 'absolute' = (I, 0), so PE_IN-XL "
        "starts as tanh(PE_abs), the stock encoder's order information without the XL positions.",
    )
    group.add(
        "--enc_max_relative_positions", "-enc_max_relative_positions", type=int, default=16,
        help="xl_relative: clipping distance k of encoder-only relative position representations "
        "(Shaw et al. 2018). The decoder keeps its absolute position encoding.",
    )
    group.add(
        "--disan_fusion", "-disan_fusion", type=str, default="gate", choices=DISAN_FUSIONS,
        help="disan: 'gate' = DiSAN's fusion gate mixes the directional heads' output with the layer's normalised "
        "input inside the residual block, x + Dropout(F*s + (1-F)*LN(x)), F starting at 0.95; 'none' = x + "
        "Dropout(s), a stock layer with directional heads.",
    )
    group.add(
        "--encoder_free_pe", "-encoder_free_pe", type=str, default="absolute", choices=ENCODER_FREE_PES,
        help="encoder_free (Tang et al. 2019): position information added to the source embeddings: none, "
        "absolute PE, or InXL PE (Eq. 7-8; needs the xl_position transform).",
    )
    group.add(
        "--reordering_loss_weight", "-reordering_loss_weight", type=float, default=0.6,
        help="exgre/refsr: weight λ of the reordering loss (Chen et al. 2020, Eq. 9; see -reordering_loss).",
    )
    group.add(
        "--reordering_loss", "-reordering_loss", type=str, default="position", choices=REORDERING_LOSSES,
        help="exgre/refsr: what the reordering loss compares with r_j. 'position' = ((b_j - r_j) / (J - 1))^2; 'soft' = "
        "Eq. 9's cosine on a soft selection of the PEs of all positions with Eq. 6's Gaussian weights; 'literal' = "
        "Eq. 9 on Eq. 6's windowed PE, which with the paper's D = 0.5 gives the predicted positions no gradient.",
    )
    group.add(
        "--exgre_window", "-exgre_window", type=float, default=0.5,
        help="exgre/refsr: half-width D of the Gaussian window around the predicted position (Eq. 6, σ = D/2).",
    )


def _corpora(opt):
    """``{name: {"transforms": [...], ...}}`` from ``opt.data``, which ``onmt_train`` validates only *after*
    the model options (it is still the YAML text then); None when there is none (e.g. translation)."""
    import yaml

    data = getattr(opt, "data", None)
    if isinstance(data, str):
        try:
            data = yaml.safe_load(data)
        except yaml.YAMLError:
            return None  # OpenNMT's own data validation reports it
    if not isinstance(data, dict):
        return None
    default = list(getattr(opt, "transforms", None) or [])
    return {
        name: {**corpus, "transforms": list(corpus.get("transforms") or default)}
        for name, corpus in data.items()
        if isinstance(corpus, dict)
    }


def validate_model_options(opt) -> None:
    """Check our options once the whole model configuration is known; raise ``ValueError`` with the fix."""
    enc = getattr(opt, "encoder_type", None)
    if enc in XL_ENCODERS or enc in (RELATIVE_ENCODER,) + OWN_PE_ENCODERS:
        if not getattr(opt, "position_encoding", False):
            raise ValueError(
                f"-encoder_type {enc} needs -position_encoding true (the absolute sinusoid PE_abs of Eq. 1; "
                "the stock decoder uses it too)"
            )
        if getattr(opt, "max_relative_positions", 0) != 0:
            raise ValueError(
                f"-encoder_type {enc} needs -max_relative_positions 0 (OpenNMT's option applies to encoder and "
                "decoder; for encoder-only relative PE use -encoder_type xl_relative -enc_max_relative_positions K)"
            )
    if enc in ("disan", "reordering_embedding", "additional_pe") and getattr(opt, "parallel_residual", False):
        raise ValueError(f"-encoder_type {enc} builds on OpenNMT's sequential pre-norm layer: drop -parallel_residual")
    data = _corpora(opt)
    reads_xl = enc in XL_ENCODERS or (enc == "encoder_free" and getattr(opt, "encoder_free_pe", None) == "inxl")
    if reads_xl and data is not None:
        for name, corpus in data.items():
            if "xl_position" not in corpus["transforms"]:
                raise ValueError(
                    f"-encoder_type {enc} reads cross-lingual positions, but corpus '{name}' does not list the "
                    "xl_position transform: add it (last) to its transforms"
                )
    if enc in REORDERING_LOSS_ENCODERS:
        if opt.reordering_loss_weight < 0:
            raise ValueError(f"-reordering_loss_weight must be >= 0, got {opt.reordering_loss_weight}")
        if opt.exgre_window <= 0:
            raise ValueError(f"-exgre_window must be > 0, got {opt.exgre_window}")
        for name, corpus in (data or {}).items():
            if name != "valid" and "xl_position" not in corpus["transforms"]:
                raise ValueError(
                    f"-encoder_type {enc} learns from reordered positions r_j, but training corpus '{name}' does "
                    "not list the xl_position transform (with -xl_source align for alignment-derived r_j)"
                )
    if enc in XL_ENCODERS and XL_ENCODERS[enc][1]:
        if not 0 <= opt.xl_heads <= opt.heads:
            raise ValueError(f"-xl_heads must be in [0, heads={opt.heads}], got {opt.xl_heads}")
    if enc == RELATIVE_ENCODER and opt.enc_max_relative_positions <= 0:
        raise ValueError(f"-enc_max_relative_positions must be > 0, got {opt.enc_max_relative_positions}")
