"""Bad and empty input lines in Eole runs with our components, handled as on the OpenNMT-py side (issue 77): a corpus
line that is not UTF-8 gives one line naming the file and the line (``eole build_vocab``, ``train``, ``predict``),
while a stock run keeps Eole's traceback; an empty source line gives an empty output line (``eole predict`` and the
engine behind ``eole serve``), and ``eole serve`` itself on the CPU, on the loopback. Skips without Eole."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("eole", reason="Eole is not installed (pip install eole==0.6.4; see tests/test_eole.py)")

from tests.test_eole import ENGINE, e2e_files, run_eole  # noqa: E402

MODULE = [sys.executable, "-m", "onmt_xl.eole"]
BAD_SRC_LINE, BAD_TEST_LINE = 5, 3  # 1-based


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny xl_combination model (6 steps) and, under ``bad/``, copies of its corpus with one latin-1 line."""
    wd = tmp_path_factory.mktemp("eole_input")
    e2e_files(wd)
    run_eole(MODULE, "build_vocab", "-config", wd / "vocab.yaml", cwd=wd)
    run_eole(MODULE, "train", "-config", wd / "train.yaml", cwd=wd)
    bad = wd / "bad"
    bad.mkdir()
    for name, line in (("train.src", BAD_SRC_LINE), ("test.src", BAD_TEST_LINE)):
        lines = (wd / name).read_bytes().split(b"\n")
        lines[line - 1] += " café".encode("latin-1")
        (bad / name).write_bytes(b"\n".join(lines))
    return wd


def _with_bad_corpus(wd: Path, name: str) -> Path:
    """``name`` (vocab.yaml or train.yaml) reading ``bad/train.src``; vocabularies written under ``bad/``."""
    text = (wd / name).read_text()
    text = text.replace(f"{wd}/train.src", f"{wd}/bad/train.src")
    if name == "vocab.yaml":
        text = text.replace(f"{wd}/vocab.", f"{wd}/bad/vocab.")
    path = wd / "bad" / name
    path.write_text(text)
    return path


def assert_names_the_line(proc, command: str, path, line: int):
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "Traceback" not in out and "UnicodeDecodeError" not in out, out[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"eole {command}: error: ")]
    assert len(errors) == 1, out[-3000:]
    assert errors[0].startswith(f"eole {command}: error: {path}, line {line}: not UTF-8 text ("), errors[0]
    assert "iconv -f latin1 -t utf-8" in errors[0], errors[0]


def test_a_line_not_utf8_names_its_file_and_line(trained):
    wd = trained
    for command, config in (("build_vocab", "vocab.yaml"), ("train", "train.yaml")):
        proc = run_eole(MODULE, command, "-config", _with_bad_corpus(wd, config), cwd=wd, ok=False)
        assert_names_the_line(proc, command, wd / "bad" / "train.src", BAD_SRC_LINE)
    proc = run_eole(MODULE, "predict", "-model_path", wd / "model", "-src", "bad/test.src", "-output",
                    wd / "bad" / "hyp.txt", cwd=wd, ok=False)
    assert_names_the_line(proc, "predict", "bad/test.src", BAD_TEST_LINE)


def test_a_stock_run_keeps_eoles_traceback_for_a_line_not_utf8(trained):
    """Stock stays stock: a config that names nothing of ours fails as Eole fails."""
    wd = trained
    config = wd / "bad" / "stock_vocab.yaml"
    config.write_text(f"src_vocab: {wd}/bad/stock.src\ntgt_vocab: {wd}/bad/stock.tgt\nn_sample: -1\noverwrite: true\n"
                      f"data: {{corpus_1: {{path_src: {wd}/bad/train.src, path_tgt: {wd}/train.tgt}}}}\n")
    proc = run_eole(MODULE, "build_vocab", "-config", config, cwd=wd, ok=False)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "UnicodeDecodeError" in proc.stderr
    assert "eole build_vocab: error:" not in proc.stderr


