#!/usr/bin/env python
"""What XL (or any system) costs end to end: training throughput and translation time vs the stock baseline.

    python tools/bench/bench_xl_cost.py [--workdir runs/bench_xl] [--data-dir DIR] [--steps 200] [--rounds 2]
                                  [--systems baseline,combination,disan,...]

All systems train from the configs of ``onmt_xl.experiments.configs`` (same model size, data, batch and seed),
side by side in one run, reversing their order every other round; XL systems pay for the
``xl_position`` transform (preorderer + cache) inside OpenNMT's data pipeline and for their encoder.
Throughput is OpenNMT's own source tokens/second per report, averaged over each run's reports after
the first (warm-up). Translation: wall time of the stock ``onmt_translate`` on the test set, with the
system's transform if it has one. ``--data-dir`` must hold train/valid ``.src``/``.tgt`` and ``test.src``
(default: the demo's synthetic corpus) and ``--preorderer`` a trained preorderer (default: trained here).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(  # the OpenNMT commands run this checkout, not an installed copy
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from onmt_xl.experiments.configs import PRESETS, SYSTEMS, config, source_transform  # noqa: E402
from onmt_xl.experiments.stock import run_logged as _run, stock as _stock  # noqa: E402

TOK_S = re.compile(r"Step\s+\d+/\s*\d+;.*?(\d+)/\s*(\d+) tok/s")


def prepare(args) -> Path:
    wd = Path(args.workdir)
    data = wd / "data"
    data.mkdir(parents=True, exist_ok=True)
    if args.data_dir:
        for name in ("train.src", "train.tgt", "valid.src", "valid.tgt", "test.src"):
            shutil.copyfile(Path(args.data_dir) / name, data / name)
    elif not (data / "test.src").exists():
        from onmt_xl.experiments.demo import make_demo_data

        d = make_demo_data(wd)
        for name, src in (("train.src", d.train_src), ("train.tgt", d.train_tgt), ("valid.src", d.valid_src),
                          ("valid.tgt", d.valid_tgt), ("test.src", d.test_src)):
            shutil.copyfile(src, data / name)
    gdfa = wd / "align" / "train.gdfa"  # read by the preorderer's training and by exgre/refsr configs
    if not gdfa.exists():
        from onmt_xl.core.align.eflomal_aligner import align_files

        gdfa.parent.mkdir(exist_ok=True)
        align_files(str(data / "train.src"), str(data / "train.tgt"), str(gdfa.with_suffix("")))
    pre = wd / "preorderer.xlp"
    if args.preorderer:
        shutil.copyfile(args.preorderer, pre)
    elif not pre.exists():
        from onmt_xl.core.align.pharaoh import read_pharaoh
        from onmt_xl.core.reorder.preorderer import Preorderer

        src = [line.split() for line in (data / "train.src").read_text().splitlines()]
        Preorderer.train(src, read_pharaoh(str(gdfa), [len(s) for s in src]), progress=False).save(str(pre))
    return wd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="runs/bench_xl")
    ap.add_argument("--data-dir")
    ap.add_argument("--preorderer")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--preset", default="demo", choices=sorted(PRESETS), help="model size "
                    "(onmt_xl.experiments.configs.PRESETS)")
    ap.add_argument("--decode-length", type=int, default=0,
                    help="translate exactly N target tokens per sentence (-min_length = -max_length = N), so every "
                         "system decodes the same work whatever its (barely trained) outputs; 0: natural lengths")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--systems", default="baseline,combination",
                    help=f"comma-separated, the first is the reference; from: {', '.join(SYSTEMS)}")
    ap.add_argument("--summarize", metavar="RESULTS_JSONL", help="only print the table of an earlier run's "
                    "results.jsonl")
    args = ap.parse_args()
    if args.summarize:
        return summarize(Path(args.summarize))
    systems = tuple(args.systems.split(","))
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}")
    wd = prepare(args)
    overrides = dict(train_steps=args.steps, valid_steps=10 * args.steps, save_checkpoint_steps=args.steps,
                     report_every=max(args.steps // 8, 1))
    cfgs = {}
    for s in systems:
        cfgs[s] = wd / f"{s}.yaml"
        cfgs[s].write_text(yaml.safe_dump(config(s, str(wd), overrides, args.preset)))
    logs = wd / "logs"
    logs.mkdir(exist_ok=True)
    if not (wd / "vocab.src").exists():
        _run([_stock("onmt_build_vocab"), "-config", str(cfgs[systems[0]]), "-n_sample", "-1"], logs / "vocab.log",
             show="")
    tok_s = {s: [] for s in systems}
    train_s = {s: [] for s in systems}
    trans_s = {s: [] for s in systems}
    for r in range(args.rounds):
        order = systems if r % 2 == 0 else systems[::-1]  # cancels drift of a shared machine
        for s in order:
            log = logs / f"train_{s}_{r}.log"
            train_s[s].append(_run([_stock("onmt_train"), "-config", str(cfgs[s])], log, show=""))
            rates = [int(m.group(1)) for m in TOK_S.finditer(log.read_text())]
            tok_s[s].extend(rates[1:])
            model = wd / "models" / f"{s}_step_{args.steps}.pt"
            cmd = [_stock("onmt_translate"), "-model", str(model), "-src", str(wd / "data" / "test.src"),
                   "-output", str(wd / f"hyp.{s}"), "-beam_size", "5", "-batch_size", "64", "-batch_type", "sents"]
            if args.decode_length:
                cmd += ["-min_length", str(args.decode_length), "-max_length", str(args.decode_length)]
            if source_transform(s):
                cmd += ["-transforms", source_transform(s), "-xl_preorderer", str(wd / "preorderer.xlp")]
            trans_s[s].append(_run(cmd, logs / f"translate_{s}_{r}.log", show=""))
            with open(wd / "results.jsonl", "a") as out:  # kept if the run is cut short
                out.write(json.dumps(dict(system=s, round=r, steps=args.steps, preset=args.preset, tok_s=rates[1:],
                                          train_wall_s=train_s[s][-1], translate_wall_s=trans_s[s][-1])) + "\n")
    import platform

    import torch

    print(f"{args.rounds} rounds x {args.steps} steps, preset {args.preset}, data {args.data_dir or 'demo synthetic'}, "
          f"decode length {args.decode_length or 'natural'}, workdir {wd}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads, load after run {os.getloadavg()}")
    summarize(wd / "results.jsonl", systems)


def summarize(path: Path, systems=None) -> None:
    """Print the table of a ``results.jsonl``: means, and the median of per-report paired ratios.

    Every system trains on the same batches in the same order (same seed and data), so report ``k`` of
    round ``r`` covers the same steps for all: the median over ``(r, k)`` of system/reference for
    that report is robust to a transient disturbance of the machine, which moves a mean.
    """
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    systems = systems or list(dict.fromkeys(r["system"] for r in records))
    ref = systems[0]
    by = {(r["system"], r["round"]): r for r in records}
    mean, median = statistics.mean, statistics.median
    print(f"{'system':18s} {'src tok/s':>10s} {'mean ratio':>11s} {'median paired':>14s} {'train wall s':>13s} "
          f"{'translate s':>12s} {'vs ' + ref:>10s}")
    for s in systems:
        rounds = [r for (name, r) in by if name == s]
        if not rounds:
            print(f"{s:18s} (no finished run)")
            continue
        rates = [x for r in rounds for x in by[s, r]["tok_s"]]
        ref_rates = [x for (name, r) in by if name == ref for x in by[ref, r]["tok_s"]]
        paired = [a / b for r in rounds if (ref, r) in by for a, b in zip(by[s, r]["tok_s"], by[ref, r]["tok_s"])]
        trans = mean(by[s, r]["translate_wall_s"] for r in rounds)
        ref_trans = mean(by[ref, r]["translate_wall_s"] for (name, r) in by if name == ref)
        print(f"{s:18s} {mean(rates):10.0f} {mean(rates) / mean(ref_rates):10.3f}x "
              f"{(median(paired) if paired else float('nan')):13.3f}x "
              f"{mean(by[s, r]['train_wall_s'] for r in rounds):13.1f} {trans:12.2f} {trans / ref_trans:9.3f}x")


if __name__ == "__main__":
    main()
