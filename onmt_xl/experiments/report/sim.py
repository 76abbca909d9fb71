"""Section 8 of the report: Sim (Chen et al. 2020 Eq. 12) of the reordering-embedding systems."""

from __future__ import annotations

from typing import Any, Dict, List

from onmt_xl.experiments.plan import SIM_SYSTEMS
from onmt_xl.experiments.report.format import bleu, fmt, p_value

INTRO = [
    "## 8. Sim (Chen et al. 2020 Eq. 12) on the test set", "",
    "Mean cosine between the predicted reordering embedding pr_j^N and the sinusoid of the oracle position "
    "r_j from the test alignments; *PE*: the same with the word's original position's sinusoid in place of "
    "pr_j^N (Fig. 5's reference). With the paper's window D = 0.5 (ours too) at most one integer position lies in "
    "[b_j − D, b_j + D], so pr_j is a scaled pe_s and the cosine loss of Eq. 9 as written gives the position "
    "predictor no gradient (`test_literal_eq9_gives_the_predicted_positions_no_gradient`). `exgre` and `refsr` "
    "therefore keep Eq. 5–8 in the forward pass but take the loss on a deviation (`-xl_reordering_loss`, see "
    "`ExGREEncoder`), which reaches b_j; `exgre_literal` is trained with Eq. 9 as written, so its b_j learns "
    "from the translation loss alone.", "",
    "| system | Sim (pr) | Sim (PE) | words | BLEU | Δ BLEU | p (bootstrap) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]


def sim(res: Dict[str, Any]) -> List[str]:
    """One row per system of :data:`~onmt_xl.experiments.plan.SIM_SYSTEMS`: its Sim, the PE reference, its BLEU."""
    md = list(INTRO)
    base_bleu = bleu(res, "baseline")
    for name in SIM_SYSTEMS:
        s = res["jobs"].get(name, {}).get("sim") or {}
        t = res["jobs"].get(name, {}).get("variants", {}).get("test", {})
        delta = t["bleu"] - base_bleu if "bleu" in t and base_bleu is not None else None
        md.append(f"| {name} | {fmt(s.get('sim'), '.4f')} | {fmt(s.get('pe_sim'), '.4f')} | {s.get('words', '–')} | "
                  f"{fmt(t.get('bleu'))} | {fmt(delta, '+.2f')} | {p_value(t.get('p_bootstrap'))} |")
    md.append("")
    return md
