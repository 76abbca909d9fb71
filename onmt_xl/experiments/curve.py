"""A learning curve's points, the step rule read from them and their plot (``onmt-xl evidence``'s curve stages
and report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from onmt_xl.experiments.stock import read_lines


def checkpoints(jd: Path) -> Dict[int, Path]:
    """A job directory's kept checkpoints by step (``model_step_STEP.pt``)."""
    return {int(p.stem.rsplit("_", 1)[1]): p for p in jd.glob("model_step_*.pt")}


def read_curve(jd: Path) -> List[Dict[str, Any]]:
    path = jd / "curve.jsonl"
    rows = {r["step"]: r for r in map(json.loads, read_lines(path))} if path.exists() else {}
    return [rows[s] for s in sorted(rows)]


def plateau_step(curves: Dict[str, List[Dict[str, Any]]], tolerance: float = 0.5, window: int = 2000) -> Optional[int]:
    """The step count of the main runs, by a rule fixed before looking: the first scored step ``s`` at which, for
    every curve, no later point within the scored range beats BLEU at ``s`` by more than ``tolerance``, and each
    curve extends at least ``window`` steps past ``s``. None while no step qualifies (train the curves longer)."""
    steps = sorted(set.intersection(*({r["step"] for r in rows} for rows in curves.values()))) if curves else []
    for s in steps:
        ok = True
        for rows in curves.values():
            at = next(r["bleu"] for r in rows if r["step"] == s)
            later = [r for r in rows if r["step"] > s]
            if not later or later[-1]["step"] - s < window or max(r["bleu"] for r in later) - at > tolerance:
                ok = False
                break
        if ok:
            return s
    return None


def plot_curves(curves: Dict[str, List[Dict[str, Any]]], out: Path) -> Optional[Path]:
    """Validation BLEU and perplexity against steps, one line per curve (``{name: rows}``), to ``out``; None
    when no curve has a point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(curves.values()):
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, rows in curves.items():
        ax1.plot([r["step"] for r in rows], [r["bleu"] for r in rows], marker="o", label=name)
        ppl = [r for r in rows if "valid_ppl" in r]
        ax2.plot([r["step"] for r in ppl], [r["valid_ppl"] for r in ppl], marker="o", label=name)
    ax1.set(xlabel="training steps", ylabel="validation BLEU (beam 5)")
    ax2.set(xlabel="training steps", ylabel="validation perplexity", yscale="log")
    # plain numbers on the log axis (matplotlib's default labels its minor ticks as 2.1×10¹)
    ax2.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax2.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120, metadata={"Software": None})
    plt.close(fig)
    return out
