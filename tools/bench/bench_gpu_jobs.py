#!/usr/bin/env python
"""How fast the convergence study's jobs train on a GPU, alone and several at once, and how long the study's
remaining training would take there.

    python tools/bench/bench_gpu_jobs.py --workdir runs/evidence_jaen [--systems baseline,combination]
        [--layouts 1,4,8] [--steps 300] [--steps-left 372550] [--out DIR]

Each job is the study's own configuration (``Runner.job_config`` of ``onmt-xl evidence --stage main``: preset,
data, vocabularies, preorderer) on GPU 0, with ``--steps`` steps and neither validation nor checkpoints
between; the work directory needs only its ``data/``, vocabularies and preorderer. A layout of K trains K jobs
at once (the systems in turn, other seeds; with fewer jobs than systems, each system alone in turn),
``OMP_NUM_THREADS`` = CPUs / K each, under CUDA MPS where it
starts. A job's speed is steps per second over its report lines after the first quarter of its steps (OpenNMT
logs whole seconds: about 30 s timed gives ±3 %); the table gives each layout's jobs (median and range) and their total,
and ``--steps-left`` steps at that total. Validation (every 500 steps in the study) and translation are not timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from onmt_xl.experiments.evidence_status import STEP_LINE  # noqa: E402
from onmt_xl.experiments.plan import Job  # noqa: E402
from onmt_xl.experiments.runner import Runner  # noqa: E402
from onmt_xl.experiments.stock import stock  # noqa: E402


def steps_per_second(log_text: str, skip: int) -> float:
    points = [(int(m.group(1)), float(m.group(2))) for m in map(STEP_LINE.search, log_text.splitlines()) if m]
    points = [p for p in points if p[0] >= skip]
    if len(points) < 2 or points[-1][1] <= points[0][1]:
        raise RuntimeError("too few report lines to time: raise --steps")
    return (points[-1][0] - points[0][0]) / (points[-1][1] - points[0][1])


def run_layout(runner: Runner, systems, k: int, steps: int, out: Path) -> list:
    procs = []
    threads = max((os.cpu_count() or 2) // k, 1)
    for i in range(k):
        system = systems[i % len(systems)]
        job = Job(f"{system}_s{101 + i}", system, 101 + i, train_steps=steps,
                  overrides=dict(valid_steps=10 * steps, save_checkpoint_steps=10 * steps,
                                 report_every=max(steps // 12, 1)))
        cfg = runner.job_config(job)
        jd = out / f"k{k}" / job.name
        jd.mkdir(parents=True, exist_ok=True)
        cfg.update(save_model=str(jd / "model"), save_data=str(jd / "samples"), gpu_ranks=[0], world_size=1)
        (jd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        log = open(jd / "train.log", "w")
        procs.append((system, jd, log, subprocess.Popen([str(stock("onmt_train")), "-config", str(jd / "config.yaml")],
                                                         stdout=log, stderr=subprocess.STDOUT,
                                                         env={**os.environ, "OMP_NUM_THREADS": str(threads)})))
    speeds = []
    for system, jd, log, proc in procs:
        rc = proc.wait()
        log.close()
        text = (jd / "train.log").read_text()
        if rc:
            sys.exit(f"bench_gpu_jobs: onmt_train failed ({rc}); see {jd / 'train.log'}:\n" + text[-2000:])
        speeds.append((system, steps_per_second(text, steps // 4)))
        for ckpt in jd.glob("*.pt"):
            ckpt.unlink()
    return speeds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", default="runs/evidence_jaen")
    p.add_argument("--preset", default="enja")
    p.add_argument("--systems", default="baseline,combination")
    p.add_argument("--layouts", default="1,4,8", help="jobs at once, one layout after another")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--steps-left", type=int, help="the study's training steps left (onmt-xl evidence --stage status)")
    p.add_argument("--out", default="runs/bench_gpu_jobs")
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("bench_gpu_jobs: no GPU visible to torch")
    runner = Runner(None, args.workdir, [], args.preset, gpu=True, parallel=1)
    systems = args.systems.split(",")
    out = Path(args.out)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {os.cpu_count()} CPUs; {args.steps} steps per "
          f"job, timed after step {args.steps // 4}; the study's configuration ({args.preset}) on GPU 0")
    print(f"{'jobs at once':>12s}  {'system':12s} {'steps/s per job: median (range)':>32s}  {'total steps/s':>13s}  "
          f"{'hours for --steps-left':>22s}")
    for k in map(int, args.layouts.split(",")):
        # fewer jobs than systems: each system on its own in turn; else the systems in turn among the K jobs
        for group in ([[s] for s in systems] if k < len(systems) else [systems]):
            t0 = time.perf_counter()
            speeds = run_layout(runner, group, k, args.steps, out / "-".join(group))
            total = sum(s for _, s in speeds)
            for system in group:
                mine = [s for name, s in speeds if name == system]
                hours = f"{args.steps_left / total / 3600:.1f}" if args.steps_left else "-"
                print(f"{k:>12d}  {system:12s} {statistics.median(mine):>14.2f} ({min(mine):.2f}-{max(mine):.2f})"
                      f"{'':>8s}  {total:>13.2f}  {hours:>22s}", flush=True)
            print(f"{'':>12s}  (took {time.perf_counter() - t0:.0f} s, start-up included)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
