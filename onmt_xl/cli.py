"""``onmt-xl``: alignment, BTG oracle, preorderer, synthetic data and the demo, as subcommands.

Each subcommand is a thin layer over the package's Python API.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def build_parser() -> argparse.ArgumentParser:
    from onmt_xl import __version__
    from onmt_xl.align.cli import add_subcommands as add_align
    from onmt_xl.analysis import add_subcommands as add_analysis
    from onmt_xl.demo import add_subcommands as add_demo
    from onmt_xl.experiments import add_subcommands as add_experiments
    from onmt_xl.reorder.cli import add_subcommands as add_reorder

    parser = argparse.ArgumentParser(prog="onmt-xl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"onmt-xl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_align(sub)
    add_reorder(sub)
    add_demo(sub)
    add_analysis(sub)
    add_experiments(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    from onmt_xl.errors import XLInputError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except XLInputError as err:
        print(f"onmt-xl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
