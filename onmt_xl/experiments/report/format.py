"""Number formatting and look-ups shared by the report's sections."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional


def fmt(x: Optional[float], spec: str = ".2f") -> str:
    """``x`` formatted by ``spec``; an en dash for a missing (or NaN) number."""
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def bleu(res: Dict[str, Any], name: str, variant: str = "test") -> Optional[float]:
    """Job ``name``'s BLEU on ``variant`` in ``collect``'s results; None where it has not run."""
    return res["jobs"].get(name, {}).get("variants", {}).get(variant, {}).get("bleu")


def p_value(p: Optional[float]) -> str:
    """A p-value with * (p < 0.05) or ** (p < 0.01)."""
    if p is None:
        return "–"
    return f"{p:.3f}" + (" **" if p < 0.01 else " *" if p < 0.05 else "")


def speed_marks(info: Dict[str, Any]) -> str:
    """† trained beside other jobs (``--parallel``), ‡ resumed: its tok/s is not a clean single-job figure."""
    return ("†" if (info.get("concurrent_jobs") or 1) > 1 else "") + ("‡" if info.get("resumed_from") else "")
