"""Installs onmt_xl plus ``onmt_xl_hook.pth``, which registers our components when ``onmt`` is imported."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK = "onmt_xl_hook.pth"


class BuildWithHook(build_py):
    """Copy the ``.pth`` hook next to the package so it lands in site-packages."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / HOOK
        target.write_text(Path(__file__).with_name(HOOK).read_text())

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [str(Path(self.build_lib) / HOOK)]


cmdclass = {"build_py": BuildWithHook}
try:  # setuptools >= 64: ``pip install -e .`` builds an editable wheel that build_py's outputs do not reach
    from setuptools.command.editable_wheel import editable_wheel

    class EditableWithHook(editable_wheel):
        """Put the ``.pth`` hook in the editable wheel too (it sorts after setuptools' own finder .pth)."""

        def _install_namespaces(self, installation_dir, pth_prefix):
            super()._install_namespaces(installation_dir, pth_prefix)
            Path(installation_dir, HOOK).write_text(Path(__file__).with_name(HOOK).read_text())

    cmdclass["editable_wheel"] = EditableWithHook
except ImportError:
    pass

setup(cmdclass=cmdclass)
