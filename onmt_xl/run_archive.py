"""A small, durable copy of an experiments work directory: what the report needs, without checkpoints.

``onmt-xl experiments --archive DIR`` keeps, per finished job, its ``done.json``, configuration,
commands, training log and every translation (``hyp.*``, ``sim.json``), plus the run's alignment links
(eflomal samples from ``/dev/urandom``, so links cannot be remade bit for bit; the preorderer and the
vocabularies are retrained from them deterministically). A run in a fresh work directory restores
these first, so finished jobs are neither retrained nor re-translated and their report stays the same.
Checkpoints are not kept: a restored job that needs a new translation variant is retrained.

Layout::

    DIR/workdir.txt                 the work directory the files were written in (paths are rewritten)
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
from typing import List

JOB_FILES = ("config.yaml", "commands.sh", "train.log", "translate_seconds.json", "sim.json")
TEXT_WITH_PATHS = ("config.yaml", "commands.sh", "manifest.json")
RUN_FILES = ("manifest.json", "preorderer.json")
ALIGN_SPLITS = ("test", "valid", "train")  # train last: its file marks the align stage as done


def _copy_text(src: Path, dst: Path, old: str = "", new: str = "") -> None:
    """Copy ``src`` to ``dst`` atomically, replacing the path prefix ``old`` by ``new`` when given."""
    text = src.read_text(encoding="utf-8")
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


def _open(archive: Path, workdir: Path, sub: str = "") -> Path:
    """``archive/sub``, created, with the work directory recorded (restore rewrites its paths)."""
    out = archive / sub
    out.mkdir(parents=True, exist_ok=True)
    (archive / "workdir.txt").write_text(str(workdir) + "\n", encoding="utf-8")
    return out


def save_alignments(workdir: Path, archive: Path) -> None:
    """Keep the run's links (gzip, deterministic bytes) unless already kept."""
    out = _open(archive, workdir, "align")
    for split in ALIGN_SPLITS:
        src, dst = workdir / "align" / f"{split}.gdfa", out / f"{split}.gdfa.gz"
        if src.exists() and not dst.exists():
            with open(src, "rb") as f, atomic_file(dst) as raw:
                with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as g:
                    shutil.copyfileobj(f, g)


def save_run(workdir: Path, archive: Path) -> None:
    """Keep the run's manifest and preorderer scores (rewritten as they change)."""
    _open(archive, workdir)
    for name in RUN_FILES:
        if (workdir / name).exists():
            _copy_text(workdir / name, archive / name)


def save_job(workdir: Path, archive: Path, name: str) -> bool:
    """Keep a finished job's results; False when it has not finished."""
    jd = workdir / "jobs" / name
    if not (jd / "done.json").exists():
        return False
    out = _open(archive, workdir, f"jobs/{name}")
    files = [jd / f for f in JOB_FILES if (jd / f).exists()]
    files += [p for p in sorted(jd.glob("hyp.*")) if not p.name.endswith(".partial")]
    for src in files:
        _copy_text(src, out / src.name)
    _copy_text(jd / "done.json", out / "done.json")  # last: an archived job is complete
    return True


def restore(archive: Path, workdir: Path) -> List[str]:
    """Copy kept alignments and jobs into ``workdir`` where it lacks them; returns the restored job names."""
    if not archive.exists():
        return []
    kept = archive / "workdir.txt"
    old = kept.read_text(encoding="utf-8").strip() if kept.exists() else ""
    new = str(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:  # a restored manifest keeps the earlier runs' history; this run appends to it
        if (archive / name).exists() and not (workdir / name).exists():
            _copy_text(archive / name, workdir / name, old, new)
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
                _copy_text(src, jd / src.name, *((old, new) if src.name in TEXT_WITH_PATHS else ()))
        _copy_text(ad / "done.json", jd / "done.json")
        restored.append(ad.name)
    return restored
