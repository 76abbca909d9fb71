"""``onmt-xl demo`` (the main job on synthetic data), ``onmt-xl pipeline`` (the same on your data)
and ``onmt-xl write-configs``."""

from __future__ import annotations

import argparse
from pathlib import Path

from onmt_xl.experiments.configs import DEMO_WORKDIR, SYSTEMS, write_configs
from onmt_xl.experiments.pipeline import Pipeline, PipelineData

DEMO_SIZES = {"train": 6000, "valid": 200, "test": 300}


def make_demo_data(workdir: Path, seed: int = 1) -> PipelineData:
    """Synthetic SVO → SOV corpus (fixed seeds) with gold test alignments, under ``workdir/synthetic``."""
    from onmt_xl.data import synthetic

    out = workdir / "synthetic"
    out.mkdir(parents=True, exist_ok=True)
    for i, (split, n) in enumerate(DEMO_SIZES.items()):
        if not (out / f"{split}.align").exists():
            synthetic.write(synthetic.generate(n, seed=seed + 1000 * i), str(out / split))
    return PipelineData(
        train_src=str(out / "train.src"), train_tgt=str(out / "train.tgt"),
        valid_src=str(out / "valid.src"), valid_tgt=str(out / "valid.tgt"),
        test_src=str(out / "test.src"), test_ref=str(out / "test.tgt"), test_align=str(out / "test.align"),
    )


def _systems(text: str):
    names = [s for s in text.split(",") if s]
    bad = [s for s in names if s not in SYSTEMS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown systems {bad}; choose from {', '.join(SYSTEMS)}")
    return names


def _common(p: argparse.ArgumentParser, default_steps) -> None:
    p.add_argument("--workdir", default=DEMO_WORKDIR, help="where everything is written (resumable)")
    p.add_argument("--systems", type=_systems, default=["baseline", "combination"],
                   help=f"comma-separated, from: {', '.join(SYSTEMS)}")
    p.add_argument("--train-steps", type=int, default=default_steps)
    p.add_argument("--preorder-iterations", type=int, default=5)
    p.add_argument("--beam-size", type=int, default=5)


def run_demo(args) -> int:
    workdir = Path(args.workdir)
    data = make_demo_data(workdir)
    Pipeline(data, str(workdir), args.systems, args.train_steps, args.preorder_iterations, args.beam_size).run()
    return 0


def run_pipeline(args) -> int:
    data = PipelineData(args.train_src, args.train_tgt, args.valid_src, args.valid_tgt, args.test_src,
                        args.test_ref, args.test_align)
    Pipeline(data, args.workdir, args.systems, args.train_steps, args.preorder_iterations, args.beam_size).run()
    return 0


def run_write_configs(args) -> int:
    for system, path in write_configs(args.out, args.workdir).items():
        print(f"{system}: {path}")
    return 0


def add_subcommands(sub) -> None:
    p = sub.add_parser("demo", help="the main job on an embedded synthetic SVO->SOV corpus")
    _common(p, None)
    p.set_defaults(func=run_demo)

    p = sub.add_parser("pipeline", help="align, preorder, train and score the systems on your tokenized data")
    for name in ("train-src", "train-tgt", "valid-src", "valid-tgt", "test-src", "test-ref"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--test-align", help="gold Pharaoh links of the test set, to score the preorderer (optional)")
    _common(p, None)
    p.set_defaults(func=run_pipeline)

    p = sub.add_parser("write-configs", help="write the YAML configurations for a work directory")
    p.add_argument("--out", default="yaml_configs")
    p.add_argument("--workdir", default=DEMO_WORKDIR)
    p.set_defaults(func=run_write_configs)
