#!/usr/bin/env python3
"""The pre-reordering system on CTranslate2 (issue 38): converted, translating with the preorderer in front, checked
against ``onmt_translate`` and timed beside it.

The pre-reordering baseline (Du and Way 2017; Chen et al. 2019, Tab. 3) is a stock Transformer behind the
``xl_prereorder`` transform, so CTranslate2 can run it: the preorderer reorders each source sentence
(``Preorderer.pos_xl``, then :func:`onmt_xl.core.position_source.reorder_tokens`, as the transform does) and CTranslate2
translates the reordered tokens. The XL systems (and the other encoders of ours) cannot be converted: CTranslate2's
Transformer has no input for per-token positions, InXL's fusion or HeadXL's head split (its converter rejects any
``encoder_type`` but ``transformer``; ``convert`` prints that message).

OpenNMT-py 3.5.1 saves ``self_attn_type: scaled-dot-flash`` by default, which CTranslate2 4.x's converter rejects
(CTranslate2 issue #1702) though it is the same attention (OpenNMT-py only picks flash-attn kernels with it); as
OpenNMT-py's maintainer suggests there, ``convert`` writes a copy of the checkpoint with ``scaled-dot`` and converts
that.

    python tools/bench/ct2_prereorder.py convert   --model M.pt --out DIR
    python tools/bench/ct2_prereorder.py translate --ct2 DIR --preorderer P.xlp --src F --output H [--beam-size 5]
    python tools/bench/ct2_prereorder.py compare   --model M.pt --preorderer P.xlp --src F [--repeats 3] [--threads 1]

``compare`` converts, then runs ``onmt_translate`` (``-transforms xl_prereorder``) and this tool's ``translate``
as whole processes, ``--repeats`` times each, interleaved (the order alternating), with the same beam, batch,
length penalty (``avg`` = CTranslate2's ``length_penalty=1``), maximum length (``-max_length_ratio 0``, which
CTranslate2 lacks) and threads; it prints each side's times, the ratio of medians with the per-pair range, and
how many output lines are identical (exit 1 when some differ, with the first differences).
Needs ``ctranslate2`` (Eole brings it; ``bash tools/install.sh eole``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: onmt_translate's -length_penalty -> CTranslate2's length_penalty (score / length**lp; avg = alpha 1)
PENALTIES = {"avg": 1.0, "none": 0.0}


def convert(model: Path, out: Path, quantization: str | None = None) -> None:
    """``model`` (an OpenNMT-py checkpoint) -> a CTranslate2 model in ``out``; raises ``ValueError`` with the
    converter's reasons when CTranslate2 cannot express the model."""
    import torch
    from ctranslate2.converters import OpenNMTPyConverter

    checkpoint = torch.load(model, map_location="cpu", weights_only=False)  # a checkpoint of ours: trusted
    if getattr(checkpoint["opt"], "self_attn_type", "scaled-dot") == "scaled-dot-flash":
        checkpoint["opt"].self_attn_type = "scaled-dot"  # same attention (CTranslate2 #1702)
    with tempfile.TemporaryDirectory() as tmp:
        patched = Path(tmp) / "model.pt"
        torch.save(checkpoint, patched)
        del checkpoint
        OpenNMTPyConverter(str(patched), unsafe_deserialization=True).convert(str(out), force=True,
                                                                              quantization=quantization)


def translate(ct2: Path, preorderer: Path, src: Path, output: Path, beam_size: int, batch_size: int,
              max_length: int, threads: int, length_penalty: str = "avg") -> None:
    """Each line of ``src`` (space-separated tokens) reordered by the preorderer, then translated by CTranslate2."""
    import ctranslate2

    from onmt_xl.core.position_source import load_preorderer, reorder_tokens

    pre = load_preorderer(str(preorderer))
    lines = src.read_text(encoding="utf-8").splitlines()
    batch = [reorder_tokens(toks, pre.pos_xl(toks)) if toks else [] for toks in (ln.split() for ln in lines)]
    translator = ctranslate2.Translator(str(ct2), device="cpu", inter_threads=1, intra_threads=threads)
    results = translator.translate_batch(batch, beam_size=beam_size, max_batch_size=batch_size,
                                         length_penalty=PENALTIES[length_penalty], max_decoding_length=max_length)
    output.write_text("".join(" ".join(r.hypotheses[0]) + "\n" for r in results), encoding="utf-8")


def _run(cmd, env) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    secs = time.monotonic() - start
    if proc.returncode:
        sys.exit(f"ct2_prereorder: failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stderr[-3000:]}")
    return secs


