"""BTG reordering for cross-lingual positions (Ding et al. 2020, Eq. 6; Neubig et al. 2012).

* :mod:`~onmt_xl.core.reorder.btg`: BTG trees, ``order`` / ``pos_xl``, the 2413/3142-free check;
* :mod:`~onmt_xl.core.reorder.oracle`: target ranks from alignments, Kendall loss, the exact BTG oracle;
* :mod:`~onmt_xl.core.reorder.metrics`: Kendall's tau, exact match, fuzzy reordering score;
* :mod:`~onmt_xl.core.reorder.preorderer`: the discriminative preorderer (features.py, parser.py);
* :mod:`~onmt_xl.core.reorder.cli`: ``oracle``, ``preorder-train/apply/eval`` and ``synth`` subcommands.

Names are imported lazily so that ``import onmt_xl.core.reorder`` stays cheap (numba loads on use).
"""

from importlib import import_module
from typing import Any

_LAZY = {
    "BTGNode": "btg",
    "is_btg_permutation": "btg",
    "order_to_pos_xl": "btg",
    "tree_to_order": "btg",
    "tree_to_str": "btg",
    "OracleResult": "oracle",
    "btg_oracle": "oracle",
    "kendall_loss": "oracle",
    "target_ranks": "oracle",
    "ReorderScores": "metrics",
    "evaluate": "metrics",
    "Preorderer": "preorderer",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
