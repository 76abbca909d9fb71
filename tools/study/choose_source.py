"""The preregistered choice of the position source (``reports/PREREG_xlpos.md``, stage 2), applied to the per-sentence
Kendall tau that ``tools/study/score_sources.py`` archived for the tuning split:

    python tools/study/choose_source.py reports/sources_xlpos/scores_tune_seed1.json [--json OUT]

The candidate with the highest mean per-sentence tau is chosen if its gain over S0 has a paired bootstrap (tuning
sentences resampled with replacement, 10,000 samples, seed 12345, numpy's default generator) whose 95 % lower bound
(the 2.5th percentile) is above 0; otherwise S0 stays. Prints every candidate's gain with its interval.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

SAMPLES, SEED, BASE = 10_000, 12345, "S0"
#: each candidate of reports/SOURCES_xlpos.md as preorderer options (Preorderer.train's keyword arguments, beside the
#: design's own, onmt_xl.experiments.evidence.PREORDER_OPTIONS)
CANDIDATE_OPTIONS = {"S0": {}, "S1_context": {"features": ["context"]}, "S2_pos": {"tagger": "unidic"},
                     "S3_context_pos": {"features": ["context"], "tagger": "unidic"}}


def paired_bootstrap(gain: np.ndarray, samples: int = SAMPLES, seed: int = SEED):
    """Mean of ``gain`` (one value per sentence) and its 95 % percentile interval, sentences resampled."""
    rng = np.random.default_rng(seed)
    means = gain[rng.integers(0, len(gain), size=(samples, len(gain)))].mean(axis=1)
    return float(gain.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def choose(models: dict) -> dict:
    """The rule on ``models`` (name -> {"sentence_tau": [...], ...}, with :data:`BASE` among them)."""
    base = np.asarray(models[BASE]["sentence_tau"], dtype=float)
    rows = {}
    for name, m in models.items():
        if name == BASE:
            continue
        tau = np.asarray(m["sentence_tau"], dtype=float)
        if tau.shape != base.shape:
            raise ValueError(f"{name}: {len(tau)} sentences, {BASE}: {len(base)}")
        mean, low, high = paired_bootstrap(tau - base)
        rows[name] = {"mean_sentence_tau": float(tau.mean()), "gain": mean, "low": low, "high": high}
    best = max(rows, key=lambda n: rows[n]["mean_sentence_tau"])
    best_is_better = rows[best]["mean_sentence_tau"] > float(base.mean())
    chosen = best if best_is_better and rows[best]["low"] > 0 else BASE
    return {"rule": "reports/PREREG_xlpos.md, stage 2", "samples": SAMPLES, "seed": SEED,
            "base": {"name": BASE, "mean_sentence_tau": float(base.mean())}, "candidates": rows,
            "highest": best, "chosen": chosen, "chosen_options": CANDIDATE_OPTIONS.get(chosen)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scores", help="a scores file of tools/study/score_sources.py (its models' sentence_tau)")
    p.add_argument("--json", help="also write the choice here")
    args = p.parse_args(argv)
    with open(args.scores, encoding="utf-8") as f:
        result = choose(json.load(f)["models"])
    print(f"{BASE}: mean per-sentence tau {result['base']['mean_sentence_tau']:.4f}")
    for name, r in result["candidates"].items():
        print(f"{name}: {r['mean_sentence_tau']:.4f}, gain over {BASE} {r['gain']:+.4f} "
              f"[{r['low']:+.4f}, {r['high']:+.4f}]")
    print(f"highest: {result['highest']}; chosen: {result['chosen']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
