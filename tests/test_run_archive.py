"""The run archive: atomic, concurrent-safe copies of a work directory's small files."""

import gzip
import shutil
import threading
from pathlib import Path

import pytest

from onmt_xl.experiments import archive as run_archive


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
    assert (archive / "manifest.json").read_text(encoding="utf-8") == '{"workdir": "${WORKDIR}"}\n'
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
    assert (archive / "manifest.json").read_text(encoding="utf-8") == '{"workdir": "${WORKDIR}"}\n'


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


def _job(wd: Path, name: str) -> None:
    jd = wd / "jobs" / name
    jd.mkdir(parents=True)
    (jd / "config.yaml").write_text(f"path_src: {wd}/data/train.src\nsave_model: {jd}/model\n", encoding="utf-8")
    (jd / "commands.sh").write_text(f"onmt_train -config {jd}/config.yaml\n", encoding="utf-8")
    (jd / "hyp.test").write_text("a b c\n", encoding="utf-8")
    (jd / "done.json").write_text('{"train_seconds": 1.0}\n', encoding="utf-8")


def test_jobs_saved_from_several_work_directories_all_restore_to_the_new_one(tmp_path):
    # a run in A, a --report-only sweep from B (re-saving A's restored jobs), a run in C adding a job: each
    # kept file names its paths ${WORKDIR}, so a restore into D rewrites every job (one recorded work
    # directory for the whole archive left B's or A's paths in some jobs, and their configs were refused)
    archive = tmp_path / "archive"
    a = _workdir(tmp_path)
    _job(a, "baseline")
    run_archive.save_job(a, archive, "baseline")
    run_archive.save_run(a, archive)
    b = tmp_path / "b"
    assert run_archive.restore(archive, b) == ["baseline"]
    assert run_archive.save_job(b, archive, "baseline")
    c = tmp_path / "c"
    run_archive.restore(archive, c)
    _job(c, "combination")
    run_archive.save_job(c, archive, "combination")
    kept = (archive / "jobs" / "baseline" / "config.yaml").read_text(encoding="utf-8")
    assert kept == "path_src: ${WORKDIR}/data/train.src\nsave_model: ${WORKDIR}/jobs/baseline/model\n"
    d = tmp_path / "d"
    assert run_archive.restore(archive, d) == ["baseline", "combination"]
    for name in ("baseline", "combination"):
        cfg = (d / "jobs" / name / "config.yaml").read_text(encoding="utf-8")
        assert cfg == f"path_src: {d}/data/train.src\nsave_model: {d}/jobs/{name}/model\n"
        assert (d / "jobs" / name / "commands.sh").read_text(encoding="utf-8") == \
            f"onmt_train -config {d}/jobs/{name}/config.yaml\n"
    assert (d / "manifest.json").read_text(encoding="utf-8") == '{"workdir": "%s"}\n' % d


def test_an_archive_of_absolute_paths_still_restores(tmp_path):
    # the format before ${WORKDIR}: absolute paths and the saving work directory in workdir.txt
    old, archive = tmp_path / "old", tmp_path / "archive"
    _job(old, "baseline")
    (archive / "jobs").mkdir(parents=True)
    shutil.copytree(old / "jobs" / "baseline", archive / "jobs" / "baseline")
    (archive / "workdir.txt").write_text(f"{old}\n", encoding="utf-8")
    new = tmp_path / "new"
    assert run_archive.restore(archive, new) == ["baseline"]
    assert (new / "jobs" / "baseline" / "config.yaml").read_text(encoding="utf-8") == \
        f"path_src: {new}/data/train.src\nsave_model: {new}/jobs/baseline/model\n"


def test_a_sweep_keeps_the_archived_run_history(tmp_path):
    # --report-only elsewhere restores the manifest, then sweeps: its stale copy must not replace the
    # history a running run keeps writing into the archive
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    run_archive.save_run(wd, archive)
    stale = tmp_path / "stale"
    run_archive.restore(archive, stale)
    (wd / "manifest.json").write_text('{"runs": 2}\n', encoding="utf-8")
    run_archive.save_run(wd, archive)
    run_archive.save_run(stale, archive, replace=False)
    assert (archive / "manifest.json").read_text(encoding="utf-8") == '{"runs": 2}\n'
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "manifest.json").write_text('{"runs": 1}\n', encoding="utf-8")
    run_archive.save_run(fresh, tmp_path / "new_archive", replace=False)  # an archive without one gets it
    assert (tmp_path / "new_archive" / "manifest.json").read_text(encoding="utf-8") == '{"runs": 1}\n'


