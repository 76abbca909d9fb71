"""``onmt-xl evidence --stage status``: where each job of a tier stands, and the hours its remaining training
takes at the speed its work directory's training logs measured. Nothing is trained, translated or scored (the
test pairs stay unseen); it reads job directories only, so it runs beside the training."""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from onmt_xl.experiments.jobs import exact_resume_log
from onmt_xl.experiments.plan import Job

#: an OpenNMT-py report line: its step and the seconds since its attempt's training started
STEP_LINE = re.compile(r"Step (\d+)/\s*\d+;.*;\s+([0-9.]+) sec;\s*$")
ATTEMPT_START = "Starting training on"
RECENT = 20  # report intervals per job that its current speed is the median of
#: a job trained part of the way whose log has not grown for this long is "stopped", not "training" (OpenNMT
#: logs every 50 steps and validates every 500: minutes apart at CPU speed)
STALE_SECONDS = 900


def attempt_intervals(log_text: str) -> List[List[float]]:
    """Seconds per step between consecutive report lines, one list per training attempt (each attempt of a
    resumed job counts its seconds from its own start). Validations between two lines count in, as they do
    in the job's wall-clock time."""
    attempts: List[List[float]] = []
    prev: Optional[tuple] = None
    for line in log_text.splitlines():
        if ATTEMPT_START in line:
            attempts.append([])
            prev = None
            continue
        m = STEP_LINE.search(line)
        if not m or not attempts:
            continue
        step, sec = int(m.group(1)), float(m.group(2))
        if prev is not None and step > prev[0] and sec >= prev[1]:
            attempts[-1].append((sec - prev[1]) / (step - prev[0]))
        prev = (step, sec)
    return attempts


def current_job_speed(log_text: str) -> Optional[float]:
    """A job's seconds per step now: the median of its last attempt's last :data:`RECENT` intervals."""
    attempts = [a for a in attempt_intervals(log_text) if a]
    return statistics.median(attempts[-1][-RECENT:]) if attempts else None


def last_logged_step(log_text: str) -> int:
    steps = [int(m.group(1)) for m in map(STEP_LINE.search, log_text.splitlines()) if m]
    return steps[-1] if steps else 0


@dataclass
class JobStatus:
    name: str
    state: str  # "done", "translating", "training" (its log growing), "stopped" (part of the way, idle) or "waiting"
    steps: int  # the job's training steps
    step: int  # steps trained: the last report line's or the last checkpoint's, whichever is further
    checkpoint: int  # the last checkpoint (where a resume starts)
    sec_per_step: Optional[float]  # median of the last attempt's last RECENT intervals
    resumed_exactly: Optional[bool]  # every resume exact (done.json, else the log); None: never resumed

    @property
    def steps_left(self) -> int:
        return 0 if self.state in ("done", "translating") else max(self.steps - self.step, 0)


def job_status(jd: Path, job: Job, steps: int, outputs_missing: Sequence[str],
               now: Optional[float] = None) -> JobStatus:
    """``job``'s state from its directory ``jd``; ``steps``: what it trains to; ``outputs_missing``: its
    variants not yet translated; ``now``: the time its log's age is read against (default: now)."""
    log_path = jd / "train.log"
    log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    ckpts = [int(p.stem.rsplit("_", 1)[1]) for p in jd.glob("model_step_*.pt")]
    checkpoint = max(ckpts, default=0)
    done = jd / "done.json"
    resumed_exactly = json.loads(done.read_text()).get("resumed_exactly") if done.exists() else exact_resume_log(log)
    if done.exists():
        state, step = ("translating" if outputs_missing else "done"), steps
    else:
        step = min(max(last_logged_step(log), checkpoint), steps)
        idle = not log_path.exists() or (time.time() if now is None else now) - log_path.stat().st_mtime > STALE_SECONDS
        state = ("stopped" if idle else "training") if step else "waiting"
    return JobStatus(job.name, state, steps, step, checkpoint, current_job_speed(log), resumed_exactly)


