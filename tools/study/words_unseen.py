"""How many validation tokens a training text leaves unseen, with ``--tokenize words`` and with BPE, as
``onmt-xl pipeline`` tokenizes (``reports/OWN_DATA_korean.md``): the evidence for which languages ``auto``
tokenizes into sub-words below 10,000 pairs, and for the threshold of its note on kept words.

    python tools/study/words_unseen.py --pairs 1000,2500 \
        --side ko:runs/rawko/train.ko:runs/rawko/valid.ko:runs/rawko/train.en \
        --side en:runs/rawko/train.en:runs/rawko/valid.en:runs/rawko/train.ko

``--side LABEL:TRAIN:VALID:OTHER``: the first N lines of TRAIN (N from ``--pairs``) are the training text, VALID the
held-out text, OTHER the other side of the training pairs (joint BPE is learned on both, as the pipeline does, with
:func:`~onmt_xl.experiments.tokenization.bpe_merges` merges). One Markdown row per side and size: tokens a validation
sentence and the share of them unseen in training (:func:`~onmt_xl.experiments.tokenization.unseen_share`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.experiments import tokenization as tk  # noqa: E402 - the checkout's, after REPO
from onmt_xl.experiments.stock import read_lines, write_lines  # noqa: E402


def row(label: str, train: Sequence[str], valid: Sequence[str], other: Sequence[str]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "train.a", Path(tmp) / "train.b"]
        write_lines(paths[0], train)
        write_lines(paths[1], other)
        merges = tk.bpe_merges(len(train))
        learned = tk.learn_bpe(paths, merges, Path(tmp) / "bpe.model")
        cells = []
        for tok in (tk.Tokenization("words"), tk.Tokenization("bpe", merges, str(Path(tmp) / "bpe.model"))):
            t = tok.tokenizer()
            per_sentence = sum(len(t.tokenize(line)[0]) for line in valid) / len(valid)
            cells += [f"{per_sentence:.1f}", f"{tk.unseen_share(t, train, valid):.1%}"]
    return (f"| {label} | {len(train):,} | " + " | ".join(cells[:2]) + f" | {learned:,} | " + " | ".join(cells[2:])
            + " |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--side", action="append", required=True, metavar="LABEL:TRAIN:VALID:OTHER")
    p.add_argument("--pairs", default="2500", help="comma-separated training sizes (default 2500)")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.pairs.split(",")]
    print("| side | training pairs | words: tokens a sentence | words: unseen | BPE merges learned | "
          "BPE: tokens a sentence | BPE: unseen |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for side in args.side:
        label, train, valid, other = side.split(":")
        train_lines, other_lines, valid_lines = read_lines(train), read_lines(other), read_lines(valid)
        for n in sizes:
            if n > len(train_lines):
                print(f"words_unseen: {train} has {len(train_lines):,} lines, fewer than {n:,}", file=sys.stderr)
                continue
            print(row(label, train_lines[:n], valid_lines, other_lines[:n]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
