"""A small, durable copy of an experiments work directory: what the report needs, without checkpoints.

``onmt-xl experiments --archive DIR`` keeps, per finished job, its ``done.json``, configuration,
commands, training log and every translation (``hyp.*``, ``sim.json``), plus the run's alignment links
(eflomal samples from ``/dev/urandom``, so links cannot be remade bit for bit; the preorderer and the
vocabularies are retrained from them deterministically). A run in a fresh work directory restores
these first, so finished jobs are neither retrained nor re-translated and their report stays the same.
Checkpoints are not kept: a restored job that needs a new translation variant is retrained.

No kept file names a path of the machine it was saved on (:func:`portable`):

* the work directory is ``${WORKDIR}`` (so ``WORKDIR=... sh commands.sh`` reruns a job), also where a
  training log restored from elsewhere names another work directory's ``jobs/NAME``; restore writes the new
  work directory in its place in :data:`TEXT_WITH_PATHS` (the training log keeps ``${WORKDIR}``: only people
  read it, the report does not);
* the corpus' directory (``--data``, the gold set: their deepest common directory) is ``${DATA}``;
* Python's package directory (``.../site-packages``, named by the warnings in training logs) is
  ``${SITE_PACKAGES}``;
* OpenNMT's commands (``onmt_train`` ...) are named without their directory, as found on ``PATH``;
* anything else in the home directory is written ``~/...``.

Every file is thus independent of the directory and machine it was saved from: jobs saved from several work
directories into one archive (a run, then a ``--report-only`` elsewhere, then a run in a third place) all
restore alike. Translations and training logs, the bulk, are kept gzipped (:func:`kept_gzipped`; fixed
header bytes, rewritten only when their content changes) and restored uncompressed; translations are kept
byte for byte. Archives written before this kept absolute paths, uncompressed files and a ``workdir.txt``;
restore still reads them, and saving a job again rewrites it in this form.

Layout::

    DIR/{manifest,preorderer}.json  the run's history (commands, versions, machine, wall times) and preorderer scores
    DIR/preorderer_N.json           the scores of a preorderer trained on the first N pairs
    DIR/preorder_spread.jsonl       the preorderer's tau over eflomal runs (tools/study/preorder_spread.py)
    DIR/align/{test,valid,train}.gdfa.gz
    DIR/jobs/NAME/{done.json,config.yaml,commands.sh,train.log.gz,translate_seconds.json,sim.json,hyp.*.gz}
    DIR/jobs/NAME/curve.jsonl       a learning-curve job's scored points, kept as they are scored
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

WORKDIR = "${WORKDIR}"  # stands for the work directory in kept text files
DATA = "${DATA}"  # the corpus' directory
SITE_PACKAGES = "${SITE_PACKAGES}"  # Python's package directory
JOB_FILES = ("config.yaml", "commands.sh", "train.log", "translate_seconds.json", "sim.json", "curve.jsonl")
TEXT_WITH_PATHS = ("config.yaml", "commands.sh", "manifest.json")
RUN_FILES = ("manifest.json", "preorderer.json", "preorder_spread.jsonl",  # the last: tools/study/preorder_spread.py
             "crossfit.json")  # the cross-fitted positions' figures (onmt_xl.experiments.stages: crossfit)
#: the scores of preorderers trained on the first N pairs, and where a system trained on to its plateau stands
#: (evidence)
RUN_FILE_PATTERNS = ("preorderer_*.json", "plateau_*.json")
# tune: runs with a tuning split; train last: its file marks the align stage as done
ALIGN_SPLITS = ("test", "valid", "tune", "train")

_START = r"(?<![\w.~}$/-])"  # an absolute path starts here: not inside a word, a placeholder or another path
_PATH_CHARS = r"[^\s'\"`:;,()\[\]{}<>=]"
_SITE = re.compile(_START + "/" + _PATH_CHARS + r"*?/(?:site|dist)-packages(?![\w.-])")
_STOCK = re.compile(_START + "/" + _PATH_CHARS + r"*/(onmt_(?!xl\b)\w+)(?=[\s'\"`]|$)", re.M)  # not onmt_xl


def run_files(directory: Path) -> List[str]:
    """The run files of :data:`RUN_FILES` and :data:`RUN_FILE_PATTERNS` that ``directory`` holds."""
    names = [n for n in RUN_FILES if (directory / n).exists()]
    return names + sorted({p.name for pattern in RUN_FILE_PATTERNS for p in directory.glob(pattern)})


def kept_gzipped(name: str) -> bool:
    """Whether a job's file is kept as ``NAME.gz``: its translations and training log, the bulk of a run."""
    return name == "train.log" or name.startswith("hyp.")


