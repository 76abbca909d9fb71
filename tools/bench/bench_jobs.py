#!/usr/bin/env python
"""The cheapest way to train many jobs on this machine: end-to-end ``onmt_train`` under several job layouts.

    python tools/bench/bench_jobs.py --src FILE --tgt FILE [--workdir runs/bench_jobs] [--steps 60] [--rounds 2]
                               [--system baseline] [--preset enja] [--out reports/bench_jobs.txt]

``--src``/``--tgt``: tokenized parallel training text. Each layout trains the
same configuration (``--system`` at ``--preset`` size, ``-xl_cpu_precision auto``) for ``--steps`` steps:

* ``1 job x N threads``: one ``onmt_train`` with all N CPUs (``OMP_NUM_THREADS=N``);
* ``N jobs x 1 thread``: N ``onmt_train`` at once (other seeds), one thread each;

each with the data options as the runner sets them and with one changed: a data-loader worker
(``-num_workers 1``), a 4× larger bucket (``-bucket_size``; batches are formed from length-sorted
buckets, so a larger one pads less), a 2× larger batch (``-batch_size``; it changes training, so the
runner does not choose it for speed). The figure is the machine's total: the sum over concurrent jobs
of OpenNMT's source tokens/s (non-padding tokens), each job's the median of its reports after the
first. Layouts alternate in order every round; the table gives the median and the range over rounds
and each layout's ratio to the runner's default in the same round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from onmt_xl.experiments.configs import config  # noqa: E402
from onmt_xl.experiments.jobs import train_throughput  # noqa: E402
from onmt_xl.experiments.stock import stock as _stock  # noqa: E402

VARIANTS = {
    "runner's data options": {},
    "-num_workers 1": {"num_workers": 1},
    "-bucket_size x4": "bucket",
    "-batch_size x2": "batch",
}


def layouts(cpus: int):
    return [(1, cpus), (cpus, 1)] if cpus > 1 else [(1, 1)]


def run_layout(wd: Path, base: dict, jobs: int, threads: int, tag: str) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    procs = []
    for j in range(jobs):
        cfg = {**base, "seed": base["seed"] + j, "save_model": str(wd / "models" / f"{tag}_{j}"),
               "save_data": str(wd / "samples" / f"{tag}_{j}")}
        path = wd / "configs" / f"{tag}_{j}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        log = open(wd / "logs" / f"{tag}_{j}.log", "w", encoding="utf-8")
        procs.append((subprocess.Popen([_stock("onmt_train"), "-config", str(path)], stdout=log,
                                       stderr=subprocess.STDOUT, env=env), log))
    total = 0.0
    for j, (proc, log) in enumerate(procs):
        proc.wait()
        log.close()
        text = (wd / "logs" / f"{tag}_{j}.log").read_text(encoding="utf-8")
        if proc.returncode != 0:
            raise SystemExit(f"onmt_train failed, see {wd / 'logs' / f'{tag}_{j}.log'}:\n{text[-2000:]}")
        total += train_throughput(text) or 0.0
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="tokenized training source")
    ap.add_argument("--tgt", required=True, help="tokenized training target")
    ap.add_argument("--workdir", default="runs/bench_jobs")
    ap.add_argument("--system", default="baseline")
    ap.add_argument("--preset", default="enja")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out")
    args = ap.parse_args()
    wd = Path(args.workdir).resolve()
    (wd / "data").mkdir(parents=True, exist_ok=True)
    (wd / "logs").mkdir(exist_ok=True)
    for split in ("train", "valid"):
        for ext in ("src", "tgt"):
            target = wd / "data" / f"{split}.{ext}"
            source = Path(args.src if ext == "src" else args.tgt)
            if not target.exists():
                lines = source.read_text(encoding="utf-8").splitlines()
                target.write_text("\n".join(lines if split == "train" else lines[:50]) + "\n", encoding="utf-8")
    base = config(args.system, str(wd), {"train_steps": args.steps, "valid_steps": 10 ** 6,
                                          "save_checkpoint_steps": 10 ** 6, "report_every": 10,
                                          "xl_cpu_precision": "auto"}, args.preset)
    if not (wd / "vocab.tgt").exists():
        (wd / "vocab.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
        subprocess.run([_stock("onmt_build_vocab"), "-config", str(wd / "vocab.yaml"), "-n_sample", "-1"],
                       check=True, capture_output=True)
    runs = []
    for jobs, threads in layouts(args.cpus):
        for name, change in VARIANTS.items():
            cfg = dict(base)
            if change == "bucket":
                cfg["bucket_size"] = 4 * cfg["bucket_size"]
            elif change == "batch":
                cfg["batch_size"] = 2 * cfg["batch_size"]
            else:
                cfg.update(change)
            runs.append((f"{jobs} job{'s' if jobs > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}", name,
                         jobs, threads, cfg))
    results = {(layout, name): [] for layout, name, *_ in runs}
    for rnd in range(args.rounds):
        for i, (layout, name, jobs, threads, cfg) in enumerate(runs if rnd % 2 == 0 else runs[::-1]):
            tok_s = run_layout(wd, cfg, jobs, threads, f"r{rnd}_{i}")
            results[layout, name].append(tok_s)
            print(f"round {rnd}: {layout:22s} {name:24s} {tok_s:8.0f} source tok/s", file=sys.stderr, flush=True)
    ref = runs[0][:2]
    lines = [
        f"command: python tools/bench/bench_jobs.py {' '.join(sys.argv[1:])}",
        f"{args.system} at preset {args.preset}, {args.steps} steps per job, {args.cpus} CPUs, {args.rounds} rounds "
        "alternating order; machine total of OpenNMT's source tok/s: median (min–max) over rounds",
        "",
        f"| layout | data options | source tok/s | vs {ref[0]}, runner's data options |",
        "| --- | --- | ---: | ---: |",
    ]
    for layout, name, *_ in runs:
        ratios = [a / b for a, b in zip(results[layout, name], results[ref])]
        v = results[layout, name]
        lines.append(f"| {layout} | {name} | {statistics.median(v):.0f} ({min(v):.0f}–{max(v):.0f}) | "
                     f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})× |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