def plan_hours(rows: Sequence[JobStatus], sec_per_step: float, parallel: int) -> float:
    """Hours the jobs' remaining training takes, ``parallel`` jobs at once, each at ``sec_per_step`` (the speed
    of a job with ``parallel`` running): the larger of the steps shared out and the longest single job."""
    left = [r.steps_left for r in rows if r.steps_left]
    if not left:
        return 0.0
    return sec_per_step * max(sum(left) / max(parallel, 1), max(left)) / 3600


def current_speed(rows: Sequence[JobStatus]) -> Optional[float]:
    """Seconds per step per job now: the median over the jobs in training, else over every job with a log."""
    live = [r.sec_per_step for r in rows if r.state == "training" and r.sec_per_step]
    seen = live or [r.sec_per_step for r in rows if r.sec_per_step]
    return statistics.median(seen) if seen else None


def status_lines(tier: str, rows: Sequence[JobStatus], parallel: int, sec_per_step: Optional[float]) -> List[str]:
    """The status table of ``rows`` and the tier's summary line; ``sec_per_step``: the speed to plan with."""
    lines = [f"{'job':28s} {'state':12s} {'step':>13s} {'checkpoint':>10s} {'s/step':>6s} {'h left':>6s}  resumed "
             "exactly"]
    for r in rows:
        speed = f"{r.sec_per_step:6.2f}" if r.sec_per_step else f"{'-':>6s}"
        # a job trained part of the way: its own speed; the hours of its steps left
        partial = r.state in ("training", "stopped")
        hours = f"{r.steps_left * r.sec_per_step / 3600:6.1f}" if partial and r.sec_per_step else f"{'-':>6s}"
        exact = {True: "yes", False: "NO: left out of the verdicts",
                 None: "not resumed" if r.state != "waiting" else "-"}[r.resumed_exactly]
        lines.append(f"{r.name:28s} {r.state:12s} {r.step:>6d}/{r.steps:<6d} {r.checkpoint:>10d} {speed} {hours}  "
                     f"{exact}")
    speed = sec_per_step
    counts = {s: sum(r.state == s for r in rows) for s in ("done", "translating", "training", "stopped", "waiting")}
    left = sum(r.steps_left for r in rows)
    stopped = f"{counts['stopped']} stopped, " if counts["stopped"] else ""
    summary = (f"tier {tier}: {len(rows)} jobs: {counts['done']} done, {counts['translating']} translating, "
               f"{counts['training']} training, {stopped}{counts['waiting']} waiting; {left:,} steps left")
    if left and speed:
        summary += (f", about {plan_hours(rows, speed, parallel):.1f} h at {speed:.2f} s per step per job, "
                    f"{parallel} at once (translation not counted)")
    elif left:
        summary += " (no speed measured: give --sec-per-step or --speed-from)"
    return lines + [summary]


def tier_status(runner, jobs: Sequence[Job]) -> List[JobStatus]:
    """Each job's status; a job finished in ``runner.archive`` but not (yet) in the work directory, as on a new
    machine before the main stage restores it, counts as done."""
    rows = []
    for job in jobs:
        jd = runner.path("jobs", job.name)
        archived = runner.archive / "jobs" / job.name if runner.archive is not None else None
        if not (jd / "done.json").exists() and archived is not None and (archived / "done.json").exists():
            rows.append(job_status(archived, job, runner.steps(job), []))
        else:
            rows.append(job_status(jd, job, runner.steps(job), runner.outputs_missing(job)))
    return rows


def speeds_in(workdir: Path) -> Dict[str, float]:
    """Each job's current seconds per step in ``workdir`` (jobs with a training log)."""
    speeds = {log.parent.name: current_job_speed(log.read_text(encoding="utf-8", errors="replace"))
              for log in sorted(Path(workdir).glob("jobs/*/train.log"))}
    return {name: speed for name, speed in speeds.items() if speed is not None}
