"""Our options in OpenNMT's parsers.

Wraps (OpenNMT-py 3.5.1), since OpenNMT has no extension point for options:

- ``onmt.opts.model_opts`` and ``ArgumentParser.validate_model_opts``: the encoder families' options
  (:mod:`onmt_xl.encoders.options`), in ``onmt_train -h``, stored in and restored from checkpoints, checked with
  the rest of the model's configuration;
- ``onmt.opts.train_opts`` and ``onmt.opts.translate_opts``: the options of the other seams, each declared in
  the seam that reads it and added here through :func:`add_train_options` / :func:`add_translate_options`
  once that seam has applied.
"""

from __future__ import annotations

import contextlib
from typing import Callable, List

from onmt_xl.errors import XLInputError, XLUsageError
from onmt_xl.seams.base import wrapper

LOST = "onmt_xl's options are unknown to OpenNMT (its encoders cannot be configured or checked)"

_TRAIN: List[Callable] = []
_TRANSLATE: List[Callable] = []


def add_train_options(adder: Callable) -> None:
    """Call ``adder(parser)`` whenever OpenNMT builds ``onmt_train``'s options."""
    if adder not in _TRAIN:
        _TRAIN.append(adder)


def add_translate_options(adder: Callable) -> None:
    """Call ``adder(parser)`` whenever OpenNMT builds ``onmt_translate``'s (and the server's) options."""
    if adder not in _TRANSLATE:
        _TRANSLATE.append(adder)


@contextlib.contextmanager
def usage_errors():
    """Our options' ``ValueError`` exceptions as :class:`XLUsageError`: the stock commands print them alone, exit 2."""
    try:
        yield
    except XLInputError:
        raise
    except ValueError as err:
        raise XLUsageError(None, None, str(err)) from None


def apply() -> None:
    import onmt.opts as opts
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.encoders.options import add_model_options, validate_model_options

    stock_model_opts, stock_train_opts, stock_translate_opts = opts.model_opts, opts.train_opts, opts.translate_opts
    stock_validate = ArgumentParser.validate_model_opts.__func__

    def model_opts(parser):
        from onmt_xl.encoders.families import FAMILIES  # at call time: registration may run mid-import of it

        stock_model_opts(parser)
        add_model_options(parser, FAMILIES)

    def validate_model_opts(cls, model_opt):
        from onmt_xl.encoders.families import FAMILIES

        stock_validate(cls, model_opt)
        with usage_errors():
            validate_model_options(model_opt, FAMILIES)

    def with_ours(stock, adders):
        def add(parser):
            stock(parser)
            for adder in adders:
                adder(parser)

        return wrapper(stock, add)

    opts.model_opts = wrapper(stock_model_opts, model_opts)
    opts.train_opts = with_ours(stock_train_opts, _TRAIN)
    opts.translate_opts = with_ours(stock_translate_opts, _TRANSLATE)
    ArgumentParser.validate_model_opts = classmethod(wrapper(stock_validate, validate_model_opts))
