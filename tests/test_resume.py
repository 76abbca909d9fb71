"""``-xl_exact_resume``: a run resumed from a checkpoint ends with the weights of a run never interrupted.

End to end through the stock ``onmt_train``: a tiny Combination model (XL transform and dropout in play)
trains 12 steps at once, and again as 5 steps + a resume from step 5; with ``-xl_exact_resume`` the two
step-12 checkpoints are equal tensor for tensor, without it (OpenNMT restarts the corpus) they differ.
"""

import random
import subprocess

import numpy as np
import pytest
import torch
import yaml

from onmt_xl.core import resume
from onmt_xl.experiments.configs import config
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer


@pytest.mark.parametrize("step, counts, boundaries, expected", [
    (1, [1], [0], 0),
    (6, [1], [0], 5),
    (6, [2], [0], 10),
    (6, [1, 3], [0, 2], 1 + 1 + 3 + 3 + 3),  # steps 1-2 take 1 batch, steps 3-5 take 3
])
def test_batches_before_follows_the_accum_schedule(step, counts, boundaries, expected):
    assert resume.batches_before(step, counts, boundaries) == expected


def test_rng_states_survive_a_weights_only_checkpoint(tmp_path):
    torch.manual_seed(1), random.seed(2), np.random.seed(3)
    torch.save({"s": resume.rng_state()}, tmp_path / "c.pt")
    expected = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(9), random.seed(9), np.random.seed(9)
    resume.set_rng_state(torch.load(tmp_path / "c.pt", weights_only=True)["s"])
    again = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(expected[0], again[0]) and expected[1:] == again[1:]


def test_skip_then_restore_drops_the_first_batches_and_restores_after_them():
    torch.manual_seed(5)
    saved = resume.rng_state()
    torch.rand(1)  # what the pipeline draws for the first batch kept, after the restore
    expected = torch.rand(1)

    def batches():
        for k in range(6):
            torch.rand(1)  # the data pipeline may draw from the RNG too
            yield k

    it = resume.skip_then_restore(batches(), 4, saved)
    assert next(it) == 4 and torch.equal(torch.rand(1), expected)
    assert list(it) == [5]
    with pytest.raises(ValueError, match="ran out after 6 of the 7 batches"):
        list(resume.skip_then_restore(batches(), 7, None))


def _train(cfg_path, *args):
    proc = subprocess.run([stock_cli("onmt_train"), "-config", str(cfg_path), *map(str, args)], capture_output=True,
                          text=True, env={**run_env(), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("resume")
    (wd / "data").mkdir()
    corpus = tiny_corpus(wd / "data", n=240)
    tiny_preorderer(wd, corpus).rename(wd / "preorderer.xlp")
    for ext in ("src", "tgt"):
        lines = (wd / "data" / f"train.{ext}").read_text().splitlines()
        (wd / "data" / f"valid.{ext}").write_text("\n".join(lines[:16]) + "\n")
    cfg = config("combination", str(wd), dict(
        enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32,
        train_steps=12, valid_steps=100, save_checkpoint_steps=5, keep_checkpoint=-1, report_every=1,
        batch_size=64, valid_batch_size=64, bucket_size=64, warmup_steps=2, dropout=[0.3], attention_dropout=[0.3]))
    cfg["data"]["train"].pop("path_align", None)
    exact = {**cfg, "xl_exact_resume": True}  # from the first run on: its checkpoints carry the RNG states
    (wd / "full.yaml").write_text(yaml.safe_dump({**exact, "save_model": str(wd / "full" / "m")}))
    (wd / "cut.yaml").write_text(yaml.safe_dump({**exact, "save_model": str(wd / "cut" / "m")}))
    (wd / "stock.yaml").write_text(yaml.safe_dump({**cfg, "save_model": str(wd / "stock" / "m")}))
    subprocess.run([stock_cli("onmt_build_vocab"), "-config", str(wd / "full.yaml"), "-n_sample", "-1"],
                   check=True, capture_output=True, env=run_env())
    _train(wd / "full.yaml")
    _train(wd / "cut.yaml", "-train_steps", 5)
    return wd


def _weights(path):
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    return {**{f"m.{k}": v for k, v in ckpt["model"].items()}, **{f"g.{k}": v for k, v in ckpt["generator"].items()}}


def test_exact_resume_ends_with_the_uninterrupted_weights(workdir):
    log = _train(workdir / "cut.yaml", "-train_from", workdir / "cut" / "m_step_5.pt", "-xl_exact_resume")
    assert "-xl_exact_resume: skipping the 5 batches of steps 1-5, then restoring the checkpoint's RNG states" in log
    full, resumed = _weights(workdir / "full" / "m_step_12.pt"), _weights(workdir / "cut" / "m_step_12.pt")
    assert full.keys() == resumed.keys()
    assert all(torch.equal(full[k], resumed[k]) for k in full)


def test_without_the_option_the_corpus_restarts_and_the_weights_differ(workdir):
    log = _train(workdir / "stock.yaml", "-train_from", workdir / "cut" / "m_step_5.pt")
    assert "-xl_exact_resume" not in log
    full, stock = _weights(workdir / "full" / "m_step_12.pt"), _weights(workdir / "stock" / "m_step_12.pt")
    assert any(not torch.equal(full[k], stock[k]) for k in full)


def test_checkpoints_carry_rng_states_only_with_the_option(workdir):
    with_option = torch.load(workdir / "cut" / "m_step_5.pt", map_location="cpu", weights_only=False)
    _train(workdir / "stock.yaml", "-train_steps", 5, "-save_model", workdir / "fresh" / "m")
    without = torch.load(workdir / "fresh" / "m_step_5.pt", map_location="cpu", weights_only=False)
    assert resume.RNG_KEY in with_option["optim"]
    assert resume.RNG_KEY not in without["optim"]  # OpenNMT's own checkpoint, key for key


def test_the_option_is_in_the_help():
    out = subprocess.run([stock_cli("onmt_train"), "-h"], capture_output=True, text=True, env=run_env()).stdout
    assert "-xl_exact_resume" in out and "restarts the corpus" in " ".join(out.split())
