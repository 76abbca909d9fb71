"""The report's table of the papers' claims with their verdicts (:mod:`onmt_xl.experiments.claims`)."""

from __future__ import annotations

from typing import Any, Dict, List

from onmt_xl.experiments.claims import check


def claims_section(res: Dict[str, Any], heads: int) -> List[str]:
    """Every claim of :func:`~onmt_xl.experiments.claims.check` with its verdict, after a tally of the verdicts.
    ``heads``: H of the trained models."""
    claims = check(res, heads)
    counts = {v: sum(c.verdict == v for c in claims) for v in dict.fromkeys(c.verdict for c in claims)}
    md = ["## The papers' claims at this scale", "",
          "Verdicts by fixed rules (`onmt_xl/experiments/claims.py`), not by hand: against the baseline, *held* = "
          "better with sacrebleu's paired bootstrap p < 0.05, *same direction, not significant* = better with p ≥ "
          "0.05, *reversed* = worse with p < 0.05; comparisons without a test are *held* / *not held* on the numbers "
          "alone; an AER comparison where both systems align no better than diagonal links is *uninformative*. The "
          "papers' figures are for models 10–100× larger trained on 2M–4.5M pairs; ours is one small model on 49k "
          "pairs, one seed (two for the baseline and Combination).", "",
          "Tally: " + ", ".join(f"{v} {n}" for v, n in counts.items()) + ".", "",
          "| source | claim | measured here | verdict |", "| --- | --- | --- | --- |"]
    md += [f"| {c.paper} | {c.claim} | {c.measured} | {c.verdict} |" for c in claims]
    return md + [""]
