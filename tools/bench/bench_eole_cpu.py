#!/usr/bin/env python
"""Eole's training speed on this CPU with and without onmt_xl's CPU options, beside OpenNMT-py's, end to end.

    python tools/bench/bench_eole_cpu.py [--data-dir DIR] [--systems baseline,combination] [--preset enja]
                                         [--warm 10] [--steps 30] [--reps 3] [--threads 1]
                                         [--workdir runs/bench_eole_cpu]

For each system, the same model (``onmt_xl.experiments.configs`` and its Eole translation, ``eole_configs``: same
size, data, batches and seed) trains through the stock commands in these variants:

- ``eole stock``: ``eole train`` as Eole runs it (fp32, its own kernels): the reference;
- ``eole bf16``: ``training.xl_cpu_precision: auto`` (bf16 autocast where the CPU computes bf16 natively; the row is
  left out elsewhere, where ``auto`` is fp32);
- ``eole bf16+fast``: and ``training.xl_cpu_kernels: fast`` (what ``onmt-xl pipeline --framework eole`` trains with);
- ``onmt-py bf16+fast``: ``onmt_train -xl_cpu_precision auto -xl_cpu_kernels fast`` (what the OpenNMT-py pipeline
  trains with).

One timing is the time between the log lines of step ``--warm`` and step ``--warm + --steps`` (their millisecond
timestamps), so start-up, vocabulary loading and the first steps are not in it: seconds per step, and source + target
tokens per second from the lines' batch sizes (the frameworks may batch differently). A shared machine drifts,
so every repetition runs all variants back to back, in an order rotated each repetition, and a variant's speed is the
median (and range) over repetitions of its tokens/s / the reference's in the same repetition (> 1: faster).
``--data-dir`` holds ``train``/``valid`` ``.src``/``.tgt`` and ``test.src`` (default: the demo's synthetic corpus).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))
os.environ["PYTHONPATH"] = os.pathsep.join(  # the commands run this checkout, not an installed copy
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from bench_xl_cost import prepare  # noqa: E402

from onmt_xl.core import precision  # noqa: E402
from onmt_xl.experiments.configs import PRESETS, SYSTEMS, config  # noqa: E402
from onmt_xl.experiments.eole_configs import EOLE_SYSTEMS, eole_config  # noqa: E402
from onmt_xl.experiments.stock import run_logged, stock  # noqa: E402

STEP_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO\] Step\s+(\d+)/.*?bsz:\s*(\d+)/\s*(\d+)/", re.M)
EOLE = [sys.executable, "-m", "onmt_xl.eole"]
REFERENCE = "eole stock"


def timing(log: str, start: int, end: int, every: int) -> dict:
    """Seconds per step between the ``Step start/`` and ``Step end/`` lines of a training log (their timestamps), and
    the source and target tokens per second of those steps (each report's ``bsz``: the mean batch of its ``every``
    steps); both frameworks write the same line."""
    at, tokens = {}, {}
    for stamp, step, src, tgt in STEP_LINE.findall(log):
        at[int(step)] = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
        tokens[int(step)] = (int(src) + int(tgt)) * every
    if start not in at or end not in at:
        raise RuntimeError(f"no Step {start} or Step {end} line in the log (steps seen: {sorted(at)[:20]})")
    seconds = (at[end] - at[start]).total_seconds()
    return {"s_per_step": seconds / (end - start),
            "tok_s": sum(n for step, n in tokens.items() if start < step <= end) / seconds}


def variants(native: bool):
    """``(name, framework, options)``: Eole's training options or onmt_train's arguments of each variant."""
    out = [(REFERENCE, "eole", {})]
    if native:
        out.append(("eole bf16", "eole", {"xl_cpu_precision": "auto"}))
    fast = "bf16+fast" if native else "fast"
    out.append((f"eole {fast}", "eole", {"xl_cpu_precision": "auto", "xl_cpu_kernels": "fast"}))
    out.append((f"onmt-py {fast}", "onmt", {"xl_cpu_precision": "auto", "xl_cpu_kernels": "fast"}))
    return out


def write_configs(wd: Path, system: str, args) -> dict:
    steps = args.warm + args.steps
    overrides = dict(train_steps=steps, valid_steps=100 * steps, save_checkpoint_steps=100 * steps,
                     report_every=args.report_every)
    onmt = config(system, str(wd), overrides, args.preset)
    onmt["save_model"] = str(wd / "models" / system / "model")
    eole = eole_config(system, str(wd), overrides, args.preset)
    eole["training"]["model_path"] = str(wd / "eole" / "models" / system)
    paths = {"onmt": wd / f"{system}.yaml", "eole": wd / f"{system}.eole.yaml"}
    paths["onmt"].write_text(yaml.safe_dump(onmt))
    paths["eole"].write_text(yaml.safe_dump(eole))
    return paths


def run(wd: Path, system: str, name: str, framework: str, options: dict, paths: dict, rep: int) -> dict:
    log = wd / "logs" / f"{system}_{name.replace(' ', '_')}_{rep}.log"
    if framework == "eole":
        cfg = yaml.safe_load(paths["eole"].read_text())
        cfg["training"].update(options)
        path = wd / f"{system}.{name.replace(' ', '_')}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        run_logged([*EOLE, "train", "-config", str(path)], log, show="")
    else:
        cmd = [stock("onmt_train"), "-config", str(paths["onmt"])]
        for key, value in options.items():
            cmd += [f"-{key}", str(value)]
        run_logged(cmd, log, show="")
    return timing(log.read_text(encoding="utf-8"), run.start, run.end, run.every)


def summarize(records, systems, names) -> None:
    """The table: per variant the median seconds per step and source+target tokens per second, and the median (and
    range) over repetitions of its speed (tokens/s) over the reference's in the same repetition."""
    print(f"{'system':14s} {'variant':20s} {'s/step':>8s} {'tok/s':>8s} {'speed vs ' + REFERENCE:>20s} {'range':>11s}")
    for system in systems:
        ref = {r["rep"]: r["tok_s"] for r in records if r["system"] == system and r["variant"] == REFERENCE}
        for name in names:
            mine = [r for r in records if r["system"] == system and r["variant"] == name]
            if not mine:
                continue
            ratios = [r["tok_s"] / ref[r["rep"]] for r in mine if r["rep"] in ref]
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
            print(f"{system:14s} {name:20s} {statistics.median(r['s_per_step'] for r in mine):8.3f} "
                  f"{statistics.median(r['tok_s'] for r in mine):8.0f} "
                  f"{statistics.median(ratios) if ratios else float('nan'):19.2f}x {spread:>11s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="runs/bench_eole_cpu")
    ap.add_argument("--data-dir", help="train/valid .src/.tgt and test.src (default: the demo's synthetic corpus)")
    ap.add_argument("--preorderer", help="a trained preorderer for the XL systems (default: trained here)")
    ap.add_argument("--systems", default="baseline", help=f"comma-separated, from: {', '.join(EOLE_SYSTEMS)}")
    ap.add_argument("--preset", default="enja", choices=sorted(PRESETS), help="model size (configs.PRESETS)")
    ap.add_argument("--warm", type=int, default=10, help="steps before the timed window")
    ap.add_argument("--steps", type=int, default=30, help="steps in the timed window")
    ap.add_argument("--report-every", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every run")
    args = ap.parse_args()
    systems = args.systems.split(",")
    bad = [s for s in systems if s not in EOLE_SYSTEMS or s not in SYSTEMS]
    if bad:
        ap.error(f"not a system both frameworks have: {', '.join(bad)}")
    if args.warm % args.report_every or args.steps % args.report_every:
        ap.error("--warm and --steps must be multiples of --report-every (the log's step lines)")
    run.start, run.end, run.every = args.warm, args.warm + args.steps, args.report_every
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    wd = prepare(argparse.Namespace(workdir=args.workdir, data_dir=args.data_dir, preorderer=args.preorderer))
    (wd / "logs").mkdir(exist_ok=True)
    native, evidence = precision.native_bf16()
    chosen = variants(native)
    paths = {s: write_configs(wd, s, args) for s in systems}
    if not (wd / "vocab.src").exists():
        run_logged([stock("onmt_build_vocab"), "-config", str(paths[systems[0]]["onmt"]), "-n_sample", "-1"],
                   wd / "logs" / "vocab.log", show="")
    if not (wd / "eole" / "vocab.src").exists():
        run_logged([*EOLE, "build_vocab", "-config", str(paths[systems[0]]["eole"]), "-n_sample", "-1"],
                   wd / "logs" / "eole_vocab.log", show="")
    records = []
    results = wd / "results.jsonl"
    for rep in range(args.reps):
        for system in systems:
            shift = rep % len(chosen)
            for name, framework, options in chosen[shift:] + chosen[:shift]:  # rotated: drift falls on each alike
                t = run(wd, system, name, framework, options, paths[system], rep)
                records.append(dict(system=system, variant=name, rep=rep, **t))
                with open(results, "a") as out:  # kept if the run is cut short
                    out.write(json.dumps(records[-1]) + "\n")
                print(f"  rep {rep + 1}/{args.reps} {system} {name}: {t['s_per_step']:.3f} s/step, "
                      f"{t['tok_s']:.0f} tok/s", flush=True)
    import torch

    print(f"{args.reps} repetitions, steps {run.start}-{run.end} timed, preset {args.preset}, data "
          f"{args.data_dir or 'demo synthetic'}, {args.threads} thread(s), workdir {wd}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, CPU {evidence}; torch "
          f"{torch.__version__}; load after the run {os.getloadavg()}")
    summarize(records, systems, [name for name, _, _ in chosen])


if __name__ == "__main__":
    main()
