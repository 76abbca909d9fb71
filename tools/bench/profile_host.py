#!/usr/bin/env python
"""Where the host time of a training step goes, baseline beside the XL systems (issue 39, step 1): operator counts
and the data path's host time, measured on the CPU.

    python tools/bench/profile_host.py [--systems baseline,inxl,headxl,combination,relative_pe] [--preset enja]
        [--src runs/decisive_jaen/data/train.src] [--tgt runs/decisive_jaen/data/train.tgt]
        [--preorderer runs/decisive_jaen/preorderer.xlp] [--batch-tokens 2048] [--reps 15]
        [--out reports/profile_host_cpu.txt]

(a) **Operator counts.** Each system's model is built as ``tools/bench/bench_cpu.py`` builds it (OpenNMT's model builder
at the preset's size) and run on one real batch (``--batch-tokens`` source tokens of ``--src``, their ``pos_XL`` from
``--preorderer``; synthetic sentences and a preorderer trained here when those are missing). A
``TorchDispatchMode`` counts the aten operator calls (on a GPU each is at least one kernel launch or an allocation
on the host) of one forward pass, and of one training step: forward, label-smoothed loss, backward and an Adam
step (``foreach``, as torch picks on a GPU). Attention runs through SDPA, as OpenNMT runs it on a GPU
(:func:`onmt_xl.opennmt.seams.cpu_speed.use_cpu_sdpa`), and ``pos_XL`` encodes with the formula a GPU runs (the CPU's
table look-up, :func:`onmt_xl.core.positions.sinusoid`, reads ``max(pos)`` back, which a device never does): the counts
are those of the GPU's code path. Forward ops are attributed to the innermost module or XL function running
(sinusoid of ``pos_XL``, ``PE_abs``, InXL fusion, HeadXL first layer, the rest), and operators that make a GPU
wait for the device (``_local_scalar_dense`` = ``.item()``/``int()``/``bool()``, ``nonzero``, ``masked_select``,
boolean indexing, ``lift_fresh`` = ``torch.tensor(list)`` inside a forward) are listed where they run.

(b) **Data path host time.** The ``xl_position`` transform per example on a cache miss (the preorderer's parse)
and on a cache hit, and OpenNMT's ``tensorify`` of one batch (stock, and with the XL channel:
:func:`onmt_xl.opennmt.seams.positions.tensorify_with_xl`), median (min–max) of ``--reps`` repetitions. Timings on a
loaded machine are noisy; the op counts are not.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import functools
import os
import platform
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import onmt_xl  # noqa: E402

DEFAULT_SYSTEMS = "baseline,inxl,headxl,combination,relative_pe"
SYNC_OPS = ("_local_scalar_dense", "nonzero", "masked_select", "lift_fresh", "item", "is_nonzero", "equal",
            "unique", "_unique2", "repeat_interleave")

#: ops that only make a view (no kernel on a GPU, still a dispatcher call on the host)
VIEW_OPS = {"view", "_unsafe_view", "t", "transpose", "expand", "slice", "select", "unsqueeze", "squeeze", "permute",
            "alias", "detach", "as_strided", "_reshape_alias", "unflatten", "flatten", "reshape", "split", "chunk",
            "unbind", "narrow", "view_as"}

_TAGS: list = []


@contextlib.contextmanager
def tagged(name):
    _TAGS.append(name)
    try:
        yield
    finally:
        _TAGS.pop()


def tag_function(owner, attr, name):
    """Wrap ``owner.attr`` so that the ops it runs are attributed to ``name``; returns an undo callable."""
    stock = getattr(owner, attr)

    @functools.wraps(stock)
    def wrapped(*args, **kwargs):
        with tagged(name):
            return stock(*args, **kwargs)

    setattr(owner, attr, wrapped)
    return lambda: setattr(owner, attr, stock)


class OpCounter(TorchDispatchMode):
    """Counts aten operator calls by (tag, op); ``sync`` keeps the host-device sync candidates."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()
        self.sync = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        tag = _TAGS[-1] if _TAGS else "(outside modules)"
        self.ops[(tag, name)] += 1
        bool_index = name in ("index", "index_put", "index_put_") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for a in args if isinstance(a, (list, tuple)) for i in a)
        if name in SYNC_OPS or bool_index:
            self.sync[(tag, name + (" (bool mask)" if bool_index else ""))] += 1
        return func(*args, **kwargs)

    @property
    def total(self):
        return sum(self.ops.values())

    @property
    def kernels(self):
        return sum(n for (_, op), n in self.ops.items() if op not in VIEW_OPS)


