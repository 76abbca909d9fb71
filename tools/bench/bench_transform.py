#!/usr/bin/env python
"""The ``xl_position`` transform on a cold bucket: OpenNMT's per-example ``batch_apply`` beside onmt_xl's, which
parses the bucket's preorderer cache misses in one compiled call (``XLPositionSource._prefilled``).

    python tools/bench/bench_transform.py --workdir runs/decisive_jaen [--bucket 8192] [--reps 3] [--threads 1,0]

A bucket is what OpenNMT-py 3.5.1 transforms at once before batching (``-bucket_size``, 8,192 sentences by default),
on the training thread with ``-num_workers 0``: in the first epoch every sentence is a cache miss, so this is the
stall at each bucket refill. Each repetition takes the next ``--bucket`` training sources (cold for both: a fresh
transform each), times both ways in alternating order and checks they give the same positions. ``--threads``:
numba threads for the bucketed parse (0: every core). Prints ms per bucket, median (range), and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from argparse import Namespace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import onmt_xl  # noqa: E402

onmt_xl.register()
from onmt.transforms.transform import Transform  # noqa: E402

from onmt_xl.core.reorder.threads import set_threads  # noqa: E402
from onmt_xl.opennmt.transforms.xl_position import XLPositionTransform  # noqa: E402


def transform(preorderer: str) -> XLPositionTransform:
    opts = Namespace(xl_source="preorderer", xl_preorderer=preorderer, xl_noise=0.0, seed=-1)
    XLPositionTransform._validate_options(opts)
    t = XLPositionTransform(opts)
    t.warm_up()
    return t


def spread(values) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", type=Path, default=REPO / "runs" / "decisive_jaen")
    p.add_argument("--bucket", type=int, default=8192)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", default="1,0", help="numba threads of the bucketed parse, comma-separated (0: all)")
    args = p.parse_args()
    pre = str(args.workdir / "preorderer.xlp")
    lines = (args.workdir / "data" / "train.src").read_text(encoding="utf-8").splitlines()
    if len(lines) < args.bucket:
        sys.exit(f"bench_transform: {args.workdir}/data/train.src has {len(lines)} lines, fewer than --bucket")
    warm = transform(pre)  # compile (numba caches), read the preorderer once
    warm.batch_apply([({"src": lines[i].split()}, None, "train") for i in range(64)])
    print(f"# python tools/bench/bench_transform.py {' '.join(sys.argv[1:])}   ({time.strftime('%Y-%m-%d')})")
    print(f"cold buckets of {args.bucket} training sentences, ms per bucket, median (range) of {args.reps}")
    start = 0
    for threads in (int(x) for x in args.threads.split(",")):
        used = set_threads(threads)
        times = {"one by one (OpenNMT's batch_apply)": [], "bucketed (onmt_xl's batch_apply)": []}
        for rep in range(args.reps):
            outs = {}
            ways = list(times) if rep % 2 == 0 else list(times)[::-1]
            for way in ways:
                chunk = [lines[(start + i) % len(lines)] for i in range(args.bucket)]  # a fresh transform: cold
                start += args.bucket
                bucket = [({"src": s.split()}, None, "train") for s in chunk]
                t = transform(pre)
                apply = Transform.batch_apply if way.startswith("one") else XLPositionTransform.batch_apply
                t0 = time.perf_counter()
                out = apply(t, bucket)
                times[way].append((time.perf_counter() - t0) * 1000)
                # the same sentences the other way, untimed: the positions must agree
                check = (XLPositionTransform.batch_apply if way.startswith("one") else Transform.batch_apply)(
                    transform(pre), [({"src": s.split()}, None, "train") for s in chunk])
                outs[way] = [ex["xl_pos"] for ex, _, _ in out] == [ex["xl_pos"] for ex, _, _ in check]
            if not all(outs.values()):
                sys.exit("bench_transform: the two ways gave different positions")
        one, bucketed = times.values()
        print(f"numba threads {used}:")
        for way, values in times.items():
            print(f"  {way:36s} {spread(values):>24s} ms")
        ratios = [a / b for a, b in zip(one, bucketed)]
        print(f"  {'one by one / bucketed':36s} {statistics.median(ratios):>11.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
