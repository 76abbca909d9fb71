"""Import hook of the Eole adapter: applies each seam of :mod:`onmt_xl.eole.seams` right after its Eole module has
executed (Eole has no plug-in entry points; its registries and its config unions are read at import time).

:func:`install` is what a ``.pth`` start-up hook would call (not wired yet: ``onmt_xl_hook.py`` serves OpenNMT-py
only); the tests and ``python -m onmt_xl.eole`` call it by hand. A seam that fails prints one line and Eole goes on.
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
        from onmt_xl.eole.seams import AFTER

        if fullname not in AFTER or fullname in _done or self._looking:
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
        print(f"onmt_xl: warning: could not apply the Eole seam after {name} ({type(err).__name__}: {err})",
              file=sys.stderr)


def install() -> None:
    """Apply the seams of the Eole modules already imported; hook the others."""
    from onmt_xl.eole.seams import AFTER

    for name in AFTER:
        if name in sys.modules:
            apply(name)
    if not any(isinstance(f, EoleImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, EoleImportHook())
