#!/usr/bin/env python3
"""Alignment quality of ``onmt-xl align`` against gold alignments, and eflomal's wall time.

Default data: ``../shared/data/gold/jaen.{src-tgt,gold}`` (582 KFTT Japanese-English pairs, gold links
1-indexed, source first, ``p`` = possible) aligned together with the 50k ``../shared/data/enja/train.*``
pairs as extra unlabelled data (``--extra-src/--extra-tgt``). Each run executes the real command::

    onmt-xl align --text jaen.src-tgt --extra-src train.ja --extra-tgt train.en --out-prefix RUN

in a subprocess and scores ``RUN.fwd``, ``RUN.rev`` and ``RUN.gdfa`` (plus the other symmetrizations
of the same two directions) with Och & Ney AER / precision / recall. eflomal cannot be seeded, so the
command runs ``--runs`` times (default 3) and figures are mean +- sample standard deviation.

``--time-50k`` also times eflomal on the extra corpus alone (both directions in one run, as ``align``
does, then forward only and reverse only through eflomal's Python API).

    python tools/bench_align.py --runs 3 --time-50k --json aer.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from onmt_xl.align.aer import check_links_in_range, read_gold, read_joint_text, score_alignments  # noqa: E402
from onmt_xl.align.pharaoh import read_pharaoh  # noqa: E402
from onmt_xl.align.symmetrize import grow_diag, grow_diag_final, intersection, union  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
METHODS = ("forward", "reverse", "gdfa", "intersection", "grow-diag", "grow-diag-final", "union")


def load_avg() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average n/a"


def mean_sd(xs: Sequence[float], digits: int = 4) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.{digits}f} ± {sd:.{digits}f}"


def run_align_command(args: List[str]) -> tuple:
    """Run ``onmt-xl align ARGS``; return (eflomal seconds as reported, process wall seconds)."""
    cmd = [sys.executable, "-m", "onmt_xl.cli", "align", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    m = re.search(r"aligned in ([0-9.]+) s wall time", proc.stderr)
    return (float(m.group(1)) if m else float("nan")), wall


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", default=str(SHARED / "gold" / "jaen.src-tgt"), help="'source ||| target' pairs")
    ap.add_argument("--gold", default=str(SHARED / "gold" / "jaen.gold"), help="gold links (source first)")
    ap.add_argument("--zero-indexed", action="store_true", help="gold indices start at 0 (default: 1)")
    ap.add_argument("--extra-src", default=str(SHARED / "enja" / "train.ja"))
    ap.add_argument("--extra-tgt", default=str(SHARED / "enja" / "train.en"))
    ap.add_argument("--no-extra", action="store_true", help="align the gold pairs alone")
    ap.add_argument("--runs", type=int, default=3, help="independent eflomal runs (default 3)")
    ap.add_argument("--align-args", default="", help="more options for 'onmt-xl align', e.g. '--model 2'")
    ap.add_argument("--time-50k", action="store_true", help="also time eflomal on the extra corpus alone")
    ap.add_argument("--json", default=None, help="also write the results as JSON")
    args = ap.parse_args(argv)
    for p in [args.text, args.gold] + ([] if args.no_extra else [args.extra_src, args.extra_tgt]):
        if not os.path.isfile(p):
            ap.error(f"{p} not found")
    if args.runs < 1:
        ap.error("--runs must be >= 1")

    src, tgt = read_joint_text(args.text)
    sure, possible = read_gold(args.gold, one_indexed=not args.zero_indexed)
    check_links_in_range(possible, src, tgt, args.gold)
    out: Dict[str, object] = dict(text=args.text, gold=args.gold, sentences=len(src), cpus=os.cpu_count(),
                                  extra=None if args.no_extra else [args.extra_src, args.extra_tgt],
                                  load_start=load_avg(), runs=[])
    n_extra = 0 if args.no_extra else sum(1 for _ in open(args.extra_src, "rb"))
    print(f"{len(src)} gold pairs, {sum(map(len, sure))} sure + {sum(map(len, possible)) - sum(map(len, sure))} "
          f"possible-only links; {n_extra} extra pairs; {os.cpu_count()} CPUs; {load_avg()}", flush=True)

    per_method: Dict[str, Dict[str, List[float]]] = {m: dict(aer=[], precision=[], recall=[], links=[]) for m in METHODS}
    seconds: List[float] = []
    with tempfile.TemporaryDirectory(prefix="bench_align_") as tmp:
        for r in range(1, args.runs + 1):
            prefix = os.path.join(tmp, f"run{r}")
            cmd = ["--text", args.text, "--out-prefix", prefix] + args.align_args.split()
            if not args.no_extra:
                cmd += ["--extra-src", args.extra_src, "--extra-tgt", args.extra_tgt]
            secs, wall = run_align_command(cmd)
            seconds.append(secs)
            fwd = read_pharaoh(prefix + ".fwd", [len(s) for s in src], [len(t) for t in tgt])
            rev = read_pharaoh(prefix + ".rev", [len(s) for s in src], [len(t) for t in tgt])
            gdfa = read_pharaoh(prefix + ".gdfa", [len(s) for s in src], [len(t) for t in tgt])
            hyps = {
                "forward": fwd, "reverse": rev, "gdfa": gdfa,
                "intersection": [intersection(f, b) for f, b in zip(fwd, rev)],
                "grow-diag": [grow_diag(f, b, len(s), len(t)) for f, b, s, t in zip(fwd, rev, src, tgt)],
                "grow-diag-final": [grow_diag_final(f, b, len(s), len(t)) for f, b, s, t in zip(fwd, rev, src, tgt)],
                "union": [union(f, b) for f, b in zip(fwd, rev)],
            }
            run: Dict[str, object] = dict(eflomal_seconds=secs, command_seconds=wall)
            for m, hyp in hyps.items():
                s = score_alignments(hyp, sure, possible)
                run[m] = dict(aer=s.aer, precision=s.precision, recall=s.recall, links=s.n_hyp)
                for k in ("aer", "precision", "recall"):
                    per_method[m][k].append(getattr(s, k))
                per_method[m]["links"].append(s.n_hyp)
            out["runs"].append(run)  # type: ignore[union-attr]
            print(f"run {r}: eflomal {secs:.1f} s ({wall:.1f} s for the whole command); "
                  f"gdfa AER {run['gdfa']['aer']:.4f}, forward {run['forward']['aer']:.4f}, "
                  f"reverse {run['reverse']['aer']:.4f}; {load_avg()}", flush=True)

        if args.time_50k and not args.no_extra:
            import eflomal

            from onmt_xl.align.eflomal_aligner import align_corpus, read_parallel

            ex_src, ex_tgt = read_parallel(args.extra_src, args.extra_tgt)
            both = align_corpus(ex_src, ex_tgt).seconds
            lines_s = [" ".join(s) + "\n" for s in ex_src]
            lines_t = [" ".join(t) + "\n" for t in ex_tgt]
            one = {}
            for direction in ("fwd", "rev"):
                t0 = time.perf_counter()
                eflomal.Aligner().align(lines_s, lines_t, **{f"links_filename_{direction}": os.path.join(tmp, direction)})
                one[direction] = time.perf_counter() - t0
            out["time_extra"] = dict(pairs=len(ex_src), both_directions=both, forward_only=one["fwd"],
                                     reverse_only=one["rev"], load=load_avg())
            print(f"eflomal on the {len(ex_src)} extra pairs: both directions {both:.1f} s, forward only "
                  f"{one['fwd']:.1f} s, reverse only {one['rev']:.1f} s; {load_avg()}", flush=True)

    out["summary"] = {m: {k: dict(mean=statistics.mean(v), sd=statistics.stdev(v) if len(v) > 1 else 0.0)
                          for k, v in d.items()} for m, d in per_method.items()}
    out["load_end"] = load_avg()
    print(f"\n{args.runs} runs of eflomal on {len(src) + n_extra} pairs (both directions): "
          f"{mean_sd(seconds, 1)} s")
    print("\n| symmetrization | AER | precision | recall | links |")
    print("| --- | --- | --- | --- | --- |")
    for m in METHODS:
        d = per_method[m]
        print(f"| {m} | {mean_sd(d['aer'])} | {mean_sd(d['precision'])} | {mean_sd(d['recall'])} | "
              f"{statistics.mean(d['links']):.0f} |")
    print(f"\n{load_avg()}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
