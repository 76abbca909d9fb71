"""Our options as data, declared once for both frameworks: name, type, default, choices, bounds and help of each.

The OpenNMT-py adapter adds them to its parsers as ``--NAME``/``-NAME`` (:func:`onmt_xl.opennmt.opts.add_all`; the
bounds are checked with the rest of the configuration, :meth:`Option.bound_error`); the Eole adapter declares them as
pydantic fields of its configs (:mod:`onmt_xl.eole.fields`: ``Literal`` choices, ``ge``/``gt``/``le`` bounds). Help
texts are written as OpenNMT-py shows them; :meth:`Option.help_for` renders them for Eole, whose options are keys, not
flags (``-xl_source`` reads ``xl_source``), with the framework's own words for :data:`TERMS`. Imports no framework.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from onmt_xl.core.modules.explicit_reordering import REORDERING_LOSSES
from onmt_xl.core.modules.inxl import INXL_FUSIONS, INXL_STARTS
from onmt_xl.core.position_source import XL_SOURCES

FRAMEWORKS = ("onmt", "eole")
#: ``{placeholder}`` of a help text -> its words in each framework
TERMS: Dict[str, Dict[str, str]] = {
    "onmt": {"predict": "onmt_translate"},
    "eole": {"predict": "eole predict"},
}
_FLAG = re.compile(r"(?<![\w-])-(?=xl_\w)")  # "-xl_name" in a help text, an option reference

DISAN_FUSIONS = ("gate", "none")
ENCODER_FREE_PES = ("none", "absolute", "relative", "inxl")


@dataclass(frozen=True)
class Option:
    """One option of ``type`` with ``default``, ``choices`` and bounds (``ge``/``gt``/``le``: ``>=``, ``>``, ``<=``)."""

    name: str
    type: type
    default: Any
    help: str
    choices: Optional[Sequence[str]] = None
    ge: Optional[float] = None
    gt: Optional[float] = None
    le: Optional[float] = None

    def help_for(self, framework: str) -> str:
        """The help text as ``framework`` (one of :data:`FRAMEWORKS`) shows it."""
        text = self.help.format(**TERMS[framework])
        return text if framework == "onmt" else _FLAG.sub("", text)

    def bound_error(self, value) -> Optional[str]:
        """``"-NAME must be ..., got VALUE"`` when ``value`` is out of the bounds, else None."""
        low = (">=", self.ge) if self.ge is not None else (">", self.gt) if self.gt is not None else None
        if value is None or ((low is None or _holds(value, *low)) and (self.le is None or value <= self.le)):
            return None
        if low is not None and self.le is not None:
            rule = f"in {'[' if low[0] == '>=' else '('}{low[1]:g}, {self.le:g}]"
        elif low is not None:
            rule = f"{low[0]} {low[1]:g}"
        else:
            rule = f"<= {self.le:g}"
        return f"-{self.name} must be {rule}, got {value}"


def _holds(value, op: str, bound: float) -> bool:
    return value >= bound if op == ">=" else value > bound


#: encoders of :mod:`onmt_xl.opennmt.encoders.xl_transformer` (XL PE, Ding et al. 2020; ``xl_relative``, Shaw et al.
#: 2018)
XL_TRANSFORMER: Tuple[Option, ...] = (
    Option("xl_heads", int, None,
        "HeadXL (Eq. 9-11): number τ of first-layer self-attention heads that read X+PE_XL; the "
        "other heads-τ read X+PE_abs. 0 <= τ <= heads; 0 is the stock encoder, heads puts XL on all heads; "
        "unset (None): half the heads, heads // 2."),
    Option("xl_inxl_fusion", str, "block",
        "InXL (Eq. 7) parameterisation of U and V: 'block' = one 2x2 matrix per sinusoid "
        "frequency (4*d_model parameters), 'diagonal' = element-wise (2*d_model), 'full' = d_model x "
        "d_model matrices (2*d_model^2).",
        choices=INXL_FUSIONS),
    Option("xl_inxl_init", str, "absolute",
        "InXL (Eq. 7) starting point of U and V: 'absolute' = (I, 0), so PE_IN-XL starts as tanh(PE_abs), the "
        "stock encoder's order information without the XL positions; 'identity' = (I, I), tanh(PE_abs + PE_XL), "
        "whose frequencies partly cancel wherever pos_XL differs from the position. The default is the start "
        "chosen on a Japanese-English tuning split (onmt_xl's reports/TUNING.md).",
        choices=INXL_STARTS),
    Option("xl_enc_max_relative_positions", int, 16,
        "xl_relative, and xl_encoder_free with -xl_encoder_free_pe relative: clipping distance k of encoder-only "
        "relative position representations (Shaw et al. 2018). The decoder keeps its absolute position encoding.",
        gt=0),
)

#: ``xl_disan`` (Shen et al. 2018)
DISAN: Tuple[Option, ...] = (
    Option("xl_disan_fusion", str, "gate",
        "xl_disan: 'gate' = DiSAN's fusion gate mixes the directional heads' output with the layer's normalised "
        "input inside the residual block, x + Dropout(F*s + (1-F)*LN(x)), F starting at 0.95; 'none' = x + "
        "Dropout(s), a stock layer with directional heads.",
        choices=DISAN_FUSIONS),
)

#: ``xl_encoder_free`` (Tang et al. 2019); it also reads -xl_enc_max_relative_positions and the InXL options
ENCODER_FREE: Tuple[Option, ...] = (
    Option("xl_encoder_free_pe", str, "absolute",
        "xl_encoder_free (Tang et al. 2019): position information added to the source embeddings: none, "
        "absolute PE, relative PE (Shaw et al. 2018 Eq. 3-4 once over the embeddings, no projections, clipping "
        "distance -xl_enc_max_relative_positions; see onmt_xl/opennmt/encoders/encoder_free.py), or InXL PE (Eq. 7-8; "
        "needs the xl_position transform).",
        choices=ENCODER_FREE_PES),
)

#: ``xl_exgre`` / ``xl_refsr`` (Chen et al. 2020)
EXPLICIT_REORDERING: Tuple[Option, ...] = (
    Option("xl_reordering_loss_weight", float, 0.6,
        "xl_exgre/xl_refsr: weight λ of the reordering loss (Chen et al. 2020, Eq. 9; see -xl_reordering_loss).",
        ge=0),
    Option("xl_reordering_loss", str, "position",
        "xl_exgre/xl_refsr: what the reordering loss compares with r_j. 'position' = ((b_j - r_j) / (J - 1))^2; 'soft' "
        "= Eq. 9's cosine on a soft selection of the PEs of all positions with Eq. 6's Gaussian weights; 'literal' = "
        "Eq. 9 on Eq. 6's windowed PE, which with the paper's D = 0.5 gives the predicted positions no gradient.",
        choices=REORDERING_LOSSES),
    Option("xl_exgre_window", float, 0.5,
        "xl_exgre/xl_refsr: half-width D of the Gaussian window around the predicted position (Eq. 6, σ = D/2).",
        gt=0),
)

#: the ``xl_position`` transform; ``xl_prereorder`` (Eole) has all but ``xl_noise``
XL_POSITION: Tuple[Option, ...] = (
    Option("xl_source", str, "preorderer",
        "Where pos_XL comes from: 'preorderer' (a trained BTG preorderer, -xl_preorderer; works "
        "at inference) or 'align' (BTG oracle on the corpus' path_align alignments; training/analysis only).",
        choices=XL_SOURCES),
    Option("xl_preorderer", str, None,
        "Preorderer file written by `onmt-xl preorder-train` (needed with -xl_source preorderer)."),
    Option("xl_align_path", str, None,
        "-xl_source align without path_align (e.g. in {predict}): Pharaoh alignments of the "
        "corpus being transformed, one line per source line. At translation time this uses test-side "
        "information: an oracle upper bound, for analysis only."),
    Option("xl_cache_size", int, 1_000_000,
        "Cache the preorderer's positions for up to this many distinct source sentences per process "
        "(0 disables).",
        ge=0),
    Option("xl_positions_suffix", str, None,
        "Precomputed positions: a training corpus whose path_src + SUFFIX exists, and the input file of {predict} "
        "whose path + SUFFIX exists, take pos_XL from that file (from `onmt-xl positions`, e.g. cross-fitted), "
        "line by line, checked against the text; other text (no such file, the server) keeps -xl_source. "
        "Unset: none read."),
    Option("xl_noise", float, 0.0,
        "Training only: ratio in [0, 1] of each sentence's XL indices moved by random pair swaps, in "
        "expectation (noise attack, paper §4.5).",
        ge=0.0, le=1.0),
)

TABLES: Tuple[Tuple[Option, ...], ...] = (XL_TRANSFORMER, DISAN, ENCODER_FREE, EXPLICIT_REORDERING, XL_POSITION)
#: every option of the tables, by name
OPTIONS: Dict[str, Option] = {o.name: o for table in TABLES for o in table}


def option(name: str) -> Option:
    """The option called ``name``."""
    return OPTIONS[name]