def module_tags(model):
    """Forward pre/post hooks pushing each module's qualified name (innermost wins)."""
    handles = []
    for qual, mod in model.named_modules():
        if not qual:
            continue
        handles.append(mod.register_forward_pre_hook(lambda m, a, q=qual: _TAGS.append(q) and None))
        handles.append(mod.register_forward_hook(lambda m, a, o: _TAGS.pop() and None))
    return handles


def group(tag: str) -> str:
    """Coarse group of a forward tag, comparable across systems."""
    if tag.startswith("xl:"):
        return tag[3:]
    if tag.startswith("encoder.inxl"):
        return "InXL fusion (Eq. 7)"
    if tag.startswith("encoder.transformer.0"):
        return "encoder layer 0 (HeadXL split there)"
    if tag.startswith("encoder.transformer"):
        return "encoder layers 1.."
    if tag.startswith("encoder.embeddings"):
        return "encoder embeddings (+ stock PE)"
    if tag.startswith("encoder"):
        return "encoder other (masks, final norm)"
    if tag.startswith("decoder"):
        return "decoder"
    if tag.startswith("generator"):
        return "generator"
    return tag


# ---------------------------------------------------------------- data

def load_data(args):
    from onmt_xl.core.data import synthetic
    from onmt_xl.core.reorder.preorderer import Preorderer

    note = []
    if args.preorderer and Path(args.preorderer).exists():
        pre = Preorderer.load(args.preorderer)
        note.append(f"preorderer {args.preorderer}")
    else:
        corpus = synthetic.generate(3000, seed=1)
        pre = Preorderer.train(corpus.src, corpus.links, progress=False)
        note.append("preorderer trained here on synthetic data")
    if args.src and Path(args.src).exists():
        src = [ln.split() for ln in Path(args.src).read_text(encoding="utf-8").splitlines()[:20000]]
        tgt = ([ln.split() for ln in Path(args.tgt).read_text(encoding="utf-8").splitlines()[:20000]]
               if args.tgt and Path(args.tgt).exists() else [s[::-1] for s in src])
        pairs = [(s, t) for s, t in zip(src, tgt) if s and t]
        note.append(f"sentences from {args.src}")
    else:
        corpus = synthetic.generate(3000, seed=1)
        pairs = [(s, list(reversed(s))) for s in corpus.src]
        note.append("synthetic sentences")
    random.Random(0).shuffle(pairs)
    return pre, pairs, "; ".join(note)


def take_batch(pairs, batch_tokens):
    batch, n = [], 0
    for s, t in pairs:
        if n + len(s) > batch_tokens:
            break
        batch.append((s, t))
        n += len(s)
    return batch, n


def model_inputs(batch, positions, vocab):
    g = torch.Generator().manual_seed(0)
    B, L = len(batch), max(len(s) for s, _ in batch)
    T = max(len(t) for _, t in batch) + 1
    ids = torch.full((B, L, 1), 1, dtype=torch.long)
    xl = torch.zeros((B, L, 1), dtype=torch.long)
    tgt = torch.full((B, T + 1, 1), 1, dtype=torch.long)
    for b, ((s, t), p) in enumerate(zip(batch, positions)):
        ids[b, : len(s), 0] = torch.randint(4, vocab, (len(s),), generator=g)
        xl[b, : len(s), 0] = torch.tensor(p)
        tgt[b, 0, 0] = 2
        tgt[b, 1: len(t) + 1, 0] = torch.randint(4, vocab, (len(t),), generator=g)
        tgt[b, len(t) + 1, 0] = 3
    return ids, xl, torch.tensor([len(s) for s, _ in batch]), tgt


# ---------------------------------------------------------------- (a) op counts

