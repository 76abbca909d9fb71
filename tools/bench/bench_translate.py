#!/usr/bin/env python
"""``onmt_translate`` wall time of XL systems against the stock baseline, split into a fixed start-up
cost and a per-sentence cost.

    python tools/bench/bench_translate.py --workdir runs/bench_xl4 [--systems baseline,combination]
                                    [--sizes 500,5000] [--reps 3] [--decode-length 10]

Uses the models, data and preorderer a ``tools/bench/bench_xl_cost.py`` run left in ``--workdir``
(``models/SYSTEM_step_N.pt``). For each input size (the first N lines of ``data/train.src``, which the
100-step models have barely seen), every system translates it ``--reps`` times, the systems alternating
within each repetition. With ``--decode-length`` every sentence decodes exactly that many target tokens
(``-min_length = -max_length``), so the systems do the same decoder work whatever their outputs. The
per-sentence cost is the slope between the smallest and the largest size; the fixed cost is what is
left at zero sentences (process start-up, imports, model and preorderer loading).

``--in-process`` measures the per-sentence cost without process start-up, which on a shared machine
varies by seconds between runs: one ``InferenceEnginePY`` per system (what ``onmt_translate`` builds)
translates the largest input ``--reps`` times, the systems back to back in alternating order, after one
warm-up translation each (numba's kernels loaded); every translation rebuilds the transforms, so the
preorderer's positions are computed anew, as in a fresh ``onmt_translate``. It prints each system's
ms/sentence and its ratio to the first system, median (IQR; min–max) of the back-to-back ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["PYTHONPATH"] = os.pathsep.join(  # the OpenNMT commands run this checkout, not an installed copy
    [str(Path(__file__).resolve().parents[2])] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from onmt_xl.experiments.configs import source_transform  # noqa: E402
from onmt_xl.experiments.stock import stock  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--systems", default="baseline,combination")
    ap.add_argument("--sizes", default="500,5000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--decode-length", type=int, default=10)
    ap.add_argument("--beam-size", type=int, default=5)
    ap.add_argument("--in-process", action="store_true")
    args = ap.parse_args()
    wd = Path(args.workdir)
    systems = args.systems.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    models = {}
    for s in systems:
        found = sorted((wd / "models").glob(f"{s}_step_*.pt"))
        if not found:
            raise SystemExit(f"{wd / 'models'}: no {s}_step_*.pt (run tools/bench/bench_xl_cost.py first)")
        models[s] = found[-1]
    lines = (wd / "data" / "train.src").read_text(encoding="utf-8").splitlines()
    inputs = {}
    for n in sizes:
        inputs[n] = wd / f"translate_input.{n}.src"
        inputs[n].write_text("\n".join((lines * (n // len(lines) + 1))[:n]) + "\n", encoding="utf-8")
    if args.in_process:
        return in_process(args, wd, systems, models, inputs[max(sizes)], max(sizes))
    times = {(s, n): [] for s in systems for n in sizes}
    for rep in range(args.reps):
        for n in sizes:
            order = systems if rep % 2 == 0 else systems[::-1]
            for s in order:
                cmd = [stock("onmt_translate"), "-model", str(models[s]), "-src", str(inputs[n]), "-output", os.devnull,
                       "-beam_size", str(args.beam_size), "-batch_size", "64", "-batch_type", "sents"]
                if args.decode_length:
                    cmd += ["-min_length", str(args.decode_length), "-max_length", str(args.decode_length)]
                if source_transform(s):
                    cmd += ["-transforms", source_transform(s), "-xl_preorderer", str(wd / "preorderer.xlp")]
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                times[s, n].append(time.perf_counter() - t0)
                print(f"rep {rep} {s:14s} {n:6d} sentences {times[s, n][-1]:7.2f} s", flush=True)
    ref = systems[0]
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nonmt_translate, beam {args.beam_size}, batch 64 sentences, decode length "
          f"{args.decode_length or 'natural'}, median of {args.reps}; load after run {os.getloadavg()}")
    print(f"{'system':14s} " + " ".join(f"{f'{n} sent. s':>13s} {'vs ' + ref:>9s}" for n in sizes)
          + f" {'ms/sentence':>12s} {'vs ' + ref:>9s} {'fixed s':>8s}")
    lo, hi = min(sizes), max(sizes)
    slope = {s: (med[s, hi] - med[s, lo]) / (hi - lo) for s in systems}
    for s in systems:
        fixed = med[s, lo] - slope[s] * lo
        print(f"{s:14s} " + " ".join(f"{med[s, n]:13.2f} {med[s, n] / med[ref, n]:8.3f}x" for n in sizes)
              + f" {1000 * slope[s]:12.3f} {slope[s] / slope[ref]:8.3f}x {fixed:8.2f}")


def in_process(args, wd, systems, models, src, n) -> None:
    import onmt_xl
    from onmt.bin.translate import _get_parser
    from onmt.inference_engine import InferenceEnginePY
    from onmt.utils.parse import ArgumentParser

    onmt_xl.register()
    engines = {}
    for s in systems:
        argv = ["-model", str(models[s]), "-src", str(src), "-output", os.devnull, "-beam_size", str(args.beam_size),
                "-batch_size", "64", "-batch_type", "sents", "-log_file", os.devnull]
        if args.decode_length:
            argv += ["-min_length", str(args.decode_length), "-max_length", str(args.decode_length)]
        if source_transform(s):
            argv += ["-transforms", source_transform(s), "-xl_preorderer", str(wd / "preorderer.xlp")]
        opt = _get_parser().parse_args(argv)
        ArgumentParser.validate_translate_opts(opt)
        ArgumentParser._get_all_transform_translate(opt)
        ArgumentParser._validate_transforms_opts(opt)
        ArgumentParser.validate_translate_opts_dynamic(opt)
        engines[s] = InferenceEnginePY(opt)
    times = {s: [] for s in systems}
    for rep in range(args.reps + 1):
        for s in systems if rep % 2 == 0 else systems[::-1]:
            t0 = time.perf_counter()
            engines[s].infer_file()
            if rep:
                times[s].append(time.perf_counter() - t0)
        print(f"repetition {rep}{' (warm-up)' if not rep else ''} done", file=sys.stderr, flush=True)
    ref = systems[0]
    print(f"in-process translation of {n} sentences, beam {args.beam_size}, batch 64 sentences, decode length "
          f"{args.decode_length or 'natural'}, {args.reps} repetitions after a warm-up; torch threads "
          f"{__import__('torch').get_num_threads()}")
    print(f"{'system':14s} {'ms/sentence':>12s}  ratio to {ref}: median (IQR; min–max)")
    for s in systems:
        ratios = [a / b for a, b in zip(times[s], times[ref])]
        q = statistics.quantiles(ratios, n=4)
        print(f"{s:14s} {1000 * statistics.median(times[s]) / n:12.3f}  {statistics.median(ratios):.3f}× "
              f"({q[0]:.3f}–{q[2]:.3f}; {min(ratios):.3f}–{max(ratios):.3f})")


if __name__ == "__main__":
    main()
