"""Shared test helpers: stock CLI paths, tiny synthetic data and a tiny preorderer."""

import shutil
import sys
from pathlib import Path


def stock_cli(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def tiny_corpus(out: Path, n: int = 300, seed: int = 3):
    """Write ``out/train.{src,tgt,align}`` from the synthetic grammar; returns the corpus."""
    from onmt_xl.core.data import synthetic

    corpus = synthetic.generate(n, seed=seed)
    synthetic.write(corpus, str(out / "train"))
    return corpus


def tiny_preorderer(out: Path, corpus) -> Path:
    from onmt_xl.core.reorder.preorderer import Preorderer

    path = out / "pre.xlp"
    Preorderer.train(corpus.src, corpus.links, iterations=3, progress=False).save(str(path))
    return path


def tiny_model_workdir(wd: Path, cli, system: str = "baseline", **overrides) -> Path:
    """A 1+1-layer ``system`` (default: the baseline) of width 16 on 200 synthetic pairs (the first 20 also validate) in ``wd``: writes
    ``wd/data``, ``wd/cfg.yaml`` (``overrides`` on top) and the vocabularies, built with ``cli``
    (``cli(name, *args)`` runs a stock command). Returns the config's path."""
    import yaml

    from onmt_xl.experiments.configs import config

    (wd / "data").mkdir()
    tiny_corpus(wd / "data", n=200)
    for ext in ("src", "tgt"):
        lines = (wd / "data" / f"train.{ext}").read_text().splitlines()
        (wd / "data" / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
    cfg = config(system, str(wd), {**dict(
        enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32,
        report_every=2, batch_size=256, valid_batch_size=256, bucket_size=256, warmup_steps=2), **overrides,
    })
    (wd / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    cli("onmt_build_vocab", "-config", str(wd / "cfg.yaml"), "-n_sample", "-1")
    return wd / "cfg.yaml"


def archive_noisy_runs(wd: Path, archive: Path, systems, seeds=(1, 2), keep: float = 0.7, seed: int = 3) -> None:
    """Fake finished jobs ``{system}_s{seed}`` in ``wd/jobs``, archived to ``archive``: each test and validation
    hypothesis is its reference kept with probability ``keep``, else "w"."""
    import json
    import random

    from onmt_xl.experiments.archive import save_job

    refs = (wd / "data" / "test.ref").read_text().splitlines()
    valid = (wd / "data" / "valid.tgt").read_text().splitlines()
    rng = random.Random(seed)
    for system in systems:
        for s in seeds:
            jd = wd / "jobs" / f"{system}_s{s}"
            jd.mkdir(parents=True)
            for name, lines in (("hyp.test", refs), ("hyp.valid", valid)):
                (jd / name).write_text("".join((r if rng.random() < keep else "w") + "\n" for r in lines))
            (jd / "done.json").write_text(json.dumps({"parameters": 10, "buffers": 1, "resumed_exactly": True}))
            assert save_job(wd, archive, jd.name)
