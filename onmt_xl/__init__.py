"""onmt_xl: cross-lingual position representations (XL PE) for OpenNMT-py.

``register()`` is the only public entry point for other projects: it adds our
encoders, transform and options to OpenNMT-py's registries. It is idempotent
and is called automatically (through ``onmt_xl_hook.pth``) the first time a
Python process imports ``onmt``.
"""

__version__ = "0.3.0"


def register() -> None:
    """Register onmt_xl's components with OpenNMT-py (idempotent)."""
    from onmt_xl.opennmt.seams import register as _register

    _register()