def gpu_code_path():
    """Make ``pos_XL`` encode with the formula (what a GPU runs), not the CPU's table look-up; undo callable."""
    import onmt_xl.opennmt.encoders.xl_transformer as xt
    from onmt_xl.core import positions

    stock = xt.sinusoid
    xt.sinusoid = lambda pos, dim, kind="SinusoidalInterleaved": positions._sinusoid(pos, dim, kind)
    return lambda: setattr(xt, "sinusoid", stock)


def count_system(system, args, ids, xl, src_len, tgt):
    import onmt_xl.opennmt.encoders.xl_transformer as xt
    from onmt_xl.experiments.analysis import build_model
    from onmt_xl.experiments.configs import ALIGNED_R, SYSTEMS, XL
    from onmt_xl.core.modules import inxl
    from onmt_xl.opennmt.seams import cpu_speed

    model = build_model(system, args.preset, vocab_size=args.vocab).train()
    cpu_speed.use_cpu_sdpa(model)
    src = torch.cat((ids, xl), -1) if SYSTEMS[system].transform in (XL, ALIGNED_R) else ids
    optim = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.998), eps=1e-8, foreach=True)
    gold = tgt[:, 1:].reshape(-1)
    undo = [gpu_code_path() if args.gpu_path else (lambda: None),
            tag_function(xt, "sinusoid", "xl:sinusoid of pos_XL (Eq. 6)"),
            tag_function(xt, "absolute_pe", "xl:PE_abs (cached table slice)"),
            tag_function(xt, "padding_mask", "xl:padding mask"),
            tag_function(xt, "embed_words", "xl:word embeddings (X)"),
            tag_function(inxl.InXLPositionFusion, "forward", "xl:InXL fusion (Eq. 7)"),
            tag_function(xt, "headxl_layer_forward", "xl:HeadXL layer 0 (Eq. 9-11)")]
    handles = module_tags(model)

    def step(counter_fwd=None, counter_step=None):
        fwd = counter_fwd or contextlib.nullcontext()
        with counter_step or contextlib.nullcontext():
            with fwd:
                out, _ = model(src, tgt, src_len)
            with tagged("loss"):
                logits = model.generator(out.reshape(-1, out.size(-1)))
                loss = torch.nn.functional.cross_entropy(logits.float(), gold, ignore_index=1, label_smoothing=0.1,
                                                         reduction="sum")
            with tagged("backward"):
                (loss / gold.numel()).backward()
            with tagged("optimizer"):
                optim.step()
                optim.zero_grad()

    try:
        step()  # warm-up: optimizer state, cached tables
        fwd = OpCounter()
        with fwd, torch.no_grad():
            model(src, tgt, src_len)
        train = OpCounter()
        step(counter_step=train)
    finally:
        for h in handles:
            h.remove()
        for u in reversed(undo):
            u()
    return fwd, train


# ---------------------------------------------------------------- (b) data path

def timed(fn, reps, inner=1):
    out = []
    fn()
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return out


def spread(values, scale=1e6, fmt="{:.1f}"):
    v = [x * scale for x in values]
    return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}–{fmt.format(max(v))})"


def per_example_xl_channel(stock_tensorify, vocabs, minibatch, device, left_pad=False):
    """The XL channel as ``tensorify_with_xl`` built it before issue 39 (one tensor per example, then
    ``pad_sequence``), kept here only to time it beside the current one."""
    from torch.nn.utils.rnn import pad_sequence

    batch = stock_tensorify(vocabs, minibatch, device, left_pad=left_pad)
    seqs = [torch.tensor(ex["xl_pos"], dtype=torch.long, device=device) for ex, _ in minibatch]
    batch["xl_pos"] = pad_sequence(seqs, batch_first=True, padding_value=0)
    return batch


def make_transform(args, pre):
    from onmt_xl.opennmt.transforms.xl_position import XLPositionTransform

    opts = argparse.Namespace(xl_source="preorderer", xl_preorderer=args.preorderer, xl_align_path=None,
                              xl_cache_size=1_000_000, xl_noise=0.0, seed=-1)
    tr = XLPositionTransform.__new__(XLPositionTransform)
    tr.opts = opts
    tr._parse_opts()
    tr.preorderer = pre
    tr.rng = random.Random(1234)
    tr._seg_sample = None  # the content check runs on the first tokens of a process only
    return tr


