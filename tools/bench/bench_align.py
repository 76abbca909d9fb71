#!/usr/bin/env python3
"""Alignment quality of ``onmt-xl align`` against gold alignments, and eflomal's wall time.

Default data: ``../shared/data/gold/jaen.{src-tgt,gold}`` (582 KFTT Japanese-English pairs, gold links
1-indexed, source first, ``p`` = possible) aligned together with the 50k ``../shared/data/enja/train.*``
pairs as extra unlabelled data (``--extra-src/--extra-tgt``). Each run executes the real command::

    onmt-xl align --text jaen.src-tgt --extra-src train.ja --extra-tgt train.en --out-prefix RUN

in a subprocess and scores ``RUN.fwd``, ``RUN.rev`` and ``RUN.gdfa`` (plus the other symmetrizations
of the same two directions) with Och & Ney AER / precision / recall. eflomal cannot be seeded, so the
command runs ``--runs`` times (default 3) and figures are mean +- sample standard deviation.

``--subword KIND:SIZE`` (e.g. ``bpe:8000``) also aligns the sub-word text (pyonmttok models learned on the
extra corpus, :mod:`onmt_xl.core.align.subword`) with eflomal through the Python API, ``--runs`` times, and scores the
links collapsed to words (a word pair is linked when any of their pieces are).

``--time-50k`` also times eflomal on the extra corpus alone (both directions in one run, as ``align``
does, then forward only and reverse only through eflomal's Python API).

    python tools/bench/bench_align.py --runs 3 --time-50k --json aer.json
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.core.align.aer import check_links_in_range, read_gold, read_joint_text, score_alignments  # noqa: E402
from onmt_xl.core.align.pharaoh import read_pharaoh  # noqa: E402
from onmt_xl.core.align.symmetrize import grow_diag, grow_diag_final, intersection, union  # noqa: E402

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


def score_directions(fwd, rev, gdfa, src, tgt, sure, possible) -> Dict[str, Dict[str, float]]:
    hyps = {
        "forward": fwd, "reverse": rev, "gdfa": gdfa,
        "intersection": [intersection(f, b) for f, b in zip(fwd, rev)],
        "grow-diag": [grow_diag(f, b, len(s), len(t)) for f, b, s, t in zip(fwd, rev, src, tgt)],
        "grow-diag-final": [grow_diag_final(f, b, len(s), len(t)) for f, b, s, t in zip(fwd, rev, src, tgt)],
        "union": [union(f, b) for f, b in zip(fwd, rev)],
    }
    out = {}
    for m, hyp in hyps.items():
        sc = score_alignments(hyp, sure, possible)
        out[m] = dict(aer=sc.aer, precision=sc.precision, recall=sc.recall, links=sc.n_hyp)
    return out


def summarize(runs: List[Dict[str, object]]) -> Dict[str, Dict[str, Dict[str, float]]]:
    summary = {}
    for m in METHODS:
        summary[m] = {}
        for k in ("aer", "precision", "recall", "links"):
            v = [r[m][k] for r in runs]  # type: ignore[index]
            summary[m][k] = dict(mean=statistics.mean(v), sd=statistics.stdev(v) if len(v) > 1 else 0.0)
    return summary


def print_table(title: str, runs: List[Dict[str, object]]) -> None:
    print(f"\n{title}\n")
    print("| symmetrization | AER | precision | recall | links |")
    print("| --- | --- | --- | --- | --- |")
    for m in METHODS:
        d = {k: [r[m][k] for r in runs] for k in ("aer", "precision", "recall", "links")}  # type: ignore[index]
        print(f"| {m} | {mean_sd(d['aer'])} | {mean_sd(d['precision'])} | {mean_sd(d['recall'])} | "
              f"{statistics.mean(d['links']):.0f} |")


def run_align_command(args: List[str], in_process: bool = False) -> tuple:
    """Run ``onmt-xl align ARGS``; return (eflomal seconds as reported, command wall seconds)."""
    cmd = [sys.executable, "-m", "onmt_xl.cli", "align", *args]
    t0 = time.perf_counter()
    if in_process:
        import contextlib
        import io

        from onmt_xl.core.align.cli import add_subcommands

        # the align subcommand's own parser and function, without importing the other subcommands
        parser = argparse.ArgumentParser(prog="onmt-xl")
        add_subcommands(parser.add_subparsers(dest="command", required=True))
        ns = parser.parse_args(["align", *args])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = ns.func(ns)
        stderr = err.getvalue()
    else:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        rc, stderr = proc.returncode, proc.stderr
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}):\n{stderr}")
    m = re.search(r"aligned in ([0-9.]+) s wall time", stderr)
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
    ap.add_argument("--subword", action="append", default=[], metavar="KIND:SIZE",
                    help="also align at sub-word level (bpe:MERGES or sentencepiece:VOCAB; repeatable)")
    ap.add_argument("--time-50k", action="store_true", help="also time eflomal on the extra corpus alone")
    ap.add_argument("--in-process", action="store_true",
                    help="run the align subcommand's parser and function in this process instead of a "
                    "subprocess (no start-up cost)")
    ap.add_argument("--json", default=None, help="also write the results as JSON")
    args = ap.parse_args(argv)
    for p in [args.text, args.gold] + ([] if args.no_extra else [args.extra_src, args.extra_tgt]):
        if not os.path.isfile(p):
            ap.error(f"{p} not found")
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    subword_specs = []
    for spec in args.subword:
        kind, _, size = spec.partition(":")
        if kind not in ("bpe", "sentencepiece") or not size.isdigit():
            ap.error(f"--subword {spec!r}: expected bpe:N or sentencepiece:N")
        subword_specs.append((spec, kind, int(size)))

    src, tgt = read_joint_text(args.text)
    sure, possible = read_gold(args.gold, one_indexed=not args.zero_indexed)
    check_links_in_range(possible, src, tgt, args.gold)
    out: Dict[str, object] = dict(text=args.text, gold=args.gold, sentences=len(src), cpus=os.cpu_count(),
                                  extra=None if args.no_extra else [args.extra_src, args.extra_tgt],
                                  load_start=load_avg(), runs=[])
    n_extra = 0 if args.no_extra else sum(1 for _ in open(args.extra_src, "rb"))
    print(f"{len(src)} gold pairs, {sum(map(len, sure))} sure + {sum(map(len, possible)) - sum(map(len, sure))} "
          f"possible-only links; {n_extra} extra pairs; {os.cpu_count()} CPUs; {load_avg()}", flush=True)

    seconds: List[float] = []
    runs: List[Dict[str, object]] = out["runs"]  # type: ignore[assignment]
    src_lens, tgt_lens = [len(x) for x in src], [len(x) for x in tgt]
    with tempfile.TemporaryDirectory(prefix="bench_align_") as tmp:
        for r in range(1, args.runs + 1):
            prefix = os.path.join(tmp, f"run{r}")
            cmd = ["--text", args.text, "--out-prefix", prefix] + args.align_args.split()
            if not args.no_extra:
                cmd += ["--extra-src", args.extra_src, "--extra-tgt", args.extra_tgt]
            secs, wall = run_align_command(cmd, args.in_process)
            seconds.append(secs)
            fwd, rev, gdfa = (read_pharaoh(f"{prefix}.{ext}", src_lens, tgt_lens) for ext in ("fwd", "rev", "gdfa"))
            run: Dict[str, object] = dict(eflomal_seconds=secs, command_seconds=wall)
            run.update(score_directions(fwd, rev, gdfa, src, tgt, sure, possible))
            runs.append(run)
            print(f"run {r}: eflomal {secs:.1f} s ({wall:.1f} s for the whole command"
                  f"{', in process' if args.in_process else ''}); "
                  f"gdfa AER {run['gdfa']['aer']:.4f}, forward {run['forward']['aer']:.4f}, "
                  f"reverse {run['reverse']['aer']:.4f}; {load_avg()}", flush=True)

        sub_results: Dict[str, List[Dict[str, object]]] = {}
        for spec, kind, size in subword_specs:
            from onmt_xl.core.align.eflomal_aligner import align_corpus, read_parallel
            from onmt_xl.core.align.subword import SubwordModel, collapse_links

            ex_src, ex_tgt = read_parallel(args.extra_src, args.extra_tgt) if not args.no_extra else (src, tgt)
            sm_s = SubwordModel.learn(ex_src, os.path.join(tmp, f"src.{kind}{size}"), kind, size)
            sm_t = SubwordModel.learn(ex_tgt, os.path.join(tmp, f"tgt.{kind}{size}"), kind, size)
            seg_s, seg_t = sm_s.segment_corpus(src), sm_t.segment_corpus(tgt)
            ex_s = [] if args.no_extra else [g.pieces for g in sm_s.segment_corpus(ex_src)]
            ex_t = [] if args.no_extra else [g.pieces for g in sm_t.segment_corpus(ex_tgt)]
            n_words = sum(src_lens) + sum(tgt_lens)
            n_pieces = sum(len(g.pieces) for g in seg_s + seg_t)
            sub_runs = []
            for r in range(1, args.runs + 1):
                res = align_corpus([g.pieces for g in seg_s] + ex_s, [g.pieces for g in seg_t] + ex_t)
                n = len(src)
                back = [[collapse_links(ls, a.offsets, b.offsets) for ls, a, b in zip(links[:n], seg_s, seg_t)]
                        for links in (res.forward, res.reverse, res.symmetrized)]
                run = dict(eflomal_seconds=res.seconds, pieces_per_word=n_pieces / n_words)
                run.update(score_directions(*back, src, tgt, sure, possible))
                sub_runs.append(run)
                print(f"{spec} run {r}: eflomal {res.seconds:.1f} s; gold text {n_pieces / n_words:.3f} pieces/word; "
                      f"gdfa AER (collapsed to words) {run['gdfa']['aer']:.4f}; {load_avg()}", flush=True)
            sub_results[spec] = sub_runs
        out["subword"] = {k: dict(runs=v, summary=summarize(v)) for k, v in sub_results.items()}

        if args.time_50k and not args.no_extra:
            import eflomal

            from onmt_xl.core.align.eflomal_aligner import align_corpus, read_parallel

            ex_src, ex_tgt = read_parallel(args.extra_src, args.extra_tgt)
            both = align_corpus(ex_src, ex_tgt).seconds
            lines_s = [" ".join(s) + "\n" for s in ex_src]
            lines_t = [" ".join(t) + "\n" for t in ex_tgt]
            one = {}
            for direction in ("fwd", "rev"):
                t0 = time.perf_counter()
                eflomal.Aligner().align(lines_s, lines_t,
                                        **{f"links_filename_{direction}": os.path.join(tmp, direction)})
                one[direction] = time.perf_counter() - t0
            out["time_extra"] = dict(pairs=len(ex_src), both_directions=both, forward_only=one["fwd"],
                                     reverse_only=one["rev"], load=load_avg())
            print(f"eflomal on the {len(ex_src)} extra pairs: both directions {both:.1f} s, forward only "
                  f"{one['fwd']:.1f} s, reverse only {one['rev']:.1f} s; {load_avg()}", flush=True)

    out["summary"] = summarize(runs)
    out["load_end"] = load_avg()
    print(f"\n{args.runs} runs of eflomal on {len(src) + n_extra} pairs (both directions): "
          f"{mean_sd(seconds, 1)} s")
    print_table(f"Word level, `onmt-xl align` (mean ± sd over {args.runs} runs):", runs)
    for spec, sub_runs in sub_results.items():
        print_table(f"eflomal on {spec} sub-words, links collapsed to words (mean ± sd over {args.runs} runs):",
                    sub_runs)
    print(f"\n{load_avg()}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
