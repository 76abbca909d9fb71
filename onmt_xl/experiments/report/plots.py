"""The report's line plots (BLEU against τ, training noise, swapped source words)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple


def plot(path: Path, xlabel: str, series: Dict[str, List[Tuple[float, Optional[float]]]], title: str,
         reference: Optional[Tuple[str, Optional[float]]] = None) -> bool:
    """Line plot of BLEU against ``xlabel``, ticks at the measured points; ``reference``: a (label, BLEU)
    drawn as a dashed horizontal line (e.g. the baseline). False (nothing written) with < 2 points."""
    pts = {k: [(x, y) for x, y in v if y is not None] for k, v in series.items()}
    if not any(len(v) > 1 for v in pts.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, v in pts.items():
        if v:
            ax.plot([x for x, _ in v], [y for _, y in v], marker="o", label=name)
    with_ref = reference is not None and reference[1] is not None
    if with_ref:
        ax.axhline(reference[1], color="grey", linestyle="--", linewidth=1,
                   label=f"{reference[0]} ({reference[1]:.2f})")
    ax.set_xticks(sorted({x for v in pts.values() for x, _ in v}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("BLEU")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(pts) > 1 or with_ref:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