def data_path(args, pre, pairs, batch):
    import onmt.inputters.text_utils as text_utils

    from onmt_xl.opennmt.seams.positions import tensorify_with_xl

    lines = []
    tr = make_transform(args, pre)
    sents = [s for s, _ in pairs[: args.miss_sentences]]

    def all_misses():
        for s in sents:
            tr.cache.clear()
            tr.apply({"src": s}, is_train=True)

    miss = [t / len(sents) for t in timed(all_misses, max(3, args.reps // 3))]
    for s in sents:  # fill the cache
        tr.apply({"src": s}, is_train=True)
    hit = [t / len(sents) for t in timed(lambda: [tr.apply({"src": s}, is_train=True) for s in sents], args.reps)]
    mean_len = sum(len(s) for s in sents) / len(sents)
    B = len(batch)
    lines.append(f"xl_position transform, {len(sents)} sentences (mean {mean_len:.1f} tokens), µs per example, "
                 "median (min–max) of the passes' means:")
    lines.append(f"  cache miss (preorderer parse), {len(miss)} passes: {spread(miss, fmt='{:.1f}')}")
    lines.append(f"  cache hit, {len(hit)} passes: {spread(hit, fmt='{:.2f}')}")
    lines.append(f"  per batch of {B} sentences: miss ≈ "
                 f"{1e3 * B * min(miss):.1f}–{1e3 * B * statistics.median(miss):.1f} ms (fastest pass–median), hit ≈ "
                 f"{1e3 * B * statistics.median(hit):.3f} ms")

    stock = text_utils.tensorify
    stock = getattr(stock, "args", (stock,))[0]  # the plug-in wraps it in a partial
    vocabs = {"src": {"<blank>": 1}, "tgt": {"<blank>": 1}}
    g = random.Random(0)
    minibatch = []
    for i, (s, t) in enumerate(batch):
        ex = {"src": {"src": s, "src_ids": [g.randrange(4, 8000) for _ in s]},
              "tgt": {"tgt": t, "tgt_ids": [2] + [g.randrange(4, 8000) for _ in t] + [3]},
              "cid": "corpus_1", "cid_line_number": i}
        minibatch.append((ex, i))
    xl_batch = []
    for ex, i in minibatch:
        ex2 = dict(ex)
        tr.apply(ex2 | {"src": ex["src"]["src"]}, is_train=True)
        ex2["xl_pos"] = list(tr.cache[" ".join(ex["src"]["src"])])
        xl_batch.append((ex2, i))
    cpu = torch.device("cpu")
    assert torch.equal(per_example_xl_channel(stock, vocabs, xl_batch, cpu)["xl_pos"],
                       tensorify_with_xl(stock, vocabs, xl_batch, cpu)["xl_pos"])
    no_stock = lambda vocabs, minibatch, device, left_pad=False: {}  # noqa: E731  (the XL channel alone)
    fns = {"stock tensorify": lambda: stock(vocabs, minibatch, cpu),
           "XL channel alone, now (padded in Python, one torch.tensor)":
               lambda: tensorify_with_xl(no_stock, vocabs, xl_batch, cpu),
           "XL channel alone, before (one tensor per example + pad_sequence)":
               lambda: per_example_xl_channel(no_stock, vocabs, xl_batch, cpu)}
    times = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(args.reps):  # interleaved, so that the load drifts alike for all three
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            times[k].append((time.perf_counter() - t0) / 5)
    lines.append(f"tensorify of one batch ({B} sentences, {sum(len(s) for s, _ in batch)} source tokens), µs, "
                 f"median (min–max) of {args.reps} × 5 calls, interleaved:")
    for k, v in times.items():
        lines.append(f"  {k}: {spread(v)}")
    return lines


# ---------------------------------------------------------------- report

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS)
    ap.add_argument("--preset", default="enja")
    ap.add_argument("--src", default="runs/decisive_jaen/data/train.src")
    ap.add_argument("--tgt", default="runs/decisive_jaen/data/train.tgt")
    ap.add_argument("--preorderer", default="runs/decisive_jaen/preorderer.xlp")
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--miss-sentences", type=int, default=300, help="sentences timed through the preorderer")
    ap.add_argument("--cpu-path", dest="gpu_path", action="store_false",
                    help="count the CPU's code path of sinusoid (table look-up) instead of the GPU's")
    ap.add_argument("--skip-data", action="store_true", help="op counts only")
    ap.add_argument("--out")
    args = ap.parse_args()
    systems = args.systems.split(",")
    if "baseline" not in systems:
        systems.insert(0, "baseline")
    onmt_xl.register()
    pre, pairs, note = load_data(args)
    batch, n_tok = take_batch(pairs, args.batch_tokens)
    positions = [pre.pos_xl(s) for s, _ in batch]
    ids, xl, src_len, tgt = model_inputs(batch, positions, args.vocab)
    load = os.getloadavg()
    lines = [
        f"command: python tools/bench/profile_host.py {' '.join(sys.argv[1:])}",
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.node() or '?'}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average {load[0]:.1f} "
        "(the machine was loaded: other jobs were training; timings are noisy, op counts are not); torch "
        f"{torch.__version__}",
        f"data: {note}; batch {len(batch)} sentences, {n_tok} source tokens (max length {ids.size(1)}), "
        f"target length {tgt.size(1) - 1}; preset {args.preset}, vocab {args.vocab}; "
        f"pos_XL code path: {'GPU (formula)' if args.gpu_path else 'CPU (table look-up)'}; attention via SDPA; "
        "Adam foreach",
        "",
        "(a) aten operator calls (≈ kernel launches on a GPU)",
        "",
        "all ops / non-view ops (views launch no kernel but cost a host dispatch)",
        "",
        "| system | forward | training step (fwd + loss + bwd + Adam) | forward vs baseline | step vs baseline |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    results = {}
    for s in systems:
        results[s] = count_system(s, args, ids, xl, src_len, tgt)
        print(f"{s} counted", file=sys.stderr, flush=True)
    bf, bt = results["baseline"]
    for s in systems:
        f, t = results[s]
        lines.append(f"| {s} | {f.total} / {f.kernels} | {t.total} / {t.kernels} | {f.total - bf.total:+d} / "
                     f"{f.kernels - bf.kernels:+d} | {t.total - bt.total:+d} / {t.kernels - bt.kernels:+d} |")

    def by_group(counter):
        c = collections.Counter()
        for (tag, _), n in counter.ops.items():
            c[group(tag)] += n
        return c

    lines += ["", "Training step by phase (forward, loss, backward, optimizer):", ""]
    for s in systems:
        phases = collections.Counter()
        for (tag, _), n in results[s][1].ops.items():
            phases[tag if tag in ("loss", "backward", "optimizer") else "forward"] += n
        lines.append(f"- {s}: " + ", ".join(f"{k} {phases[k]}" for k in ("forward", "loss", "backward", "optimizer")))
    lines += ["", "Forward ops by module group (no_grad forward):", ""]
    groups = sorted({g for s in systems for g in by_group(results[s][0])})
    lines.append("| group | " + " | ".join(systems) + " |")
    lines.append("| --- | " + " | ".join("---:" for _ in systems) + " |")
    per = {s: by_group(results[s][0]) for s in systems}
    for g in groups:
        lines.append(f"| {g} | " + " | ".join(str(per[s][g]) for s in systems) + " |")
    for s in systems:
        if s == "baseline":
            continue
        lines += ["", f"Ops {s} runs in its XL pieces (forward), by piece and op:"]
        pieces = collections.defaultdict(collections.Counter)
        for (tag, op), n in results[s][0].ops.items():
            if tag.startswith("xl:") or tag.startswith("encoder.inxl") or tag.startswith("encoder.transformer.0"):
                pieces[group(tag)][op] += n
        for piece, ops in sorted(pieces.items()):
            lines.append(f"  {piece} ({sum(ops.values())}): " + ", ".join(f"{op}×{n}" for op, n in ops.most_common()))
    lines += ["", "Host-device sync candidates in one training step (tag: op × calls):"]
    for s in systems:
        sync = results[s][1].sync
        lines.append(f"- {s}: " + (", ".join(f"{tag}: {op}×{n}" for (tag, op), n in sorted(sync.items())) or "none"))
    if not args.skip_data:
        lines += ["", "(b) data path, host time (machine loaded)", ""]
        lines += data_path(args, pre, pairs, batch)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
