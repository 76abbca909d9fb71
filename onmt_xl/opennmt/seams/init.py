"""Our modules' starting points survive OpenNMT's initialisation of a new model.

Wraps (OpenNMT-py 3.5.1) ``onmt.model_builder.build_model`` (and the name ``onmt.train_single`` imported from it,
when that module was imported before this seam applied). For a new model (``checkpoint`` None), stock
``build_model`` draws every parameter uniform in ``±param_init`` (``-param_init`` != 0), or, with
``-param_init 0 -param_init_glorot``, Xavier-initialises every parameter named ``weight`` and zeroes every one
named ``bias``, after the modules were built: with ``-param_init 0.1`` (OpenNMT's default) DiSAN's fusion gate
would start at ``F ≈ 0.5`` instead of 0.95, and ``-xl_inxl_init`` would have no effect. The wrapper then calls
``reset_start()`` on every module of ours that has one (:func:`reset_starts`), which puts the start of the
paper/our tuning back. A model with no such module (every stock one) is untouched; a model whose weights come
from a checkpoint (``-train_from``, ``-update_vocab`` included) keeps the checkpoint's.
"""

from __future__ import annotations

import sys

from onmt_xl.core.modules.starts import reset_starts  # noqa: F401  (public here too)
from onmt_xl.opennmt.seams.base import wrapper

LOST = ("with -param_init != 0, OpenNMT's initialisation overwrites the starting points of DiSAN's fusion gate and "
        "InXL's U, V (-xl_inxl_init)")


def build_new_or_loaded(stock_build, model_opt, opt, vocabs, checkpoint, device_id):
    """Stock ``build_model``; for a new model (``checkpoint`` None), then our modules' starts (:func:`reset_starts`)."""
    model = stock_build(model_opt, opt, vocabs, checkpoint, device_id)
    if checkpoint is None:
        reset_starts(model)
    return model


def apply() -> None:
    import onmt.model_builder as model_builder

    stock = model_builder.build_model

    def build_model(model_opt, opt, vocabs, checkpoint, device_id):
        return build_new_or_loaded(stock, model_opt, opt, vocabs, checkpoint, device_id)

    ours = wrapper(stock, build_model)
    model_builder.build_model = ours
    # modules that imported the name by value before this seam applied (none when the import hook applies it
    # as ``onmt`` finishes importing: ``onmt.train_single`` is imported later, by ``onmt.bin.train``)
    train_single = sys.modules.get("onmt.train_single")
    if train_single is not None and getattr(train_single, "build_model", None) is stock:
        train_single.build_model = ours