def test_an_empty_line_gives_an_empty_line(trained):
    """``eole predict`` (n_best 2) writes two empty lines for each empty source line, at its place, and the same
    translations as without them for the others; the engine behind ``eole serve`` answers "" for ""."""
    wd = trained
    lines = (wd / "test.src").read_text().splitlines()
    with_empty = [lines[0], "", lines[1], "", "", *lines[2:], ""]
    (wd / "empty.src").write_text("\n".join(with_empty) + "\n")
    for src, out in (("test.src", "hyp_full.txt"), ("empty.src", "hyp_empty.txt")):
        run_eole(MODULE, "predict", "-model_path", wd / "model", "-src", wd / src, "-output", wd / out,
                 "-beam_size", "2", "-n_best", "2", cwd=wd)
    full = (wd / "hyp_full.txt").read_text().splitlines()
    got = (wd / "hyp_empty.txt").read_text().splitlines()
    assert len(got) == 2 * len(with_empty)
    pairs = [got[2 * i:2 * i + 2] for i in range(len(with_empty))]
    assert [p for src, p in zip(with_empty, pairs) if not src] == [["", ""]] * 4
    assert [h for src, p in zip(with_empty, pairs) if src for h in p] == full
    assert all(full)

    from tests.conftest import run_env

    proc = subprocess.run([sys.executable, "-c", ENGINE, str(wd / "model"), str(wd / "empty.src")], cwd=wd,
                          env={**run_env(), "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    served = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [s for src, s in zip(with_empty, served) if not src] == [""] * 4 and all(
        s for src, s in zip(with_empty, served) if src)


@pytest.mark.skipif(any(find_spec(m) is None for m in ("fastapi", "uvicorn")),
                    reason="eole serve needs fastapi and uvicorn")
def test_eole_serve_answers_on_the_cpu(trained):
    """``eole serve`` (which asks for GPU 0 and falls back to the CPU where torch sees no GPU) on 127.0.0.1 with the
    tiny XL model: one request answers what ``eole predict`` writes, and "" for an empty line."""
    from tests.conftest import run_env
    from tests.test_server import free_port, post, running_server

    wd = trained
    sentences = (wd / "test.src").read_text().splitlines()[:2]
    (wd / "serve.src").write_text("\n".join(sentences) + "\n")
    run_eole(MODULE, "predict", "-model_path", wd / "model", "-src", wd / "serve.src", "-output", wd / "serve.hyp",
             "-beam_size", "2", cwd=wd)
    (wd / "serve.yaml").write_text(f"models_root: {wd}\nmodels:\n  - id: xl\n    path: model\n    preload: true\n"
                                   "    config: {beam_size: 2}\n")
    port = free_port()
    argv = [*MODULE, "serve", "-c", wd / "serve.yaml", "--host", "127.0.0.1", "--port", port]
    with running_server(argv, wd / "serve.log", f"http://127.0.0.1:{port}/health", wd,
                        env={**run_env(), "OMP_NUM_THREADS": "1"}):
        status, out = post(f"http://127.0.0.1:{port}/infer", {"model": "xl", "inputs": [*sentences, ""],
                                                               "beam_size": 2})  # else Eole's default, 5
    assert status == 200
    assert [p[0] for p in out["predictions"]] == [*(wd / "serve.hyp").read_text().splitlines(), ""]
    assert "device=cpu" in (wd / "serve.log").read_text()


def test_only_predictions_with_our_components_blank_empty_lines():
    from eole.encoders.transformer import TransformerEncoder

    import onmt_xl.eole
    from onmt_xl.eole.encoders import XLTransformerEncoder
    from onmt_xl.eole.seams import blank_empty_sources, predicts_with_ours

    onmt_xl.eole.register()
    stock = SimpleNamespace(encoder=object.__new__(TransformerEncoder), decoder=None)
    ours = SimpleNamespace(encoder=object.__new__(XLTransformerEncoder), decoder=None)
    assert not predicts_with_ours(stock, {"sentencepiece": None}) and not predicts_with_ours(stock, None)
    assert predicts_with_ours(ours, None) and predicts_with_ours(stock, {"xl_prereorder": None})
    out = blank_empty_sources({"predictions": [["a"], ["b"]], "scores": [[-1.0, -2.0], [-3.0, -4.0]]}, [1])
    assert out == {"predictions": [["a"], []], "scores": [[-1.0, -2.0], [0.0, 0.0]]}


def test_what_names_our_components(tmp_path):
    from onmt_xl.eole.undecodable import names_ours

    config = tmp_path / "c.yaml"
    config.write_text("data: {c: {path_src: xl_data/a.src, transforms: [sentencepiece]}}\nmodel: {heads: 2}\n")
    assert not names_ours(["eole", "train", "-config", str(config)])  # a path is not a name
    assert names_ours(["eole", "train", "-config", str(config), "--transforms", "xl_position"])
    config.write_text("model: {encoder: {encoder_type: xl_inxl}}\n")
    assert names_ours(["eole", "train", "--config", str(config)])
    (tmp_path / "config.json").write_text(json.dumps({"transforms": ["xl_position"]}))
    assert names_ours(["eole", "predict", "-model_path", str(tmp_path), "-src", "a.txt"])
