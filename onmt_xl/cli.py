"""``onmt-xl``: word alignment, BTG oracle, preorderer and synthetic data, as subcommands.

Each subcommand is a thin layer over the package's Python API. The installed ``onmt-xl`` command adds the
research workbench's subcommands (:mod:`onmt_xl.experiments.cli`); ``python -m onmt_xl.cli`` has the
plug-in's alone.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Iterable, List, Optional

#: adds subcommands to the parser's ``add_subparsers()`` object
AddSubcommands = Callable[[argparse._SubParsersAction], None]


def plugin_subcommands() -> List[AddSubcommands]:
    from onmt_xl.align.cli import add_subcommands as add_align
    from onmt_xl.reorder.cli import add_subcommands as add_reorder

    return [add_align, add_reorder]


def build_parser(extra: Iterable[AddSubcommands] = ()) -> argparse.ArgumentParser:
    from onmt_xl import __version__

    parser = argparse.ArgumentParser(prog="onmt-xl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"onmt-xl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in plugin_subcommands() + list(extra):
        add(sub)
    return parser


def main(argv: Optional[List[str]] = None, extra: Iterable[AddSubcommands] = ()) -> int:
    from onmt_xl.errors import XLInputError

    args = build_parser(extra).parse_args(argv)
    try:
        return args.func(args) or 0
    except XLInputError as err:
        print(f"onmt-xl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
