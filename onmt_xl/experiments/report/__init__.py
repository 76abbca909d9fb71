"""``RESULTS.md`` and its plots, from what ``onmt-xl experiments`` has run in its work directory.

One module per part of the report; each section function returns its markdown lines (and writes its plot
next to ``RESULTS.md``). The scores come from :func:`onmt_xl.experiments.scoring.collect`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from onmt_xl.experiments.plan import Job
from onmt_xl.experiments.report.aer import aer
from onmt_xl.experiments.report.claims_table import claims_section
from onmt_xl.experiments.report.encoder_free import encoder_free
from onmt_xl.experiments.report.header import header
from onmt_xl.experiments.report.main_table import main_table
from onmt_xl.experiments.report.noise import noise
from onmt_xl.experiments.report.oracle import oracle
from onmt_xl.experiments.report.robustness import robustness
from onmt_xl.experiments.report.sim import sim
from onmt_xl.experiments.report.tau import tau
from onmt_xl.experiments.scoring import collect

__all__ = ["write_report"]

TITLE = "# Experiments on Japanese→English (`onmt-xl experiments`)"


def write_report(workdir: Path, jobs: Sequence[Job], report_dir: str = "reports") -> Path:
    """``report_dir/RESULTS.md`` and its plots from what has run in ``workdir``."""
    workdir = Path(workdir)
    if not (workdir / "data" / "test.ref").exists():
        raise FileNotFoundError(f"{workdir}: no experiments have run there yet (no data/test.ref)")
    res = collect(workdir, jobs)
    manifest = json.loads((workdir / "manifest.json").read_text()) if (workdir / "manifest.json").exists() else {}
    rdir = Path(report_dir)
    rdir.mkdir(parents=True, exist_ok=True)
    heads = int(manifest.get("model", {}).get("heads", 8))
    md = [TITLE, ""] + header(manifest, res, jobs) + claims_section(res, heads)
    md += main_table(res, jobs) + oracle(res, jobs) + tau(res, jobs, heads, rdir) + noise(res, rdir, manifest)
    md += aer(res, jobs) + encoder_free(res) + robustness(res, jobs, rdir) + sim(res)
    out = rdir / "RESULTS.md"
    out.write_text("\n".join(md) + "\n", encoding="utf-8")
    return out