def portable(text: str, workdir: Path, job: Optional[str] = None, data: Optional[str] = None) -> str:
    """``text`` with the machine paths named in the module docstring replaced by their placeholders:
    ``workdir`` (and, for ``job``, any other directory's ``.../jobs/JOB``), the corpus directory ``data``,
    Python's package directory, the directory of OpenNMT's commands and the home directory."""
    for wd in sorted({str(workdir), os.path.realpath(workdir)}, key=len, reverse=True):
        text = text.replace(wd, WORKDIR)
    if job:
        other = re.compile(_START + "/" + _PATH_CHARS + r"*?/jobs/" + re.escape(job) + r"(?=/|[\s'\"`]|$)", re.M)
        text = other.sub(lambda m: f"{WORKDIR}/jobs/{job}", text)
    if data and os.path.isabs(data) and data != os.sep:
        for d in sorted({data.rstrip(os.sep), os.path.realpath(data)}, key=len, reverse=True):
            text = re.sub(_START + re.escape(d) + r"(?=/|[\s'\"`]|$)", lambda m: DATA, text, flags=re.M)
    text = _SITE.sub(lambda m: SITE_PACKAGES, text)
    text = _STOCK.sub(lambda m: m.group(1), text)
    home = os.path.expanduser("~")
    if home not in ("", os.sep, "~"):
        text = re.sub(_START + re.escape(home.rstrip(os.sep)) + r"(?=/)", lambda m: "~", text)
    return text


def data_dir(*paths: Optional[str]) -> Optional[str]:
    """The deepest directory holding all of ``paths`` (the corpus' files), absolute; None for none or ``/``."""
    dirs = [os.path.dirname(os.path.abspath(p)) for p in paths if p]
    common = os.path.commonpath(dirs) if dirs else None
    return common if common and common != os.sep else None


def _replace(text: str, *replace: Tuple[str, str]) -> str:
    for old, new in replace:
        if old and old != new:
            text = text.replace(old, new)
    return text


def _copy_text(src: Path, dst: Path, *replace: Tuple[str, str]) -> None:
    """Copy ``src`` to ``dst`` atomically, replacing each ``(old, new)`` path prefix in turn."""
    _write(dst, _replace(src.read_text(encoding="utf-8"), *replace).encode("utf-8"))


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


def _write(dst: Path, data: bytes) -> None:
    with atomic_file(dst) as f:
        f.write(data)


def write_gzipped(dst: Path, data: bytes) -> None:
    """``data`` gzipped into ``dst`` with fixed header bytes (no name, no time), unless ``dst`` holds it already
    (another zlib may compress the same content to other bytes: the archive does not change for that)."""
    if dst.exists():
        with gzip.open(dst, "rb") as g:
            if g.read() == data:
                return
    with atomic_file(dst) as raw:
        with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as g:
            g.write(data)


def _read_gzipped(src: Path) -> bytes:
    with gzip.open(src, "rb") as g:
        return g.read()


def _copy_file(src: Path, dst: Path, *replace: Tuple[str, str]) -> None:
    """:func:`_copy_text`, replacing paths only in the files that hold them (:data:`TEXT_WITH_PATHS`)."""
    _copy_text(src, dst, *(replace if src.name in TEXT_WITH_PATHS else ()))


