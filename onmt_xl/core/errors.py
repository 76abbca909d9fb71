"""Errors raised on bad user input: each names the file, the line and the problem.

Exit statuses of the ``onmt-xl`` commands (:func:`exit_code`): 2 for a usage error (a bad option, an input
file that is not there, an output folder that cannot be made), 1 for a data error (a file whose content is
malformed). :func:`install_excepthook` and :func:`quiet_onmt_warnings` do the same for the stock ``onmt_*``
commands: our message without the traceback under it, and none of OpenNMT-py's warnings a user cannot act on.
"""

from __future__ import annotations

import sys
from typing import Iterable, Optional, Tuple

USAGE_EXIT = 2  # as argparse's
DATA_EXIT = 1


def count(n: int, noun: str, plural: Optional[str] = None) -> str:
    """``n`` and ``noun`` in the number it takes: ``count(1, "line")`` is "1 line", ``count(2, "line")`` "2 lines"."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


class XLInputError(ValueError):
    """Bad input data or file. The message names the file, the line (1-based) and the problem."""

    exit_code = DATA_EXIT

    def __init__(self, path: Optional[str], line: Optional[int], problem: str):
        self.path, self.line, self.problem = path, line, problem
        if path is None and line is None:
            super().__init__(problem)  # about the options, or a message that names its file already
            return
        where = str(path) if path is not None else "<input>"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):
        # picklable, so that an error raised in a worker process (OpenNMT's data workers, onmt_build_vocab's
        # pool) reaches the parent instead of failing to unpickle there, which hangs multiprocessing.Pool
        return (type(self), (self.path, self.line, self.problem))


class XLUsageError(XLInputError):
    """A bad option or a missing input file: exit status 2, as argparse's errors."""

    exit_code = USAGE_EXIT


class XLEmptyLineError(XLInputError, OSError):
    """An empty line under ``-skip_empty_level error``: also the ``IOError`` that OpenNMT-py raises (and its callers
    catch) for it."""


def exit_code(err: BaseException) -> int:
    """2 for usage errors (:class:`XLUsageError`; an :class:`XLInputError` about a file that is not found, raised
    by code that predates :class:`XLUsageError`), 1 for data errors."""
    if isinstance(err, XLInputError):
        if err.exit_code == DATA_EXIT and ("not found" in err.problem or err.problem.startswith("is a directory")):
            return USAGE_EXIT
        return err.exit_code
    return USAGE_EXIT if isinstance(err, (FileNotFoundError, NotADirectoryError, IsADirectoryError,
                                          PermissionError)) else DATA_EXIT


def first_undecodable(path: str) -> Optional[Tuple[int, str]]:
    """``(line, reason)`` of the first line of ``path`` that is not UTF-8, or None."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return n, f"not UTF-8 text ({e.reason} at byte {e.start} of the line)"
    return None


NOT_UTF8_HINT = "convert it first, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8"


def check_text_files(paths: Iterable[Optional[str]], hint: str = "check the path") -> None:
    """Before any long work: every path exists (:class:`XLUsageError`) and is UTF-8 text (:class:`XLInputError`
    naming the first bad line)."""
    import os

    for p in paths:
        if p is None:
            continue
        if not os.path.isfile(p):
            raise XLUsageError(p, None, ("is a directory, not a file" if os.path.isdir(p) else "file not found")
                               + f"; {hint}")
        bad = first_undecodable(p)
        if bad:
            raise XLInputError(p, bad[0], f"{bad[1]}; {NOT_UTF8_HINT}")


def message(err: BaseException) -> str:
    """What to print for an error of the user's: where, what, and how to fix it where we know."""
    if isinstance(err, XLInputError):
        return str(err)
    if isinstance(err, FileNotFoundError):
        return f"{err.filename}: no such file or directory; check the path"
    if isinstance(err, FileExistsError):
        return f"{err.filename}: exists and is not a folder; choose another path"
    if isinstance(err, NotADirectoryError):
        return f"{err.filename}: a part of this path is a file, not a folder"
    if isinstance(err, IsADirectoryError):
        return f"{err.filename}: is a folder; give a file"
    if isinstance(err, PermissionError):
        return f"{err.filename}: permission denied"
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {err.strerror}"
    return str(err)