def compare(args) -> int:
    work = Path(args.workdir or tempfile.mkdtemp(prefix="ct2_prereorder_"))
    work.mkdir(parents=True, exist_ok=True)
    ct2 = work / "ct2"
    start = time.monotonic()
    convert(args.model, ct2)
    print(f"converted {args.model} -> {ct2} in {time.monotonic() - start:.1f} s")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    common = ["-beam_size", args.beam_size, "-batch_size", args.batch_size, "-batch_type", "sents"]
    onmt = [sys.executable, "-m", "onmt.bin.translate", "-model", args.model, "-src", args.src,
            "-output", work / "hyp.onmt", *common, "-length_penalty", args.length_penalty,
            "-max_length", args.max_length, "-max_length_ratio", 0,
            "-transforms", "xl_prereorder", "-xl_preorderer", args.preorderer]
    ours = [sys.executable, __file__, "translate", "--ct2", ct2, "--preorderer", args.preorderer, "--src", args.src,
            "--output", work / "hyp.ct2", "--beam-size", args.beam_size, "--batch-size", args.batch_size,
            "--max-length", args.max_length, "--threads", args.threads,
            "--length-penalty", args.length_penalty]
    onmt, ours = [list(map(str, c)) for c in (onmt, ours)]
    times = {"onmt_translate": [], "ctranslate2": []}
    for r in range(args.repeats):
        order = [("onmt_translate", onmt), ("ctranslate2", ours)]
        for name, cmd in order if r % 2 == 0 else order[::-1]:
            times[name].append(_run(cmd, env))
    n_src = len(Path(args.src).read_text(encoding="utf-8").splitlines())
    print(f"{n_src} sentences, beam {args.beam_size}, length penalty {args.length_penalty}, batch "
          f"{args.batch_size}, {args.threads} thread(s), CPU; whole processes, {args.repeats} repeats interleaved")
    for name, secs in times.items():
        print(f"  {name:15s}: median {statistics.median(secs):6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in secs)})")
    pairs = [o / c for o, c in zip(times["onmt_translate"], times["ctranslate2"])]
    ratio = statistics.median(times["onmt_translate"]) / statistics.median(times["ctranslate2"])
    print(f"  onmt_translate / ctranslate2: {ratio:.2f}x (per repeat {min(pairs):.2f}-{max(pairs):.2f}x)")

    a = (work / "hyp.onmt").read_text(encoding="utf-8").splitlines()
    b = (work / "hyp.ct2").read_text(encoding="utf-8").splitlines()
    same = sum(x == y for x, y in zip(a, b))
    print(f"  identical output lines: {same} / {len(a)}" + ("" if len(a) == len(b) else f" (ct2 wrote {len(b)})"))
    diffs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b), 1) if x != y]
    for i, x, y in diffs[:5]:
        print(f"  line {i}:\n    onmt_translate: {x}\n    ctranslate2   : {y}")
    return 0 if same == len(a) == len(b) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert an OpenNMT-py checkpoint to CTranslate2")
    c.add_argument("--model", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--quantization", help="CTranslate2's weight quantization (default: none)")
    for name in ("translate", "compare"):
        p = sub.add_parser(name)
        p.add_argument("--preorderer", type=Path, required=True)
        p.add_argument("--src", type=Path, required=True)
        p.add_argument("--beam-size", type=int, default=5)
        p.add_argument("--batch-size", type=int, default=64)
        p.add_argument("--max-length", type=int, default=250)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--length-penalty", choices=sorted(PENALTIES), default="avg",
                       help="onmt_translate's -length_penalty (default %(default)s, its default)")
    t = sub.choices["translate"]
    t.add_argument("--ct2", type=Path, required=True)
    t.add_argument("--output", type=Path, required=True)
    m = sub.choices["compare"]
    m.add_argument("--model", type=Path, required=True)
    m.add_argument("--repeats", type=int, default=3)
    m.add_argument("--workdir", type=Path, help="where the CTranslate2 model and both outputs go (default: a temp dir)")
    args = ap.parse_args(argv)

    if args.command == "convert":
        try:
            convert(args.model, args.out, args.quantization)
        except ValueError as err:
            print(f"ct2_prereorder: {args.model}: {err}", file=sys.stderr)
            return 1
        print(f"converted {args.model} -> {args.out}")
        return 0
    if args.command == "translate":
        translate(args.ct2, args.preorderer, args.src, args.output, args.beam_size, args.batch_size, args.max_length,
                  args.threads, args.length_penalty)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
