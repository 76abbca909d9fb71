#!/usr/bin/env python3
"""Sub-word-level vs word-level preordering on a tokenized parallel corpus (default: ../shared/data/enja).

1. eflomal word alignment of train + dev together (one run), grow-diag-final-and;
2. a word-level preorderer trained on train words;
3. for each ``--subword KIND:SIZE``: a pyonmttok sub-word model learned on each side of train
   (``bpe:N`` = N BPE merges, ``sentencepiece:N`` = unigram vocabulary of N pieces), word links projected
   onto sub-words (:func:`onmt_xl.core.align.subword.project_links`), a preorderer trained on the sub-word sentences;
4. on dev: normalized Kendall tau (:func:`onmt_xl.core.reorder.metrics.evaluate`; ranks from the
   alignments, unaligned tokens never count) at sub-word level (ranks from the projected links) and at
   word level (the sub-word order collapsed to words by the mean position of each word's pieces,
   :func:`onmt_xl.core.align.subword.collapse_order`), next to the word-level preorderer (expanded to sub-words
   for the sub-word-level column), the monotone order and the BTG oracle.

``--subword-eflomal`` also aligns the sub-word text directly with eflomal and trains a preorderer on
those links (evaluated against the same projected-word-link references), to compare with projection
(first seed only).

``--seeds 1,2,3`` trains every preorderer once per seed (the seed shuffles the training data):
figures are means over seeds +- their sample standard deviation. The last column is the word-level
tau of the collapsed sub-word preorderer minus the word-level preorderer's, with a 95% paired
bootstrap interval over dev sentences (2000 resamples, counts summed over seeds). eflomal is not
seedable, so alignments (and every figure) also vary from run to run.

    python tools/bench/bench_subword.py --subword bpe:8000 --subword sentencepiece:2000 --seeds 1,2,3 \
        --subword-eflomal --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.core.align.eflomal_aligner import align_corpus, read_parallel  # noqa: E402
import numpy as np  # noqa: E402

from onmt_xl.core.reorder import Preorderer, evaluate, kendall_loss, target_ranks  # noqa: E402
from onmt_xl.core.align.subword import SubwordModel, collapse_order, expand_order, project_corpus  # noqa: E402


def load_avg() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average n/a"


def scores(orders, sents, links) -> Dict[str, object]:
    ranks = [target_ranks(len(s), ls) for s, ls in zip(sents, links)]
    r = evaluate(orders, ranks)
    # per-sentence counts for the paired bootstrap: (concordant pairs, counted pairs)
    per = []
    for o, rk in zip(orders, ranks):
        counts = np.unique(rk[rk >= 0], return_counts=True)[1]
        pairs = (int(counts.sum()) ** 2 - int(np.sum(counts**2))) // 2  # aligned pairs with distinct ranks
        per.append((pairs - int(kendall_loss(o, rk)), pairs))
    assert sum(p for _, p in per) == r.n_pairs and abs(sum(c for c, _ in per) / max(r.n_pairs, 1) - r.tau) < 1e-9
    return dict(tau=r.tau, exact=r.exact_match, frs=r.frs, monotone_tau=r.monotone_tau,
                oracle_tau=r.oracle_tau, pairs=r.n_pairs, per_sentence=per)


def paired_bootstrap(a: Dict[str, object], b: Dict[str, object], n: int = 2000, seed: int = 1) -> Dict[str, float]:
    """tau(a) - tau(b) on the same sentences: the observed difference and a 95% percentile interval
    from resampling sentences with replacement."""
    pa, pb = np.array(a["per_sentence"], dtype=np.int64), np.array(b["per_sentence"], dtype=np.int64)
    if pa.shape != pb.shape:
        raise ValueError("paired bootstrap needs the same sentences")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pa), size=(n, len(pa)))
    ca, cb = pa[idx].sum(axis=1), pb[idx].sum(axis=1)
    diff = ca[:, 0] / ca[:, 1] - cb[:, 0] / cb[:, 1]
    obs = pa[:, 0].sum() / pa[:, 1].sum() - pb[:, 0].sum() / pb[:, 1].sum()
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return dict(diff=float(obs), lo=float(lo), hi=float(hi))


def collapse_runs(order_runs, segs):
    return [[collapse_order(o, g.offsets) for o, g in zip(run, segs)] for run in order_runs]


def _count_merges(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip() and not line.startswith("#"))


def train_reorder(sents, links, dev_sents, args) -> tuple:
    """Train one preorderer per seed; return (dev orders per seed, training seconds per seed)."""
    orders, secs = [], []
    for seed in args.seeds:
        t0 = time.perf_counter()
        kwargs = {} if args.iterations is None else dict(iterations=args.iterations)
        model = Preorderer.train(sents, links, seed=seed, progress=False, **kwargs)
        secs.append(time.perf_counter() - t0)
        orders.append(model.reorder_batch(dev_sents))
    return orders, secs


def scores_runs(order_runs, sents, links) -> Dict[str, object]:
    """:func:`scores` of each seed's orders: tau/exact/FRS averaged over seeds (``tau_sd``: their sample
    standard deviation), per-sentence counts summed over seeds (a seed-averaged system for the bootstrap)."""
    runs = [scores(o, sents, links) for o in order_runs]
    out = dict(runs[0])
    taus = [r["tau"] for r in runs]
    out.update(
        tau=float(np.mean(taus)), tau_sd=float(np.std(taus, ddof=1)) if len(taus) > 1 else 0.0, taus=taus,
        exact=float(np.mean([r["exact"] for r in runs])), frs=float(np.mean([r["frs"] for r in runs])),
        per_sentence=[tuple(map(sum, zip(*cs))) for cs in zip(*[r["per_sentence"] for r in runs])],
    )
    return out


def fmt_tau(r: Dict[str, object]) -> str:
    return f"{r['tau']:.4f} ± {r['tau_sd']:.4f}" if len(r["taus"]) > 1 else f"{r['tau']:.4f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "enja"),
                    help="folder with train.SRC, train.TGT, dev.SRC, dev.TGT (tokenized)")
    ap.add_argument("--src", default="ja")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--subword", action="append", default=None, metavar="KIND:SIZE",
                    help="bpe:MERGES or sentencepiece:VOCAB (repeatable; default bpe:8000)")
    ap.add_argument("--iterations", type=int, default=None,
                    help="preorderer training passes (default: Preorderer.train's default)")
    ap.add_argument("--seeds", default="1", help="comma-separated preorderer training seeds (default 1); "
                    "figures are means over seeds, +- their standard deviation")
    ap.add_argument("--subword-eflomal", action="store_true",
                    help="also align the sub-word text with eflomal (the alternative to projection)")
    ap.add_argument("--workdir", default=None, help="keep sub-word models here (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="also write the results as JSON")
    args = ap.parse_args(argv)
    try:
        args.seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--seeds {args.seeds!r}: expected integers separated by commas")
    if not args.seeds:
        ap.error("--seeds: give at least one seed")
    configs = []
    for spec in args.subword or ["bpe:8000"]:
        kind, _, size = spec.partition(":")
        if kind not in ("bpe", "sentencepiece") or not size.isdigit():
            ap.error(f"--subword {spec!r}: expected bpe:N or sentencepiece:N")
        configs.append((kind, int(size)))

    data = Path(args.data)
    for split in ("train", "dev"):
        for lang in (args.src, args.tgt):
            if not (data / f"{split}.{lang}").is_file():
                ap.error(f"{data / f'{split}.{lang}'} not found")
    tr_src, tr_tgt = read_parallel(str(data / f"train.{args.src}"), str(data / f"train.{args.tgt}"))
    dv_src, dv_tgt = read_parallel(str(data / f"dev.{args.src}"), str(data / f"dev.{args.tgt}"))
    n_tr = len(tr_src)
    out: Dict[str, object] = dict(data=str(data), train=n_tr, dev=len(dv_src),
                                  iterations=args.iterations or "Preorderer.train default", seeds=args.seeds,
                                  cpus=os.cpu_count(), python=platform.python_version(), load_start=load_avg())
    print(f"{n_tr} train / {len(dv_src)} dev pairs; preorderer iterations: {out['iterations']}, seeds {args.seeds}; "
          f"{os.cpu_count()} CPUs; {load_avg()}", flush=True)

    t0 = time.perf_counter()
    res = align_corpus(tr_src + dv_src, tr_tgt + dv_tgt)
    out["eflomal_seconds"] = res.seconds
    tr_links, dv_links = res.symmetrized[:n_tr], res.symmetrized[n_tr:]
    print(f"eflomal train+dev: {res.seconds:.1f} s (+ symmetrization {time.perf_counter() - t0 - res.seconds:.1f} s)",
          flush=True)

    word_runs, secs = train_reorder(tr_src, tr_links, dv_src, args)
    word = scores_runs(word_runs, dv_src, dv_links)
    word["train_seconds"] = secs
    out["word"] = word
    print(f"word-level preorderer: trained in {' / '.join(f'{x:.1f}' for x in secs)} s; dev tau {fmt_tau(word)} "
          f"(monotone {word['monotone_tau']:.4f}, oracle {word['oracle_tau']:.4f})", flush=True)

    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench_subword_") as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for kind, size in configs:
            t0 = time.perf_counter()
            sm_src = SubwordModel.learn(tr_src, str(workdir / f"{args.src}.{kind}{size}"), kind, size)
            sm_tgt = SubwordModel.learn(tr_tgt, str(workdir / f"{args.tgt}.{kind}{size}"), kind, size)
            tr_seg_s, dv_seg_s = sm_src.segment_corpus(tr_src), sm_src.segment_corpus(dv_src)
            tr_seg_t, dv_seg_t = sm_tgt.segment_corpus(tr_tgt), sm_tgt.segment_corpus(dv_tgt)
            learn_secs = time.perf_counter() - t0
            n_words = sum(len(s) for s in dv_src)
            n_pieces = sum(len(g.pieces) for g in dv_seg_s)
            n_split = sum(1 for g in dv_seg_s for i in range(g.n_words) if len(g.word_pieces(i)) > 1)
            # sanity: word-by-word segmentation = pyonmttok's whole-line tokenization
            mismatch = sum(1 for s, g in zip(dv_src, dv_seg_s) if sm_src.tokenize_line(" ".join(s)) != g.pieces)
            tr_sub_links = project_corpus(tr_links, tr_seg_s, tr_seg_t)
            dv_sub_links = project_corpus(dv_links, dv_seg_s, dv_seg_t)
            tr_pieces = [g.pieces for g in tr_seg_s]
            dv_pieces = [g.pieces for g in dv_seg_s]
            sub_runs, secs = train_reorder(tr_pieces, tr_sub_links, dv_pieces, args)
            row: Dict[str, object] = dict(
                kind=kind, size=size, learn_segment_seconds=learn_secs, train_seconds=secs,
                dev_pieces_per_word=n_pieces / n_words, dev_words_split=n_split / n_words,
                dev_max_pieces=max(len(p) for p in dv_pieces), line_tokenization_mismatches=mismatch,
                alignment="projected",
                subword=scores_runs(sub_runs, dv_pieces, dv_sub_links),
                collapsed=scores_runs(collapse_runs(sub_runs, dv_seg_s), dv_src, dv_links),
                word_model_expanded=scores_runs([[expand_order(o, g.offsets) for o, g in zip(run, dv_seg_s)]
                                                 for run in word_runs], dv_pieces, dv_sub_links),
            )
            row["vs_word"] = paired_bootstrap(row["collapsed"], word)
            row["merges_or_vocab"] = (f"{_count_merges(sm_src.model_path)} merges learned" if kind == "bpe"
                                      else f"unigram vocabulary of {size}")
            rows.append(row)
            print(f"{kind}:{size}: {n_pieces / n_words:.3f} pieces/word on dev ({100 * n_split / n_words:.1f}% of "
                  f"words split), preorderer trained in {' / '.join(f'{x:.1f}' for x in secs)} s; sub-word tau "
                  f"{fmt_tau(row['subword'])}, collapsed word tau {fmt_tau(row['collapsed'])}", flush=True)
            if args.subword_eflomal:
                t1 = time.perf_counter()
                sres = align_corpus([g.pieces for g in tr_seg_s + dv_seg_s], [g.pieces for g in tr_seg_t + dv_seg_t])
                al_secs = time.perf_counter() - t1
                one_seed = argparse.Namespace(**{**vars(args), "seeds": args.seeds[:1]})  # to save time
                runs2, secs2 = train_reorder(tr_pieces, sres.symmetrized[:n_tr], dv_pieces, one_seed)
                row2 = dict(row, alignment="eflomal on sub-words", train_seconds=secs2, eflomal_seconds=al_secs,
                            subword=scores_runs(runs2, dv_pieces, dv_sub_links),
                            collapsed=scores_runs(collapse_runs(runs2, dv_seg_s), dv_src, dv_links))
                row2["vs_word"] = paired_bootstrap(row2["collapsed"], word)
                rows.append(row2)
                print(f"  with eflomal on sub-words ({al_secs:.1f} s): sub-word tau {fmt_tau(row2['subword'])}, "
                      f"collapsed word tau {fmt_tau(row2['collapsed'])}", flush=True)
    out["subword"] = rows
    out["load_end"] = load_avg()

    for r in rows:
        if r["alignment"] == "projected":
            print(f"\n{r['kind']}:{r['size']} ({r['merges_or_vocab']}; dev: {r['dev_pieces_per_word']:.3f} "
                  f"pieces/word, {100 * r['dev_words_split']:.1f}% of words split, longest {r['dev_max_pieces']} "
                  "pieces)\n")
            print("| system | tau, sub-word level | tau, word level | exact (words) | FRS (words) | word tau - word "
                  "preorderer's [95% CI] |")
            print("| --- | --- | --- | --- | --- | --- |")
            print(f"| monotone | {r['subword']['monotone_tau']:.4f} | {word['monotone_tau']:.4f} | | | |")
            print(f"| BTG oracle | {r['subword']['oracle_tau']:.4f} | {word['oracle_tau']:.4f} | | | |")
            print(f"| word-level preorderer | {fmt_tau(r['word_model_expanded'])} (expanded) | {fmt_tau(word)} | "
                  f"{word['exact']:.4f} | {word['frs']:.4f} | |")
        c, d = r["collapsed"], r["vs_word"]
        seeds = "" if len(r["collapsed"]["taus"]) == len(args.seeds) else f" (seed {args.seeds[0]} only)"
        print(f"| sub-word preorderer, {r['alignment']} links{seeds} | {fmt_tau(r['subword'])} | {fmt_tau(c)} "
              f"(collapsed) | {c['exact']:.4f} | {c['frs']:.4f} | {d['diff']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] |")
    print(f"\n{load_avg()}")
    if args.json:
        def strip(obj):
            if isinstance(obj, dict):
                return {k: strip(v) for k, v in obj.items() if k != "per_sentence"}
            return [strip(v) for v in obj] if isinstance(obj, list) else obj

        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(strip(out), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
