"""A learning curve's points, the step rule read from them and their plot (``onmt-xl evidence``'s curve stages
and report)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from onmt_xl.experiments.stock import read_lines

VALID_PPL = re.compile(r"Validation perplexity: ([0-9.]+)")
VALID_ACC = re.compile(r"Validation accuracy: ([0-9.]+)")
RESUMED = re.compile(r"Loading checkpoint from .*_step_(\d+)\.pt")


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


def plot_curves(curves: Dict[str, List[Dict[str, Any]]], out: Path, beam_size: int = 5) -> Optional[Path]:
    """Validation BLEU (translated with ``beam_size``) and perplexity against steps, one line per curve
    (``{name: rows}``), to ``out``; None when no curve has a point. The runs of one system (``--seeds``,
    :func:`onmt_xl.experiments.seeds.split_run`) share its colour, each with its own line style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(curves.values()):
        return None
    from onmt_xl.experiments.seeds import split_run

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    colours: Dict[str, str] = {}
    for name, rows in curves.items():
        system, k = split_run(name)
        style = dict(marker="o", label=name, color=colours.setdefault(system, f"C{len(colours) % 10}"),
                     linestyle=("-", "--", ":", "-.")[(k - 1) % 4])
        ax1.plot([r["step"] for r in rows], [r["bleu"] for r in rows], **style)
        ppl = [r for r in rows if "valid_ppl" in r]
        ax2.plot([r["step"] for r in ppl], [r["valid_ppl"] for r in ppl], **style)
    ax1.set(xlabel="training steps", ylabel=f"validation BLEU (beam {beam_size})")
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


def validation_log(log_text: str, valid_steps: int,
                   resumed_line: "re.Pattern" = RESUMED) -> Dict[int, Dict[str, float]]:
    """``{step: {"valid_ppl", "valid_acc"}}`` from an ``onmt_train`` log, which may hold several attempts.

    OpenNMT logs a validation without its step; it validates every ``valid_steps`` steps, counted from the
    checkpoint an attempt resumed (``Loading checkpoint from ..._step_K.pt``) or from 0. A later attempt's
    validation of a step replaces an earlier one's. Eole's ``eole train`` logs alike (the same two lines, and
    ``Start training loop``); ``resumed_line`` matches its line of the step an attempt resumed
    (:data:`onmt_xl.experiments.eole_demo.RESUMED`).
    """
    out: Dict[int, Dict[str, float]] = {}
    step, resumed = 0, 0
    for line in log_text.splitlines():
        m = resumed_line.search(line)
        if m:
            resumed = int(m.group(1))
        if "Start training loop" in line:  # one per attempt, after its checkpoint (if any) was loaded
            step, resumed = resumed, 0
        m = VALID_PPL.search(line)
        if m:
            step += valid_steps
            out[step] = {"valid_ppl": float(m.group(1))}
        m = VALID_ACC.search(line)
        if m and step in out:
            out[step]["valid_acc"] = float(m.group(1))
    return out
