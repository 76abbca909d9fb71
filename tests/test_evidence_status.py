"""``onmt-xl evidence --stage status``: job states, speeds from the training logs, the hours left."""

import json
import subprocess
import sys

import pytest

from onmt_xl.experiments.evidence_status import (STALE_SECONDS, JobStatus, attempt_intervals, job_status,
                                                  plan_hours, status_lines)
from onmt_xl.experiments.plan import Job
from tests.conftest import run_env


def _step(step, sec, total=100):
    return (f"[2026-11-26 01:05:48,159 INFO] Step {step}/ {total}; acc: 7.4; ppl: 4049.5; xent: 8.3; lr: 0.00007; "
            f"sents:    8006; bsz: 1821/1409/160; 2749/2127 tok/s; {sec:6d} sec;")


START = "[2026-11-26 01:05:15,033 INFO] Starting training on CPU, could be very slow"
RESUME = ("[2026-11-26 01:51:04,649 INFO] Loading checkpoint from /x/model_step_20.pt\n"
          "[2026-11-26 01:51:06,237 INFO] -exact_resume: skipping the 20 batches of steps 1-20, then restoring the "
          "checkpoint's RNG states")
# attempt 1: steps 10, 20, 30 at 10, 30, 60 s (2 and 3 s per step); attempt 2 resumes at 20: 25 and 35 at 5 and 10 s
LOG = "\n".join([START, _step(10, 10), _step(20, 30), _step(30, 60), RESUME, START, _step(25, 5), _step(35, 10), ""])


def test_attempt_intervals_restart_with_each_attempt():
    assert attempt_intervals(LOG) == [[2.0, 3.0], [0.5]]
    assert attempt_intervals(_step(10, 10)) == []  # a report line before any attempt starts is not counted
    assert attempt_intervals(START + "\n" + _step(10, 10)) == [[]]


def _job_dir(tmp_path, name, log=None, ckpts=(), done=None, hyps=()):
    jd = tmp_path / "jobs" / name
    jd.mkdir(parents=True)
    if log is not None:
        (jd / "train.log").write_text(log)
    for step in ckpts:
        (jd / f"model_step_{step}.pt").write_text("")
    if done is not None:
        (jd / "done.json").write_text(json.dumps(done))
    for variant in hyps:
        (jd / f"hyp.{variant}").write_text("")
    return jd


def test_job_states_steps_and_speeds(tmp_path):
    job = Job("combination_s2", "combination", 2)
    jd = _job_dir(tmp_path, "combination_s2", LOG, ckpts=(10, 20))
    r = job_status(jd, job, 100, ["valid", "test"])
    assert (r.state, r.step, r.checkpoint, r.steps_left, r.sec_per_step, r.resumed_exactly) == \
        ("training", 35, 20, 65, 0.5, True)  # the last attempt's speed; its log is ahead of its checkpoint
    inexact = _job_dir(tmp_path, "x", LOG.replace(", then restoring the checkpoint's RNG states", ""), ckpts=(20,))
    assert job_status(inexact, job, 100, []).resumed_exactly is False
    done = _job_dir(tmp_path, "d", LOG, ckpts=(100,), done={"resumed_exactly": None})
    assert job_status(done, job, 100, ["test"]).state == "translating"
    r = job_status(done, job, 100, [])
    assert (r.state, r.step, r.steps_left, r.resumed_exactly) == ("done", 100, 0, None)
    r = job_status(_job_dir(tmp_path, "w"), job, 100, ["valid"])
    assert (r.state, r.step, r.steps_left, r.sec_per_step) == ("waiting", 0, 100, None)
    # a checkpoint without a log line (the log lost) still counts as trained that far, stopped
    r = job_status(_job_dir(tmp_path, "c", ckpts=(40,)), job, 100, [])
    assert (r.state, r.step, r.steps_left) == ("stopped", 40, 60)


def test_a_job_whose_log_stopped_growing_is_stopped_not_training(tmp_path):
    job = Job("combination_s2", "combination", 2)
    jd = _job_dir(tmp_path, "combination_s2", LOG, ckpts=(10, 20))
    written = (jd / "train.log").stat().st_mtime
    fresh = job_status(jd, job, 100, ["test"], now=written + STALE_SECONDS - 1)
    stale = job_status(jd, job, 100, ["test"], now=written + STALE_SECONDS + 1)
    assert (fresh.state, stale.state) == ("training", "stopped")
    assert (stale.step, stale.steps_left, stale.sec_per_step) == (35, 65, 0.5)  # still counted in the hours left
    line = status_lines("a", [fresh, stale], 2, 0.5)
    assert line[-1].startswith("tier a: 2 jobs: 0 done, 0 translating, 1 training, 1 stopped, 0 waiting; 130 steps")
    # its own speed and hours left, as in training (65 steps at 0.5 s: 0.0 h)
    assert [f.split()[1:2] + f.split()[4:6] for f in line[1:3]] == [["training", "0.50", "0.0"],
                                                                    ["stopped", "0.50", "0.0"]]