def test_kept_files_name_no_machine_path_and_translations_restore_byte_for_byte(tmp_path, monkeypatch):
    # a training log names Python's package directory, and (restored from an archive saved elsewhere) another
    # work directory; commands.sh names the directory of OpenNMT's commands; the manifest the corpus and home
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    site = home / ".pyenv/versions/3.11.7/lib/python3.11/site-packages"
    wd, archive, data = _workdir(tmp_path), tmp_path / "archive", tmp_path / "shared" / "data"
    _job(wd, "baseline")
    jd = wd / "jobs" / "baseline"
    (jd / "commands.sh").write_text(f"{home}/.pyenv/versions/3.11.7/bin/onmt_train -config {jd}/config.yaml\n",
                                    encoding="utf-8")
    (jd / "train.log").write_text(f"{site}/onmt/trainer.py:498: FutureWarning\n"
                                  f"[INFO] Saving checkpoint /elsewhere/runs/x/jobs/baseline/model_step_5.pt\n"
                                  "[INFO] Step 50/ 100; 1332/1037 tok/s\n", encoding="utf-8")
    hyp = "日本 語 。\n\nx ||| 0-0 1-1\n".encode("utf-8")
    (jd / "hyp.test").write_bytes(hyp)
    (wd / "manifest.json").write_text(f'{{"command": "onmt-xl experiments --data {data}/enja --x {home}/y"}}\n',
                                      encoding="utf-8")
    run_archive.save_job(wd, archive, "baseline", str(data))
    run_archive.save_run(wd, archive, data=str(data))
    kept = archive / "jobs" / "baseline"
    assert sorted(p.name for p in kept.iterdir()) == ["commands.sh", "config.yaml", "done.json", "hyp.test.gz",
                                                      "train.log.gz"]
    assert (kept / "commands.sh").read_text(encoding="utf-8") == \
        "onmt_train -config ${WORKDIR}/jobs/baseline/config.yaml\n"
    assert gzip.decompress((kept / "train.log.gz").read_bytes()).decode("utf-8") == (
        "${SITE_PACKAGES}/onmt/trainer.py:498: FutureWarning\n"
        "[INFO] Saving checkpoint ${WORKDIR}/jobs/baseline/model_step_5.pt\n"
        "[INFO] Step 50/ 100; 1332/1037 tok/s\n")
    assert (archive / "manifest.json").read_text(encoding="utf-8") == \
        '{"command": "onmt-xl experiments --data ${DATA}/enja --x ~/y"}\n'
    for p in archive.rglob("*"):
        if p.is_file():
            raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            assert str(tmp_path).encode() not in raw and b"/elsewhere/" not in raw, p
    fresh = tmp_path / "fresh"
    assert run_archive.restore(archive, fresh) == ["baseline"]
    fd = fresh / "jobs" / "baseline"
    assert (fd / "hyp.test").read_bytes() == hyp and not (fd / "hyp.test.gz").exists()
    assert (fd / "commands.sh").read_text(encoding="utf-8") == f"onmt_train -config {fd}/config.yaml\n"
    assert "Saving checkpoint ${WORKDIR}/jobs/baseline/" in (fd / "train.log").read_text(encoding="utf-8")
    # saving the restored job again changes nothing (not even the gzip files' times)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in kept.iterdir() if p.suffix == ".gz"}
    run_archive.save_job(fresh, archive, "baseline", str(data))
    assert before == {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in kept.iterdir() if p.suffix == ".gz"}


def test_an_archive_of_uncompressed_translations_restores_and_is_rewritten_gzipped(tmp_path):
    old, archive = _workdir(tmp_path), tmp_path / "archive"
    _job(old, "baseline")
    (archive / "jobs").mkdir(parents=True)
    shutil.copytree(old / "jobs" / "baseline", archive / "jobs" / "baseline")  # the format before: hyp.test as is
    new = tmp_path / "new"
    assert run_archive.restore(archive, new) == ["baseline"]
    assert (new / "jobs" / "baseline" / "hyp.test").read_text(encoding="utf-8") == "a b c\n"
    assert run_archive.save_job(new, archive, "baseline")
    kept = archive / "jobs" / "baseline"
    assert not (kept / "hyp.test").exists() and gzip.decompress((kept / "hyp.test.gz").read_bytes()) == b"a b c\n"


