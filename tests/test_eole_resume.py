"""Exact resume in Eole (``training.xl_exact_resume: true``, :func:`onmt_xl.eole.seams.optimizers`, issue 77): a run
of 8 steps and a run of 4 steps resumed to 8 with ``train_from`` give the same weights, bit for bit, on the CPU,
through a dropout schedule and an ``accum_count`` schedule that change in either half; without the option
``optimizer.pt`` is Eole's own and the resumed run differs (the corpus restarts); ``config.json`` never names the
option (a model trained with it stays loadable by stock Eole)."""

import json
import shutil
import sys

import pytest

pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")

import torch  # noqa: E402

from onmt_xl.eole.hook import install  # noqa: E402
from tests.conftest import run_env  # noqa: E402
from tests.test_eole import E2E_CONFIG, e2e_files, run_eole  # noqa: E402

#: batches of 8 sentences (15 to an epoch of the tiny corpus), a checkpoint every 2 steps; the dropout changes after
#: step 3, the accumulation after step 5 (Eole's schedules), so both halves of a split at step 4 see a change
CONFIG = E2E_CONFIG.replace("batch_size: 64", "batch_size: 8").replace("train_steps: 6", "train_steps: {steps}").replace(
    "valid_steps: 6", "valid_steps: 4").replace("save_checkpoint_steps: 6", "save_checkpoint_steps: 2").replace(
    "  dropout: [0.1]\n  attention_dropout: [0.1]\n",
    "  dropout: [0.1, 0.2]\n  attention_dropout: [0.1, 0.05]\n  dropout_steps: [0, 3]\n  accum_count: [1, 2]\n"
    "  accum_steps: [0, 5]\n{extra}")
STOCK_KEYS = {"training_step", "decay_step", "optimizer"}


def weights(step_dir):
    from safetensors.torch import load_file

    return load_file(str(step_dir / "model.00.safetensors"))


def same(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_option_is_a_validated_training_option():
    install()
    from eole.config.run import TrainConfig
    from eole.config.training import TrainingConfig
    from pydantic import ValidationError

    assert TrainingConfig(xl_exact_resume=True).xl_exact_resume is True
    assert TrainingConfig().xl_exact_resume is False and "xl_exact_resume" not in TrainingConfig().model_fields_set
    assert "RNG states" in TrainingConfig.model_fields["xl_exact_resume"].description
    assert "xl_exact_resume" in json.dumps(TrainConfig.model_json_schema())
    with pytest.raises(ValidationError, match="xl_exact_resume"):
        TrainingConfig(xl_exact_resume="sometimes")


def test_a_resumed_run_trains_the_same_weights_and_stock_stays_stock(tmp_path):
    e2e_files(tmp_path, CONFIG.replace("{steps}", "6").replace("{extra}", ""))  # the corpus, preorderer and vocab.yaml
    env = {**run_env(), "OMP_NUM_THREADS": "1"}
    eole = [sys.executable, "-m", "onmt_xl.eole"]
    run_eole(eole, "build_vocab", "-config", tmp_path / "vocab.yaml", cwd=tmp_path, env=env)

    def train(name, steps, option, train_from=None):
        extra = ("  xl_exact_resume: true\n" if option else "") + (f"  train_from: {train_from}\n" if train_from else "")
        cfg = CONFIG.replace("{steps}", str(steps)).replace("{extra}", extra).replace("{wd}/model", "{wd}/" + name)
        path = tmp_path / f"{name}_{steps}.yaml"
        path.write_text(cfg.format(wd=tmp_path, pre=tmp_path / "pre.xlp", n_sample=0))
        proc = run_eole(eole, "train", "-config", path, cwd=tmp_path, env=env)
        return proc.stdout + proc.stderr

    train("whole", 8, True)
    train("split", 4, True)
    saved = torch.load(tmp_path / "split" / "step_4" / "optimizer.pt", weights_only=True)  # as Eole loads it
    assert set(saved) == STOCK_KEYS | {"onmt_xl_rng"}
    # the option concerns the run, not the model: config.json stays loadable by stock Eole
    assert "xl_exact_resume" not in json.loads((tmp_path / "split" / "step_4" / "config.json").read_text())["training"]
    shutil.rmtree(tmp_path / "split" / "step_2")  # resumed from step 4 alone
    out = train("split", 8, True, train_from=tmp_path / "split" / "step_4")
    assert "xl_exact_resume: skipping the batches of steps 1-4, then restoring the checkpoint's RNG states" in out
    for step in (6, 8):
        assert same(weights(tmp_path / "whole" / f"step_{step}"), weights(tmp_path / "split" / f"step_{step}")), step

    # without the option: Eole's checkpoints key for key, and its train_from restarts the corpus
    train("stock", 4, False)
    assert set(torch.load(tmp_path / "stock" / "step_4" / "optimizer.pt", weights_only=True)) == STOCK_KEYS
    assert "xl_exact_resume" not in json.loads((tmp_path / "stock" / "config.json").read_text())["training"]
    assert same(weights(tmp_path / "stock" / "step_4"), weights(tmp_path / "split" / "step_4"))  # the same 4 steps
    train("stock", 8, False, train_from=tmp_path / "stock" / "step_4")
    assert not same(weights(tmp_path / "whole" / "step_8"), weights(tmp_path / "stock" / "step_8"))


def test_a_run_with_the_cpu_options_resumes_exactly_too(tmp_path):
    """The pipeline's options together (onmt_xl.experiments.eole_demo.EOLE_RUN_OPTIONS): the fast dropout masks draw
    from torch's CPU generator, whose state the checkpoint restores, and the fused Adam's state is Adam's."""
    from onmt_xl.experiments.eole_demo import EOLE_RUN_OPTIONS

    e2e_files(tmp_path, CONFIG.replace("{steps}", "6").replace("{extra}", ""))
    eole = [sys.executable, "-m", "onmt_xl.eole"]
    run_eole(eole, "build_vocab", "-config", tmp_path / "vocab.yaml", cwd=tmp_path)
    options = "".join(f"  {k}: {str(v).lower()}\n" for k, v in EOLE_RUN_OPTIONS.items())

    def train(name, steps, train_from=None):
        extra = options + (f"  train_from: {train_from}\n" if train_from else "")
        cfg = CONFIG.replace("{steps}", str(steps)).replace("{extra}", extra).replace("{wd}/model", "{wd}/" + name)
        path = tmp_path / f"{name}_{steps}.yaml"
        path.write_text(cfg.format(wd=tmp_path, pre=tmp_path / "pre.xlp", n_sample=0))
        proc = run_eole(eole, "train", "-config", path, cwd=tmp_path)
        return proc.stdout + proc.stderr

    assert "training.xl_cpu_kernels fast: fast dropout masks" in train("whole", 8)
    train("split", 4)
    out = train("split", 8, train_from=tmp_path / "split" / "step_4")
    assert "xl_exact_resume: skipping the batches of steps 1-4" in out
    for step in (6, 8):
        assert same(weights(tmp_path / "whole" / f"step_{step}"), weights(tmp_path / "split" / f"step_{step}")), step
