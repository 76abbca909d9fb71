"""Section 2 of the report: the oracle upper bound, test XL indices (or source order) from the test alignments."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.report.format import fmt

INTRO = [
    "## 2. Oracle upper bound (Chen et al. 2020 Fig. 2) — uses test-side information", "",
    "`oracle` rows take the test sentences' XL indices (or reordered sources) from the BTG oracle of the "
    "eflomal alignments of the test set itself, i.e. from the reference translations: an upper bound, not a result.",
    "", "| model | training XL / order from | test XL / order from | BLEU | chrF |",
    "| --- | --- | --- | ---: | ---: |"]


def oracle(res: Dict[str, Any], jobs: Sequence[Job]) -> List[str]:
    """One row per oracle job and variant (its preorderer-predicted ``test`` and its ``oracle`` translation)."""
    by_name = {j.name: j for j in jobs}
    md = list(INTRO)
    for name in ("combination", "combination_oracle", "prereorder", "prereorder_oracle"):
        j = by_name.get(name)
        if j is None or "oracle" not in j.experiments:
            continue
        for variant in ("test", "oracle"):
            if variant not in j.variants:
                continue
            v = res["jobs"].get(name, {}).get("variants", {}).get(variant)
            md.append(f"| {name} | {'alignments (oracle)' if j.xl_train == 'align' else 'preorderer'} | "
                      f"{'test alignments (oracle)' if variant == 'oracle' else 'preorderer'} | "
                      f"{fmt(v and v.get('bleu'))} | {fmt(v and v.get('chrf'))} |")
    md.append("")
    return md
