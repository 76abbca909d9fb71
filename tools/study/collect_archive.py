"""Bring the finished jobs of a queue's archive into the repository's archive (the queue trains from a snapshot of the
code, whose ``reports/`` is its own).

    python tools/study/collect_archive.py --from runs/queue_code_v5/reports/decisive_jaen --to reports/decisive_jaen

A job directory counts once it holds ``done.json``. A finished job missing from ``--to`` is copied; one present there
with other files is left alone and named, unless ``--replace`` names it (a job retrained on purpose, e.g. with another
option). The archive's inputs (its eflomal links ``align/``, the preorderer's scores: everything beside ``jobs/`` and
``manifest.json``) are copied where ``--to`` lacks them, so a fresh work directory regenerates the report from the
same links (a JSON file that differs only in its timings, ``seconds``, counts as the same); one that differs is kept
(the jobs trained on the links they name) unless ``--replace`` names it (a stage's state, e.g. ``plateau_lstm.json``,
once its jobs are replaced). ``--replace`` takes names separated by commas and may be repeated. The archive's
``manifest.json`` (its run history) follows the source's. Prints what it did, one line per job or input; ``--dry-run``
only prints. A ``--to`` that does not exist yet is made; a ``--from`` whose stage has archived only its inputs so far
(a manifest, no ``jobs/`` yet) gives those.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


#: keys of an archive's JSON files that time a stage rather than say what it computed
TIMING_KEYS = frozenset({"seconds"})


def _untimed(value):
    """``value`` (parsed JSON) without its :data:`TIMING_KEYS`, at any depth."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _same_json(a: Path, b: Path) -> bool:
    """Two JSON files that say the same but for their :data:`TIMING_KEYS` (a stage recomputed on another machine)."""
    try:
        return _untimed(json.loads(a.read_text(encoding="utf-8"))) == _untimed(
            json.loads(b.read_text(encoding="utf-8")))
    except ValueError:  # not UTF-8 or not JSON (UnicodeDecodeError is a ValueError)
        return False


def _same(a: Path, b: Path) -> bool:
    """Both paths hold the same files: the same bytes, or JSON equal but for its timings (directories compared
    recursively)."""
    if a.is_file() or b.is_file():
        return a.is_file() and b.is_file() and (filecmp.cmp(a, b, shallow=False)
                                                or a.suffix == b.suffix == ".json" and _same_json(a, b))
    names = sorted(p.name for p in a.iterdir())
    if names != sorted(p.name for p in b.iterdir()):
        return False
    return all(_same(a / name, b / name) for name in names)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)


def _put(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target``, over whatever ``target`` holds."""
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    _copy(source, target)


def collect(source: Path, dest: Path, replace: Sequence[str] = (), dry_run: bool = False) -> List[str]:
    """Copy ``source``'s inputs and finished jobs into ``dest``; the lines that say what happened to each."""
    out = []
    inputs = sorted(p for p in source.iterdir() if p.name not in ("jobs", "manifest.json"))
    jobs = sorted(p for p in (source / "jobs").glob("*") if (p / "done.json").is_file())  # none yet: no jobs/
    for entry, target, why in ([(p, dest / p.name, "the archive's jobs trained on its own; ") for p in inputs]
                               + [(p, dest / "jobs" / p.name, "") for p in jobs]):
        if target.exists() and _same(entry, target):
            continue
        if target.exists() and entry.name not in replace:
            out.append(f"kept {target}: it differs from {entry} ({why}--replace {entry.name} to take the source's)")
            continue
        out.append(("replaced " if target.exists() else "copied ") + str(target))
        if not dry_run:
            _put(entry, target)
    manifest = source / "manifest.json"
    if manifest.is_file() and not ((dest / "manifest.json").is_file()
                                   and filecmp.cmp(manifest, dest / "manifest.json", shallow=False)):
        out.append(f"updated {dest / 'manifest.json'}")
        if not dry_run:
            shutil.copyfile(manifest, dest / "manifest.json")
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    from onmt_xl.core.errors import XLUsageError

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="source", required=True, type=Path, help="the queue's archive")
    p.add_argument("--to", dest="dest", required=True, type=Path, help="the repository's archive")
    p.add_argument("--replace", action="append", default=[], metavar="NAMES",
                   help="jobs or archive entries (comma-separated, repeatable) whose source copy replaces another")
    p.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = p.parse_args(argv)
    if not ((args.source / "jobs").is_dir() or (args.source / "manifest.json").is_file()):
        raise XLUsageError(str(args.source), None, "is not an archive: it has no jobs/ directory nor manifest.json")
    if args.dest.exists() and not ((args.dest / "jobs").is_dir() or (args.dest / "manifest.json").is_file()):
        # an archive whose stage archived only its inputs so far (a manifest, no job yet) takes its first jobs
        raise XLUsageError(str(args.dest), None, "is not an archive: it has no jobs/ directory nor manifest.json")
    if args.source.resolve() == args.dest.resolve():
        raise XLUsageError(str(args.source), None, "--from and --to are the same archive")
    replace = [name for names in args.replace for name in names.split(",") if name]
    for name in replace:
        if not ((args.source / "jobs" / name).is_dir() or (name not in ("jobs", "manifest.json")
                                                           and (args.source / name).exists())):
            raise XLUsageError(str(args.source), None, f"--replace {name}: no such job or archive entry there")
    if not args.dest.exists() and not args.dry_run:
        (args.dest / "jobs").mkdir(parents=True)
    lines = collect(args.source, args.dest, replace, args.dry_run)
    print("\n".join(lines) if lines else f"{args.dest}: nothing to collect")
    return 0


if __name__ == "__main__":
    from onmt_xl.core.errors import install_excepthook

    install_excepthook()
    sys.exit(main())
