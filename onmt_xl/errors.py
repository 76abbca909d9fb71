"""Errors raised on bad user input: each names the file, the line and the problem."""

from __future__ import annotations

from typing import Optional


class XLInputError(ValueError):
    """Bad input data or file. The message names the file, the line (1-based) and the problem."""

    def __init__(self, path: Optional[str], line: Optional[int], problem: str):
        self.path, self.line, self.problem = path, line, problem
        where = str(path) if path is not None else "<input>"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):
        # picklable, so that an error raised in a worker process (OpenNMT's data workers, onmt_build_vocab's
        # pool) reaches the parent instead of failing to unpickle there, which hangs multiprocessing.Pool
        return (type(self), (self.path, self.line, self.problem))


#: the example key under which the plug-in's corpus reader (:mod:`onmt_xl.plugin`) stores the corpus'
#: files, ``{"src": path, "tgt": path, "align": path}`` (None for a side without a file, e.g. the server's lists)
FILES_KEY = "cid_files"


def example_location(example, side: str = "src"):
    """``(file, 1-based line)`` of an OpenNMT example for error messages: the corpus' ``side`` file where the
    plug-in recorded it, else the corpus id; the line from ``cid_line_number`` (None where unknown)."""
    example = example or {}
    path = (example.get(FILES_KEY) or {}).get(side) or example.get("cid")
    line = example.get("cid_line_number")
    return (None if path is None else str(path)), (None if line is None else int(line) + 1)
