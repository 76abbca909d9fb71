"""The preorderer's tau with the aligner's run-to-run spread.

    python tools/study/preorder_spread.py --workdir runs/evidence_jaen --runs 5 [--threads 1]

eflomal samples from ``/dev/urandom``, so every alignment run gives other links: both the preorderer's training
links and the links its tau is measured against move. Each run here aligns the work directory's splits together
again (as ``onmt-xl evidence`` does), trains the preorderer with the study's options (``manifest.json``'s
``preorder_options``) on the training links, and scores it on the tuning and test splits against that run's
links; ``WORKDIR/preorder_spread.jsonl`` gets a line per run (a killed run resumes), and the summary gives mean
± sd, min and max. The study's own preorderer (``preorderer.json``) is one more draw of the same process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

SPLITS = ("test", "valid", "tune", "train")  # the order of onmt_xl.experiments.archive.ALIGN_SPLITS


def one_run(workdir: Path, options: Dict) -> Dict[str, float]:
    from onmt_xl.core.align.eflomal_aligner import align_corpus, read_tokenized
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks
    from onmt_xl.core.reorder.preorderer import Preorderer

    data = workdir / "data"
    parts = {s: (read_tokenized(str(data / f"{s}.src")),
                 read_tokenized(str(data / f"{s}.{'ref' if s == 'test' else 'tgt'}")))
             for s in SPLITS if (data / f"{s}.src").exists()}
    t0 = time.perf_counter()
    res = align_corpus([x for p in parts.values() for x in p[0]], [y for p in parts.values() for y in p[1]])
    links, start = {}, 0
    for name, (src, _) in parts.items():
        links[name] = [sorted(ls) for ls in res.symmetrized[start:start + len(src)]]
        start += len(src)
    align_s = time.perf_counter() - t0
    model = Preorderer.train(parts["train"][0], links["train"], progress=False, **options)
    out = {"align_seconds": align_s, "train_seconds": time.perf_counter() - t0 - align_s}
    for split in ("tune", "test"):
        if split in parts:
            src = parts[split][0]
            ranks = [target_ranks(len(s), ls) for s, ls in zip(src, links[split])]
            out[f"{split}_tau"] = evaluate(model.reorder_batch(src), ranks).tau
    return out


def summary(rows: List[Dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows if key in r]
    if not values:
        return f"{key}: no run"
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return (f"{key}: {statistics.mean(values):.4f} ± {sd:.4f} (min {min(values):.4f}, max {max(values):.4f}; "
            f"{len(values)} runs)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="example:\n  python tools/study/preorder_spread.py --workdir "
                                 "runs/evidence_jaen --runs 5",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, help="a work directory of onmt-xl evidence (data/ and manifest.json)")
    ap.add_argument("--runs", type=int, default=5, help="alignment runs (default 5)")
    ap.add_argument("--threads", type=int, help="numba threads of the preorderer's training")
    args = ap.parse_args(argv)
    workdir = Path(args.workdir)
    manifest = workdir / "manifest.json"
    if not manifest.exists():
        ap.error(f"{manifest}: not found; run onmt-xl evidence --workdir {workdir} first")
    options = json.loads(manifest.read_text()).get("preorder_options") or {}
    if args.threads:
        import numba

        numba.set_num_threads(args.threads)
    out = workdir / "preorder_spread.jsonl"
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    while len(rows) < args.runs:
        row = {"run": len(rows) + 1, "options": options, **one_run(workdir, options)}
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
        rows.append(row)
        print(json.dumps(row), flush=True)
    study = json.loads((workdir / "preorderer.json").read_text()) if (workdir / "preorderer.json").exists() else {}
    print(summary(rows, "tune_tau"))
    print(summary(rows, "test_tau"))
    if study:
        print(f"the study's preorderer: tune_tau {study.get('tune', {}).get('tau', float('nan')):.4f}, "
              f"test_tau {study.get('tau', float('nan')):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
