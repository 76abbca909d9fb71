"""Section 3 of the report: HeadXL's BLEU against τ, the number of heads reading the XL positions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

from onmt_xl.opennmt.encoders.options import default_xl_heads
from onmt_xl.experiments.claims import seed_runs
from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.report.format import bleu, fmt
from onmt_xl.experiments.report.plots import plot


def tau(res: Dict[str, Any], jobs: Sequence[Job], heads: int, rdir: Path) -> List[str]:
    """The τ table (jobs of the ``tau`` experiment, by τ), the τ = 0 run beside the baseline's seeds, and
    ``rdir/results_tau.png``. ``heads``: H of the trained models."""
    half = default_xl_heads(heads)  # the main HeadXL's tau
    taus = sorted((j.overrides.get("xl_heads", half), j.name) for j in jobs if "tau" in j.experiments)
    pts = [(t, bleu(res, n)) for t, n in taus]
    md = ["## 3. τ sweep (Ding et al. 2020 Fig. 3): HeadXL with τ of the H heads reading X+PE_XL", "",
          "| τ | " + " | ".join(str(t) for t, _ in pts) + " |", "| --- |" + " ---: |" * len(pts),
          "| BLEU | " + " | ".join(fmt(b) for _, b in pts) + " |",
          "| valid BLEU | " + " | ".join(fmt(bleu(res, n, "valid")) for _, n in taus) + " |", ""]
    base_seeds = [(n, bleu(res, n)) for n in seed_runs(res, "baseline")]
    tau0 = dict(pts).get(0)
    if tau0 is not None and any(b is not None for _, b in base_seeds):
        md += [f"τ = 0 feeds X+PE_abs to every head: the stock encoder, trained with the XL transform in its data "
               f"pipeline. Its {fmt(tau0)} against the baseline's " +
               ", ".join(f"{fmt(b)} ({n})" for n, b in base_seeds if b is not None) +
               " shows the run-to-run spread of this setting.", ""]
    if plot(rdir / "results_tau.png", "τ (XL heads)", {"HeadXL": pts}, "BLEU against τ",
            ("baseline", bleu(res, "baseline"))):
        md += ["![tau sweep](results_tau.png)", ""]
    return md
