"""Section 4 of the report: Combination trained on noisy XL indices (the noise attack)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from onmt_xl.experiments.plan import NOISE_RATIOS
from onmt_xl.experiments.report.format import bleu, fmt
from onmt_xl.experiments.report.plots import plot


#: the first onmt_xl version whose ``-xl_noise`` swaps ``ratio·n/2`` pairs in expectation; earlier ones rounded it
EXPECTED_NOISE_SINCE = (0, 2)


def noise_rule(manifest: Optional[Dict[str, Any]]) -> str:
    """How the runs of ``manifest`` (its recorded onmt_xl version) swapped their training indices."""
    version = ((manifest or {}).get("versions") or {}).get("onmt_xl", "")
    parsed = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if parsed and parsed < EXPECTED_NOISE_SINCE:
        return (f"`round(ratio·n/2)` random swaps per sentence, as onmt_xl {version} did: at 5 % no index moves in "
                "a sentence under 21 tokens")
    return "`ratio·n/2` random swaps per sentence in expectation, stochastically rounded"


def noise(res: Dict[str, Any], rdir: Path, manifest: Optional[Dict[str, Any]] = None) -> List[str]:
    """BLEU of Combination by the share of swapped training XL indices, and ``rdir/results_noise.png``
    (``manifest``: the work directory's, whose onmt_xl version says which noise rule its runs had)."""
    noise_jobs = ["combination"] + [f"combination_noise{round(100 * r)}" for r in NOISE_RATIOS]
    pts = list(zip([0.0] + list(NOISE_RATIOS), (bleu(res, n) for n in noise_jobs)))
    md = ["## 4. Noise attack (Ding et al. 2020 Fig. 4): Combination trained on XL indices with a share swapped", "",
          f"Training indices only (`-xl_noise`, {noise_rule(manifest)}); test indices are clean.", "",
          "| noise | " + " | ".join(f"{round(100 * r)} %" for r, _ in pts) + " |", "| --- |" + " ---: |" * len(pts),
          "| BLEU | " + " | ".join(fmt(b) for _, b in pts) + " |",
          "| valid BLEU | " + " | ".join(fmt(bleu(res, n, "valid")) for n in noise_jobs) + " |", ""]
    if plot(rdir / "results_noise.png", "noisy XL indices (%)", {"Combination": [(100 * r, b) for r, b in pts]},
            "BLEU against training noise", ("baseline", bleu(res, "baseline"))):
        md += ["![noise attack](results_noise.png)", ""]
    return md
