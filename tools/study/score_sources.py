"""Score candidate position sources (trained preorderers) on a development split, for issue 76's choice.

    python tools/study/score_sources.py --data runs/src/data --split tune --model s0=runs/src/s0.xlp \
        --model s1_context=runs/src/s1_context.xlp --json runs/src/scores_tune.json
    python tools/study/score_sources.py --summarize seed1.json seed2.json ...   # mean and sd over training seeds

For each model: Kendall tau micro-averaged over aligned pairs (``onmt_xl.core.reorder.metrics.evaluate``, as
``onmt-xl preorder-eval`` prints it), the mean per-sentence tau (the criterion of reports/PREREG_xlpos.md; sentences
without an aligned pair of distinct ranks are left out), exact order, FRS, and the same for the monotone order and
the BTG oracle of the links. The JSON keeps every sentence's tau, so the preregistered paired bootstrap can be
run on it later. It scores only development splits (``tune``, ``valid``): the test split is scored once, after
the choice.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from onmt_xl.core.align.pharaoh import read_pharaoh  # noqa: E402
from onmt_xl.core.reorder.metrics import evaluate, sentence_taus  # noqa: E402
from onmt_xl.core.reorder.oracle import btg_oracle_ranks, target_ranks  # noqa: E402
from onmt_xl.core.reorder.preorderer import Preorderer, set_threads  # noqa: E402

SPLITS = ("tune", "valid")


def _mean(xs: List[Optional[float]]) -> float:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def score(model: Preorderer, src: List[List[str]], ranks) -> Dict[str, object]:
    pred = model.reorder_batch(src)
    s = evaluate(pred, ranks)
    per = sentence_taus(pred, ranks)
    return dict(tau=s.tau, mean_sentence_tau=_mean(per), exact_match=s.exact_match, frs=s.frs,
                frs_aligned=s.frs_aligned, monotone_tau=s.monotone_tau, oracle_tau=s.oracle_tau,
                features=list(model.features), tagger=model.header().get("tagger"), sentence_tau=per)


def summarize(paths: List[str]) -> None:
    """A markdown table of each model's figures over several ``--json`` files (one per training seed); a model
    is matched across files by its name without a ``_seedN`` suffix."""
    import re
    import statistics

    runs: Dict[str, List[dict]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for name, res in json.load(f)["models"].items():
                runs.setdefault(re.sub(r"_seed\d+$", "", name), []).append(res)
    keys = ("mean_sentence_tau", "tau", "exact_match", "frs_aligned")
    print("| model | runs | " + " | ".join(keys) + " |")
    print("| --- | --- |" + " --- |" * len(keys))
    for name, rs in runs.items():
        cells = []
        for k in keys:
            xs = [r[k] for r in rs]
            sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
            cells.append(f"{statistics.mean(xs):.4f} ± {sd:.4f} ({', '.join(f'{x:.4f}' for x in xs)})")
        print(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--summarize", nargs="+", metavar="JSON", help="only summarize earlier --json outputs")
    p.add_argument("--data", help="folder with SPLIT.src and SPLIT.gdfa")
    p.add_argument("--split", choices=SPLITS, default="tune")
    p.add_argument("--model", action="append", help="NAME=PATH of a preorderer (repeatable)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write the figures (and every sentence's tau) here")
    args = p.parse_args(argv)
    if args.summarize:
        summarize(args.summarize)
        return 0
    if not (args.data and args.model):
        p.error("give --data and --model (or --summarize)")
    set_threads(args.threads)
    src = [line.split() for line in open(os.path.join(args.data, f"{args.split}.src"), encoding="utf-8")]
    links = read_pharaoh(os.path.join(args.data, f"{args.split}.gdfa"), [len(s) for s in src])
    keep = [k for k, s in enumerate(src) if s]
    src = [src[k] for k in keep]
    ranks = [target_ranks(len(src[i]), links[k]) for i, k in enumerate(keep)]
    mono = sentence_taus([list(range(len(s))) for s in src], ranks)
    oracle = sentence_taus([btg_oracle_ranks(r, False).order for r in ranks], ranks)
    out: Dict[str, object] = dict(split=args.split, sentences=len(src),
                                  sentences_with_pairs=sum(x is not None for x in mono),
                                  monotone_mean_sentence_tau=_mean(mono), oracle_mean_sentence_tau=_mean(oracle),
                                  models={})
    print(f"{args.split}: {len(src)} sentences, {out['sentences_with_pairs']} with an aligned pair")
    print(f"{'model':18s} {'tau':>7s} {'mean s.':>7s} {'exact':>7s} {'FRS-al':>7s} {'mono':>7s} {'oracle':>7s}")
    for spec in args.model:
        name, _, path = spec.partition("=")
        res = score(Preorderer.load(path), src, ranks)
        out["models"][name] = res  # type: ignore[index]
        print(f"{name:18s} {res['tau']:7.4f} {res['mean_sentence_tau']:7.4f} {res['exact_match']:7.4f} "
              f"{res['frs_aligned']:7.4f} {res['monotone_tau']:7.4f} {res['oracle_tau']:7.4f}")
    print(f"monotone mean per-sentence tau {out['monotone_mean_sentence_tau']:.4f}, "
          f"oracle {out['oracle_mean_sentence_tau']:.4f}")
    if args.json:
        for res in out["models"].values():  # type: ignore[union-attr]
            res["sentence_tau"] = [None if x is None else round(x, 6) for x in res["sentence_tau"]]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