def _save(src: Path, out: Path, workdir: Path, job: Optional[str] = None, data: Optional[str] = None) -> None:
    """Keep ``src`` in the directory ``out``: text made :func:`portable` (translations byte for byte), gzipped
    where :func:`kept_gzipped` (an uncompressed copy of an older archive is then removed)."""
    raw = src.read_bytes()
    if not src.name.startswith("hyp."):
        raw = portable(raw.decode("utf-8"), workdir, job, data).encode("utf-8")
    if kept_gzipped(src.name):
        write_gzipped(out / (src.name + ".gz"), raw)
        (out / src.name).unlink(missing_ok=True)
    else:
        _write(out / src.name, raw)


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


def save_run(workdir: Path, archive: Path, replace: bool = True, data: Optional[str] = None) -> None:
    """Keep the run's manifest and preorderer scores (rewritten as they change; with ``replace=False``
    only where the archive has none, so a stale copy never overwrites a running run's history). ``data``:
    the corpus' directory (:func:`data_dir`), written ``${DATA}``."""
    archive.mkdir(parents=True, exist_ok=True)
    for name in run_files(workdir):
        if replace or not (archive / name).exists():
            _save(workdir / name, archive, workdir, data=data)


def save_job(workdir: Path, archive: Path, name: str, data: Optional[str] = None) -> bool:
    """Keep a finished job's results; False when it has not finished."""
    jd = workdir / "jobs" / name
    if not (jd / "done.json").exists():
        return False
    out = archive / "jobs" / name
    out.mkdir(parents=True, exist_ok=True)
    files = [jd / f for f in JOB_FILES if (jd / f).exists()]
    files += [p for p in sorted(jd.glob("hyp.*")) if not p.name.endswith(".partial")]
    for src in files:
        _save(src, out, workdir, name, data)
    _save(jd / "done.json", out, workdir, name, data)  # last: an archived job is complete
    return True


def save_curve(workdir: Path, archive: Path, name: str) -> bool:
    """Keep a job's scored learning-curve points (``curve.jsonl``) while it trains; False when it has none.

    They are restored only with the finished job (:func:`restore` needs its ``done.json``): a work directory
    that lost an unfinished job's checkpoints trains it again, and its points are scored again, not mixed
    with the lost run's, which stay in the archive as their record until the new run's replace them."""
    src = workdir / "jobs" / name / "curve.jsonl"
    if not src.exists():
        return False
    out = archive / "jobs" / name
    out.mkdir(parents=True, exist_ok=True)
    _save(src, out, workdir, name)
    return True


def _restore_file(src: Path, jd: Path, *paths: Tuple[str, str]) -> None:
    """A kept job file into the job directory ``jd``: ``NAME.gz`` uncompressed to ``NAME``, paths written in."""
    name = src.name[:-3] if src.name.endswith(".gz") else src.name
    raw = _read_gzipped(src) if name != src.name else src.read_bytes()
    if name in TEXT_WITH_PATHS:
        raw = _replace(raw.decode("utf-8"), *paths).encode("utf-8")
    _write(jd / name, raw)


def restore(archive: Path, workdir: Path) -> List[str]:
    """Copy kept alignments and jobs into ``workdir`` where it lacks them (a job with checkpoints there is
    training there and keeps its own files); returns the restored job names."""
    if not archive.exists():
        return []
    legacy = archive / "workdir.txt"  # archives of absolute paths name the directory they were saved from
    legacy = legacy.read_text(encoding="utf-8").strip() if legacy.exists() else ""
    paths = ((WORKDIR, str(workdir)), (legacy, str(workdir)))
    workdir.mkdir(parents=True, exist_ok=True)
    for name in run_files(archive):  # a restored manifest keeps the earlier runs' history; this run appends to it
        if not (workdir / name).exists():
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
        # finished here, or training here past what was archived (extended, or retrained without its checkpoints):
        # the work directory's files are the newer ones, its log included
        if (jd / "done.json").exists() or any(jd.glob("model_step_*.pt")):
            continue
        jd.mkdir(parents=True, exist_ok=True)
        for src in sorted(ad.iterdir()):
            if src.name != "done.json" and not src.name.endswith(".partial"):
                _restore_file(src, jd, *paths)
        _copy_text(ad / "done.json", jd / "done.json")
        restored.append(ad.name)
    return restored
