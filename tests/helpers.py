"""Shared test helpers: stock CLI paths, tiny synthetic data and a tiny preorderer."""

import shutil
import sys
from pathlib import Path


def stock_cli(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def tiny_corpus(out: Path, n: int = 300, seed: int = 3):
    """Write ``out/train.{src,tgt,align}`` from the synthetic grammar; returns the corpus."""
    from onmt_xl.data import synthetic

    corpus = synthetic.generate(n, seed=seed)
    synthetic.write(corpus, str(out / "train"))
    return corpus


def tiny_preorderer(out: Path, corpus) -> Path:
    from onmt_xl.reorder.preorderer import Preorderer

    path = out / "pre.xlp"
    Preorderer.train(corpus.src, corpus.links, iterations=3, progress=False).save(str(path))
    return path
