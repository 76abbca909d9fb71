"""Lazy registration hook, imported at interpreter start-up by ``onmt_xl_hook.pth``.

It costs one tiny import: a meta-path finder waits for the first ``import onmt`` and, once OpenNMT's
package has executed, calls :func:`onmt_xl.register`. A process that never imports ``onmt`` never
imports torch or anything of ours beyond this module. It is a top-level module, not part of the
``onmt_xl`` package, so ``onmt_xl`` is resolved only then, on the process's full ``sys.path``: run from
a checkout, the checkout's code registers, not an installed copy.
"""

import sys


class _Loader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        from onmt_xl.errors import quiet_onmt_warnings

        quiet_onmt_warnings()  # before OpenNMT's modules run: they warn while importing
        self._loader.exec_module(module)
        from onmt_xl import register

        register()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class OnmtImportHook:
    """One-shot ``sys.meta_path`` finder for the top-level ``onmt`` package."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "onmt":
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec("onmt")
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    if "onmt" in sys.modules:
        from onmt_xl import register

        register()
    elif not any(isinstance(f, OnmtImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, OnmtImportHook())


install()
