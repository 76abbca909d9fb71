"""Exact resume (``onmt_train -train_from CKPT -xl_exact_resume``): a resumed run trains on the same batches, in the
same order and with the same dropout masks, as a run that was never interrupted.

Stock OpenNMT-py restarts the corpus on ``-train_from``, so a run killed at step K and resumed trains steps
K+1… on the batches of steps 1… again. With ``-xl_exact_resume`` the data iterator is rebuilt exactly as at the
start (OpenNMT seeds its batch shuffler from ``-seed`` before building it), the batches that steps 1..K
consumed are drawn and dropped, and the RNG states saved with the checkpoint are restored just before the
first new step. Checkpoints carry those states in their ``optim`` entry (:func:`rng_state`), so every
checkpoint written while the plug-in is loaded can be resumed exactly.

Eole's ``training.xl_exact_resume: true`` does the same with these functions (:mod:`onmt_xl.eole.seams`): the states
travel in the step directory's ``optimizer.pt``, and whole steps' batches are skipped.
"""

from __future__ import annotations

import random
from typing import Any, Dict, Iterable, Iterator, Optional, Sequence

import numpy as np
import torch

RNG_KEY = "onmt_xl_rng"  # the entry of a checkpoint's ``optim`` dict that holds the RNG states


def rng_state() -> Dict[str, Any]:
    """torch's, Python's and numpy's global RNG states, in types ``torch.load(weights_only=True)`` reads back."""
    np_state = np.random.get_state()
    return {"torch": torch.get_rng_state(), "python": random.getstate(),
            "numpy": (np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *map(float, np_state[2:]))}


def set_rng_state(state: Dict[str, Any]) -> None:
    """Inverse of :func:`rng_state`."""
    torch.set_rng_state(state["torch"])
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), int(pos), int(has_gauss), float(cached)))


def accum_count_at(step: int, accum_count: Sequence[int], accum_steps: Sequence[int]) -> int:
    """Batches accumulated at ``step`` under OpenNMT's ``-accum_count``/``-accum_steps`` schedule
    (``Trainer._accum_count``: the count of the last boundary below ``step``)."""
    count = accum_count[0]
    for boundary, value in zip(accum_steps, accum_count):
        if step > boundary:
            count = value
    return count


def batches_before(step: int, accum_count: Sequence[int], accum_steps: Sequence[int]) -> int:
    """Training batches consumed by steps ``1 .. step-1``."""
    return sum(accum_count_at(s, accum_count, accum_steps) for s in range(1, step))


def skip_then_restore(batches: Iterable, skip: int, rng: Optional[Dict[str, Any]], log=None,
                      option: str = "-xl_exact_resume", unit: str = "batches") -> Iterator:
    """``batches`` without its first ``skip`` items; ``rng`` (from :func:`rng_state`) is restored right before
    the first item is yielded, i.e. after everything the skipping itself drew from the RNGs. ``option`` and
    ``unit`` name the option and the items in the messages (Eole's adapter skips whole steps' batches)."""
    it = iter(batches)
    for k in range(skip):
        try:
            next(it)
        except StopIteration:
            raise ValueError(f"{option}: the training data ran out after {k} of the {skip} {unit} "
                             "already trained on; was the corpus changed?") from None
        if log is not None and (k + 1) % 5000 == 0:
            log(f"{option}: skipped {k + 1}/{skip} {unit}")
    if rng is not None:
        set_rng_state(rng)
    yield from it
