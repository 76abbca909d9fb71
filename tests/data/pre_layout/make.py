"""Writes this folder's fixtures (tests/test_pre_layout.py): run from the repository root as
``PYTHONPATH=$PWD python3 tests/data/pre_layout/make.py``. They were written at commit c1b496f, before the package
was laid out as core / opennmt / eole / experiments (issue 79); rerunning it with later code writes new fixtures.

A tiny Combination model (1+1 layers of width 8) with ``-xl_exact_resume`` trains 8 steps on 60 synthetic
pairs with its preorderer; ``model_step_4.pt`` is its step-4 checkpoint (RNG states included), stored without
OpenNMT's absolute-PE buffers (5000 fixed sinusoid rows, which the test puts back), ``step4.hyp`` / ``step8.hyp``
the translations of ``test.src`` by the step-4 and the step-8 models (beam 3) and ``gold_scores.json`` their scores
of ``test.tgt``.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from onmt_xl.core.data import synthetic  # noqa: E402
from onmt_xl.experiments.configs import config  # noqa: E402
from onmt_xl.core.reorder.preorderer import Preorderer  # noqa: E402
from tests.conftest import run_env  # noqa: E402
from tests.helpers import stock_cli  # noqa: E402

HERE = Path(__file__).resolve().parent


def run(*args):
    proc = subprocess.run([stock_cli(args[0]), *map(str, args[1:])], cwd=HERE, capture_output=True, text=True,
                          env={**run_env(), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def translate_args(model, output):
    """``onmt_translate``'s arguments (run in this folder): beam 3, and the model's score of each reference."""
    return ["-model", model, "-src", "test.src", "-tgt", "test.tgt", "-output", output, "-beam_size", "3", "-seed", "1",
            "-verbose", "-transforms", "xl_position", "-xl_preorderer", "preorderer.xlp"]


def gold_scores(log):
    """The ``GOLD SCORE`` of each test sentence in a ``-verbose`` translation log."""
    return [float(m) for m in re.findall(r"GOLD SCORE: (-?[0-9.]+)", log)]


def relative(value):
    if isinstance(value, dict):
        return {k: relative(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith(str(HERE)):
        return value[len(str(HERE)) + 1:]
    return value


def main():
    (HERE / "data").mkdir(exist_ok=True)
    corpus = synthetic.generate(60, seed=5)
    synthetic.write(corpus, str(HERE / "data" / "train"))
    (HERE / "data" / "train.align").unlink()
    for ext in ("src", "tgt"):
        lines = (HERE / "data" / f"train.{ext}").read_text().splitlines()
        (HERE / "data" / f"valid.{ext}").write_text("\n".join(lines[:12]) + "\n")
    test = synthetic.generate(8, seed=11)
    for side in ("src", "tgt"):
        (HERE / f"test.{side}").write_text("".join(" ".join(s) + "\n" for s in getattr(test, side)))
    Preorderer.train(corpus.src, corpus.links, iterations=3, progress=False).save(str(HERE / "preorderer.xlp"))
    cfg = config("combination", str(HERE), dict(
        enc_layers=1, dec_layers=1, heads=2, hidden_size=8, word_vec_size=8, transformer_ff=16, train_steps=8,
        valid_steps=100, save_checkpoint_steps=4, keep_checkpoint=-1, report_every=1, batch_size=64,
        valid_batch_size=64, bucket_size=64, warmup_steps=2, dropout=[0.3], attention_dropout=[0.3]))
    cfg["data"]["train"].pop("path_align", None)
    cfg.update(xl_exact_resume=True, save_model=str(HERE / "models" / "m"))
    (HERE / "config.yaml").write_text(yaml.safe_dump(relative(cfg)))
    run("onmt_build_vocab", "-config", "config.yaml", "-n_sample", "-1")
    run("onmt_train", "-config", "config.yaml")
    scores = {step: gold_scores(run("onmt_translate", *translate_args(f"models/m_step_{step}.pt", f"step{step}.hyp")))
              for step in (4, 8)}
    (HERE / "gold_scores.json").write_text(json.dumps(scores, indent=1) + "\n")
    ckpt = torch.load(HERE / "models" / "m_step_4.pt", map_location="cpu", weights_only=False)
    for key in [k for k in ckpt["model"] if k.endswith(".pe.pe")]:
        del ckpt["model"][key]
    torch.save(ckpt, HERE / "model_step_4.pt")
    shutil.rmtree(HERE / "models")


if __name__ == "__main__":
    main()
