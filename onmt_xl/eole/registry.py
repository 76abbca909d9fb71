"""Where our Eole components announce themselves (imports nothing): the config classes for Eole's encoder union and
the encoder classes for ``str2enc``. :mod:`onmt_xl.eole.seams` reads them and listens for more, because the import
hook may apply a seam while one of our modules is itself importing the Eole module the seam follows (before its
classes exist); that module's :func:`add` then completes the seam, with no import of the seams."""

from __future__ import annotations

#: every encoder config class of ours announced so far
CONFIGS: list = []
#: encoder_type -> encoder class, announced so far
ENCODERS: dict = {}
_listeners: list = []


def add(configs=(), encoders=None) -> None:
    """Announce config classes and/or ``{encoder_type: class}``; the seams listening re-apply themselves."""
    CONFIGS.extend(c for c in configs if c not in CONFIGS)
    ENCODERS.update(encoders or {})
    for listener in list(_listeners):
        listener()


def listen(listener) -> None:
    """Call ``listener()`` after every later :func:`add` (once per listener)."""
    if listener not in _listeners:
        _listeners.append(listener)
