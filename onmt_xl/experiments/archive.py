"""A small, durable copy of an experiments work directory: what the report needs, without checkpoints.

``onmt-xl experiments --archive DIR`` keeps, per finished job, its ``done.json``, configuration,
commands, training log and every translation (``hyp.*``, ``sim.json``), plus the run's alignment links
(eflomal samples from ``/dev/urandom``, so links cannot be remade bit for bit; the preorderer and the
vocabularies are retrained from them deterministically). A run in a fresh work directory restores
these first, so finished jobs are neither retrained nor re-translated and their report stays the same.
Checkpoints are not kept: a restored job that needs a new translation variant is retrained.

Kept configurations, commands and the manifest name the work directory ``${WORKDIR}`` (so
``WORKDIR=... sh commands.sh`` reruns a job); restore writes the new work directory in its place. Every file
is thus independent of the directory it was saved from: jobs saved from several work directories into one
archive (a run, then a ``--report-only`` elsewhere, then a run in a third place) all restore alike.
Archives written before this kept absolute paths and a ``workdir.txt``; restore still reads them.

Layout::

    DIR/{manifest,preorderer}.json  the run's history (commands, versions, machine, wall times) and preorderer scores
    DIR/align/{test,valid,train}.gdfa.gz
    DIR/jobs/NAME/{done.json,config.yaml,commands.sh,train.log,translate_seconds.json,sim.json,hyp.*}
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path
from typing import List, Tuple

WORKDIR = "${WORKDIR}"  # stands for the work directory in kept text files
JOB_FILES = ("config.yaml", "commands.sh", "train.log", "translate_seconds.json", "sim.json")
TEXT_WITH_PATHS = ("config.yaml", "commands.sh", "manifest.json")
RUN_FILES = ("manifest.json", "preorderer.json")
ALIGN_SPLITS = ("test", "valid", "tune", "train")  # tune: runs with a tuning split; train last: its file marks the align stage as done


def _copy_text(src: Path, dst: Path, *replace: Tuple[str, str]) -> None:
    """Copy ``src`` to ``dst`` atomically, replacing each ``(old, new)`` path prefix in turn."""
    text = src.read_text(encoding="utf-8")
    for old, new in replace:
        if old and old != new:
            text = text.replace(old, new)
    with atomic_file(dst) as f:
        f.write(text.encode("utf-8"))


class atomic_file:
    """A uniquely named ``dst.*.partial`` file, opened for binary writing, that replaces ``dst`` on a clean
    exit and is removed otherwise (two jobs finishing together may write the same file; a killed writer
    leaves ``dst`` whole)."""

    def __init__(self, dst: Path):
        self.dst = dst

    def __enter__(self):
        fd, self.tmp = tempfile.mkstemp(dir=self.dst.parent, prefix=self.dst.name + ".", suffix=".partial")
        self.f = os.fdopen(fd, "wb")
        return self.f

    def __exit__(self, exc_type, exc, tb):
        self.f.close()
        if exc_type is None:
            os.chmod(self.tmp, 0o644)
            os.replace(self.tmp, self.dst)
        else:
            os.unlink(self.tmp)
        return False


def _copy_file(src: Path, dst: Path, *replace: Tuple[str, str]) -> None:
    """:func:`_copy_text`, replacing paths only in the files that hold them (:data:`TEXT_WITH_PATHS`)."""
    _copy_text(src, dst, *(replace if src.name in TEXT_WITH_PATHS else ()))


def save_alignments(workdir: Path, archive: Path) -> None:
    """Keep the run's links (gzip, deterministic bytes) unless already kept."""
    out = archive / "align"
    out.mkdir(parents=True, exist_ok=True)
    for split in ALIGN_SPLITS:
        src, dst = workdir / "align" / f"{split}.gdfa", out / f"{split}.gdfa.gz"
        if src.exists() and not dst.exists():
            with open(src, "rb") as f, atomic_file(dst) as raw:
                with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as g:
                    shutil.copyfileobj(f, g)


def save_run(workdir: Path, archive: Path, replace: bool = True) -> None:
    """Keep the run's manifest and preorderer scores (rewritten as they change; with ``replace=False``
    only where the archive has none, so a stale copy never overwrites a running run's history)."""
    archive.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        if (workdir / name).exists() and (replace or not (archive / name).exists()):
            _copy_file(workdir / name, archive / name, (str(workdir), WORKDIR))


def save_job(workdir: Path, archive: Path, name: str) -> bool:
    """Keep a finished job's results; False when it has not finished."""
    jd = workdir / "jobs" / name
    if not (jd / "done.json").exists():
        return False
    out = archive / "jobs" / name
    out.mkdir(parents=True, exist_ok=True)
    files = [jd / f for f in JOB_FILES if (jd / f).exists()]
    files += [p for p in sorted(jd.glob("hyp.*")) if not p.name.endswith(".partial")]
    for src in files:
        _copy_file(src, out / src.name, (str(workdir), WORKDIR))
    _copy_text(jd / "done.json", out / "done.json")  # last: an archived job is complete
    return True


def restore(archive: Path, workdir: Path) -> List[str]:
    """Copy kept alignments and jobs into ``workdir`` where it lacks them; returns the restored job names."""
    if not archive.exists():
        return []
    legacy = archive / "workdir.txt"  # archives of absolute paths name the directory they were saved from
    legacy = legacy.read_text(encoding="utf-8").strip() if legacy.exists() else ""
    paths = ((WORKDIR, str(workdir)), (legacy, str(workdir)))
    workdir.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:  # a restored manifest keeps the earlier runs' history; this run appends to it
        if (archive / name).exists() and not (workdir / name).exists():
            _copy_file(archive / name, workdir / name, *paths)
    if not (workdir / "align" / "train.gdfa").exists() and (archive / "align" / "train.gdfa.gz").exists():
        (workdir / "align").mkdir(parents=True, exist_ok=True)
        for split in ALIGN_SPLITS:
            src = archive / "align" / f"{split}.gdfa.gz"
            if src.exists():
                dst = workdir / "align" / f"{split}.gdfa"
                with gzip.open(src, "rb") as g, atomic_file(dst) as f:
                    shutil.copyfileobj(g, f)
    restored = []
    for ad in sorted(p for p in (archive / "jobs").glob("*") if (p / "done.json").exists()):
        jd = workdir / "jobs" / ad.name
        if (jd / "done.json").exists():
            continue
        jd.mkdir(parents=True, exist_ok=True)
        for src in sorted(ad.iterdir()):
            if src.name != "done.json":
                _copy_file(src, jd / src.name, *paths)
        _copy_text(ad / "done.json", jd / "done.json")
        restored.append(ad.name)
    return restored
