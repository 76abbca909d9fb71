"""Messages, not tracebacks, for mistakes with our components in an Eole config (the Eole twin of
:mod:`onmt_xl.opennmt.seams.messages`).

Eole validates a config with pydantic and lets the ``ValidationError`` escape with its traceback; our input errors
(:class:`~onmt_xl.core.errors.XLInputError`: a preorderer file that is not there, a malformed alignment line) escape the
same way. :func:`install` (called by :func:`onmt_xl.eole.hook.install`, so in every ``eole`` command once onmt_xl
is installed) sets a ``sys.excepthook`` that prints, for those two alone, one line per problem and exits 2 (usage)
or 1 (data), as the OpenNMT-py side does::

    eole train: error: bad.yaml: model.custom.encoder.xl_combination.xl_heads: Input should be a valid integer ...

A ``ValidationError`` is ours when one of its errors names an ``xl_`` option, section or type (in its location or
its message). A corpus line that is not UTF-8, in a run that names our components, gives the file and the line
(:mod:`onmt_xl.eole.undecodable`). Every other exception, a stock config's mistakes included, keeps Eole's traceback
(stock stays stock).
"""

from __future__ import annotations

import difflib
import os
import sys
from typing import List, Optional

from onmt_xl.core.errors import XLInputError, exit_code, in_chain

USAGE_EXIT = 2
CONFIG_FLAGS = ("-config", "--config", "-c")
ARCHITECTURE_HINT = ("an encoder or decoder of ours needs `architecture: custom` (Eole's `transformer` architecture "
                     "resets encoder_type and decoder_type to `transformer`)")


def prog() -> str:
    """``eole SUBCOMMAND`` (also under ``python -m onmt_xl.eole``)."""
    args = sys.argv[1:2]
    return " ".join(["eole", *(a for a in args if not a.startswith("-"))])


def config_file(argv: Optional[List[str]] = None) -> Optional[str]:
    """The ``-config`` file of the command line, if any."""
    argv = sys.argv if argv is None else argv
    for i, arg in enumerate(argv):
        for flag in CONFIG_FLAGS:
            if arg == flag and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None


def _option_names() -> List[str]:
    """The option names of our encoder, decoder and transform configs (their stock fields included)."""
    from onmt_xl.eole import registry

    classes = [*registry.CONFIGS, *registry.DECODER_CONFIGS]
    try:
        from eole.transforms import AVAILABLE_TRANSFORMS

        classes += [t.config_model for name, t in AVAILABLE_TRANSFORMS.items() if name.startswith("xl_")]
    except Exception:  # the names of the encoders' configs still help
        pass
    return sorted({name for cls in classes for name in getattr(cls, "model_fields", {})})


def _ours(error: dict) -> bool:
    """Whether one pydantic error concerns an option, section or type of ours (named ``xl_*``)."""
    return any(isinstance(p, str) and p.startswith("xl_") for p in error.get("loc", ())) or "xl_" in error.get(
        "msg", "")


def validation_lines(exc: BaseException) -> Optional[List[str]]:
    """One line per error of a pydantic ``ValidationError`` that concerns our components, else None."""
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - Eole needs pydantic
        return None
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if not any(_ours(e) for e in errors):
        return None
    lines = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        msg = e.get("msg", "")
        if msg.startswith(("Value error, ", "Assertion failed, ")):
            msg = msg.split(", ", 1)[1]
        if "input" in e and e.get("type") != "extra_forbidden" and not isinstance(e["input"], (dict, list)):
            msg += f" (got {e['input']!r})"
        if e.get("type") == "extra_forbidden" and tuple(e.get("loc", ()))[:2] == ("model", "transformer") and _ours(e):
            msg += f"; {ARCHITECTURE_HINT}"
        elif e.get("type") == "extra_forbidden" and e.get("loc"):
            close = difflib.get_close_matches(str(e["loc"][-1]), _option_names(), n=1, cutoff=0.75)
            msg += f"; did you mean {close[0]}?" if close else ""
        lines.append(f"{loc}: {msg}" if loc else msg)
    return lines


def _xl_input_error(exc: BaseException) -> Optional[XLInputError]:
    err = in_chain(exc, XLInputError)
    if err is None and isinstance(exc, RuntimeError) and "onmt_xl.core.errors.XLInputError: " in str(exc):
        # re-raised by torch's DataLoader from a data worker, as text under the worker's traceback
        err = XLInputError(None, None, str(exc).rsplit("onmt_xl.core.errors.XLInputError: ", 1)[1].strip())
    if err is None and isinstance(exc, RuntimeError) and "MissingXLPositionsError: " in str(exc):
        err = XLInputError(None, None, str(exc).rsplit("MissingXLPositionsError: ", 1)[1].strip())
    return err


def message(exc: BaseException) -> Optional[tuple]:
    """(lines to print, exit status) for an exception of ours, else None."""
    where = config_file()
    lines = validation_lines(exc)
    if lines is not None:
        head = f"{prog()}: error: {where + ': ' if where else ''}"
        return [head + line for line in lines], USAGE_EXIT
    err = _xl_input_error(exc)
    if err is None:
        from onmt_xl.eole.undecodable import corpus_error

        err = corpus_error(exc)
    if err is not None:
        named = err.path is not None or err.line is not None
        return [f"{prog()}: error: {'' if named or not where else where + ': '}{err}"], exit_code(err)
    return None


def install() -> None:
    """Set the excepthook (idempotent); every exception that is not ours goes to the previous hook."""
    previous = sys.excepthook
    if getattr(previous, "_onmt_xl_eole", False):
        return

    def hook(exc_type, exc, tb):
        found = message(exc)
        if found is None:
            return previous(exc_type, exc, tb)
        lines, status = found
        print("\n".join(lines), file=sys.stderr)
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    hook._onmt_xl_eole = True  # type: ignore[attr-defined]
    hook._onmt_xl = True  # type: ignore[attr-defined]  (install_excepthook: XLInputError is handled here)
    sys.excepthook = hook
