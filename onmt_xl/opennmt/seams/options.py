"""Our options in OpenNMT's parsers.

Wraps (OpenNMT-py 3.5.1), since OpenNMT has no extension point for options:

- ``onmt.opts.model_opts`` and ``ArgumentParser.validate_model_opts``: the encoder families' options
  (:mod:`onmt_xl.opennmt.encoders.options`), in ``onmt_train -h``, stored in and restored from checkpoints, checked with
  the rest of the model's configuration;
- ``onmt.opts.train_opts`` and ``onmt.opts.translate_opts``: the options of the other seams, each declared in
  the seam that reads it and added here through :func:`add_train_options` / :func:`add_translate_options`
  once that seam has applied;
- ``ArgumentParser.parse_known_args`` (configargparse's, which ``parse_args`` calls): just before a parser
  parses, once every plug-in has added its options, each of our options gets its legacy option strings
  (:data:`onmt_xl.opennmt.names.LEGACY_OPTIONS`) that the parser has not given to anyone else (:func:`attach_legacy`); a
  legacy name used on the command line or as a config key is logged with the new one;
- ``ArgumentParser.ckpt_model_opts`` and ``ArgumentParser.update_model_opts``: a checkpoint's options written
  with our legacy names, and an ``-encoder_type``/``-decoder_type`` given by a legacy name that is our alias,
  are read with the new names (:func:`onmt_xl.opennmt.names.upgrade_namespace`).
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Callable, Dict, List

from onmt_xl.opennmt import names
from onmt_xl.core.errors import XLInputError, XLUsageError
from onmt_xl.opennmt.opts import LEGACY_ATTR
from onmt_xl.opennmt.seams.base import wrapper

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


def attach_legacy(parser) -> Dict[str, str]:
    """Give each of our options in ``parser`` the legacy option strings the parser has for no other option, before
    the new name's last spelling (configargparse turns a config key into an action's last option string, so a YAML
    key in either name sets the same action). Returns ``{legacy string: new string}`` of those attached."""
    attached = {}
    for action in list(parser._actions):
        legacy = getattr(action, LEGACY_ATTR, ())
        if not legacy:
            continue
        new = action.option_strings[-1]
        for string in legacy:
            owner = parser._option_string_actions.get(string)
            if owner is None:
                action.option_strings.insert(len(action.option_strings) - 1, string)
                parser._option_string_actions[string] = action
                owner = action
            if owner is action:
                attached[string] = new
        shown = [s for s in legacy if s in attached and s.startswith("-") and not s.startswith("--")]
        mark = f" [legacy name: {', '.join(shown)}]"
        if shown and action.help is not None and mark not in action.help:
            action.help += mark
    return attached


def note_legacy_use(parser, attached: Dict[str, str]) -> None:
    """Log each legacy option string of ``attached`` that the last parse of ``parser`` read, on the command line
    or as a config-file key (configargparse records both in ``_source_to_settings``)."""
    if not attached:
        return
    for source, settings in (getattr(parser, "_source_to_settings", None) or {}).items():
        if not isinstance(settings, dict):
            continue
        if "" in settings:  # the command line: ``{"": (None, [args])}``
            strings = [str(arg).split("=", 1)[0] for arg in settings[""][1]]
        else:  # a config file or the defaults: its keys
            strings = [key if str(key).startswith("-") else f"--{key}" for key in settings]
        for string in strings:
            if string in attached:
                names.note(f"-{string.lstrip('-')} -> -{attached[string].lstrip('-')}", "option")


def upgrade(opt) -> List[str]:
    """Read ``opt``'s legacy names (a checkpoint's, or an ``-encoder_type`` that is our alias) as the new ones."""
    from onmt.decoders import str2dec
    from onmt.encoders import str2enc

    changed = names.upgrade_namespace(opt, str2enc, str2dec)
    if changed:
        names.note(", ".join(changed), "model options")
    return changed


def apply() -> None:
    import onmt.opts as opts
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.opennmt.encoders.options import add_model_options, validate_model_options

    stock_model_opts, stock_train_opts, stock_translate_opts = opts.model_opts, opts.train_opts, opts.translate_opts
    stock_validate = ArgumentParser.validate_model_opts.__func__
    stock_update, stock_ckpt = ArgumentParser.update_model_opts.__func__, ArgumentParser.ckpt_model_opts.__func__
    stock_parse_known = ArgumentParser.parse_known_args

    def model_opts(parser):
        from onmt_xl.opennmt.encoders.families import FAMILIES  # at call time: registration may run mid-import of it

        stock_model_opts(parser)
        add_model_options(parser, FAMILIES)

    def validate_model_opts(cls, model_opt):
        from onmt_xl.opennmt.encoders.families import FAMILIES

        upgrade(model_opt)
        stock_validate(cls, model_opt)
        with usage_errors():
            validate_model_options(model_opt, FAMILIES)

    def update_model_opts(cls, model_opt):
        upgrade(model_opt)
        stock_update(cls, model_opt)

    def ckpt_model_opts(cls, ckpt_opt):
        if isinstance(ckpt_opt, argparse.Namespace) and names.is_legacy_namespace(ckpt_opt):
            ckpt_opt = argparse.Namespace(**vars(ckpt_opt))  # the checkpoint's own stays as it was
            upgrade(ckpt_opt)
        return stock_ckpt(cls, ckpt_opt)

    def parse_known_args(self, *args, **kwargs):
        attached = attach_legacy(self)
        parsed = stock_parse_known(self, *args, **kwargs)
        note_legacy_use(self, attached)
        return parsed

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
    ArgumentParser.update_model_opts = classmethod(wrapper(stock_update, update_model_opts))
    ArgumentParser.ckpt_model_opts = classmethod(wrapper(stock_ckpt, ckpt_model_opts))
    ArgumentParser.parse_known_args = wrapper(stock_parse_known, parse_known_args)
