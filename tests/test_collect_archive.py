"""tools/study/collect_archive.py: a queue's finished jobs into the repository's archive, never over a different copy."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "study"))

import collect_archive  # noqa: E402


def _job(root: Path, name: str, hyp: str, done: bool = True) -> None:
    d = root / "jobs" / name
    d.mkdir(parents=True)
    (d / "hyp.test").write_text(hyp)
    if done:
        (d / "done.json").write_text("{}")


def test_new_finished_jobs_are_copied_a_different_one_is_kept_unless_named(tmp_path):
    src, dst = tmp_path / "queue", tmp_path / "repo"
    _job(src, "baseline_s1", "same\n")
    _job(dst, "baseline_s1", "same\n")
    _job(src, "combination_s1", "new\n")
    _job(src, "combination_s2", "half\n", done=False)  # training: not collected
    _job(src, "inxl_s1", "retrained\n")
    _job(dst, "inxl_s1", "old\n")
    (src / "manifest.json").write_text('{"runs": 2}')
    assert collect_archive.collect(src, dst, dry_run=True) == [
        f"copied {dst / 'jobs' / 'combination_s1'}",
        f"kept {dst / 'jobs' / 'inxl_s1'}: it differs from {src / 'jobs' / 'inxl_s1'} (--replace inxl_s1 to take the "
        "source's)", f"updated {dst / 'manifest.json'}"]
    assert not (dst / "jobs" / "combination_s1").exists()  # a dry run changes nothing
    lines = collect_archive.collect(src, dst, replace=["inxl_s1"])
    assert lines[1] == f"replaced {dst / 'jobs' / 'inxl_s1'}"
    assert (dst / "jobs" / "inxl_s1" / "hyp.test").read_text() == "retrained\n"
    assert (dst / "jobs" / "combination_s1" / "done.json").exists() and not (dst / "jobs" / "combination_s2").exists()
    assert (dst / "manifest.json").read_text() == '{"runs": 2}'
    assert collect_archive.collect(src, dst) == []  # nothing left to do


def test_a_source_that_is_no_archive_is_one_line_and_a_new_destination_is_made(tmp_path):
    tool = [sys.executable, str(REPO / "tools" / "study" / "collect_archive.py")]
    (tmp_path / "a" / "jobs").mkdir(parents=True)
    proc = subprocess.run(tool + ["--from", str(tmp_path / "none"), "--to", str(tmp_path / "a")], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "has no jobs/ directory" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "notarchive").mkdir()
    proc = subprocess.run(tool + ["--from", str(tmp_path / "a"), "--to", str(tmp_path / "notarchive")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "notarchive: is not an archive" in proc.stderr
    _job(tmp_path / "a", "baseline_s1", "x\n")
    proc = subprocess.run(tool + ["--from", str(tmp_path / "a"), "--to", str(tmp_path / "new")], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and (tmp_path / "new" / "jobs" / "baseline_s1" / "done.json").exists()
    inputs_only = tmp_path / "inputs_only"  # a stage archived its inputs and manifest, no job yet
    inputs_only.mkdir()
    (inputs_only / "manifest.json").write_text("{}")
    proc = subprocess.run(tool + ["--from", str(tmp_path / "a"), "--to", str(inputs_only)], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and (inputs_only / "jobs" / "baseline_s1" / "done.json").exists()


def test_the_archive_inputs_are_copied_where_missing_and_replaced_only_when_named(tmp_path):
    src, dst = tmp_path / "queue", tmp_path / "repo"
    _job(src, "baseline_s1", "x\n")
    (src / "align").mkdir()
    (src / "align" / "train.gdfa").write_text("0-0\n")
    (src / "preorderer.json").write_text('{"tau": 0.5}')
    assert collect_archive.collect(src, dst) == [f"copied {dst / 'align'}", f"copied {dst / 'preorderer.json'}",
                                                 f"copied {dst / 'jobs' / 'baseline_s1'}"]
    assert (dst / "align" / "train.gdfa").read_text() == "0-0\n"
    assert collect_archive.collect(src, dst) == []
    (src / "align" / "train.gdfa").write_text("0-1\n")  # other links: the archive's stay
    (src / "preorderer.json").write_text('{"tau": 0.6}')
    lines = collect_archive.collect(src, dst)
    assert lines == [f"kept {dst / 'align'}: it differs from {src / 'align'} (the archive's jobs trained on its own; "
                     "--replace align to take the source's)",
                     f"kept {dst / 'preorderer.json'}: it differs from {src / 'preorderer.json'} (the archive's jobs "
                     "trained on its own; --replace preorderer.json to take the source's)"]
    assert (dst / "align" / "train.gdfa").read_text() == "0-0\n"
    assert (dst / "preorderer.json").read_text() == '{"tau": 0.5}'
    assert collect_archive.collect(src, dst, replace=["preorderer.json"])[1] == f"replaced {dst / 'preorderer.json'}"
    assert (dst / "preorderer.json").read_text() == '{"tau": 0.6}'
    assert (dst / "align" / "train.gdfa").read_text() == "0-0\n"
    assert collect_archive.collect(src, dst, replace=["align"]) == [f"replaced {dst / 'align'}"]
    assert (dst / "align" / "train.gdfa").read_text() == "0-1\n"


def test_replace_may_be_repeated_and_comma_separated(tmp_path):
    src, dst = tmp_path / "queue", tmp_path / "repo"
    for name in ("a_s1", "a_s2", "a_s3"):
        _job(src, name, "new\n")
        _job(dst, name, "old\n")
    (src / "plateau_a.json").write_text('{"status": "plateau"}')
    (dst / "plateau_a.json").write_text('{"status": "training"}')
    tool = [sys.executable, str(REPO / "tools" / "study" / "collect_archive.py"), "--from", str(src), "--to", str(dst)]
    proc = subprocess.run(tool + ["--replace", "a_s1", "--replace", "a_s2,plateau_a.json"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    hyps = [(dst / "jobs" / n / "hyp.test").read_text() for n in ("a_s1", "a_s2", "a_s3")]
    assert hyps == ["new\n", "new\n", "old\n"]
    assert (dst / "plateau_a.json").read_text() == '{"status": "plateau"}'
    (src / "jobs" / "a_s1" / "hyp.test").write_text("newer\n")
    proc = subprocess.run(tool[:-1] + [str(tmp_path / "fresh"), "--replace", "a_s1,a_s4"], capture_output=True,
                          text=True)  # a typo: nothing done, not even the new archive made
    assert proc.returncode == 2 and "--replace a_s4: no such job or archive entry there" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "fresh").exists()
    proc = subprocess.run(tool + ["--replace", "a_s1,a_s4"], capture_output=True, text=True)
    assert proc.returncode == 2 and (dst / "jobs" / "a_s1" / "hyp.test").read_text() == "new\n"


def test_a_source_with_inputs_only_gives_them(tmp_path):
    """A queue stage that archived its inputs and manifest but no job yet (no jobs/): its inputs are collected."""
    src, dst = tmp_path / "queue", tmp_path / "repo"
    src.mkdir()
    (src / "manifest.json").write_text('{"runs": 1}')
    (src / "crossfit.json").write_text('{"tau": 0.85}')
    tool = [sys.executable, str(REPO / "tools" / "study" / "collect_archive.py")]
    proc = subprocess.run(tool + ["--from", str(src), "--to", str(dst)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (dst / "crossfit.json").read_text() == '{"tau": 0.85}' and (dst / "manifest.json").is_file()
    assert not (src / "jobs").exists()  # the queue's archive is left as it was


def test_an_input_recomputed_elsewhere_that_differs_only_in_its_timings_is_the_same(tmp_path):
    src, dst = tmp_path / "queue", tmp_path / "repo"
    for root, seconds in ((src, 88.6), (dst, 263.9)):
        root.mkdir()
        (root / "crossfit.json").write_text('{"folds": [{"tau": 0.85, "seconds": %s}], "seconds": %s}' % (seconds,
                                                                                                        seconds))
    (src / "preorderer.json").write_text('{"tau": 0.86, "seconds": 1}')
    (dst / "preorderer.json").write_text('{"tau": 0.85, "seconds": 1}')
    (src / "broken.json").write_text('{"tau": ')
    (dst / "broken.json").write_text('{"tau": 0}')
    assert collect_archive.collect(src, dst) == [
        f"kept {dst / 'broken.json'}: it differs from {src / 'broken.json'} (the archive's jobs trained on its own; "
        "--replace broken.json to take the source's)",
        f"kept {dst / 'preorderer.json'}: it differs from {src / 'preorderer.json'} (the archive's jobs trained on its "
        "own; --replace preorderer.json to take the source's)"]
    assert '"seconds": 263.9' in (dst / "crossfit.json").read_text()
