"""The corpus arguments shared by ``onmt-xl experiments`` and ``onmt-xl evidence``, and the corpus they name."""

from __future__ import annotations

import argparse
from pathlib import Path

from onmt_xl.core.errors import XLUsageError, check_text_files


def corpus_from_args(args):
    """The :class:`~onmt_xl.experiments.stages.Corpus` the arguments of :func:`add_corpus_arguments` name; every file
    must exist."""
    from onmt_xl.experiments.stages import Corpus

    d = Path(args.data)
    corpus = Corpus(str(d / f"{args.train}.{args.src}"), str(d / f"{args.train}.{args.tgt}"),
                    str(d / f"{args.test}.{args.src}"), str(d / f"{args.test}.{args.tgt}"),
                    args.gold_text, args.gold_align)
    if bool(args.gold_text) != bool(args.gold_align):
        raise XLUsageError(args.gold_text or args.gold_align, None, "--gold-text and --gold-align go together")
    check_text_files(corpus.inputs(), hint="see --data, --src, --tgt, --train, --test")
    corpus.check_parallel()
    return corpus


def workdir_path(text: str) -> str:
    """``--workdir``: a folder, or a path where one can be made; an existing file there (or above it) is refused
    while the arguments are read, before any work."""
    path = Path(text)
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                where = "exists and is not a folder" if part == path else f"{part} is a file, not a folder"
                raise argparse.ArgumentTypeError(f"{text!r}: {where}; choose another path")
            break
    return text


def shared_data() -> Path:
    """``../shared/data`` beside the directory the command runs in, else beside a source checkout of onmt_xl
    (the project's layout); the first when neither exists, so that a missing-file error names it."""
    here = Path.cwd().parent / "shared" / "data"
    checkout = Path(__file__).resolve().parents[2] / "shared" / "data"
    return checkout if not here.exists() and checkout.exists() else here


def add_corpus_arguments(p, shared: Path) -> None:
    p.add_argument("--data", default=str(shared / "enja"), help="directory with TRAIN.SRC, TRAIN.TGT, TEST.SRC, "
                   "TEST.TGT")
    p.add_argument("--src", default="ja", help="source language suffix of the files in --data (default ja)")
    p.add_argument("--tgt", default="en", help="target language suffix of the files in --data (default en)")
    p.add_argument("--train", default="train", help="training split name (its last --valid-size pairs validate)")
    p.add_argument("--test", default="dev", help="test split name (reported on)")
    p.add_argument("--valid-size", type=int, default=1000,
                   help="last training pairs held out for validation (default 1000)")
    gold = shared / "gold"
    p.add_argument("--gold-text", default=str(gold / "jaen.src-tgt") if (gold / "jaen.src-tgt").exists() else None,
                   help="'source ||| target' pairs for attention AER (default: ../shared/data/gold/jaen.src-tgt)")
    p.add_argument("--gold-align", default=str(gold / "jaen.gold") if (gold / "jaen.gold").exists() else None,
                   help="their gold links, 1-indexed, source first")
