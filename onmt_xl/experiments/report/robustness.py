"""Section 7 of the report: BLEU on test sources with a share of their words swapped."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

from onmt_xl.experiments.plan import SWAP_RATIOS, Job
from onmt_xl.experiments.report.format import bleu, fmt
from onmt_xl.experiments.report.plots import plot


def robustness(res: Dict[str, Any], jobs: Sequence[Job], rdir: Path) -> List[str]:
    """One row per job of the ``robustness`` experiment (clean, then each swap ratio), and
    ``rdir/results_robustness.png``."""
    robust = {}
    for j in jobs:
        if "robustness" in j.experiments:
            robust[j.name] = [(0.0, bleu(res, j.name))] + [(100 * r, bleu(res, j.name, f"swap{round(100 * r)}"))
                                                           for r in SWAP_RATIOS]
    md = ["## 7. Robustness to swapped source words (Chen et al. 2019a Sec. 6.5)", "",
          "Test sources with `round(ratio·n/2)` random word pairs swapped (seeded); XL systems preorder the swapped "
          "source.", "",
          "| system | " + " | ".join(f"{round(r)} %" for r, _ in next(iter(robust.values()), [])) + " |",
          "| --- |" + " ---: |" * (1 + len(SWAP_RATIOS))]
    for name, pts in robust.items():
        md.append(f"| {name} | " + " | ".join(fmt(b) for _, b in pts) + " |")
    md.append("")
    if plot(rdir / "results_robustness.png", "swapped words (%)", robust, "BLEU on swapped test sources"):
        md += ["![robustness](results_robustness.png)", ""]
    return md
