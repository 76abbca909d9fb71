"""Choose the BTG preorderer's options on a tuning split (never the test split).

    python tools/study/tune_preorderer.py --workdir runs/evidence_jaen [--threads 1] [--only NAME ...]

The work directory is one of ``onmt-xl evidence`` (or ``experiments`` with ``--tune-size``): its ``data/train.src``
with ``align/train.gdfa`` train each candidate, and ``data/tune.src`` with ``align/tune.gdfa`` (eflomal links)
score it. Each candidate changes one option of the defaults (the grid of reports/PREORDER_HISTORY.md's ablations), and
its tau is the mean over ``--seeds`` shuffling seeds, since the seed alone moves tau by a few thousandths.
``WORKDIR/preorder_tuning.jsonl`` gets a line per run (a killed run resumes); the table printed at the end is
sorted by mean tau, and the choice is the best candidate unless the defaults are within ``--tolerance``
(one standard deviation of the defaults' seeds by default), when the defaults stay.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

#: name -> options changed from the defaults of ``Preorderer.train``
CANDIDATES: Dict[str, Dict[str, Any]] = {
    "defaults": {},
    "iterations_5": {"iterations": 5},
    "iterations_15": {"iterations": 15},
    "tiebreak_none": {"tiebreak_null": "none"},
    "tiebreak_right": {"tiebreak_null": "right"},
    "attach_right": {"attach_null": "right"},
    "no_clusters": {"n_clusters": 0},
    "clusters_128": {"n_clusters": 128},
    "class_words_300": {"class_words": 300},
    "no_loss_aug": {"loss_aug": 0.0},
}


def score(workdir: Path, options: Dict[str, Any], seed: int, threads: int) -> Dict[str, float]:
    from onmt_xl.core.align.pharaoh import read_pharaoh
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer

    def read(split):
        src = [l.split() for l in (workdir / "data" / f"{split}.src").read_text(encoding="utf-8").splitlines()]
        return src, read_pharaoh(str(workdir / "align" / f"{split}.gdfa"), [len(s) for s in src])

    train, tune = read("train"), read("tune")
    t0 = time.perf_counter()
    model = Preorderer.train(*train, seed=seed, threads=threads, progress=False, **options)
    seconds = time.perf_counter() - t0
    s = evaluate(model.reorder_batch(tune[0]), [target_ranks(len(x), l) for x, l in zip(*tune)])
    return dict(tau=s.tau, exact_match=s.exact_match, frs=s.frs, train_seconds=seconds)


def main(argv: List[str] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", help=f"candidates (default: all): {', '.join(CANDIDATES)}")
    ap.add_argument("--tolerance", type=float, help="keep the defaults within this much tau of the best "
                    "(default: the sd of the defaults' seeds)")
    args = ap.parse_args(argv)
    wd = Path(args.workdir)
    for need in ("data/tune.src", "align/tune.gdfa", "align/train.gdfa"):
        if not (wd / need).exists():
            sys.exit(f"tune_preorderer: {wd / need} not found: run `onmt-xl evidence --workdir {wd}` (its data stages) "
                     "first")
    out = wd / "preorder_tuning.jsonl"
    done = {(r["name"], r["seed"]): r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    names = args.only or list(CANDIDATES)
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in names:
        for seed in seeds:
            if (name, seed) in done:
                continue
            row = dict(name=name, seed=seed, options=CANDIDATES[name],
                       **score(wd, CANDIDATES[name], seed, args.threads))
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            done[(name, seed)] = row
            print(f"{name:16s} seed {seed}: tau {row['tau']:.4f} ({row['train_seconds']:.0f} s)", flush=True)
    table = []
    for name in names:
        taus = [done[(name, s)]["tau"] for s in seeds]
        table.append((statistics.mean(taus), statistics.stdev(taus) if len(taus) > 1 else 0.0, name, taus))
    table.sort(reverse=True)
    print(f"\ntuning split tau ({len(seeds)} seeds), best first\n"
          "| candidate | options | tau (mean ± sd) | per seed |\n| --- | --- | ---: | --- |")
    for mean, sd, name, taus in table:
        print(f"| {name} | {json.dumps(CANDIDATES[name])} | {mean:.4f} ± {sd:.4f} | "
              f"{', '.join(f'{t:.4f}' for t in taus)} |")
    by_name = {name: (mean, sd) for mean, sd, name, _ in table}
    if "defaults" in by_name:
        tol = args.tolerance if args.tolerance is not None else by_name["defaults"][1]
        best = table[0]
        keep = best[0] - by_name["defaults"][0] <= tol
        choice = "defaults" if keep else best[2]
        print(f"\nchoice: {choice} {json.dumps(CANDIDATES[choice])} (best {best[2]} at {best[0]:.4f}; defaults "
              f"{by_name['defaults'][0]:.4f}; tolerance {tol:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
