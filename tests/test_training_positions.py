"""``onmt-xl pipeline --training-positions crossfit``: the XL systems (and prereorder) train on cross-fitted positions
of the tokens they see (``tok/train.src.xlpos`` on raw text, read by the stock ``xl_position`` transform without
``onmt_tokenize`` before it), validation and translation keep the preorderer; through OpenNMT-py and Eole; a run
asking for the other positions is refused in words of the option."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_env
from tests.test_raw_text import write_raw_corpus


def pipeline(files: dict, wd: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "pipeline", "--workdir", str(wd),
           "--train-src", files["train_src"], "--train-tgt", files["train_tgt"],
           "--valid-src", files["valid_src"], "--valid-tgt", files["valid_tgt"],
           "--test-src", files["test_src"], "--test-ref", files["test_tgt"], "--preorder-iterations", "2",
           "--beam-size", "1", "--tokenize", "bpe", "--subword-size", "200", *extra]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=run_env())


def positions_lines(logs) -> list:
    return sorted({line.split(" INFO] ", 1)[-1] for log in logs for line in log.read_text().splitlines()
                   if "takes pos_XL" in line})


def check_positions_file(wd: Path) -> list:
    """The cross-fitted positions index the BPE tokens of ``tok/train.src``, one row per line."""
    from onmt_xl.core.reorder.positions_file import read_positions

    header, rows = read_positions(str(wd / "tok" / "train.src.xlpos"))
    tokens = [line.split() for line in (wd / "tok" / "train.src").read_text(encoding="utf-8").splitlines()]
    assert header.made["method"] == "crossfit" and header.made["folds"] == 5
    assert [len(r) for r in rows] == [len(t) for t in tokens]
    assert any("\uffed" in t for line in tokens for t in line)  # sub-word pieces, joiner-annotated
    figures = json.loads((wd / "crossfit.json").read_text())
    assert figures["sample"]["full_preorderer"]["tau"] >= figures["sample"]["crossfit"]["tau"] - 0.05
    return rows


def test_pipeline_trains_on_crossfitted_positions_opennmt(tmp_path):
    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    out = pipeline(files, wd, "--train-steps", "4", "--systems", "baseline,combination,prereorder",
                   "--training-positions", "crossfit")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "cross-fitting the training positions: 5 preorderers on 600 pairs" in out.stdout
    assert "cross-fitted positions: Kendall tau" in out.stdout
    summary = out.stdout.split("results: ", 1)[1]
    assert re.search(r"\ntraining positions: cross-fitted, 5 folds: Kendall tau 0\.\d{4} on the 600 training pairs; "
                     r"on the first 600 the preorderer, which trained on them, scores 0\.\d{4} \(", summary)
    check_positions_file(wd)
    for system, transform in (("combination", "xl_position"), ("prereorder", "xl_prereorder")):
        cfg = yaml.safe_load((wd / "jobs" / system / "config.yaml").read_text())
        assert cfg["xl_positions_suffix"] == ".xlpos"
        assert cfg["data"]["train"]["path_src"] == str(wd / "tok" / "train.src")
        assert cfg["data"]["train"]["transforms"] == [transform]
        assert cfg["data"]["valid"]["transforms"] == ["onmt_tokenize", transform]
        assert positions_lines([wd / "jobs" / system / "train.log"]) == [
            f"{transform}: corpus 'train' takes pos_XL from {wd / 'tok' / 'train.src.xlpos'} (cross-fitted, 5 folds)",
            f"{transform}: corpus 'valid' takes pos_XL from the preorderer {wd / 'preorderer.xlp'} "
            f"(no {wd / 'data' / 'valid.src.xlpos'})"]
    base = yaml.safe_load((wd / "jobs" / "baseline" / "config.yaml").read_text())
    assert base["data"]["train"]["path_src"] == str(wd / "data" / "train.src") and "xl_positions_suffix" not in base
    # the same tokens either way: the vocabularies onmt_tokenize made of the raw files hold every training token
    vocab = {line.split("\t")[0] for line in (wd / "vocab.src").read_text(encoding="utf-8").splitlines()}
    assert {t for line in (wd / "tok" / "train.src").read_text(encoding="utf-8").splitlines() for t in line.split()} \
        <= vocab
    # the other positions on the same work directory: refused in the option's words, before any work
    again = pipeline(files, wd, "--train-steps", "4", "--systems", "baseline,combination")
    assert again.returncode == 2
    assert ("differs from what job combination needs now in its training positions (it trained with "
            "--training-positions crossfit, this run asks for preorderer: pass --training-positions crossfit to go "
            "on with it)") in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.needs_eole
def test_pipeline_trains_on_crossfitted_positions_eole(tmp_path):
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    out = pipeline(files, wd, "--framework", "eole", "--train-steps", "4", "--systems", "baseline,combination",
                   "--training-positions", "crossfit")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    check_positions_file(wd)
    assert "\ntraining positions: cross-fitted, 5 folds: Kendall tau" in out.stdout.split("results: ", 1)[1]
    cfg = yaml.safe_load((wd / "eole" / "combination.yaml").read_text())
    assert cfg["transforms_configs"]["xl_position"]["xl_positions_suffix"] == ".xlpos"
    assert cfg["data"]["train"] == {"path_src": str(wd / "tok" / "train.src"),
                                    "path_tgt": str(wd / "tok" / "train.tgt"), "transforms": ["xl_position"]}
    lines = positions_lines((wd / "eole" / "logs").iterdir())
    assert (f"xl_position: corpus 'train' takes pos_XL from {wd / 'tok' / 'train.src.xlpos'} (cross-fitted, 5 folds)"
            in lines)
    assert any(line.startswith(f"xl_position: the input {wd / 'data' / 'test.src'} takes pos_XL from the preorderer")
               for line in lines)  # translation: the preorderer trained on everything
    again = pipeline(files, wd, "--framework", "eole", "--train-steps", "4", "--systems", "baseline,combination")
    assert again.returncode == 2 and "it trained with --training-positions crossfit" in again.stderr


def test_pipeline_to_the_plateau_trains_on_crossfitted_positions(tmp_path):
    """Without --train-steps (rounds to the plateau) too: every round's job keeps the option."""
    files = write_raw_corpus(tmp_path / "corpus")
    wd = tmp_path / "run"
    out = pipeline(files, wd, "--max-steps", "100", "--systems", "combination", "--training-positions", "crossfit",
                   "--gpu", "no", "--if-monotone", "train")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "training stopped by the cap" in out.stdout
    assert "\ntraining positions: cross-fitted, 5 folds: Kendall tau" in out.stdout.split("results: ", 1)[1]
    cfg = yaml.safe_load((wd / "jobs" / "combination" / "config.yaml").read_text())
    assert cfg["xl_positions_suffix"] == ".xlpos" and cfg["data"]["train"]["path_src"] == str(wd / "tok" / "train.src")
    check_positions_file(wd)
