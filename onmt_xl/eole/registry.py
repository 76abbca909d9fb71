"""Where our Eole components announce themselves (imports nothing): the config classes for Eole's encoder and decoder
unions, the encoder and decoder classes for ``str2enc``/``str2dec`` and the transforms for ``AVAILABLE_TRANSFORMS``.
:mod:`onmt_xl.eole.seams` reads them and listens for more, because the import hook may apply a seam while one of our
modules is itself importing the Eole module the seam follows (before its classes exist); that module's :func:`add` then
completes the seam, with no import of the seams."""

from __future__ import annotations

#: every encoder config class of ours announced so far
CONFIGS: list = []
#: encoder_type -> encoder class, announced so far
ENCODERS: dict = {}
#: every decoder config class of ours announced so far
DECODER_CONFIGS: list = []
#: decoder_type -> decoder class, announced so far
DECODERS: dict = {}
#: transform name -> transform class, announced so far
TRANSFORMS: dict = {}
_listeners: list = []


def add(configs=(), encoders=None, decoder_configs=(), decoders=None, transforms=None) -> None:
    """Announce encoder/decoder config classes and/or ``{encoder_type: class}``, ``{decoder_type: class}``,
    ``{transform name: class}``; the seams listening re-apply themselves."""
    CONFIGS.extend(c for c in configs if c not in CONFIGS)
    ENCODERS.update(encoders or {})
    DECODER_CONFIGS.extend(c for c in decoder_configs if c not in DECODER_CONFIGS)
    DECODERS.update(decoders or {})
    TRANSFORMS.update(transforms or {})
    for listener in list(_listeners):
        listener()


def listen(listener) -> None:
    """Call ``listener()`` after every later :func:`add` (once per listener)."""
    if listener not in _listeners:
        _listeners.append(listener)
