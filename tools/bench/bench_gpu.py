#!/usr/bin/env python
"""Issues 39 and 80: the GPU measurements in one call: training speed of each system beside the baseline, mixed
precision, translation with the transform, several processes, the data path, a profile, the first epoch, Eole.

    python tools/bench/bench_gpu.py --out DIR [--workdir runs/decisive_jaen]
        [--sections data,speed,precision,translate,ranks,profile,first_epoch,eole] [--reps 3] [--smoke]

``--smoke``: tiny models, a synthetic corpus and preorderer made in ``DIR/work``, a few steps, on the CPU when there
is no GPU: the script's own check, its figures mean nothing. Otherwise ``--workdir`` holds the study's data
(``data/train.*``, ``data/valid.*``, ``data/test.src``, ``align/train.gdfa``, ``preorderer.xlp``, ``vocab.*``).
Output: ``DIR/bench_gpu.txt`` (what is printed) and ``DIR/bench_gpu.json``.

Sections (each prints what it ran, on which device):

* ``data``: the training data path alone (OpenNMT's iterator: corpus, transforms, batching, ``tensorify``), ms per
  batch taken by the consumer over the first ``--data-batches`` batches of a cold start (every sentence a preorderer
  cache miss), baseline (no transform) beside Combination (``xl_position``), ``-num_workers`` 0 and 2. With 0 this
  time is added to every training step; with 2 it runs in the workers and only the part above the step's own time
  shows.
* ``speed``: steps/s of each system beside the baseline, one job alone, at the study's size (preset ``enja``) and
  at Transformer-base size (d 512, 6+6 layers, 8 heads, FF 2048, 4,096-token batches) and BIG (d 1024, 16 heads,
  FF 4096) where memory allows. Each run is OpenNMT's own training (``onmt.train_single.main``, what ``onmt_train``
  runs after parsing its options; start-up not timed) from a cold start (fresh transform, empty cache), timed over
  its steps after the first ``warm`` with a device synchronisation after each step; runs are interleaved (every
  system once per repetition, in turn), and the ratio to the baseline of the same repetition is given as the median
  (min-max) over repetitions (``--reps`` at the study's size, one fewer at base and BIG). On a GPU the baseline and
  Combination also run with ``-model_dtype fp16`` in the same rotation: fp16 / fp32 is their speed-up. Study size
  also with ``-num_workers 2`` for the baseline and Combination (two repetitions).
  ``speed`` is four parts that ``--sections`` also takes alone, so a call can put the most wanted first:
  ``speed_study``, ``speed_base``, ``speed_big``, ``speed_workers``. Every run is printed as it ends.
* ``precision``: every system trained with ``-model_dtype fp16`` (OpenNMT's AMP with loss scaling): loss finite,
  then a translation of a few sentences with that checkpoint (``onmt_translate``'s code, in this process).
  bf16: OpenNMT-py 3.5.1 offers ``-model_dtype fp32|fp16`` only.
* ``translate``: ``onmt_translate`` of ``--translate-lines`` test sentences, whole process timed (start-up, model,
  preorderer), the same baseline checkpoint with ``-transforms xl_position`` beside without (the transform's cost on
  the same decoding work), and Combination's checkpoint with the transform beside the baseline's (its model's cost
  too, output lengths printed), interleaved, median (min-max).
* ``profile`` (issue 80): per system at ``--profile-size`` (Transformer-base by default), one cold start profiled
  by torch.profiler over ``--profile-steps``: wall and GPU kernel time per step, the GPU's idle share, kernels and
  ATen operators per step; each system's top operators in ``DIR/profile_SYSTEM.txt``.
* ``first_epoch`` (issue 80): a window of a cold start that crosses the first epoch's bucket refills
  (``--first-epoch-steps``, 11-300 by default) at ``--first-epoch-sizes``, rows ``--first-epoch-rows``
  (``SYSTEM[+pre][+w2]``: precomputed positions, ``data/train.src.xlpos``, made here where missing; two data
  workers), interleaved, each to the baseline of its repetition.
* ``eole`` (issue 80): ``eole train`` of ``--eole-systems`` at the study's size, whole processes, steps/s from the
  log lines' timestamps, interleaved; then ``eole serve`` of the XL model answering one request (4 lines and an
  empty one) on this device.
* ``ranks``: with two GPUs, ``onmt_train -world_size 2 -gpu_ranks 0 1`` of Combination; with one (OpenNMT-py 3.5.1
  puts rank i on ``cuda:i``, so two ranks need two devices) or none, the ranks as ``onmt/bin/train.py`` spawns them,
  ``gloo`` backend, one CPU training step each (``tests/multiprocess_probe.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))

import torch  # noqa: E402
import yaml  # noqa: E402

import onmt  # noqa: E402,F401  - the hook registers onmt_xl here (or register() below)
import onmt_xl  # noqa: E402

onmt_xl.register()  # idempotent; where the hook is not installed
from onmt_xl.experiments.configs import config, source_transform  # noqa: E402

SECTIONS = ("data", "speed", "precision", "translate", "ranks", "profile", "first_epoch", "eole")
SPEED_PARTS = ("speed_study", "speed_base", "speed_big", "speed_workers")  # "speed" runs all four, in this order
STUDY_SYSTEMS = "baseline,inxl,headxl,combination,relative_pe,disan,enc_re,refsr"
BASE = dict(enc_layers=6, dec_layers=6, heads=8, hidden_size=512, word_vec_size=512, transformer_ff=2048,
            batch_size=4096, valid_batch_size=4096, xl_heads=4)
BIG = dict(BASE, heads=16, hidden_size=1024, word_vec_size=1024, transformer_ff=4096, xl_heads=8)
SMOKE = dict(enc_layers=1, dec_layers=1, heads=4, hidden_size=32, word_vec_size=32, transformer_ff=64,
             batch_size=256, valid_batch_size=256, bucket_size=256, xl_heads=2)


class Log:
    def __init__(self, path: Path):
        self.file = open(path, "w")
        self.data: dict = {}

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


def stock(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONWARNINGS", "ignore")
    return env


def spread(values) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


# ---------------------------------------------------------------- work directory


def smoke_workdir(root: Path) -> Path:
    """A synthetic corpus (tests/helpers' grammar), its gold links as alignments, a tiny preorderer, vocabularies."""
    from onmt_xl.core.data import synthetic
    from onmt_xl.core.reorder.preorderer import Preorderer

    wd = root / "work"
    if (wd / "vocab.src").exists():
        return wd
    (wd / "data").mkdir(parents=True, exist_ok=True)
    (wd / "align").mkdir(exist_ok=True)
    corpus = synthetic.generate(300, seed=3)
    synthetic.write(corpus, str(wd / "data" / "train"))
    (wd / "data" / "train.align").rename(wd / "align" / "train.gdfa")
    for ext in ("src", "tgt"):
        lines = (wd / "data" / f"train.{ext}").read_text().splitlines()
        (wd / "data" / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
        if ext == "src":
            (wd / "data" / "test.src").write_text("\n".join(lines[-40:]) + "\n")
    Preorderer.train(corpus.src, corpus.links, iterations=3, progress=False).save(str(wd / "preorderer.xlp"))
    cfg = wd / "vocab.yaml"
    cfg.write_text(yaml.safe_dump(config("baseline", str(wd))))
    subprocess.run([stock("onmt_build_vocab"), "-config", str(cfg), "-n_sample", "-1"], check=True,
                   capture_output=True, env=child_env())
    return wd


# ---------------------------------------------------------------- one training run, in this process

_STAMPS: list = []
_TOTAL: list = []
#: the steps ``train_run`` profiles: ``start`` (steps done before), ``steps``; ``done``: the finished profiler
_PROFILE: dict = {}


def profiler():
    """torch.profiler over the host and, where there is one, the GPU."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities)


def _instrument() -> None:
    """Time stamps after each training step (device synchronised) and the run's total statistics."""
    from onmt.trainer import Trainer

    if getattr(Trainer, "_bench_gpu", False):
        return
    accumulate, train = Trainer._gradient_accumulation, Trainer.train

    def _gradient_accumulation(self, *args, **kwargs):
        if _PROFILE.get("start") == len(_STAMPS):
            _PROFILE["prof"] = profiler()
            _PROFILE["prof"].__enter__()
        out = accumulate(self, *args, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        _STAMPS.append(time.perf_counter())
        if "prof" in _PROFILE and len(_STAMPS) == _PROFILE["start"] + _PROFILE["steps"]:
            _PROFILE["prof"].__exit__(None, None, None)
            _PROFILE["done"] = _PROFILE.pop("prof")
        return out

    def _train(self, *args, **kwargs):
        stats = train(self, *args, **kwargs)
        _TOTAL.append(stats)
        return stats

    Trainer._gradient_accumulation, Trainer.train, Trainer._bench_gpu = _gradient_accumulation, _train, True


def parse_train_opt(cfg_path: Path, extra=()):
    from onmt.bin.train import _get_parser
    from onmt.utils.parse import ArgumentParser

    opt = _get_parser().parse_args(["-config", str(cfg_path), *extra])
    ArgumentParser.validate_train_opts(opt)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    return opt


def write_cfg(args, system: str, size: dict, name: str, **extra) -> Path:
    over = dict(size, valid_steps=10 ** 6, save_checkpoint_steps=10 ** 6, report_every=10 ** 6, seed=1234,
                **extra)
    cfg = config(system, str(args.workdir), over, preset="enja")
    cfg["save_model"] = str(args.out / "models" / name)
    cfg["save_data"] = str(args.out / "models" / name)
    if args.gpu:
        cfg.update(gpu_ranks=[0], world_size=1)
    path = args.out / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def train_run(args, system: str, size: dict, name: str, warm: int, timed: int, keep=False, profile=False,
              **extra) -> dict:
    """One run of OpenNMT's training; steps/s over the ``timed`` steps after ``warm``, the run's loss; ``profile``:
    and the torch.profiler of those steps (``profile``)."""
    from onmt.train_single import main as single_main

    _instrument()
    cfg = write_cfg(args, system, size, name, train_steps=warm + timed, warmup_steps=max(warm, 4), **extra)
    opt = parse_train_opt(cfg)
    _STAMPS.clear()
    _TOTAL.clear()
    _PROFILE.clear()
    if profile:
        _PROFILE.update(start=warm, steps=timed)
    try:
        single_main(opt, 0 if args.gpu else -1)
    finally:
        if not keep:
            for ckpt in (args.out / "models").glob(f"{name}_step_*.pt"):
                ckpt.unlink()
        gc.collect()
        if args.gpu:
            torch.cuda.empty_cache()
    stamps = _STAMPS[warm - 1:] if warm else _STAMPS
    stats = _TOTAL[-1] if _TOTAL else None
    return dict(steps_per_s=(len(stamps) - 1) / (stamps[-1] - stamps[0]), xent=stats.xent() if stats else None,
                checkpoint=str(args.out / "models" / f"{name}_step_{warm + timed}.pt"),
                profile=_PROFILE.pop("done", None), seconds=stamps[-1] - stamps[0])


def fits(args, size: dict) -> bool:
    """Whether a BIG baseline/Combination step fits: a short probe run, out of memory caught."""
    try:
        train_run(args, "combination", size, "probe_fit", 1, 2)
        return True
    except torch.cuda.OutOfMemoryError:
        gc.collect()
        torch.cuda.empty_cache()
        return False


# ---------------------------------------------------------------- sections


def section_data(args, log: Log) -> None:
    from onmt.constants import CorpusTask
    from onmt.inputters.dynamic_iterator import build_dynamic_dataset_iter
    from onmt.train_single import _init_train

    n = args.data_batches
    log(f"\n## data path: ms per training batch taken by the consumer, first {n} batches of a cold start "
        f"(median of 2 starts; study size, {'GPU' if args.gpu else 'CPU'} batches)")
    log(f"{'system':14s} {'num_workers':>11s} {'ms/batch':>22s}  {'(start-up s)':>12s}")
    res = {}
    for workers in (0, 2):
        for system in ("baseline", "combination"):
            times, starts = [], []
            for _ in range(2):
                opt = parse_train_opt(write_cfg(args, system, args.study, f"data_{system}_{workers}",
                                                num_workers=workers))
                _, vocabs, transforms_cls = _init_train(opt)
                t0 = time.perf_counter()
                it = iter(build_dynamic_dataset_iter(opt, transforms_cls, vocabs, task=CorpusTask.TRAIN,
                                                     device_id=0 if args.gpu else -1))
                next(it)
                t1 = time.perf_counter()
                for _ in range(n):
                    batch, _ = next(it)
                if args.gpu:
                    torch.cuda.synchronize()
                times.append((time.perf_counter() - t1) / n * 1000)
                starts.append(t1 - t0)
                del it
                gc.collect()
            res[f"{system}/{workers}"] = times
            log(f"{system:14s} {workers:>11d} {spread(times):>22s}  {statistics.median(starts):>12.1f}")
    log.data["data"] = res


def _speed_table(args, log: Log, label: str, size: dict, systems: str, steps, reps: int) -> dict:
    """Every system of ``systems`` (and, on a GPU, baseline and Combination in fp16) once per repetition, in turn."""
    warm, timed = steps
    systems = systems.split(",") + (["baseline fp16", "combination fp16"] if args.gpu else [])
    rows = {s: [] for s in systems}
    log(f"\n## speed, {label}: steps/s of one job alone, steps {warm + 1}-{warm + timed} of a cold start, "
        f"{reps} interleaved repetitions (fp32 unless the row says fp16)")
    if args.gpu:  # a dtype's first run of these batches pays one-off costs (a 5-step warm-up did not absorb them:
        # the first timed baseline fp16 run ran at 0.4x, reports/GPU.md): each dtype first trains the table's very
        # steps (the same batches, so the same shapes) untimed
        for dtype in ("fp32", "fp16"):
            t0 = time.perf_counter()
            rate = train_run(args, "baseline", size, "speed_warmup", warm, timed, model_dtype=dtype)["steps_per_s"]
            log(f"  (untimed warm-up: baseline {dtype} {rate:.2f} steps/s, run {time.perf_counter() - t0:.0f} s)")
    for rep in range(reps):
        order = systems if rep % 2 == 0 else systems[::-1]
        for row in order:
            system, _, dtype = row.partition(" ")
            extra = dict(model_dtype=dtype) if dtype else {}
            t0 = time.perf_counter()
            rows[row].append(train_run(args, system, size, f"speed_{system}", warm, timed, **extra)["steps_per_s"])
            log(f"  (repetition {rep + 1}: {row} {rows[row][-1]:.2f} steps/s, run {time.perf_counter() - t0:.0f} s)")
    log(f"{'system':18s} {'steps/s median (range)':>24s}  {'/ baseline, median (range)':>28s}")
    for system in systems:
        ratios = [a / b for a, b in zip(rows[system], rows["baseline"])]
        log(f"{system:18s} {spread(rows[system]):>24s}  {spread(ratios):>28s}")
    for name in ("combination fp16", "baseline fp16"):
        if name in rows:
            ratios = [a / b for a, b in zip(rows[name], rows[name.split()[0]])]
            log(f"{name + ' / fp32':28s} {spread(ratios)}")
    log.data.setdefault("speed", {})[label] = rows
    return rows


def section_speed_study(args, log: Log) -> None:
    """The study's size (preset ``enja``), every system of ``--systems``."""
    _speed_table(args, log, "study (enja: d 256, 3+3, 2,048 tok)", args.study, args.systems, args.steps, args.reps)


def section_speed_base(args, log: Log) -> None:
    """Transformer-base size (d 512, 6+6, 4,096-token batches), ``--base-systems``."""
    if args.smoke:
        return
    _speed_table(args, log, "base (d 512, 6+6, 4,096 tok)", BASE, args.base_systems, args.base_steps,
                 max(2, args.reps - 1))


def section_speed_big(args, log: Log) -> None:
    """Transformer-BIG size, ``--big-systems``, where a probe step fits the device's memory."""
    if args.smoke or not args.big:
        return
    if not (args.gpu and fits(args, BIG)):
        log("\nBIG: does not fit this device's memory (or no GPU): not timed")
        return
    _speed_table(args, log, "BIG (d 1024, 16 heads, 6+6, 4,096 tok)", BIG, args.big_systems, args.base_steps,
                 max(2, args.reps - 1))


def section_speed_workers(args, log: Log) -> None:
    """The study's size with ``-num_workers 2``: transform and batching in two data workers beside the step."""
    if args.smoke:
        return
    warm, timed = args.steps
    rows = {s: [] for s in ("baseline", "combination")}
    log("\n## speed, study size, -num_workers 2 (transform and batching in two data workers)")
    for rep in range(2):
        for system in rows if rep % 2 == 0 else list(rows)[::-1]:
            rows[system].append(train_run(args, system, args.study, f"speed_w2_{system}", warm, timed,
                                          num_workers=2)["steps_per_s"])
            log(f"  (repetition {rep + 1}: {system} {rows[system][-1]:.2f} steps/s)")
    ratios = [a / b for a, b in zip(rows["combination"], rows["baseline"])]
    for system in rows:
        log(f"{system:14s} {spread(rows[system]):>28s}")
    log(f"{'combination / baseline':28s} {spread(ratios)}")
    log.data.setdefault("speed", {})["study, num_workers 2"] = rows


def section_speed(args, log: Log) -> None:
    """All of the speed subsections: study, base, BIG, then the study's size with two data workers."""
    for part in (section_speed_study, section_speed_base, section_speed_big, section_speed_workers):
        part(args, log)


def _device_events(prof) -> list:
    """The profiler's device events (kernels, copies, sets): those that ran on the GPU."""
    from torch.autograd import DeviceType

    return [e for e in prof.events() if e.device_type == DeviceType.CUDA]


def section_profile(args, log: Log) -> None:
    """Issue 80 (1): where a training step's time goes, per system (``--profile-systems``) at ``--profile-size``:
    one cold start each, ``--profile-steps`` WARM+N, torch.profiler over the N steps. Per step: the wall time, the
    GPU's kernel time (the sum of its kernels' durations) and so its idle share (host gaps: the step waits for
    Python, the data or launches), the number of device kernels and of ATen operators the host dispatched. Each
    system's top operators by GPU time and by host time go to ``profile_SYSTEM.txt``."""
    warm, n = args.profile_steps
    size = {"study": args.study, "base": SMOKE if args.smoke else BASE}[args.profile_size]
    log(f"\n## profile, {args.profile_size} size: per training step over steps {warm + 1}-{warm + n} of a cold start "
        f"(torch.profiler; {'GPU' if args.gpu else 'CPU: no device kernels'}; the device synchronised after each step)")
    log(f"{'system':14s} {'wall ms':>8s} {'kernel ms':>10s} {'GPU idle':>9s} {'kernels':>8s} {'aten ops':>9s}")
    res = {}
    for system in args.profile_systems.split(","):
        run = train_run(args, system, size, f"profile_{system}", warm, n, profile=True)
        prof = run["profile"]
        kernels = _device_events(prof)
        kernel_ms = sum(e.time_range.elapsed_us() for e in kernels) / 1000 / n
        wall_ms = run["seconds"] / (n - 1) * 1000 if n > 1 else float("nan")
        aten = sum(1 for e in prof.events() if e.name.startswith("aten::")) / n
        idle = 1 - kernel_ms / wall_ms if args.gpu else float("nan")
        res[system] = dict(wall_ms=wall_ms, kernel_ms=kernel_ms, idle=idle, kernels=len(kernels) / n, aten=aten)
        log(f"{system:14s} {wall_ms:8.2f} {kernel_ms:10.2f} {idle:9.1%} {len(kernels) / n:8.0f} {aten:9.0f}")
        table = prof.key_averages()
        with open(args.out / f"profile_{system}.txt", "w") as out:
            # the GPU's time is "device" in torch >= 2.4, "cuda" before
            for keys in ((("self_device_time_total", "self_cuda_time_total") if args.gpu else ()),
                         ("self_cpu_time_total",)):
                for key in keys:
                    try:
                        text = table.table(sort_by=key, row_limit=25, max_name_column_width=60)
                    except (AttributeError, KeyError, TypeError):
                        continue
                    out.write(f"# {system}, {args.profile_size} size, {n} steps, sorted by {key}\n{text}\n")
                    break
    log(f"(top operators by GPU and host time: profile_SYSTEM.txt in {args.out.name})")
    log.data["profile"] = {args.profile_size: res}


def first_epoch_rows(text: str) -> list:
    """``--first-epoch-rows``: ``SYSTEM[+pre][+w2]`` -> (label, system, options): ``+pre`` reads the training
    positions from ``data/train.src.xlpos`` (``-xl_positions_suffix .xlpos``, no parse on the training thread),
    ``+w2`` runs the data in two workers (``-num_workers 2``)."""
    rows = []
    for label in text.split(","):
        system, *flags = label.split("+")
        bad = [f for f in flags if f not in ("pre", "w2")]
        if bad or (("pre" in flags) and source_transform(system) is None):
            raise SystemExit(f"bench_gpu: --first-epoch-rows: {label!r}: SYSTEM[+pre][+w2], +pre for an XL system")
        extra = {}
        if "pre" in flags:
            extra["xl_positions_suffix"] = ".xlpos"
        if "w2" in flags:
            extra["num_workers"] = 2
        rows.append((label, system, extra))
    return rows


def ensure_positions(args, log: Log) -> None:
    """``data/train.src.xlpos``: the preorderer's positions of every training sentence (``onmt-xl positions``),
    made here where missing (untimed; every bucket's parse in one call, as the transform makes them)."""
    out = args.workdir / "data" / "train.src.xlpos"
    if out.exists():
        return
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "positions", "--src",
                           str(args.workdir / "data" / "train.src"), "--preorderer",
                           str(args.workdir / "preorderer.xlp"), "--out", str(out), "--quiet"],
                          capture_output=True, text=True, env=child_env())
    if proc.returncode:
        raise RuntimeError(f"onmt-xl positions failed:\n{proc.stderr[-2000:]}")
    log(f"  (untimed: data/train.src.xlpos written by onmt-xl positions in {time.perf_counter() - t0:.0f} s)")


def section_first_epoch(args, log: Log) -> None:
    """Issue 80 (2), the first epoch: steps ``--first-epoch-steps`` of a cold start, a window that crosses the
    bucket refills (every sentence new to the preorderer), at each size of ``--first-epoch-sizes``, the rows of
    ``--first-epoch-rows`` in turn, ``--reps`` repetitions, each row's ratio to the baseline of its repetition
    (``+w2`` rows to ``baseline+w2`` where that row runs)."""
    warm, timed = args.first_epoch_steps
    rows = first_epoch_rows(args.first_epoch_rows)
    if any("xl_positions_suffix" in extra for _, _, extra in rows):
        ensure_positions(args, log)
    for size_name in args.first_epoch_sizes.split(","):
        size = {"study": args.study, "base": SMOKE if args.smoke else BASE}[size_name]
        rates = {label: [] for label, _, _ in rows}
        log(f"\n## first epoch, {size_name} size: steps/s over steps {warm + 1}-{warm + timed} of a cold start "
            f"(every bucket's sentences new), {args.reps} interleaved repetitions")
        for rep in range(args.reps):
            for label, system, extra in (rows if rep % 2 == 0 else rows[::-1]):
                t0 = time.perf_counter()
                rates[label].append(train_run(args, system, size, f"epoch_{system}", warm, timed,
                                              **extra)["steps_per_s"])
                log(f"  (repetition {rep + 1}: {label} {rates[label][-1]:.2f} steps/s, run "
                    f"{time.perf_counter() - t0:.0f} s)")
        log(f"{'row':28s} {'steps/s median (range)':>24s}  {'/ baseline, median (range)':>28s}")
        for label, _, extra in rows:
            ref = "baseline+w2" if "num_workers" in extra and "baseline+w2" in rates else "baseline"
            ratio = spread([a / b for a, b in zip(rates[label], rates[ref])]) if ref in rates else "-"
            log(f"{label:28s} {spread(rates[label]):>24s}  {ratio:>28s}" + (f"  (vs {ref})" if ref != "baseline" else ""))
        log.data.setdefault("first_epoch", {})[size_name] = rates


def section_eole(args, log: Log) -> None:
    """Issue 80 (4): ``eole train`` of ``--eole-systems`` (Eole's own Transformer for ``baseline``) at the study's
    size, each a whole ``eole train`` process (the checkout's seams), steps/s between its log lines of steps
    ``--eole-steps`` WARM and WARM+N (their timestamps: start-up not timed), ``--reps`` interleaved repetitions;
    then ``eole serve`` of the last XL system's model answering one request on this device."""
    import urllib.request

    from bench_eole_cpu import timing
    from onmt_xl.experiments.eole_configs import eole_config, eole_paths
    from onmt_xl.experiments.eole_demo import write_serve_config

    warm, timed = args.eole_steps
    every = 5 if warm % 10 or timed % 10 else 10
    eole = [sys.executable, "-m", "onmt_xl.eole"]
    env = dict(child_env(), HF_HUB_OFFLINE="1")
    systems = args.eole_systems.split(",")
    over = dict(args.study, train_steps=warm + timed, valid_steps=10 ** 6, save_checkpoint_steps=warm + timed,
                report_every=every, seed=1234, **(dict(gpu_ranks=[0], world_size=1) if args.gpu else {}))
    root = args.out / "eole"
    paths = {}
    for system in systems:
        cfg = eole_config(system, str(args.workdir), over, "enja")
        cfg["training"]["model_path"] = str(root / "models" / system)
        cfg["save_data"] = str(root / "samples" / system)
        paths[system] = root / f"{system}.yaml"
        paths[system].parent.mkdir(parents=True, exist_ok=True)
        paths[system].write_text(yaml.safe_dump(cfg, sort_keys=False))
    if not Path(eole_paths(systems[0], str(args.workdir))["src_vocab"]).exists():
        t0 = time.perf_counter()
        subprocess.run([*eole, "build_vocab", "-config", str(paths[systems[0]]), "-n_sample", "-1"], check=True,
                       capture_output=True, env=env)
        log(f"  (untimed: eole build_vocab in {time.perf_counter() - t0:.0f} s)")
    log(f"\n## eole train at the study's size: steps/s between the log lines of steps {warm} and {warm + timed}, "
        f"{args.reps} interleaved repetitions, {'GPU' if args.gpu else 'CPU'}")
    rates = {s: [] for s in systems}
    for rep in range(args.reps):
        for system in (systems if rep % 2 == 0 else systems[::-1]):
            logfile = root / f"{system}_{rep}.log"
            t0 = time.perf_counter()
            with open(logfile, "w") as out:
                proc = subprocess.run([*eole, "train", "-config", str(paths[system])], stdout=out,
                                      stderr=subprocess.STDOUT, env=env)
            text = logfile.read_text(errors="replace")
            if proc.returncode:
                raise RuntimeError(f"eole train {system} failed:\n{text[-2000:]}")
            rates[system].append(1 / timing(text, warm, warm + timed, every)["s_per_step"])
            log(f"  (repetition {rep + 1}: {system} {rates[system][-1]:.2f} steps/s, process "
                f"{time.perf_counter() - t0:.0f} s)")
    log(f"{'system':14s} {'steps/s median (range)':>24s}  {'/ baseline, median (range)':>28s}")
    for system in systems:
        ratio = spread([a / b for a, b in zip(rates[system], rates["baseline"])]) if "baseline" in rates else "-"
        log(f"{system:14s} {spread(rates[system]):>24s}  {ratio:>28s}")
    data = {"train": rates}
    served = [s for s in systems if s != "baseline"][-1:] or systems[-1:]
    model = root / "models" / served[0] / f"step_{warm + timed}"
    conf = write_serve_config(root / "serve.yaml", {served[0]: model}, beam_size=5)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve_log = root / "serve.log"
    sentences = (args.workdir / "data" / "test.src").read_text().splitlines()[:4] + [""]
    with open(serve_log, "w") as out:
        server = subprocess.Popen([*eole, "serve", "-c", str(conf), "--host", "127.0.0.1", "--port", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        t0, answer, error = time.perf_counter(), None, None
        while time.perf_counter() - t0 < 300 and server.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).read()
                break
            except OSError:
                time.sleep(1)
        up = time.perf_counter() - t0
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/infer", headers={"Content-Type": "application/json"},
            data=json.dumps({"model": served[0], "inputs": sentences, "beam_size": 5}).encode())
        t1 = time.perf_counter()
        try:
            answer = json.loads(urllib.request.urlopen(request, timeout=300).read())
        except OSError as exc:
            error = str(exc)
        took = time.perf_counter() - t1
    finally:
        server.terminate()
        server.wait(30)
    text = serve_log.read_text(errors="replace")
    device = re.search(r"device=(\w+)", text)
    outputs = [p[0] for p in answer["predictions"]] if answer else []
    log(f"\n## eole serve: the {served[0]} model ({warm + timed} steps) on {device.group(1) if device else '?'}, "
        f"ready in {up:.0f} s; one request of {len(sentences)} lines (the last empty): "
        + (f"answered in {took:.2f} s, {sum(1 for o in outputs if o)} non-empty outputs, empty line -> "
           f"{outputs[-1]!r}" if answer else f"FAILED: {error}; the log's end:\n{text[-1500:]}"))
    data["serve"] = dict(device=device.group(1) if device else None, ready_s=up, request_s=took, outputs=outputs,
                         error=error)
    log.data["eole"] = data


def translate(args, model: str, lines: Path, out: Path, system: str, dtype_note="", in_process=False) -> tuple:
    """``onmt_translate`` (a process, timed whole), or in this process (``onmt.bin.translate.translate``)."""
    cmd = [stock("onmt_translate"), "-model", model, "-src", str(lines), "-output", str(out), "-beam_size", "5",
           "-batch_size", "64", "-max_length", "200"]
    if args.gpu:
        cmd += ["-gpu", "0"]
    transform = source_transform(system)
    if transform:
        cmd += ["-transforms", transform, "-xl_preorderer", str(args.workdir / "preorderer.xlp")]
    t0 = time.perf_counter()
    if in_process:
        from onmt.bin.translate import _get_parser, translate as onmt_translate

        onmt_translate(_get_parser().parse_args(cmd[1:]))
        return time.perf_counter() - t0, out.read_text().splitlines()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    took = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"onmt_translate failed for {system}{dtype_note}:\n{proc.stderr[-2000:]}")
    return took, out.read_text().splitlines()


