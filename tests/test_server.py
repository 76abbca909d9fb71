"""The stock REST server (``onmt_server``) serving XL models, through real HTTP requests on the loopback."""

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from onmt_xl.experiments.configs import config
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer

TINY = dict(
    enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32,
    train_steps=4, valid_steps=4, save_checkpoint_steps=4, report_every=2, batch_size=512,
    valid_batch_size=512, bucket_size=256, warmup_steps=2, xl_heads=1, num_workers=0,
)
XL, MISSING_TRANSFORM, MISSING_PREORDERER, STOCK = 100, 101, 102, 103


def stock_commands(wd: Path, commands) -> None:
    """Run stock OpenNMT commands (``(name, args)``, e.g. ``("onmt_train", [...])``) one after the other in one
    subprocess: their own ``main()``, with one start-up (torch, OpenNMT) for all of them."""
    script = "import importlib, sys\n" + "".join(
        f"sys.argv = {[name, *map(str, args)]!r}; importlib.import_module('onmt.bin.{name[5:]}').main()\n"
        for name, args in commands)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=run_env(), cwd=wd)
    if proc.returncode != 0:
        raise AssertionError(f"{commands} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def write_config(wd: Path, system: str) -> Path:
    path = wd / f"{system}.yaml"
    path.write_text(yaml.safe_dump(config(system, str(wd), TINY)))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(argv, log_path: Path, health_url: str, cwd: Path, env=None, seconds: float = 180):
    """A server process started from ``argv`` (its output in ``log_path``), yielded once ``health_url`` answers 200;
    stopped on exit. Fails with the log's end if it exits or does not answer within ``seconds``."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                env=env or run_env())
        try:
            deadline = time.monotonic() + seconds
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"{argv[0]} exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(health_url, timeout=5) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError):
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(f"{argv[0]} did not answer:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.5)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def post(url: str, payload):
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    wd = tmp_path_factory.mktemp("server")
    data = wd / "data"
    data.mkdir()
    corpus = tiny_corpus(data, n=120)
    for ext in ("src", "tgt"):
        lines = (data / f"train.{ext}").read_text().splitlines()
        (data / f"valid.{ext}").write_text("\n".join(lines[:10]) + "\n")
    preorderer = tiny_preorderer(wd, corpus).rename(wd / "preorderer.xlp")
    sentences = (data / "valid.src").read_text().splitlines()[:4]
    (wd / "req.src").write_text("\n".join(sentences) + "\n")
    xl_cfg, stock_cfg = write_config(wd, "combination"), write_config(wd, "baseline")
    xl_model, stock_model = wd / "models" / "combination_step_4.pt", wd / "models" / "baseline_step_4.pt"
    translate = ["-src", wd / "req.src", "-beam_size", "2"]
    stock_commands(wd, [
        ("onmt_build_vocab", ["-config", xl_cfg, "-n_sample", "-1"]),
        ("onmt_train", ["-config", xl_cfg]),
        ("onmt_train", ["-config", stock_cfg]),
        ("onmt_translate", ["-model", xl_model, *translate, "-output", wd / "xl.hyp",
                            "-transforms", "xl_position", "-xl_preorderer", preorderer]),
        ("onmt_translate", ["-model", stock_model, *translate, "-output", wd / "stock.hyp"]),
    ])
    xl_opt = {"beam_size": 2, "transforms": ["xl_position"], "xl_preorderer": str(preorderer)}
    conf = {"models_root": str(wd), "models": [
        {"id": XL, "model": str(xl_model.relative_to(wd)), "load": True, "opt": xl_opt},
        {"id": MISSING_TRANSFORM, "model": str(xl_model), "load": True, "opt": {"beam_size": 2}},
        {"id": MISSING_PREORDERER, "model": str(xl_model), "load": True,
         "opt": {"beam_size": 2, "transforms": ["xl_position"]}},
        {"id": STOCK, "model": str(stock_model), "load": True, "opt": {"beam_size": 2}},
    ]}
    (wd / "conf.json").write_text(json.dumps(conf))
    port = free_port()
    root = f"http://127.0.0.1:{port}/translator"
    argv = [stock_cli("onmt_server"), "--ip", "127.0.0.1", "--port", port, "--url_root", "/translator",
            "--model_config", wd / "conf.json"]
    with running_server(argv, wd / "server.log", f"{root}/health", wd, seconds=90):
        yield {"root": root, "sentences": sentences, "xl.hyp": (wd / "xl.hyp").read_text().splitlines(),
               "stock.hyp": (wd / "stock.hyp").read_text().splitlines()}


def translate(served, model_id: int, sentences):
    status, out = post(f"{served['root']}/translate", [{"src": s, "id": model_id} for s in sentences])
    assert status == 200
    return out


def test_xl_model_answers_like_onmt_translate_with_the_transform(served):
    out = translate(served, XL, served["sentences"])
    assert [r["tgt"] for r in out[0]] == served["xl.hyp"]  # onmt_translate -transforms xl_position
    assert [r["src"] for r in out[0]] == served["sentences"]


def test_non_xl_model_keeps_working(served):
    out = translate(served, STOCK, served["sentences"])
    assert [r["tgt"] for r in out[0]] == served["stock.hyp"]


def test_xl_model_without_the_transform_says_what_to_add(served):
    for _ in range(2):  # the server unloads the model after an error; the reloaded one says the same
        out = translate(served, MISSING_TRANSFORM, served["sentences"][:1])
        assert out["status"] == "error"
        assert '"transforms": ["xl_position"]' in out["error"] and '"xl_preorderer"' in out["error"]
        assert "Traceback" not in out["error"]


def test_xl_model_without_a_preorderer_says_what_to_add(served):
    out = translate(served, MISSING_PREORDERER, served["sentences"][:1])
    assert out["status"] == "error"
    assert 'add "xl_preorderer"' in out["error"] and "Traceback" not in out["error"]
    assert translate(served, XL, served["sentences"][:1])[0][0]["tgt"]  # the other models still serve


def test_server_argv_lists_give_one_argument_per_item():
    from onmt_xl.opennmt.seams.server import server_argv

    assert server_argv({"models": ["a.pt"], "transforms": ["sentencepiece", "xl_position"], "beam_size": 2,
                        "replace_unk": True}) == [
        "-model", "a.pt", "-transforms", "sentencepiece", "xl_position", "-beam_size", "2", "-replace_unk"]
