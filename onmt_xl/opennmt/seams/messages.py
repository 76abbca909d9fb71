"""Messages, not tracebacks.

- ``sys.excepthook`` (:func:`onmt_xl.core.errors.install_excepthook`): an uncaught ``XLInputError`` in a stock
  ``onmt_*`` command prints ``PROG: error: MESSAGE`` alone and exits 1 (2 for a usage error); OpenNMT's
  import-time deprecation warnings are silenced by ``onmt_xl_hook`` before ``onmt`` runs
  (:func:`onmt_xl.core.errors.quiet_onmt_warnings`). Any other exception keeps its traceback.
- Wraps ``ArgumentParser.parse_known_args`` (OpenNMT-py 3.5.1): ``onmt_train`` and ``onmt_build_vocab`` parse with
  it and drop what they do not know, so a mistyped option (``xl_haeds: 2`` in the YAML) trained the wrong model
  without a word. Each unknown option now gets one warning line with the closest known name; ``onmt_build_vocab``
  skips those ``onmt_train`` knows (the two share a YAML), our legacy names included. The parsed options are stock's.
"""

from __future__ import annotations

from onmt_xl.core.errors import install_excepthook
from onmt_xl.opennmt.seams.base import wrapper

LOST = "errors in input files show as tracebacks, and mistyped options in a YAML are dropped without a word"


def unknown_option_warnings(prog: str, unknown, known, also_fine=()) -> list:
    """One ``PROG: warning:`` line per unknown option (``--name=value``, ``-name`` or a value), with the closest
    of ``known`` option names; names in ``also_fine`` (known to a sibling command) are left out."""
    import difflib

    lines = []
    for item in unknown:
        if not item.startswith("-") or item.lstrip("-")[:1].isdigit():
            continue  # the value of an unknown option, or a negative number
        name = item.lstrip("-").split("=", 1)[0]
        if name in also_fine:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]}?" if close else f"; see {prog} -h"
        lines.append(f"{prog}: warning: unknown option {name} (command line or -config file) is ignored{hint}")
    return lines


def _option_names(parser) -> list:
    return sorted({s.lstrip("-") for s in parser._option_string_actions})


def apply() -> None:
    import sys

    from onmt.utils.parse import ArgumentParser

    install_excepthook()
    stock = ArgumentParser.parse_known_args
    commands = {"train.py": "onmt_train", "build_vocab.py": "onmt_build_vocab"}

    def parse_known_args(self, args=None, namespace=None, *rest, **kwargs):
        opt, unknown = stock(self, args, namespace, *rest, **kwargs)
        prog = commands.get(self.description)
        if args is None and unknown and prog:  # the command line of one of the two commands
            also_fine = ()
            if prog == "onmt_build_vocab":
                from onmt.opts import train_opts

                from onmt_xl.opennmt.names import LEGACY_OPTIONS

                train = ArgumentParser(description="onmt_train options")
                train_opts(train)
                also_fine = set(_option_names(train)) | set(LEGACY_OPTIONS)  # legacy: attached when onmt_train parses
            known = sorted(set(_option_names(self)) | set(also_fine))
            for line in unknown_option_warnings(prog, unknown, known, also_fine):
                print(line, file=sys.stderr)
        return opt, unknown

    ArgumentParser.parse_known_args = wrapper(stock, parse_known_args)