def section_precision(args, log: Log) -> None:
    warm, timed = args.precision_steps
    n = 8 if args.smoke else 50
    lines = args.out / "precision.src"
    lines.write_text("\n".join((args.workdir / "data" / "test.src").read_text().splitlines()[:n]) + "\n")
    dtypes = ["fp16"] if args.gpu else []
    log(f"\n## precision: every system {warm + timed} steps with -model_dtype fp16 (loss finite?), then "
        f"translation of {n} sentences with that checkpoint (onmt_translate's code, in this process); "
        "fp16's speed-up: the speed section's fp16 rows")
    if not args.gpu:
        log("no GPU: OpenNMT-py 3.5.1 runs -model_dtype fp16 on CUDA only; fp32 checked here instead")
        dtypes = ["fp32"]
    log("bf16: not offered by OpenNMT-py 3.5.1 (-model_dtype fp32|fp16); onmt_xl's -xl_cpu_precision bf16 is CPU-only")
    res = {}
    for dtype in dtypes:
        log(f"{'system':14s} {'dtype':>6s} {'xent':>8s} {'finite':>7s} {'translated':>10s} {'empty':>6s}")
        for system in args.systems.split(","):
            name = f"prec_{system}_{dtype}"
            run = train_run(args, system, args.study, name, warm, timed, keep=True, model_dtype=dtype)
            finite = run["xent"] is not None and torch.isfinite(torch.tensor(run["xent"])).item()
            _, hyps = translate(args, run["checkpoint"], lines, args.out / f"{name}.hyp", system, f" ({dtype})",
                                in_process=True)
            Path(run["checkpoint"]).unlink()
            res[f"{system}/{dtype}"] = dict(xent=run["xent"], finite=finite, lines=len(hyps))
            log(f"{system:14s} {dtype:>6s} {run['xent']:>8.3f} {str(finite):>7s} {len(hyps):>10d} "
                f"{sum(1 for h in hyps if not h.strip()):>6d}")
    log.data["precision"] = res


