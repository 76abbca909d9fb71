#!/usr/bin/env python
"""Parameter count of every yaml_configs/ system against the baseline, built by OpenNMT's model builder.

    python tools/bench/count_params.py                  # the demo size of yaml_configs/
    python tools/bench/count_params.py --big            # Transformer BIG (d=1024, 16 heads, 6+6 layers, ff 4096)
    python tools/bench/count_params.py --preset enja    # the size of `onmt-xl experiments` (d=256, 4 heads, 3+3 layers)

Vocabularies are synthetic (``--vocab`` tokens per side), so the totals depend on it; the differences do not.
"""

import argparse
import warnings

warnings.simplefilter("ignore")

from onmt_xl.experiments.analysis import build_model  # noqa: E402
from onmt_xl.experiments.configs import PRESETS, SYSTEMS  # noqa: E402

BIG = dict(enc_layers=6, dec_layers=6, heads=16, hidden_size=1024, word_vec_size=1024, transformer_ff=4096)


def count(system: str, overrides: dict, vocab: int, preset: str = "demo") -> int:
    return sum(p.numel() for p in build_model(system, preset, overrides, vocab).parameters())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--preset", default="demo", choices=sorted(PRESETS), help="model size (ignored with --big)")
    args = ap.parse_args()
    overrides = dict(BIG) if args.big else {}
    preset = "demo" if args.big else args.preset
    base = count("baseline", overrides, args.vocab, preset)
    print(f"{'system':18s} {'parameters':>14s} {'vs baseline':>12s}")
    for system in SYSTEMS:
        n = count(system, overrides, args.vocab, preset)
        print(f"{system:18s} {n:14,d} {n - base:+12,d}")
    for fusion in ("diagonal", "full"):
        n = count("inxl", {**overrides, "xl_inxl_fusion": fusion}, args.vocab, preset)
        print(f"{'inxl/' + fusion:18s} {n:14,d} {n - base:+12,d}")


if __name__ == "__main__":
    main()
