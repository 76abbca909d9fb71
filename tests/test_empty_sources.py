"""An empty source line in the validation or test pairs of ``onmt-xl pipeline``: translated as an empty line at its
place (so every later line still pairs with its reference) and scored, through OpenNMT-py (its ``onmt_translate``
with our seams) and Eole (:meth:`onmt_xl.experiments.eole_demo.EoleDemo.translate`, since stock ``eole predict``
drops such a line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from onmt_xl.experiments.eole_demo import EoleDemo
from tests.conftest import run_env
from tests.test_raw_text import run_pipeline, write_raw_corpus

#: the 0-based lines emptied: the first, one of whitespace only, the last (test); one in the validation pairs
TEST_EMPTY, VALID_EMPTY = (0, 5, 29), (2,)


def corpus_with_empty_sources(out: Path) -> dict:
    files = write_raw_corpus(out, (("train", 300), ("valid", 30), ("test", 30)))
    for split, rows in (("test", TEST_EMPTY), ("valid", VALID_EMPTY)):
        path = files[f"{split}_src"]
        lines = path.read_text(encoding="utf-8").splitlines()
        for i in rows:
            lines[i] = " \t" if i == 5 else ""
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return files


def check_in_place(hyp: Path, src: Path, alone: list, stdout: str, results: dict) -> None:
    """``hyp`` (the pipeline's test translation of ``src``) has an empty line at each empty source line and, at the
    others, ``alone``: the same model's translation of the non-empty lines by themselves."""
    got = hyp.read_text(encoding="utf-8").splitlines()
    lines = src.read_text(encoding="utf-8").splitlines()
    assert len(got) == len(lines) == 30
    assert [got[i] for i in TEST_EMPTY] == ["", "", ""]
    assert [h for h, s in zip(got, lines) if s.split()] == alone
    assert (f"warning: {src}, line 1: empty source line and 2 more (3 of 30 test pairs); each is translated as an "
            "empty line at its place and scored against its reference") in stdout
    assert "valid.src, line 3: empty source line; it is translated as an empty line" in stdout
    assert "Traceback" not in stdout and "combination  BLEU" in stdout
    assert "p_bootstrap" in results["jobs"]["combination"]["variants"]["test"]


def kept_sources(files: dict, path: Path) -> Path:
    lines = files["test_src"].read_text(encoding="utf-8").splitlines()
    path.write_text("".join(line + "\n" for line in lines if line.split()), encoding="utf-8")
    return path


def translated(args: list, out: Path) -> list:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_text(encoding="utf-8").splitlines()


def test_pipeline_translates_empty_sources_in_place_opennmt(tmp_path):
    files = corpus_with_empty_sources(tmp_path / "corpus")
    wd = tmp_path / "run"
    stdout = run_pipeline(files, wd, "--train-steps", "6", "--systems", "baseline,combination", "--if-monotone",
                          "train")
    kept = kept_sources(files, tmp_path / "kept.src")
    results = json.loads((wd / "results.json").read_text())
    for system in ("baseline", "combination"):  # stock and ours
        out = tmp_path / f"{system}.alone"
        alone = translated(["onmt_translate", "-config", wd / "jobs" / system / "translate.yaml", "-src", kept,
                            "-output", out], out)
        check_in_place(wd / "jobs" / system / "hyp.test", files["test_src"], alone, stdout, results)


@pytest.mark.needs_eole
def test_pipeline_translates_empty_sources_in_place_eole(tmp_path):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    files = corpus_with_empty_sources(tmp_path / "corpus")
    wd = tmp_path / "run"
    stdout = run_pipeline(files, wd, "--framework", "eole", "--train-steps", "40", "--systems",
                          "baseline,combination", "--if-monotone", "train")
    kept = kept_sources(files, tmp_path / "kept.src")
    results = json.loads((wd / "eole" / "results.json").read_text())
    for system in ("baseline", "combination"):  # stock eole predict drops an empty line; ours writes one
        out = tmp_path / f"{system}.alone"
        alone = translated([sys.executable, "-m", "onmt_xl.eole", "predict", "-model_path",
                            wd / "eole" / "models" / system, "-src", kept, "-output", out, "-beam_size", "1",
                            "-batch_size", "64", "-batch_type", "sents", "-seed", "1234"], out)
        assert any(alone)  # 40 steps: the tiny model says something
        check_in_place(wd / "eole" / "hyp" / f"{system}.test", files["test_src"], alone, stdout, results)


def fake_demo(calls: list):
    """What :meth:`EoleDemo.translate` uses of the demo: ``_predict``, here upper-casing each line it is given."""
    def predict(system, model, src, out, log):
        lines = src.read_text(encoding="utf-8").splitlines()
        calls.append(lines)
        assert all(l.split() for l in lines)  # eole predict never sees an empty line
        out.write_text("".join(l.upper() + "\n" for l in lines), encoding="utf-8")
        return 1.5

    return SimpleNamespace(_predict=predict)


@pytest.mark.parametrize("lines", [["a b", "", "c", "  ", "d"], ["", "x"], ["x", ""], ["a", "b"]])
def test_eole_translate_puts_an_empty_line_at_each_empty_source(tmp_path, lines):
    src, out = tmp_path / "src", tmp_path / "hyp.partial"
    src.write_text("".join(l + "\n" for l in lines), encoding="utf-8")
    calls: list = []
    assert EoleDemo.translate(fake_demo(calls), "combination", tmp_path / "m", src, out, tmp_path / "log") == 1.5
    assert out.read_text(encoding="utf-8").splitlines() == [l.upper() if l.split() else "" for l in lines]
    assert calls == [[l for l in lines if l.split()]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.partial", "src"]  # nothing else left behind


def test_eole_translate_of_empty_lines_only_runs_no_prediction(tmp_path):
    src, out = tmp_path / "src", tmp_path / "hyp"
    src.write_text("\n \n\n", encoding="utf-8")
    calls: list = []
    assert EoleDemo.translate(fake_demo(calls), "baseline", tmp_path / "m", src, out, tmp_path / "log") == 0.0
    assert calls == [] and out.read_text(encoding="utf-8") == "\n\n\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp", "src"]
