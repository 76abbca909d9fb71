"""Lazy registration hook, imported at interpreter start-up by ``onmt_xl_hook.pth``.

It costs one tiny import: a meta-path finder waits for the first ``import onmt`` and, once OpenNMT's
package has executed, calls :func:`onmt_xl.register`. A process that never imports ``onmt`` never
imports torch or anything of ours beyond this module. It is a top-level module, not part of the
``onmt_xl`` package, so ``onmt_xl`` is resolved only then, on the process's full ``sys.path``: run from
a checkout, the checkout's code registers, not an installed copy.

The same goes for Eole (``onmt_xl.eole``, issue 38): a second finder waits for the first ``import eole`` and,
just *before* Eole's package executes, installs :mod:`onmt_xl.eole.hook`, which applies each Eole seam right after
its module (Eole's registries and config unions are read at import time). So plain ``eole train|predict|serve``
know our transforms and encoders; a process that never imports ``eole`` imports nothing more of ours.

``ONMT_XL_DISABLE=1`` (or ``true``/``yes``, any case) in the environment switches the hook off: the process
then runs stock OpenNMT-py (and stock Eole), as if onmt_xl were not installed (nothing of ours is imported or
registered). It is how the stock-equality checks (``tests/test_stock.py``, ``tools/ci/peer_suite.py``) get their
reference run.
"""

import os
import sys

DISABLE_ENV = "ONMT_XL_DISABLE"


def disabled() -> bool:
    """True when ``$ONMT_XL_DISABLE`` is set to a true value (``1``, ``true`` or ``yes``, any case)."""
    return os.environ.get(DISABLE_ENV, "").strip().lower() in ("1", "true", "yes")


class _Loader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        _remove_hooks()  # onmt is being imported now: one-shot
        ok = _safely("silence OpenNMT's import-time warnings", _quiet)  # before OpenNMT's modules run: they warn then
        self._loader.exec_module(module)  # OpenNMT itself: its own errors are its own
        if ok:  # else onmt_xl cannot be imported: said once already
            _safely("register onmt_xl with OpenNMT-py", _register)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _StartHook:
    """``sys.meta_path`` finder for one top-level package (:attr:`package`), until it is imported. It stays in place
    after a mere look-up (``importlib.util.find_spec("onmt")``, as a test's skip condition does), which imports
    nothing; the loader it hands out (:attr:`loader`, wrapping the package's own) removes it when the package is
    really executed."""

    package = ""
    loader = _Loader
    _looking = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.package or self._looking:
            return None
        from importlib.util import find_spec

        self._looking = True  # the look-up below asks the finders again, this one included
        try:
            spec = find_spec(self.package)
        finally:
            self._looking = False
        if spec is not None and spec.loader is not None:
            spec.loader = self.loader(spec.loader)
        return spec


class OnmtImportHook(_StartHook):
    """The finder for ``onmt``: its loader registers onmt_xl once OpenNMT-py's package has executed."""

    package = "onmt"


class _EoleLoader(_Loader):
    def exec_module(self, module):
        _remove_eole_hooks()  # eole is being imported now: one-shot
        _safely("install onmt_xl's Eole adapter", _install_eole, "Eole")  # before Eole's modules run
        self._loader.exec_module(module)


class EoleStartHook(_StartHook):
    """The finder for ``eole``: its loader installs the Eole adapter's own import hook first."""

    package = "eole"
    loader = _EoleLoader


def _remove_eole_hooks() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, EoleStartHook)]


def _install_eole() -> None:
    from onmt_xl.eole.hook import install as install_eole

    install_eole()


def _remove_hooks() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, OnmtImportHook)]


def _quiet() -> None:
    from onmt_xl.errors import quiet_onmt_warnings

    quiet_onmt_warnings()


def _register() -> None:
    from onmt_xl import register

    register()


def _safely(what: str, step, framework: str = "OpenNMT-py") -> bool:
    """Run ``step``; if it fails (onmt_xl broken or missing, an unexpected OpenNMT-py or Eole), say so in one line and
    go on: ``import onmt`` (``import eole``) must never fail because of us. (Each seam is fail-safe on its own too:
    ``onmt_xl.opennmt.seams``, ``onmt_xl.eole.hook``.)"""
    try:
        step()
    except Exception as err:
        print(f"onmt_xl: warning: could not {what} ({type(err).__name__}: {err}); {framework} runs without "
              f"onmt_xl (set {DISABLE_ENV}=1 to silence this)", file=sys.stderr)
        return False
    return True


def install() -> None:
    """Register now if ``onmt`` (``eole``) is already imported, else wait for its import; nothing if
    :func:`disabled`."""
    if disabled():
        return
    if "onmt" in sys.modules:
        _safely("register onmt_xl with OpenNMT-py", _register)
    elif not any(isinstance(f, OnmtImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, OnmtImportHook())
    if "eole" in sys.modules:
        _safely("install onmt_xl's Eole adapter", _install_eole, "Eole")
    elif not any(isinstance(f, EoleStartHook) for f in sys.meta_path):
        sys.meta_path.insert(0, EoleStartHook())


install()