def section_translate(args, log: Log) -> None:
    warm, timed = args.steps
    models = {s: train_run(args, s, args.study, f"tr_{s}", warm, timed, keep=True)["checkpoint"]
              for s in ("baseline", "combination")}
    lines = args.out / "translate.src"
    src = (args.workdir / "data" / "test.src").read_text().splitlines()[:args.translate_lines]
    lines.write_text("\n".join(src) + "\n")
    log(f"\n## translate: onmt_translate of {len(src)} test sentences, beam 5, whole process (s), "
        f"{args.reps} interleaved repetitions, {'GPU' if args.gpu else 'CPU'}")
    # the baseline's checkpoint with the transform: the same decoding work, plus preorderer load and parses
    configs = [("baseline", models["baseline"], "baseline"),
               ("baseline + xl_position", models["baseline"], "combination"),
               ("combination + xl_position", models["combination"], "combination")]
    times = {c[0]: [] for c in configs}
    lengths = {}
    for rep in range(args.reps):
        for label, model, as_system in (configs if rep % 2 == 0 else configs[::-1]):
            took, hyps = translate(args, model, lines, args.out / "tr.hyp", as_system)
            times[label].append(took)
            lengths[label] = statistics.mean(len(h.split()) for h in hyps)
    for label, values in times.items():
        ratio = [a / b for a, b in zip(values, times["baseline"])]
        log(f"{label:28s} {spread(values):>24s} s   / baseline {spread(ratio):>22s}   "
            f"mean output length {lengths[label]:.1f}")
    for model in models.values():
        Path(model).unlink()
    log.data["translate"] = times


