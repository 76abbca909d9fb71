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


setup(cmdclass={"build_py": BuildWithHook})
