"""``onmt-xl``: word alignment, the BTG oracle and preorderer, pos_XL files and synthetic data, as subcommands.

Each subcommand is a thin layer over the package's Python API. The installed ``onmt-xl`` command adds the
research workbench's subcommands (:mod:`onmt_xl.experiments.cli`); ``python -m onmt_xl.cli`` has the
plug-in's alone.

Errors are handled here, for every subcommand (:func:`main`): a user's error (a bad option, a missing or
non-UTF-8 file, malformed content) prints one ``onmt-xl COMMAND: error: ...`` line naming the file (and the
line) and exits 2 for usage errors, 1 for data errors (:func:`onmt_xl.core.errors.exit_code`); the folders of
the outputs a subcommand declares (``set_defaults(output_files=..., output_dirs=...)``) are made before it
starts, so that no finished work is lost to a missing folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional

#: adds subcommands to the parser's ``add_subparsers()`` object
AddSubcommands = Callable[[argparse._SubParsersAction], None]


def plugin_subcommands() -> List[AddSubcommands]:
    from onmt_xl.core.align.cli import add_subcommands as add_align
    from onmt_xl.core.reorder.cli import add_subcommands as add_reorder

    return [add_align, add_reorder]


_RST = [(re.compile(r":\w+:`~?([^`]+)`"), r"\1"), (re.compile(r"``([^`]+)``"), r"'\1'")]


def plain(text: str) -> str:
    """Help text without reStructuredText markup (``x`` -> 'x', :mod:`x` -> x)."""
    text = text.replace("::\n", ":\n")
    for pattern, repl in _RST:
        text = pattern.sub(repl, text)
    return text


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs: paragraphs (split at blank lines) are re-wrapped to the terminal, indented lines
    (examples) are kept as written; reStructuredText markup is dropped everywhere."""

    def _fill_text(self, text, width, indent):
        out = []
        for para in re.split(r"\n\s*\n", textwrap.dedent(plain(text)).strip("\n")):
            lines = para.splitlines()
            if any(line.startswith((" ", "\t")) for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(textwrap.fill(" ".join(line.strip() for line in lines), width,
                                         initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(out)

    def _expand_help(self, action):
        return plain(super()._expand_help(action))


def _finish(sub: argparse._SubParsersAction, examples: Dict[str, str]) -> None:
    """Every subcommand: our formatter, a description (its one-line help when it has none), its examples."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, p in sub.choices.items():
        p.formatter_class = HelpFormatter
        if not p.description:
            p.description = helps.get(name)
        if name in examples and not p.epilog:
            p.epilog = "example:\n" + textwrap.indent(textwrap.dedent(examples[name]).strip("\n"), "  ")


#: one example per plug-in subcommand (shown by ``onmt-xl COMMAND -h``)
EXAMPLES = {
    "align": "onmt-xl align --src data/train.ja --tgt data/train.en --out-prefix align/train",
    "aer": "onmt-xl aer --hyp align/test.gdfa --gold gold/test.align --text gold/test.src-tgt",
    "oracle": "onmt-xl oracle --src data/train.ja --tgt data/train.en --align align/train.gdfa "
              "--out-order train.order --out-pos train.pos",
    "preorder-train": "onmt-xl preorder-train --src data/train.ja --tgt data/train.en --align align/train.gdfa "
                      "--model preorderer.xlp",
    "preorder-apply": "onmt-xl preorder-apply --model preorderer.xlp --src data/test.ja "
                      "--out-reordered test.reordered.ja",
    "preorder-eval": "onmt-xl preorder-eval --model preorderer.xlp --src data/dev.ja --tgt data/dev.en "
                     "--align align/dev.gdfa",
    "positions": "onmt-xl positions --src data/train.ja --tgt data/train.en --align align/train.gdfa --folds 5 "
                 "--out data/train.ja.xlpos\n"
                 "onmt-xl positions --src data/valid.ja --preorderer preorderer.xlp --out data/valid.ja.xlpos",
    "show-reordering": "onmt-xl show-reordering --model preorderer.xlp --sentence 'kare wa hon o yonda'\n"
                       "onmt-xl show-reordering --model preorderer.xlp --src data/dev.ja --tgt data/dev.en "
                       "--align align/dev.gdfa --line 7 --png line7.png",
    "synth": "onmt-xl synth --n 1000 --seed 1 --prefix synthetic/train",
}


def build_parser(extra: Iterable[AddSubcommands] = (), examples: Optional[Dict[str, str]] = None,
                 description: Optional[str] = None) -> argparse.ArgumentParser:
    """The ``onmt-xl`` parser: the plug-in's subcommands, then ``extra``'s; ``description`` replaces the
    plug-in's one-line summary (the first line of this module's docstring) at the top of ``onmt-xl -h``."""
    from onmt_xl import __version__

    parser = argparse.ArgumentParser(prog="onmt-xl", description=description or __doc__.splitlines()[0],
                                     formatter_class=HelpFormatter,
                                     epilog="'onmt-xl COMMAND -h' describes a command's options, with an example.")
    parser.add_argument("--version", action="version", version=f"onmt-xl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in plugin_subcommands() + list(extra):
        add(sub)
    _finish(sub, {**EXAMPLES, **(examples or {})})
    return parser


def make_output_folders(args: argparse.Namespace) -> None:
    """The folders of the subcommand's outputs, before it starts (``output_files``: the parent folder of each;
    ``output_dirs``: the folder itself)."""
    for dest in getattr(args, "output_files", ()):
        value = getattr(args, dest, None)
        if value:
            parent = Path(value).parent
            if not parent.is_dir():
                parent.mkdir(parents=True, exist_ok=True)
    for dest in getattr(args, "output_dirs", ()):
        value = getattr(args, dest, None)
        if value:
            Path(value).mkdir(parents=True, exist_ok=True)


def _undecodable_input(args: argparse.Namespace) -> Optional[str]:
    """``FILE, line N: not UTF-8 text ...`` for the first input file of ``args`` that is not UTF-8."""
    from onmt_xl.core.errors import NOT_UTF8_HINT, first_undecodable

    for value in vars(args).values():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and os.path.isfile(v):
                try:
                    with open(v, "rb") as f:
                        if b"\0" in f.read(4096):
                            continue  # a binary input (a model), not text
                    bad = first_undecodable(v)
                except OSError:
                    continue
                if bad:
                    return f"{v}, line {bad[0]}: {bad[1]}; {NOT_UTF8_HINT}"
    return None


def main(argv: Optional[List[str]] = None, extra: Iterable[AddSubcommands] = (),
         examples: Optional[Dict[str, str]] = None, description: Optional[str] = None) -> int:
    from onmt_xl.core.errors import USAGE_EXIT, DATA_EXIT, XLInputError, exit_code, message

    args = build_parser(extra, examples, description).parse_args(argv)
    prog = f"onmt-xl {args.command}"
    try:
        make_output_folders(args)
    except OSError as err:
        print(f"{prog}: error: cannot make the output folder: {message(err)}", file=sys.stderr)
        return USAGE_EXIT
    try:
        return args.func(args) or 0
    except XLInputError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return exit_code(err)
    except UnicodeDecodeError as err:
        where = _undecodable_input(args) or f"an input file is not UTF-8 text ({err.reason})"
        print(f"{prog}: error: {where}", file=sys.stderr)
        return DATA_EXIT
    except OSError as err:
        if err.filename is None:
            raise
        print(f"{prog}: error: {message(err)}", file=sys.stderr)
        return exit_code(err)


if __name__ == "__main__":
    sys.exit(main())
