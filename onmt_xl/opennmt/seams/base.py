"""What every seam shares: marking a wrapper as ours, logging a line once, OpenNMT-py's version."""

from __future__ import annotations

import functools
from typing import Callable

MARK = "_onmt_xl"  # set on each wrapper we install


def wrapper(stock: Callable, fn: Callable) -> Callable:
    """``fn`` dressed as ``stock`` (name, docstring, ``__wrapped__``) and marked as ours."""
    fn = functools.wraps(stock)(fn)
    setattr(fn, MARK, True)
    return fn


_logged = set()


def log_once(message) -> None:
    """``message`` to OpenNMT's logger, once per process."""
    from onmt.utils.logging import logger

    if message and message not in _logged:
        _logged.add(message)
        logger.info(message)


def onmt_version() -> str:
    """The installed OpenNMT-py's version, or ``unknown``."""
    try:
        from importlib.metadata import version

        return version("OpenNMT-py")
    except Exception:
        return "unknown"
