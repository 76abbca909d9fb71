"""Import hook of the Eole adapter: applies each seam of :mod:`onmt_xl.eole.seams` right after its Eole module has
executed (Eole has no plug-in entry points; its registries and its config unions are read at import time).

:func:`install` is called by the start-up hook ``onmt_xl_hook`` (through ``onmt_xl_hook.pth``) just before the
``eole`` package itself executes, so plain ``eole train|predict|serve`` get the seams; ``python -m onmt_xl.eole``
and the tests call it by hand (idempotent). A seam that fails prints one line and Eole goes on.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

_done = set()


class _Loader:
    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        apply(self._name)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class EoleImportHook:
    _looking = False

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("eole.") or fullname in _done or self._looking:
            return None  # cheap for every other import: the seams (and torch) load with Eole's first submodule
        loading = sys.modules.get("onmt_xl.eole.seams")
        if loading is not None and not hasattr(loading, "AFTER"):
            return None  # the seams module itself is importing an Eole module: let it
        try:
            from onmt_xl.eole.seams import AFTER
        except Exception as err:  # never break an Eole import: say it once, then stand aside
            _warn("load the Eole adapter's seams", err)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, EoleImportHook)]
            return None
        if fullname not in AFTER:
            return None
        self._looking = True
        try:
            spec = find_spec(fullname)
        finally:
            self._looking = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, fullname)
        return spec


def apply(name: str) -> None:
    from onmt_xl.eole.seams import AFTER

    if name in _done:
        return
    _done.add(name)
    try:
        AFTER[name]()
    except Exception as err:  # Eole must still run
        _warn(f"apply the Eole seam after {name}", err)


def _warn(what: str, err: Exception) -> None:
    print(f"onmt_xl: warning: could not {what} ({type(err).__name__}: {err})", file=sys.stderr)


def install() -> None:
    """Apply the seams of the Eole modules already imported; hook the others; short messages for mistakes with our
    components (:mod:`onmt_xl.eole.messages`)."""
    try:
        from onmt_xl.eole.messages import install as install_messages

        install_messages()
    except Exception as err:  # never break Eole
        _warn("install the Eole adapter's error messages", err)
    if any(name.startswith("eole.") for name in list(sys.modules)):
        from onmt_xl.eole.seams import AFTER

        for name in AFTER:
            if name in sys.modules:
                apply(name)
    if not any(isinstance(f, EoleImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, EoleImportHook())