def in_chain(exc: Optional[BaseException], kind) -> Optional[BaseException]:
    """The first exception of type ``kind`` among ``exc`` and the exceptions it was raised from or while
    handling (``__cause__``, else ``__context__``), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _is_xl_input_error(exc: Optional[BaseException]) -> Optional[XLInputError]:
    return in_chain(exc, XLInputError)


def _raised_in(tb, part: str) -> bool:
    while tb is not None:
        if part in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _undecodable_argv(exc: UnicodeDecodeError) -> XLInputError:
    """OpenNMT-py reading a non-UTF-8 corpus: the first -src/-tgt file of the command line that is not UTF-8."""
    import os

    argv = sys.argv[1:]
    for flag, value in zip(argv, argv[1:]):
        if flag.lstrip("-") in ("src", "tgt") and os.path.isfile(value):
            bad = first_undecodable(value)
            if bad:
                return XLInputError(value, bad[0], f"{bad[1]}; {NOT_UTF8_HINT}")
    return XLInputError(None, None, f"a corpus file is not UTF-8 text ({exc.reason}); {NOT_UTF8_HINT}")


def install_excepthook() -> None:
    """For the stock ``onmt_*`` commands: an uncaught :class:`XLInputError` (or an exception raised while handling
    one) prints ``PROG: error: MESSAGE`` alone, not under OpenNMT-py's traceback, and the process exits 2 for a
    usage error (:func:`exit_code`, as argparse), else 1 as for any uncaught exception; so does a
    :class:`UnicodeDecodeError` of OpenNMT-py's corpus reader, naming the -src/-tgt file and line that is not UTF-8.
    Every other exception keeps its traceback. Safe to call repeatedly."""
    previous = sys.excepthook
    if getattr(previous, "_onmt_xl", False):
        return

    def hook(exc_type, exc, tb):
        import os

        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        err = _is_xl_input_error(exc)
        if err is None and isinstance(exc, RuntimeError) and "onmt_xl.core.errors.XLInputError: " in str(exc):
            # re-raised by torch's DataLoader from a data worker, as text under the worker's traceback
            text = str(exc).rsplit("onmt_xl.core.errors.XLInputError: ", 1)[1].strip()
            err = XLInputError(None, None, text)  # the text names the file and line already
        if err is None and isinstance(exc, UnicodeDecodeError) and _raised_in(tb, "onmt" + os.sep + "inputters"):
            err = _undecodable_argv(exc)
        if err is None:
            return previous(exc_type, exc, tb)
        print(f"{prog}: error: {err}", file=sys.stderr)
        if exit_code(err) != DATA_EXIT:  # Python exits 1 after any uncaught exception; argparse's 2 for usage
            import logging

            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exit_code(err))

    hook._onmt_xl = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def quiet_onmt_warnings() -> None:
    """Hide OpenNMT-py 3.5.1's import-time deprecation warnings that a user cannot act on (its modules decorate
    with ``torch.cuda.amp.custom_fwd``/``custom_bwd`` and its trainer enters ``torch.cuda.amp.autocast`` at every
    step, all deprecated in torch 2.4). Only those: a filter by
    message, category and module, so every other warning still shows. It must run before ``import onmt``."""
    import warnings

    warnings.filterwarnings("ignore", message=r"`torch\.cuda\.amp\.(custom_fwd|custom_bwd|autocast)\(args\.\.\.\)` "
                            r"is deprecated", category=FutureWarning, module=r"onmt(\.|$)")


#: the example key under which the plug-in's corpus reader (:mod:`onmt_xl.opennmt.seams.corpus`) stores the corpus'
#: files, ``{"src": path, "tgt": path, "align": path}`` (None for a side without a file, e.g. the server's lists)
FILES_KEY = "cid_files"


def example_location(example, side: str = "src"):
    """``(file, 1-based line)`` of an OpenNMT example for error messages: the corpus' ``side`` file where the
    plug-in recorded it, else the corpus id; the line from ``cid_line_number`` (None where unknown)."""
    example = example or {}
    path = (example.get(FILES_KEY) or {}).get(side) or example.get("cid")
    line = example.get("cid_line_number")
    return (None if path is None else str(path)), (None if line is None else int(line) + 1)
