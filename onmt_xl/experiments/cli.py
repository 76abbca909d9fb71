"""The ``onmt-xl`` command: the plug-in's subcommands (:mod:`onmt_xl.cli`) plus the workbench's
(``demo``, ``pipeline``, ``write-configs``, ``experiments``, ``sim``)."""

from __future__ import annotations

import sys
from typing import List, Optional

from onmt_xl.cli import main as plugin_main


def workbench_subcommands():
    from onmt_xl.experiments.analysis import add_subcommands as add_analysis
    from onmt_xl.experiments.demo import add_subcommands as add_demo
    from onmt_xl.experiments.runner import add_subcommands as add_experiments

    return [add_demo, add_analysis, add_experiments]


def main(argv: Optional[List[str]] = None) -> int:
    return plugin_main(argv, extra=workbench_subcommands())


if __name__ == "__main__":
    sys.exit(main())
