#!/usr/bin/env python
"""Training speed on this CPU: every system in fp32 and (where the CPU computes it natively) bf16, side by side.

    python tools/bench/bench_cpu.py [--systems baseline,combination,...] [--reps 10] [--steps 1] [--preset enja]
                              [--src ../shared/data/enja/train.ja] [--preorderer runs/enja/preorder.xlp]
                              [--stock-attention] [--force-bf16] [--threads N] [--out reports/bench_cpu.txt]

Each configuration (system × precision) is a model built by OpenNMT from the system's config, trained
with Adam on the same real batch (``--batch-tokens`` source tokens of real sentences, their ``pos_XL``
from the preorderer), exactly as ``onmt_train -xl_cpu_precision`` runs it: forward and loss under CPU bf16
autocast, backward, weights and optimizer state fp32, with ``-xl_cpu_kernels fast``: the fast dropout masks,
the fused output layer and loss (label smoothing 0.1 as the presets), Adam's fused CPU step and SDPA. One timing is
``--steps`` training steps. The speed of a shared 2-vCPU machine drifts by up to 2× within seconds, so each
configuration is timed right beside its reference (the baseline in the same precision; bf16's baseline beside fp32's; a
stock-attention configuration beside the same one with SDPA), the two in alternating order, and the
ratio is the median over ``--reps`` repetitions (after one warm-up) of the back-to-back ratios. XL and
pre-reordering systems are charged the preorderer's ``pos_xl`` per sentence (what the ``xl_position`` transform computes
for a sentence it has not cached), timed here one sentence at a time. OpenNMT's data pipeline is not in the figures
(``tools/bench/bench_xl_cost.py`` measures end-to-end ``onmt_train``).

bf16 configurations run only where :func:`onmt_xl.core.precision.native_bf16` says the CPU has native bf16
(``--force-bf16`` runs them anyway, to show what emulation costs). ``--stock-attention`` adds the
baseline and Combination with OpenNMT's own CPU attention (no SDPA), to show what the SDPA path gives;
``--stock-kernels`` adds them with PyTorch's dropout masks, OpenNMT's loss and unfused Adam
(``-xl_cpu_kernels stock``, OpenNMT's own), to show what the cheaper kernels give.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import onmt_xl  # noqa: E402
from onmt_xl.core import cpu_training, precision  # noqa: E402
from onmt_xl.opennmt.seams import cpu_speed  # noqa: E402
from onmt_xl.experiments.analysis import build_model  # noqa: E402
from onmt_xl.experiments.configs import ALIGNED_R, PRESETS, SYSTEMS, XL, source_transform  # noqa: E402

LABEL_SMOOTHING = 0.1  # the presets'

DEFAULT_SYSTEMS = ("baseline,combination,relative_pe,inxl,headxl,disan,disan_nogate,enc_re,dec_re,both_re,"
                   "additional_pe,exgre,refsr,encoder_free,prereorder")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def real_batch(args, tgt_len=None):
    """(ids (B, L, 1), xl (B, L, 1), src_len (B,), tgt (B, T+1, 1), n_tokens, seconds of pos_xl per sentence);
    ``args``: ``src``, ``preorderer``, ``batch_tokens``, ``vocab``; ``T``: ``tgt_len``, or 1.1 × the mean source
    length."""
    from onmt_xl.core.reorder.preorderer import Preorderer

    from onmt_xl.core.data import synthetic

    if args.preorderer:
        pre = Preorderer.load(args.preorderer)
    else:  # its parse costs what a real one's does at the same lengths (same chart, same feature count)
        corpus = synthetic.generate(3000, seed=1)
        pre = Preorderer.train(corpus.src, corpus.links, progress=False)
    if args.src:
        lines = Path(args.src).read_text(encoding="utf-8").splitlines()[:5000]
        sents = [line.split() for line in lines if line.split()]
    else:
        sents = synthetic.generate(3000, seed=1).src
    pre.pos_xl(sents[0])  # load the compiled kernel before timing
    t0 = time.perf_counter()
    pos = [pre.pos_xl(s) for s in sents[:2000]]
    t_pos = (time.perf_counter() - t0) / len(pos)
    batch, n_tok = [], 0
    for s, p in zip(sents, pos):
        if n_tok + len(s) > args.batch_tokens:
            break
        batch.append((s, p))
        n_tok += len(s)
    g = torch.Generator().manual_seed(0)
    B, L = len(batch), max(len(s) for s, _ in batch)
    ids = torch.full((B, L, 1), 1, dtype=torch.long)  # 1 = <blank>
    xl = torch.zeros((B, L, 1), dtype=torch.long)
    for b, (s, p) in enumerate(batch):
        ids[b, : len(s), 0] = torch.randint(4, args.vocab, (len(s),), generator=g)
        xl[b, : len(s), 0] = torch.tensor(p)
    tgt_len = tgt_len or max(2, round(1.1 * n_tok / B))
    tgt = torch.randint(4, args.vocab, (B, tgt_len + 1, 1), generator=g)
    return ids, xl, torch.tensor([len(s) for s, _ in batch]), tgt, n_tok, t_pos


class Config:
    def __init__(self, system, dtype, sdpa, args, stock_kernels=False):
        self.system, self.dtype, self.sdpa, self.stock_kernels = system, dtype, sdpa, stock_kernels
        self.name = (f"{system} {'bf16' if dtype else 'fp32'}" + ("" if sdpa else " (stock attention)")
                     + (" (stock kernels)" if stock_kernels else ""))
        self.model = build_model(system, args.preset, vocab_size=args.vocab).train()
        precision.autocast_forward(self.model, dtype)
        adam = dict(lr=1e-4, betas=(0.9, 0.998), eps=1e-8)
        if stock_kernels:
            self.optim = torch.optim.Adam(self.model.parameters(), **adam)
        else:  # what onmt_train -xl_cpu_kernels fast does on the CPU (onmt_xl.opennmt.seams.cpu_speed)
            cpu_training.use_fast_dropout(self.model)
            self.optim = cpu_training.fused_adam(self.model.parameters(), **adam)

    def train(self, steps, ids, xl, src_len, tgt):
        src = torch.cat((ids, xl), -1) if SYSTEMS[self.system].transform in (XL, ALIGNED_R) else ids
        if self.sdpa:
            cpu_speed.use_cpu_sdpa(self.model)
        stock_applies = cpu_speed.sdpa_applies
        if not self.sdpa:
            cpu_speed.sdpa_applies = lambda *a: False
        try:
            t0 = time.perf_counter()
            gen, gold = self.model.generator, tgt[:, 1:].reshape(-1)
            for _ in range(steps):
                out, _ = self.model(src, tgt, src_len)
                hidden = out.reshape(-1, out.size(-1))
                with precision.autocast(self.dtype):  # the generator and loss, as LossCompute runs them
                    if self.stock_kernels:
                        loss = torch.nn.functional.cross_entropy(gen(hidden).float(), gold, ignore_index=1,
                                                                 label_smoothing=LABEL_SMOOTHING, reduction="sum")
                    else:  # -xl_cpu_loss fused
                        loss, _ = cpu_training.generator_loss(hidden, gen.weight, gen.bias, gold, 1, LABEL_SMOOTHING,
                                                              self.dtype or torch.float32)
                (loss / gold.numel()).backward()
                self.optim.step()
                self.optim.zero_grad()
            return time.perf_counter() - t0
        finally:
            cpu_speed.sdpa_applies = stock_applies


def profile_lines(configs, steps, ids, xl, src_len, tgt, top=8):
    """Where a training step's time goes: per configuration, the operators with the largest self CPU time, as
    shares of the profiled total, and milliseconds per step."""
    from torch.profiler import ProfilerActivity, profile

    out = ["", f"Where a step's time goes (`torch.profiler`, {steps} steps, self CPU time per operator):", ""]
    for c in configs:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            c.train(steps, ids, xl, src_len, tgt)
        events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
        total = sum(e.self_cpu_time_total for e in events)
        events.sort(key=lambda e: -e.self_cpu_time_total)
        out.append(f"- {c.name}: {total / 1e3 / steps:.0f} ms per step; "
                   + ", ".join(f"`{e.key}` {100 * e.self_cpu_time_total / total:.1f} %" for e in events[:top]))
    return out


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS)
    ap.add_argument("--preset", default="enja", choices=sorted(PRESETS))
    ap.add_argument("--src", help="tokenized source sentences (default: synthetic)")
    ap.add_argument("--preorderer", help="preorderer giving pos_xl (default: one trained here on synthetic data)")
    ap.add_argument("--reps", type=int, default=10, help="timed repetitions (at least 5), after one warm-up")
    ap.add_argument("--steps", type=int, default=1, help="training steps per configuration and repetition")
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    ap.add_argument("--stock-attention", action="store_true")
    ap.add_argument("--stock-kernels", action="store_true",
                    help="also time the baseline and Combination with PyTorch's dropout masks, OpenNMT's loss and "
                    "unfused Adam")
    ap.add_argument("--force-bf16", action="store_true")
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also profile N training steps of each system in each precision (torch.profiler) and list "
                         "the operators that take most of a step")
    args = ap.parse_args()
    if args.reps < 5:
        ap.error("--reps must be at least 5")
    systems = args.systems.split(",")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; choose from {sorted(SYSTEMS)}")
    if "baseline" not in systems:
        systems.insert(0, "baseline")
    if args.threads:
        torch.set_num_threads(args.threads)
    onmt_xl.register()
    native, evidence = precision.native_bf16()
    dtypes = [None] + ([torch.bfloat16] if native or args.force_bf16 else [])
    ids, xl, src_len, tgt, n_tok, t_pos = real_batch(args)
    configs = [Config(s, d, True, args) for d in dtypes for s in systems]
    if args.stock_attention:
        configs += [Config(s, d, False, args) for d in dtypes for s in ("baseline", "combination") if s in systems]
    if args.stock_kernels:
        configs += [Config(s, d, True, args, stock_kernels=True) for d in dtypes for s in ("baseline", "combination")
                    if s in systems]
    by_name = {c.name: c for c in configs}

    def reference(c):
        if not c.sdpa or c.stock_kernels:
            return f"{c.system} {'bf16' if c.dtype else 'fp32'}"  # what SDPA (the cheaper kernels) gives
        if c.system != "baseline":
            return f"baseline {'bf16' if c.dtype else 'fp32'}"
        return "baseline fp32" if c.dtype else None

    pairs = [(c, by_name[reference(c)]) for c in configs if reference(c)]
    times = {c.name: [] for c in configs}
    ratios = {c.name: [] for c, _ in pairs}

    def timed(c):
        seconds = c.train(args.steps, ids, xl, src_len, tgt)
        return seconds + (args.steps * len(src_len) * t_pos if source_transform(c.system) else 0.0)

    for rep in range(args.reps + 1):
        for c, ref in pairs:  # each configuration right beside its reference: this machine's speed drifts
            first, second = (ref, c) if rep % 2 == 0 else (c, ref)
            t = {first.name: timed(first), second.name: timed(second)}
            if rep:
                times[c.name].append(t[c.name])
                times[ref.name].append(t[ref.name])
                ratios[c.name].append(t[ref.name] / t[c.name])
        print(f"repetition {rep}{' (warm-up)' if not rep else ''} done", file=sys.stderr, flush=True)

    def tok_s(name):
        return [args.steps * n_tok / t for t in times[name]]

    def quartiles(values):
        q = statistics.quantiles(values, n=4)
        return f"{statistics.median(values):.3f}× (IQR {q[0]:.3f}–{q[2]:.3f}; {min(values):.3f}–{max(values):.3f})"

    lines = [
        f"command: python tools/bench/bench_cpu.py {' '.join(sys.argv[1:])}",
        f"CPU: {cpu_name()}; PyTorch capability {precision.cpu_capability()}; native bf16: "
        f"{'yes' if native else 'no'} ({evidence}); {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads; "
        f"torch {torch.__version__}",
        f"preset {args.preset}: batch {len(src_len)} sentences / {n_tok} source tokens (max length {ids.size(1)}), "
        f"target length {tgt.size(1) - 1}, vocab {args.vocab}; {args.steps} steps per timing, {args.reps} repetitions "
        f"after a warm-up; pos_xl {1e6 * t_pos:.0f} µs/sentence charged to XL and pre-reordering systems",
        "source tok/s: median (min–max) over all timings; speed ratio = reference time / configuration time, "
        "timed back to back (order alternating), median (interquartile range; min–max) over repetitions",
        "",
        "| configuration | source tok/s | speed vs | ratio |",
        "| --- | ---: | --- | ---: |",
    ]
    for c in configs:
        ref = reference(c)
        lines.append(f"| {c.name} | {spread(tok_s(c.name))} | {ref or '—'} | "
                     f"{quartiles(ratios[c.name]) if ref else '1'} |")
    if args.profile:
        lines += profile_lines([c for c in configs if c.sdpa and not c.stock_kernels], args.profile, ids, xl,
                               src_len, tgt)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
