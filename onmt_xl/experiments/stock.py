"""Running OpenNMT's stock commands and reading what they leave: the process helpers every stage shares."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence


def say(msg: str) -> None:
    sys.stdout.write(f"[onmt-xl] {msg}\n")  # one write: lines of parallel jobs don't interleave
    sys.stdout.flush()


def read_lines(path: Path) -> List[str]:
    """The lines of ``path`` (gzipped where it ends in ``.gz``), as every report reads them (universal newlines;
    other line separators such as U+2028 stay inside a line, as in OpenNMT's files; a byte-order mark opening the
    file is no text and is dropped)."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8-sig") as f:
        return [line.rstrip("\n") for line in f]


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` to ``path`` through a ``.partial`` file, so a killed run never leaves half a file."""
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    tmp.replace(path)


def stock(cmd: str) -> str:
    """Path of a stock OpenNMT console script installed beside this Python."""
    return shutil.which(cmd) or str(Path(sys.executable).with_name(cmd))


def run_logged(args: Sequence[str], log: Path, show: str = "Step", *, append: bool = False,
               commands: Optional[Path] = None, env: Optional[Dict[str, str]] = None, indent: str = "    ") -> float:
    """Run a stock CLI, log everything to ``log`` (``append``: after what is there) and echo the lines that
    contain ``show`` after ``indent``; ``commands``: a file the command line is appended to. Returns seconds."""
    log.parent.mkdir(parents=True, exist_ok=True)
    line = " ".join(str(a) for a in args)
    if commands is not None:
        with open(commands, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    t0 = time.perf_counter()
    # line-buffered: readable while it runs
    with open(log, "a" if append else "w", encoding="utf-8", buffering=1) as out:
        proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env)
        assert proc.stdout is not None
        for text in proc.stdout:
            out.write(text)
            if show and show in text:
                sys.stdout.write(indent + text.rstrip().split(" INFO] ")[-1] + "\n")  # one write per line
                sys.stdout.flush()
        if proc.wait() != 0:
            raise RuntimeError(f"{line}\nfailed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - t0


def count_parameters(model) -> Dict[str, int]:
    """``{"parameters": trainable parameters, "buffers": elements of the buffers}`` of a model; buffers (e.g. the
    stock sinusoid table of OpenNMT's ``PositionalEncoding``) are state, not parameters, so they are kept apart."""
    return {"parameters": int(sum(p.numel() for p in model.parameters() if p.requires_grad)),
            "buffers": int(sum(b.numel() for b in model.buffers()))}


def count_checkpoint_parameters(path: str) -> Dict[str, int]:
    """:func:`count_parameters` of an OpenNMT checkpoint's model (with its generator)."""
    import warnings

    from onmt_xl.experiments.analysis import load_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _, _ = load_model(path)
    return count_parameters(model)