"""The run archive: atomic, concurrent-safe copies of a work directory's small files."""

import gzip
import threading
from pathlib import Path

import pytest

from onmt_xl import run_archive


def _workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "work"
    (wd / "align").mkdir(parents=True)
    (wd / "manifest.json").write_text('{"workdir": "%s"}\n' % wd, encoding="utf-8")
    (wd / "preorderer.json").write_text('{"tau": 0.5}\n', encoding="utf-8")
    for split in run_archive.ALIGN_SPLITS:
        (wd / "align" / f"{split}.gdfa").write_text(f"0-0 1-1 {split}\n", encoding="utf-8")
    return wd


def test_concurrent_save_run_never_collides(tmp_path):
    # two jobs finishing together both rewrite the run files; a shared temp name made one of them fail
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    errors, barrier = [], threading.Barrier(8)

    def save():
        barrier.wait()
        try:
            for _ in range(25):
                run_archive.save_run(wd, archive)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=save) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (archive / "manifest.json").read_text(encoding="utf-8") == (wd / "manifest.json").read_text(encoding="utf-8")
    assert not list(archive.glob("*.partial"))


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    run_archive.save_run(wd, archive)
    (wd / "manifest.json").write_text("new\n", encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(run_archive.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        run_archive.save_run(wd, archive)
    assert (archive / "manifest.json").read_text(encoding="utf-8") == '{"workdir": "%s"}\n' % wd


def test_alignments_round_trip_with_deterministic_bytes(tmp_path):
    wd = _workdir(tmp_path)
    run_archive.save_alignments(wd, tmp_path / "a1")
    run_archive.save_alignments(wd, tmp_path / "a2")
    for split in run_archive.ALIGN_SPLITS:
        a1 = (tmp_path / "a1" / "align" / f"{split}.gdfa.gz").read_bytes()
        assert a1 == (tmp_path / "a2" / "align" / f"{split}.gdfa.gz").read_bytes()
        assert gzip.decompress(a1).decode() == f"0-0 1-1 {split}\n"
    fresh = tmp_path / "fresh"
    assert run_archive.restore(tmp_path / "a1", fresh) == []
    assert (fresh / "align" / "train.gdfa").read_text(encoding="utf-8") == "0-0 1-1 train\n"
    # paths recorded in the manifest are rewritten to the new work directory
    run_archive.save_run(wd, tmp_path / "a1")
    fresh2 = tmp_path / "fresh2"
    run_archive.restore(tmp_path / "a1", fresh2)
    assert (fresh2 / "manifest.json").read_text(encoding="utf-8") == '{"workdir": "%s"}\n' % fresh2