def test_plan_hours_share_steps_out_but_not_below_the_longest_job():
    rows = [JobStatus(n, s, 8000, step, 0, None, None) for n, s, step in
            (("a", "training", 2000), ("b", "waiting", 0), ("c", "waiting", 0), ("d", "done", 8000))]
    assert [r.steps_left for r in rows] == [6000, 8000, 8000, 0]
    assert plan_hours(rows, 0.9, 2) == pytest.approx(0.9 * 22000 / 2 / 3600)
    assert plan_hours(rows, 0.9, 8) == pytest.approx(0.9 * 8000 / 3600)  # more workers than jobs: the longest job
    assert plan_hours(rows[3:], 0.9, 2) == 0.0
    lines = status_lines("a", rows, 2, 0.9)
    assert lines[-1] == ("tier a: 4 jobs: 1 done, 0 translating, 1 training, 2 waiting; 22,000 steps left, about "
                         "2.8 h at 0.90 s per step per job, 2 at once (translation not counted)")
    assert status_lines("a", rows, 2, None)[-1].endswith("give --sec-per-step or --speed-from)")


def _status(wd, *extra):
    return subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "evidence", "--stage", "status", "--workdir",
                           str(wd), "--data", str(wd.parent / "data"), "--gold-text", "", "--gold-align", "",
                           "--steps", "100", "--max-steps", "200", "--systems", "baseline,inxl", "--seeds", "1,2",
                           "--parallel", "2", *extra], capture_output=True, text=True, env=run_env())


def test_status_stage_lists_the_tiers_jobs_and_plans_with_their_speed(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev"):
        for lang in ("ja", "en"):
            (data / f"{split}.{lang}").write_text("a b\n")
    wd = tmp_path / "wd"
    _job_dir(wd, "baseline_s1", LOG.replace("/ 100;", "/ 200;"), ckpts=(200,), done={"resumed_exactly": True},
             hyps=("valid", "test"))
    _job_dir(wd, "inxl_s1", LOG, ckpts=(20,))
    proc = _status(wd)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[:2] for line in lines[1:-1]] == [["baseline_s1", "done"], ["baseline_s2", "waiting"],
                                                       ["inxl_s1", "training"], ["inxl_s2", "waiting"]]
    assert "35/100" in lines[3] and "0.50" in lines[3] and lines[1].endswith("yes")
    assert lines[3].split()[5:7] == ["0.0", "yes"] and lines[1].split()[5] == "-"  # 65 steps at 0.5 s: h left
    # 65 + 100 + 100 steps left, two at once, at the training job's 0.5 s per step
    assert lines[-1].endswith(f"265 steps left, about {0.5 * 265 / 2 / 3600:.1f} h at 0.50 s per step per job, "
                              "2 at once (translation not counted)")
    assert _status(wd, "--sec-per-step", "3").stdout.splitlines()[-1].endswith(
        f"about {3 * 265 / 2 / 3600:.1f} h at 3.00 s per step per job, 2 at once (translation not counted)")
    for extra, what in ((["--sec-per-step", "0"], "--sec-per-step must be positive"),
                        (["--speed-from", str(tmp_path)], "--speed-from: not a work directory")):
        proc = _status(wd, *extra)
        assert proc.returncode == 2 and what in proc.stderr and "Traceback" not in proc.stderr
    proc = _status(tmp_path / "nowhere")
    assert proc.returncode == 2 and "no such work directory" in proc.stderr and "Traceback" not in proc.stderr
    # a new machine: the work directory not prepared yet, its finished jobs in the archive count as done
    archive = tmp_path / "archive"
    _job_dir(archive, "inxl_s2", done={"resumed_exactly": None})
    proc = _status(tmp_path / "fresh", "--archive", str(archive), "--sec-per-step", "1")
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[:2] for line in proc.stdout.splitlines()[1:-1]] == [
        ["baseline_s1", "waiting"], ["baseline_s2", "waiting"], ["inxl_s1", "waiting"], ["inxl_s2", "done"]]
    assert "400 steps left" in proc.stdout and not (tmp_path / "fresh").exists()
    proc = _status(tmp_path / "fresh", "--archive", str(tmp_path / "none"))
    assert proc.returncode == 2 and "nor an --archive" in proc.stderr
