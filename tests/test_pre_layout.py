"""A checkpoint, a config and a preorderer written before the package was laid out as core / opennmt / eole /
experiments (issue 79) still resume training and translate, to the same scores.

``tests/data/pre_layout/`` was written by its ``make.py`` at commit c1b496f: a tiny Combination model
(``-xl_exact_resume``) trained 8 steps; its step-4 checkpoint (without OpenNMT's absolute-PE buffers), the
``config.yaml`` it trained with (relative paths: it runs in a copy of the folder), its ``preorderer.xlp``, and the
``GOLD SCORE`` lines of ``onmt_translate -verbose`` on the test set for the step-4 and the step-8 models.
"""

import json
import pickle
import re
import shutil
import subprocess
from types import SimpleNamespace
from pathlib import Path

import pytest
import torch

from tests.conftest import run_env
from tests.helpers import stock_cli
from tests.test_pre_move import with_pe_buffers

DATA = Path(__file__).parent / "data" / "pre_layout"
EXPECTED = json.loads((DATA / "gold_scores.json").read_text())


def _run(cwd, name, *args):
    proc = subprocess.run([stock_cli(name), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**run_env(), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _gold_scores(cwd, model):
    log = _run(cwd, "onmt_translate", "-model", model, "-src", "test.src", "-tgt", "test.tgt", "-output", "hyp.txt",
               "-beam_size", "3", "-seed", "1", "-verbose", "-transforms", "xl_position", "-xl_preorderer",
               "preorderer.xlp")
    return [float(m) for m in re.findall(r"GOLD SCORE: (-?[0-9.]+)", log)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("pre_layout")
    shutil.copytree(DATA, wd, dirs_exist_ok=True)
    with_pe_buffers(DATA / "model_step_4.pt", wd / "model_step_4.pt")
    return wd


def test_the_old_checkpoint_translates_to_the_same_scores(workdir):
    assert _gold_scores(workdir, "model_step_4.pt") == pytest.approx(EXPECTED["4"], abs=2e-3)
    assert (workdir / "hyp.txt").read_text() == (DATA / "step4.hyp").read_text()


def test_the_old_checkpoint_and_config_resume_training_exactly(workdir):
    log = _run(workdir, "onmt_train", "-config", "config.yaml", "-train_from", "model_step_4.pt")
    assert "-xl_exact_resume: skipping the 4 batches of steps 1-4" in log
    scores = _gold_scores(workdir, "models/m_step_8.pt")
    assert scores != pytest.approx(EXPECTED["4"], abs=1.0)  # it trained on
    assert scores == pytest.approx(EXPECTED["8"], abs=2e-3)  # as the uninterrupted run did before the move
    assert (workdir / "hyp.txt").read_text() == (DATA / "step8.hyp").read_text()


class _Recording(pickle.Unpickler):
    """An unpickler that notes every ``module.name`` a pickle refers to (in :data:`FOUND`)."""

    def find_class(self, module, name):
        FOUND.add(f"{module}.{name}")
        return super().find_class(module, name)


FOUND = set()
_RECORDING = SimpleNamespace(Unpickler=_Recording, load=pickle.load, __name__="pickle")


def test_checkpoints_pickle_nothing_of_onmt_xl(workdir):
    """So no module of ours needs to stay at its old path for a checkpoint to load (the ``.xlp`` file is read with
    ``allow_pickle=False``)."""
    for path in (DATA / "model_step_4.pt", workdir / "models" / "m_step_8.pt"):
        if not path.exists():
            pytest.skip("needs the resumed run of the test above")
        FOUND.clear()
        torch.load(path, map_location="cpu", weights_only=False, pickle_module=_RECORDING)
        assert "argparse.Namespace" in FOUND  # the recorder saw the checkpoint's objects
        assert not [g for g in FOUND if g.startswith("onmt_xl")], sorted(FOUND)


def test_every_entry_point_of_the_startup_hook_still_imports():
    """``onmt_xl_hook`` is installed into site-packages, not edited by a checkout's update: what it imports from
    ``onmt_xl`` (``onmt_xl.register``, ``onmt_xl.errors.quiet_onmt_warnings``, ``onmt_xl.eole.hook.install``) stays
    at its path; ``onmt_xl.errors`` is :mod:`onmt_xl.core.errors` itself, not a copy."""
    import ast
    import importlib

    import onmt_xl.core.errors
    import onmt_xl.errors

    hook = Path(__file__).resolve().parents[1] / "onmt_xl_hook.py"
    entries = [(node.module, alias.name) for node in ast.walk(ast.parse(hook.read_text(encoding="utf-8")))
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("onmt_xl")
               for alias in node.names]
    assert {m for m, _ in entries} == {"onmt_xl", "onmt_xl.errors", "onmt_xl.eole.hook"}
    for module, name in entries:
        assert callable(getattr(importlib.import_module(module), name)), f"{module}.{name}"
    assert onmt_xl.errors is onmt_xl.core.errors
