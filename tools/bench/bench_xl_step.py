#!/usr/bin/env python
"""What an XL system adds to one training step, measured in one process with the systems interleaved.

    python tools/bench/bench_xl_step.py [--systems baseline,inxl,headxl,combination] [--preset enja]
                                  [--src ../shared/data/enja/train.ja --preorderer runs/enja/preorder.xlp]
                                  [--reps 20] [--batch-tokens 2048]

End-to-end runs of ``onmt_train`` (``tools/bench/bench_xl_cost.py``) measure everything, OpenNMT's data
pipeline included, but on a shared machine whose speed drifts by tens of percent within minutes they
cannot resolve a few percent. This benchmark isolates the two things XL adds and alternates the
systems every step, so drift cancels:

* the model: forward + backward + Adam step of each system's model (built by OpenNMT from its config)
  on the same real batch (``--batch-tokens`` source tokens of real sentences, their ``pos_XL`` from the
  preorderer), median over ``--reps`` steps after two warm-up steps;
* the transform: the preorderer's ``pos_xl`` per sentence (what ``xl_position`` computes for a sentence
  it has not cached), one sentence at a time as in OpenNMT's pipeline.

The estimated throughput ratio of an XL system is ``t_base / (t_sys + n_sentences · t_pos_xl)``; the
transform's remaining per-example work (a dict update, one extra tensor column) is not in it.
Without ``--src``/``--preorderer`` it uses the synthetic demo grammar and a preorderer trained here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

import onmt_xl  # noqa: E402
from onmt_xl.experiments.analysis import build_model  # noqa: E402
from onmt_xl.experiments.configs import ALIGNED_R, PRESETS, SYSTEMS, XL, source_transform  # noqa: E402


def build(system: str, preset: str, vocab_size: int):
    model = build_model(system, preset, vocab_size=vocab_size)
    return model, torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.998))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="baseline,inxl,headxl,combination")
    ap.add_argument("--preset", default="enja", choices=sorted(PRESETS))
    ap.add_argument("--src", help="tokenized source sentences (default: synthetic)")
    ap.add_argument("--preorderer", help="preorderer giving pos_xl (default: one trained here on synthetic data)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=8000)
    args = ap.parse_args()
    onmt_xl.register()
    from bench_cpu import real_batch  # same folder: the batch of tools/bench/bench_cpu.py

    ids, xl, src_len, tgt, n_tok, t_pos = real_batch(args, tgt_len=12)
    B, L = ids.shape[:2]

    systems = args.systems.split(",")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}")
    models = {s: build(s, args.preset, args.vocab) for s in systems}
    times = {s: [] for s in systems}
    for rep in range(args.reps + 2):
        for s in systems if rep % 2 == 0 else systems[::-1]:
            model, optim = models[s]
            model.train()
            # XL systems read pos_XL; ExGRE/ReFSR read the alignment-derived r_j (same column) in training
            src = torch.cat((ids, xl), -1) if SYSTEMS[s].transform in (XL, ALIGNED_R) else ids
            t0 = time.perf_counter()
            out, _ = model(src, tgt, src_len)  # OpenNMT feeds tgt[:, :-1] to the decoder
            logits = model.generator(out.reshape(-1, out.size(-1)))
            loss = torch.nn.functional.cross_entropy(logits, tgt[:, 1:].reshape(-1))
            loss.backward()
            optim.step()
            optim.zero_grad()
            if rep >= 2:
                times[s].append(time.perf_counter() - t0)
    ref = systems[0]
    med = {s: statistics.median(v) for s, v in times.items()}
    print(f"preset {args.preset}, batch {B} sentences / {n_tok} source tokens (max len {L}), {args.reps} interleaved "
          f"steps, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"pos_xl: {1e6 * t_pos:.1f} µs/sentence ({1 / t_pos:,.0f} sentences/s, one at a time) = "
          f"{1000 * B * t_pos:.1f} ms per batch")
    print(f"{'system':18s} {'step ms':>9s} {'vs ' + ref:>9s} {'+ pos_xl ms':>12s} {'est. tok/s ratio':>17s}")
    for s in systems:
        extra = B * t_pos if source_transform(s) else 0.0  # xl_position / xl_prereorder run the preorderer
        note = "  (+ the alignment oracle's r_j per sentence, not timed)" if SYSTEMS[s].transform == ALIGNED_R else ""
        print(f"{s:18s} {1000 * med[s]:9.1f} {med[s] / med[ref]:8.3f}x {1000 * extra:12.1f} "
              f"{med[ref] / (med[s] + extra):16.3f}x{note}")


if __name__ == "__main__":
    main()