def test_curve_points_are_kept_while_training_and_restored_only_with_the_finished_job(tmp_path):
    # an unfinished curve job lost with its checkpoints trains again in a new work directory: its points are
    # scored again there, not taken from the lost run; a finished job's points come back with it
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    jd = wd / "jobs" / "baseline_s1"
    jd.mkdir(parents=True)
    assert not run_archive.save_curve(wd, archive, "baseline_s1")  # nothing scored yet
    (jd / "curve.jsonl").write_text('{"step": 1000, "bleu": 18.6}\n', encoding="utf-8")
    assert run_archive.save_curve(wd, archive, "baseline_s1")
    kept = archive / "jobs" / "baseline_s1" / "curve.jsonl"
    assert kept.read_text(encoding="utf-8") == '{"step": 1000, "bleu": 18.6}\n'
    fresh = tmp_path / "fresh"
    assert run_archive.restore(archive, fresh) == []
    assert not (fresh / "jobs" / "baseline_s1").exists()
    (jd / "curve.jsonl").write_text('{"step": 1000, "bleu": 18.6}\n{"step": 2000, "bleu": 32.1}\n', encoding="utf-8")
    (jd / "done.json").write_text("{}\n", encoding="utf-8")
    assert run_archive.save_job(wd, archive, "baseline_s1")
    assert run_archive.restore(archive, fresh) == ["baseline_s1"]
    assert (fresh / "jobs" / "baseline_s1" / "curve.jsonl").read_text(encoding="utf-8").count("step") == 2


def test_the_scores_of_preorderers_on_the_first_pairs_and_the_spread_travel_with_the_run(tmp_path):
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    (wd / "preorderer_10000.json").write_text('{"tau": 0.83}\n', encoding="utf-8")
    (wd / "preorderer_10000.xlp").write_bytes(b"model")  # the model is retrained from the links, not kept
    (wd / "preorder_spread.jsonl").write_text('{"run": 1, "tune_tau": 0.86}\n', encoding="utf-8")
    run_archive.save_run(wd, archive)
    assert sorted(p.name for p in archive.iterdir()) == ["manifest.json", "preorder_spread.jsonl", "preorderer.json",
                                                         "preorderer_10000.json"]
    fresh = tmp_path / "fresh"
    run_archive.restore(archive, fresh)
    assert (fresh / "preorderer_10000.json").read_text(encoding="utf-8") == '{"tau": 0.83}\n'


def test_a_job_training_here_past_its_archived_end_keeps_its_own_files(tmp_path):
    # the plateau stage extends a finished, archived job (its done.json removed here); stopped mid-round, the next
    # start must not bring the archived log, configuration and done.json back over the job's own
    wd, archive = _workdir(tmp_path), tmp_path / "archive"
    jd = wd / "jobs" / "lstm_plateau_s1"
    jd.mkdir(parents=True)
    (jd / "train.log").write_text("steps 8000-12000\n", encoding="utf-8")
    (jd / "done.json").write_text("{}\n", encoding="utf-8")
    assert run_archive.save_job(wd, archive, "lstm_plateau_s1")
    (jd / "done.json").unlink()  # extended to 16,000 steps, stopped at 14,000
    (jd / "train.log").write_text("steps 8000-12000\nsteps 12000-14000\n", encoding="utf-8")
    (jd / "model_step_14000.pt").write_bytes(b"")
    assert run_archive.restore(archive, wd) == []
    assert (jd / "train.log").read_text(encoding="utf-8") == "steps 8000-12000\nsteps 12000-14000\n"
    assert not (jd / "done.json").exists()
    (jd / "model_step_14000.pt").unlink()  # no checkpoint here (a new machine's copy): the archive's job comes back
    assert run_archive.restore(archive, wd) == ["lstm_plateau_s1"]
    assert (jd / "train.log").read_text(encoding="utf-8") == "steps 8000-12000\n" and (jd / "done.json").exists()