def section_ranks(args, log: Log) -> None:
    n_gpu = torch.cuda.device_count() if args.gpu else 0
    if n_gpu >= 2:
        cfg = write_cfg(args, "combination", args.study, "ranks", train_steps=30, warmup_steps=4, report_every=10)
        t0 = time.perf_counter()
        proc = subprocess.run([stock("onmt_train"), "-config", str(cfg), "-world_size", "2", "-gpu_ranks", "0", "1"],
                              capture_output=True, text=True, env=child_env())
        ok = proc.returncode == 0 and "Step 30/" in proc.stdout + proc.stderr
        log(f"\n## ranks: onmt_train -world_size 2 -gpu_ranks 0 1 (Combination, 30 steps, NCCL): "
            f"{'ran' if ok else 'FAILED'} in {time.perf_counter() - t0:.0f} s")
        if not ok:
            log((proc.stdout + proc.stderr)[-3000:])
        log.data["ranks"] = dict(mode="nccl", ok=ok)
        return
    from tests import multiprocess_probe as probe
    from onmt.utils.distributed import spawned_train

    log(f"\n## ranks: {n_gpu} GPU(s): OpenNMT-py 3.5.1 puts rank i on cuda:i, so -world_size 2 needs two devices. "
        "Ran instead: the two ranks as onmt/bin/train.py spawns them (spawn, spawned_train), -gpu_backend gloo, "
        "each one CPU training step of Combination (its share of the corpus, xl_pos, all-reduce)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = write_cfg(args, "combination", SMOKE if args.smoke else args.study, "ranks")
    opt = parse_train_opt(cfg, ["-world_size", "2", "-gpu_ranks", "0", "1", "-gpu_backend", "gloo",
                                "-master_ip", "127.0.0.1", "-master_port", str(port)])
    opt.save_data = str(args.out / "ranks")
    mp = torch.multiprocessing.get_context("spawn")
    errors = mp.SimpleQueue()
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = child_env()["PYTHONPATH"]
    try:
        procs = [mp.Process(target=spawned_train, args=(probe.distributed_step, opt, i, errors)) for i in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    ranks = []
    for i in range(2):
        path = Path(f"{opt.save_data}.rank{i}.json")
        ranks.append(json.loads(path.read_text()) if path.exists() else None)
    for i, r in enumerate(ranks):
        if r is None:
            log(f"rank {i}: no result")
            continue
        log(f"rank {r['rank']} ({r['backend']}): encoders {len(r['encoders'])}/{len(probe.ENCODERS)}, transforms "
            f"{r['transforms']}, options {len(r['options'])}/{len(probe.OPTIONS)}, xl_pos in batch {r['has_xl_pos']}, "
            f"{r['encoder']}, loss {r['loss']:.4f}, gradient sum after all-reduce {r['grad_sum']:.6g}")
    for rank, trace in failures:
        log(f"rank {rank} failed:\n{trace[-2000:]}")
    log.data["ranks"] = dict(mode="gloo-probe", ranks=ranks, failures=failures)


def steps_pair(text: str):
    warm, timed = (int(x) for x in text.split("+"))
    return warm, timed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--workdir", type=Path, default=REPO / "runs" / "decisive_jaen")
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--systems", default=STUDY_SYSTEMS, help="timed and checked at the study's size")
    p.add_argument("--base-systems", default="baseline,inxl,headxl,combination")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=steps_pair, default=(10, 40), help="WARM+TIMED steps at the study's size")
    p.add_argument("--base-steps", type=steps_pair, default=(10, 30), help="WARM+TIMED at base and BIG size")
    p.add_argument("--precision-steps", type=steps_pair, default=(5, 25))
    p.add_argument("--data-batches", type=int, default=40)
    p.add_argument("--translate-lines", type=int, default=300)
    p.add_argument("--no-big", dest="big", action="store_false")
    p.add_argument("--big-systems", default="baseline,combination")
    p.add_argument("--profile-systems", default="baseline,inxl,headxl,combination")
    p.add_argument("--profile-size", choices=("study", "base"), default="base")
    p.add_argument("--profile-steps", type=steps_pair, default=(10, 10), help="WARM+PROFILED steps")
    p.add_argument("--first-epoch-sizes", default="study", help="study and/or base")
    p.add_argument("--first-epoch-rows", default="baseline,combination,combination+pre",
                   help="SYSTEM[+pre][+w2]: +pre precomputed positions (data/train.src.xlpos), +w2 -num_workers 2")
    p.add_argument("--first-epoch-steps", type=steps_pair, default=(10, 290), help="WARM+TIMED steps")
    p.add_argument("--eole-systems", default="baseline,combination")
    p.add_argument("--eole-steps", type=steps_pair, default=(10, 40), help="WARM+TIMED steps of eole train")
    p.add_argument("--smoke", action="store_true", help="tiny sizes and steps, synthetic data (checks the script)")
    args = p.parse_args()
    for name in args.sections.split(","):
        if name not in SECTIONS + SPEED_PARTS:
            sys.exit(f"bench_gpu: --sections: unknown section {name!r} (one of {', '.join(SECTIONS + SPEED_PARTS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    args.gpu = torch.cuda.is_available()
    args.study = {}
    if args.smoke:
        args.workdir = smoke_workdir(args.out)
        args.study = SMOKE
        args.steps, args.base_steps, args.precision_steps = (2, 3), (2, 3), (2, 2)
        args.data_batches, args.translate_lines, args.reps = 3, 8, min(args.reps, 2)
        args.profile_steps, args.first_epoch_steps, args.eole_steps = (2, 3), (2, 6), (5, 5)
        args.systems = "baseline,inxl,headxl,combination,refsr"
    args.workdir = args.workdir.resolve()
    missing = [f for f in ("data/train.src", "data/train.tgt", "data/test.src", "preorderer.xlp", "vocab.src",
                           "vocab.tgt", "align/train.gdfa") if not (args.workdir / f).exists()]
    if missing:
        sys.exit(f"bench_gpu: {args.workdir} lacks {', '.join(missing)} (carry them, or --smoke)")
    log = Log(args.out / "bench_gpu.txt")
    device = torch.cuda.get_device_name(0) if args.gpu else f"CPU ({platform.processor() or platform.machine()})"
    shown = [str(Path(a).resolve().relative_to(REPO)) if os.path.isabs(a) and Path(a).resolve().is_relative_to(REPO)
             else ("OUT" if os.path.isabs(a) and Path(a) == args.out else a) for a in sys.argv[1:]]
    log(f"# python tools/bench/bench_gpu.py {' '.join(shown)}   ({time.strftime('%Y-%m-%d')})")  # no machine paths
    log(f"{device}, torch {torch.__version__}, OpenNMT-py {onmt.__version__}, {os.cpu_count()} CPUs, "
        f"work directory {args.workdir.name}{' (SMOKE: figures meaningless)' if args.smoke else ''}")
    t_all = time.perf_counter()
    failed = []
    for name in args.sections.split(","):  # one call on a lent GPU: a section that fails does not stop the others
        t0 = time.perf_counter()
        try:
            globals()[f"section_{name}"](args, log)
        except Exception:  # noqa: BLE001 - reported with its traceback, then the next section
            import traceback

            failed.append(name)
            log(f"\n## {name}: FAILED\n{traceback.format_exc()[-3000:]}")
            gc.collect()
            if args.gpu:
                torch.cuda.empty_cache()
        log(f"({name}: {time.perf_counter() - t0:.0f} s)")
        (args.out / "bench_gpu.json").write_text(json.dumps(log.data, indent=1, default=str))  # kept if cut short
    log(f"\n(all: {time.perf_counter() - t_all:.0f} s{'; failed: ' + ', '.join(failed) if failed else ''})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
