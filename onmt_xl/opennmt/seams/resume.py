"""Exact resume (``-xl_exact_resume``, an option of ``onmt_train``; :mod:`onmt_xl.core.resume`).

With the option, every checkpoint's ``optim`` entry also holds the RNG states (``optim["onmt_xl_rng"]``); and a
run started with it and ``-train_from`` draws and drops the batches of the steps already trained, then restores
those states before the next step, so it trains as an uninterrupted run would. Without the option checkpoints are
stock's, key for key, and ``-train_from`` restarts the corpus as stock does.

Wraps (OpenNMT-py 3.5.1): ``Optimizer.from_opt`` (to learn the option and the checkpoint's states),
``Optimizer.state_dict`` (the states, only for an optimizer built with the option) and ``Trainer.train``
(the skipping).
"""

from __future__ import annotations

import weakref

from onmt_xl.core import resume
from onmt_xl.opennmt.opts import add
from onmt_xl.opennmt.seams import options
from onmt_xl.opennmt.seams.base import wrapper

LOST = "-xl_exact_resume has no effect (checkpoints carry no RNG states; -train_from restarts the corpus)"

#: Optimizer -> None (saves its RNG states) or ``(rng or None,)`` (and resumes from a checkpoint with those states)
_optimizers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def add_options(parser) -> None:
    group = parser.add_argument_group("Exact resume (onmt_xl)")
    add(
        group, "xl_exact_resume", action="store_true",
        help="Checkpoints also carry the RNG states; with -train_from, continue the data where the checkpoint "
        "stopped (the batches its steps trained on are drawn and skipped) and restore its RNG states, so the "
        "resumed run trains as an uninterrupted one would. Give it in the first run too (the same YAML). Without "
        "it checkpoints are OpenNMT's own and -train_from restarts the corpus. Needs the same data, -seed and "
        "batching options; checkpoints written without it continue the data but cannot restore the dropout RNG.",
    )


def apply() -> None:
    from onmt.trainer import Trainer
    from onmt.utils.logging import logger
    from onmt.utils.optimizers import Optimizer

    stock_state_dict, stock_from_opt = Optimizer.state_dict, Optimizer.from_opt.__func__
    stock_train = Trainer.train

    def state_dict(self):
        state = stock_state_dict(self)
        if self in _optimizers:
            state = {**state, resume.RNG_KEY: resume.rng_state()}
        return state

    def from_opt(cls, model, opt, checkpoint=None):
        optim = stock_from_opt(cls, model, opt, checkpoint=checkpoint)
        if getattr(opt, "xl_exact_resume", False):
            resuming = None
            if getattr(opt, "train_from", None) and checkpoint is not None:
                saved = checkpoint.get("optim")
                resuming = (saved.get(resume.RNG_KEY) if isinstance(saved, dict) else None,)
            _optimizers[optim] = resuming
        return optim

    def train(self, train_iter, train_steps, *args, **kwargs):
        try:
            resuming = _optimizers.get(self.optim)
        except TypeError:  # an optimizer stand-in that takes no weak reference: never ours
            resuming = None
        if resuming is not None:
            rng = resuming[0]
            step = self.optim.training_step
            skip = resume.batches_before(step, self.accum_count_l, self.accum_steps)
            logger.info("-xl_exact_resume: skipping the %d batches of steps 1-%d, then %s", skip, step - 1,
                        "restoring the checkpoint's RNG states" if rng is not None
                        else "continuing without the RNG states (the checkpoint has none)")
            train_iter = resume.skip_then_restore(train_iter, skip, rng, log=logger.info)
        return stock_train(self, train_iter, train_steps, *args, **kwargs)

    Optimizer.state_dict = wrapper(stock_state_dict, state_dict)
    Optimizer.from_opt = classmethod(wrapper(stock_from_opt, from_opt))
    Trainer.train = wrapper(stock_train, train)
    options.add_train_options(add_options)
