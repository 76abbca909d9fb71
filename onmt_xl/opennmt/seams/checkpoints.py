"""Checkpoints under torch >= 2.6.

Wraps nothing: ``torch.load`` defaults to ``weights_only=True`` there and refuses the ``argparse.Namespace`` that
OpenNMT-py stores in every checkpoint, so ``onmt_translate`` and ``-train_from`` fail; we allow-list that one class.
"""

from __future__ import annotations

import argparse

LOST = "checkpoints cannot be loaded under torch >= 2.6 (onmt_translate, -train_from)"


def apply() -> None:
    import torch

    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])
