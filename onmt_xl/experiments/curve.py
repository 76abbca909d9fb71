"""A learning curve's points and the step rule read from them (``onmt-xl evidence``'s curve stages and report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from onmt_xl.experiments.stock import read_lines


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
