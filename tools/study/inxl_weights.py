"""How much a trained InXL fusion leans on each position encoding: the Frobenius norms of Eq. 7's ``U`` (on
``PE_abs``) and ``V`` (on ``PE_XL``) in OpenNMT checkpoints.

    python tools/study/inxl_weights.py runs/evidence_jaen/jobs/inxl_s1/average5_step_8000.pt ...

``U`` and ``V`` start at ``I`` and ``0`` (``absolute``) or both at ``I`` (``identity``); the norm of ``I`` is ``√d``
(16 at ``d_model`` 256, whatever the fusion's parameterisation). One Markdown row per checkpoint and fusion.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def fusion_norms(state: Dict[str, "object"]) -> Dict[str, Dict[str, float]]:
    """``{module prefix: {"U": ‖U‖, "V": ‖V‖}}`` for every InXL fusion in a model's ``state_dict``."""
    out: Dict[str, Dict[str, float]] = {}
    for key, tensor in state.items():
        prefix, _, name = key.rpartition(".")
        if name in ("U", "V") and prefix.split(".")[-1] == "inxl":
            out.setdefault(prefix, {})[name] = float(tensor.float().norm())
    return {k: v for k, v in out.items() if set(v) == {"U", "V"}}


def rows(paths: Sequence[Path]) -> List[str]:
    import pickle

    import torch

    from onmt_xl.core.errors import XLUsageError

    out = ["| checkpoint | fusion | ‖U‖ | ‖V‖ | ‖V‖ / ‖U‖ |", "| --- | --- | ---: | ---: | ---: |"]
    for path in paths:
        try:
            checkpoint = torch.load(path, map_location="cpu", weights_only=False)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as e:
            raise XLUsageError(str(path), None, f"cannot be read as a checkpoint ({e.__class__.__name__})") from None
        norms = fusion_norms(checkpoint.get("model", {}) if isinstance(checkpoint, dict) else {})
        if not norms:
            raise XLUsageError(str(path), None, "holds no InXL fusion (encoder.inxl.U and .V)")
        for prefix, n in sorted(norms.items()):
            out.append(f"| {path} | {prefix} | {n['U']:.2f} | {n['V']:.2f} | {n['V'] / n['U']:.2f} |")
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoints", nargs="+", type=Path, help="OpenNMT checkpoints of InXL or Combination models")
    args = p.parse_args(argv)
    print("\n".join(rows(args.checkpoints)))
    return 0


if __name__ == "__main__":
    from onmt_xl.core.errors import install_excepthook

    install_excepthook()
    sys.exit(main())
