"""Progress bars for the steps that would otherwise run long without a word (tqdm, on stderr).

As tqdm is normally used: a bar shows only where stderr is a terminal (``disable=None``), so logs and pipes stay
clean, and never after :func:`set_quiet` (the commands' ``--no-progress``). :func:`bar` is a tqdm bar;
:func:`ticking` shows the elapsed time of a step that reports no progress of its own (a stock command);
:func:`stderr_lines` hands a callee's stderr to a callback line by line, for tools that print their stages there
(eflomal).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Callable, Iterator, List, Optional, TextIO

_QUIET = False


def set_quiet(quiet: bool = True) -> None:
    """No progress bar from here on (``--no-progress``)."""
    global _QUIET
    _QUIET = quiet


def shown(stream: Optional[TextIO] = None) -> bool:
    """Whether a bar on ``stream`` (default stderr) would show: not quiet, and a terminal."""
    stream = stream or sys.stderr
    return not _QUIET and hasattr(stream, "isatty") and stream.isatty()


def bar(file: Optional[TextIO] = None, enabled: bool = True, **kw):
    """A tqdm bar on ``file`` (default stderr), shown as :func:`shown` says (never unless ``enabled``); ``kw`` go
    to tqdm."""
    from tqdm import tqdm

    return tqdm(file=file or sys.stderr, disable=True if _QUIET or not enabled else None, **kw)


@contextlib.contextmanager
def ticking(desc: str, file: Optional[TextIO] = None) -> Iterator[None]:
    """While the block runs, ``desc: ELAPSED`` refreshed every second on ``file`` (default stderr; nothing where no
    bar shows)."""
    if not shown(file):
        yield
        return
    b = bar(file=file, desc=desc, total=None, bar_format="{desc}: {elapsed}", leave=False)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(1.0):
            b.refresh()

    thread = threading.Thread(target=tick, name="progress-tick", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        b.close()


@contextlib.contextmanager
def stderr_lines(on_line: Callable[[str], bool], on_end: Optional[Callable[[], None]] = None) -> Iterator[TextIO]:
    """Send what is written to file descriptor 2 in the block (by this process and its children) to ``on_line``,
    line by line; the lines it returns False for are written to the real stderr afterwards, so nothing is lost.
    Yields a stream on the real stderr, for a bar; ``on_end`` runs once every line is handed over, before that
    stream closes (to close the bar). POSIX only; the block should not run beside other threads that write to
    stderr (their lines would wait until the end)."""
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    kept: List[str] = []

    def pump() -> None:
        with os.fdopen(read_end, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not on_line(line):
                    kept.append(line)

    thread = threading.Thread(target=pump, name="stderr-lines", daemon=True)
    thread.start()
    real = os.fdopen(os.dup(saved), "w", encoding="utf-8", errors="replace")
    try:
        yield real
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last write end closes: the pump reads to its end
        os.close(saved)
        thread.join()
        if on_end is not None:
            on_end()
        real.write("".join(kept))
        real.flush()
        real.close()
