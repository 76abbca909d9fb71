"""OpenNMT-py 3.5.1's child processes get onmt_xl (issue 39, item 4): data workers (``-num_workers``) and the ranks
of ``-world_size`` > 1, both started with ``spawn``. The ranks' part runs on the CPU with the ``gloo`` backend: a real
``onmt_train -world_size 2 -gpu_ranks 0 1`` needs two GPUs in 3.5.1 (rank i calls ``torch.cuda.set_device(i)``)."""

import multiprocessing
import pickle
import re
import socket
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from onmt_xl.experiments.configs import config
from tests import multiprocess_probe as probe
from tests.conftest import REPO, run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer

TINY = dict(
    enc_layers=1, dec_layers=1, heads=4, hidden_size=32, word_vec_size=32, transformer_ff=64,
    train_steps=4, valid_steps=1000, save_checkpoint_steps=1000, report_every=2, batch_size=512,
    valid_batch_size=512, bucket_size=256, warmup_steps=4, xl_heads=2,
)
CHILD_TIMEOUT = 240  # s: a child imports torch and OpenNMT on a loaded 2-vCPU machine

# a main module that registers onmt_xl by hand, inside its __main__ guard: a spawned child (which re-imports
# the main module as __mp_main__) gets nothing from it, as with any program that registers in main()
HOOKLESS_MAIN = """import sys
if __name__ == "__main__":
    import onmt_xl
    onmt_xl.register()
    from onmt.bin.train import main
    sys.argv = ["onmt_train", "-config", sys.argv[1]]
    main()
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("mp")
    data = wd / "data"
    data.mkdir()
    corpus = tiny_corpus(data, n=200)
    for ext in ("src", "tgt"):
        lines = (data / f"train.{ext}").read_text().splitlines()
        (data / f"valid.{ext}").write_text("\n".join(lines[:20]) + "\n")
    tiny_preorderer(wd, corpus).rename(wd / "preorderer.xlp")
    cfg = write_config(wd, "combination")
    proc = subprocess.run([stock_cli("onmt_build_vocab"), "-config", str(cfg), "-n_sample", "-1"],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wd


def write_config(wd: Path, system: str, **extra) -> Path:
    cfg = config(system, str(wd), {**TINY, **extra})
    path = wd / f"{system}_{len(list(wd.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def train(cmd, env):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert re.search(rf"Step\s+{TINY['train_steps']}/", log), log[-3000:]
    assert "could not apply" not in log, log[-3000:]


@pytest.mark.parametrize("system", ["combination", "inxl"])
def test_data_workers_train_an_xl_system(workdir, system):
    """``-num_workers 2``: the transform and batching run in two spawned workers; an XL encoder raises when a batch
    reaches it without positions, so finishing the steps means every batch carried ``xl_pos``."""
    cfg = write_config(workdir, system, num_workers=2)
    train([stock_cli("onmt_train"), "-config", str(cfg)], run_env())


def test_data_workers_without_the_import_hook(workdir, tmp_path):
    """A program that registers onmt_xl by hand and switches the hook off: the spawned workers register when they
    unpickle the transform (else batching there drops ``xl_pos`` and the encoder raises)."""
    main = tmp_path / "train_by_hand.py"
    main.write_text(HOOKLESS_MAIN)
    cfg = write_config(workdir, "combination", num_workers=2)
    train([sys.executable, str(main), str(cfg)], {**run_env(), "ONMT_XL_DISABLE": "1"})


def child_result(ctx, target, *args):
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(queue, *args))
    proc.start()
    try:
        result = queue.get(timeout=CHILD_TIMEOUT)
    finally:
        proc.join(CHILD_TIMEOUT)
    assert proc.exitcode == 0, proc.exitcode
    return result


def assert_all_registered(info):
    assert info["encoders"] == sorted(probe.ENCODERS), info
    assert info["transforms"] == sorted(probe.TRANSFORMS), info
    assert info["options"] == sorted(probe.OPTIONS), info
    assert info["tensorify_carries_xl_pos"], info


@pytest.fixture
def child_env(monkeypatch):
    """Children find this checkout first, as OpenNMT's children of ``onmt_train`` run from it do."""
    monkeypatch.setenv("PYTHONPATH", run_env()["PYTHONPATH"])
    monkeypatch.delenv("ONMT_XL_DISABLE", raising=False)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_child_has_encoders_transforms_and_options(child_env, method):
    """OpenNMT uses ``spawn`` (a fresh interpreter: the hook registers there); ``fork`` inherits the parent's."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    info = child_result(multiprocessing.get_context(method), probe.report_registry)
    assert_all_registered(info)
    if method == "spawn":
        assert Path(info["onmt_xl"]) == REPO / "onmt_xl"


def test_transform_in_a_worker_has_its_own_cache(child_env, workdir):
    """As a data worker does: unpickle the transform in a spawned child. The preorderer travels with it, positions
    are the parent's, the cache starts empty in the child and serves the second pass."""
    import onmt  # noqa: F401
    from onmt.transforms import AVAILABLE_TRANSFORMS

    opts = Namespace(xl_source="preorderer", xl_preorderer=str(workdir / "preorderer.xlp"), xl_noise=0.0,
                     xl_cache_size=1000, xl_align_path=None, data=None, transforms=["xl_position"], seed=-1)
    transform = AVAILABLE_TRANSFORMS["xl_position"](opts)
    transform.warm_up()
    sentences = (workdir / "data" / "train.src").read_text().splitlines()[:30]
    expected = [list(transform.preorderer.pos_xl(s.split())) for s in sentences]
    assert any(e != sorted(e) for e in expected)  # the fixture really reorders: the comparison can fail
    pickled = pickle.dumps(transform)
    info = child_result(multiprocessing.get_context("spawn"), probe.transform_in_child, pickled, sentences)
    assert info["first"] == expected and info["second"] == expected
    distinct = len(set(sentences))
    assert info["cache"] == [distinct, distinct]
    assert len(transform.cache) == 0  # the parent's own cache: untouched by the child's work
    assert_all_registered(info)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_world_size_two_ranks_on_gloo(child_env, workdir):
    """``-world_size 2 -gpu_ranks 0 1`` as ``onmt/bin/train.py`` starts it (spawn context, ``spawned_train``, its
    error queue, read here rather than by its ErrorHandler's signal), with ``-gpu_backend gloo`` and, as ``process_fn``, one training step per rank on the CPU:
    each rank registers, reads its own share of the corpus with positions, builds Combination and all-reduces."""
    import torch
    from onmt.bin.train import _get_parser
    from onmt.utils.distributed import spawned_train
    from onmt.utils.parse import ArgumentParser

    cfg = write_config(workdir, "combination")
    parser = _get_parser()
    opt = parser.parse_args(["-config", str(cfg), "-world_size", "2", "-gpu_ranks", "0", "1",
                             "-gpu_backend", "gloo", "-master_ip", "127.0.0.1", "-master_port", str(free_port())])
    ArgumentParser.validate_train_opts(opt)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    opt.save_data = str(workdir / "ranks")
    mp = torch.multiprocessing.get_context("spawn")
    error_queue = mp.SimpleQueue()
    procs = [mp.Process(target=spawned_train, args=(probe.distributed_step, opt, i, error_queue), daemon=False)
             for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(CHILD_TIMEOUT)
    errors = []
    while not error_queue.empty():
        errors.append(error_queue.get())
    assert not errors, errors
    ranks = [yaml.safe_load(Path(f"{opt.save_data}.rank{i}.json").read_text()) for i in range(2)]
    assert [r["rank"] for r in ranks] == [0, 1] and {r["backend"] for r in ranks} == {"gloo"}
    for r in ranks:
        assert_all_registered(r)
        assert r["has_xl_pos"] and r["encoder"] == "CombinationXLTransformerEncoder", r
    assert ranks[0]["first_src_ids"] != ranks[1]["first_src_ids"]  # each rank its own lines
    assert ranks[0]["loss"] != ranks[1]["loss"]
    assert ranks[0]["grad_sum"] == pytest.approx(ranks[1]["grad_sum"], rel=1e-6)  # averaged over the ranks
