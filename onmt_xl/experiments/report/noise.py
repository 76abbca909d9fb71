"""Section 4 of the report: Combination trained on noisy XL indices (the noise attack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from onmt_xl.experiments.plan import NOISE_RATIOS
from onmt_xl.experiments.report.format import bleu, fmt
from onmt_xl.experiments.report.plots import plot


def noise(res: Dict[str, Any], rdir: Path) -> List[str]:
    """BLEU of Combination by the share of swapped training XL indices, and ``rdir/results_noise.png``."""
    noise_jobs = ["combination"] + [f"combination_noise{round(100 * r)}" for r in NOISE_RATIOS]
    pts = list(zip([0.0] + list(NOISE_RATIOS), (bleu(res, n) for n in noise_jobs)))
    md = ["## 4. Noise attack (Ding et al. 2020 Fig. 4): Combination trained on XL indices with a share swapped", "",
          "Training indices only (`-xl_noise`, `ratio·n/2` random swaps per sentence in expectation, stochastically rounded); test indices are clean.", "",
          "| noise | " + " | ".join(f"{round(100 * r)} %" for r, _ in pts) + " |", "| --- |" + " ---: |" * len(pts),
          "| BLEU | " + " | ".join(fmt(b) for _, b in pts) + " |",
          "| valid BLEU | " + " | ".join(fmt(bleu(res, n, "valid")) for n in noise_jobs) + " |", ""]
    if plot(rdir / "results_noise.png", "noisy XL indices (%)", {"Combination": [(100 * r, b) for r, b in pts]},
            "BLEU against training noise", ("baseline", bleu(res, "baseline"))):
        md += ["![noise attack](results_noise.png)", ""]
    return md
