"""The three papers' own figures, written once: the reports quote them and the verdicts measure against them.

Keys are this project's system names (:mod:`onmt_xl.experiments.systems`); ``baseline`` is each paper's Transformer.
"""

from __future__ import annotations

from typing import Dict, Tuple

D, C19, C20 = "Ding et al. 2020", "Chen et al. 2019a", "Chen et al. 2020"

#: Ding et al. 2020 Tab. 2, WAT'17 Ja-En BLEU (Transformer BIG and each addition)
DING_TAB2_JAEN: Dict[str, float] = {"baseline": 29.22, "relative_pe": 29.62, "disan": 29.73, "inxl": 29.52,
                                    "headxl": 29.62, "combination": 29.85}
#: Ding et al. 2020 Tab. 3, En-De gold alignments: (AER, precision, recall) in %
DING_TAB3_ENDE: Dict[str, Tuple[float, float, float]] = {
    "baseline": (29.7, 69.9, 72.7), "inxl": (27.5, 72.2, 74.1), "headxl": (26.9, 75.4, 73.9),
    "combination": (24.7, 75.0, 77.6)}
#: Ding et al. 2020 Tab. 4, En-De BLEU without an encoder (``encoder_free``: absolute PE), and the 6-layer LSTM
DING_TAB4_ENDE: Dict[str, float] = {"encoder_free_none": 9.97, "encoder_free": 24.11, "encoder_free_relative": 24.47,
                                    "encoder_free_inxl": 24.68, "lstm": 24.12}
#: Ding et al. 2020 §4.4: the full Transformer BIG on En-De, beside Tab. 4
DING_BIG_ENDE = 28.36
#: Chen et al. 2019a Tab. 3, WAT Ja-En BLEU (Transformer base)
CHEN19_TAB3_JAEN: Dict[str, float] = {"baseline": 30.33, "prereorder": 28.93, "enc_re": 31.12, "both_re": 31.41}
#: Chen et al. 2020 Tab. 1, WAT Ja-En BLEU (Transformer base)
CHEN20_TAB1_JAEN: Dict[str, float] = {"baseline": 31.21, "exgre": 31.96, "refsr": 32.36}
#: Chen et al. 2020 Fig. 2, Ja-En BLEU: original data against source reordered into target order (test side too)
CHEN20_FIG2_JAEN: Tuple[float, float] = (31.1, 34.9)


def gain(table: Dict[str, float], system: str, over: str = "baseline") -> float:
    """``system``'s figure minus ``over``'s in ``table``, to the papers' two decimals."""
    return round(table[system] - table[over], 2)


def fig(x: float) -> str:
    """A figure as the paper prints it (no trailing zero added)."""
    return f"{x:g}"
