"""Cross-fitted training positions (issue 76): the fold rule, the ``.xlpos`` file and its checks, the
``xl_position`` transform reading a corpus' positions by line (``-xl_positions_suffix``) in OpenNMT-py, and
``onmt-xl positions`` then ``onmt_train`` end to end. Eole's half is in tests/test_eole_transforms.py."""

import json
import pickle
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

import onmt_xl
from onmt_xl.core.errors import XLInputError, XLUsageError
from onmt_xl.core.reorder.crossfit import crossfit_positions, fold_assignment, fold_of
from onmt_xl.core.reorder.positions_file import (
    PositionsHeader, check_made_for, read_positions, scan_corpus, write_positions,
)
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_corpus, tiny_preorderer

onmt_xl.register()
from onmt_xl.opennmt.transforms.xl_position import XLPositionTransform  # noqa: E402

SRC = ["a b c", "d e", "a b c", "f", "", "g h i j", "k l", "m n o"]


# --- the fold rule -------------------------------------------------------------------------------------------------

class StubModel:
    """A 'preorderer' that records what it trained on and what it is asked to parse."""

    def __init__(self, trained):
        self.trained = {" ".join(s) for s in trained}
        self.parsed = []

    def reorder_batch(self, batch):
        self.parsed.extend(" ".join(s) for s in batch)
        return [list(reversed(range(len(s)))) for s in batch]


def test_every_line_is_predicted_by_a_model_that_never_saw_it():
    src = [s.split() for s in SRC * 3]
    tgt = [["x"] * max(len(s), 1) for s in src]
    links = [[(i, i) for i in range(len(s))] for s in src]
    models = []

    def train(sentences, links_):
        models.append(StubModel(sentences))
        return models[-1]

    positions, figures = crossfit_positions(src, tgt, links, 3, train=train, progress=False)
    assert len(models) == 3
    fold = fold_assignment(src, 3)
    for f, model in enumerate(models):
        assert model.parsed, f
        assert not set(model.parsed) & model.trained  # no model parses a sentence it (or a duplicate) trained on
        assert set(model.parsed) == {" ".join(s) for s, g in zip(src, fold) if g == f and len(s) > 1}
        assert model.trained == {" ".join(s) for s, t, g in zip(src, tgt, fold) if g != f and s}
    for s, pos in zip(src, positions):
        assert pos == (list(reversed(range(len(s)))) if len(s) > 1 else list(range(len(s))))
    assert figures.folds == 3 and figures.lines == len(src) and sum(figures.fold_sizes) == len(src)


def test_the_fold_rule_is_the_documented_hash_and_duplicates_share_a_fold():
    import hashlib

    # several lines (one could match another rule by chance) and fold counts: modulo 5 (or 3) the byte order of the
    # 8 bytes cannot matter (256 is 1 modulo 5), modulo 4 or 7 it does
    for i in range(50):
        line = f"kare wa hon o yonda {i}"
        value = int.from_bytes(hashlib.sha256(line.encode()).digest()[:8], "big")
        assert [fold_of(line.split(), k) for k in (4, 5, 7)] == [value % 4, value % 5, value % 7]
    folds = fold_assignment([s.split() for s in SRC], 4)
    assert folds[0] == folds[2]  # the same source
    assert len(set(fold_assignment([[f"w{i}", "x"] for i in range(200)], 4))) == 4


def test_crossfit_needs_two_folds_and_something_to_train_on():
    src = [["a", "b"], ["a", "b"]]
    with pytest.raises(ValueError, match="at least 2 folds"):
        crossfit_positions(src, src, [[], []], 1, progress=False)
    with pytest.raises(ValueError, match="no sentence of two or more tokens to train on"):
        crossfit_positions(src, src, [[(0, 0)], [(0, 0)]], 2, train=StubModel, progress=False)


# --- the file ------------------------------------------------------------------------------------------------------

@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "train.src"
    path.write_text("".join(s + "\n" for s in SRC))
    return path


def rows_of(lines):
    return [list(reversed(range(len(s.split())))) for s in lines]


def write(path, corpus_path, rows=None, **made):
    scan = scan_corpus(str(corpus_path))
    header = PositionsHeader(Path(corpus_path).name, scan.lines, scan.sha256, made or {"method": "test"})
    write_positions(str(path), header, rows if rows is not None else rows_of(SRC))
    return path


def test_round_trip(tmp_path, corpus):
    path = write(tmp_path / "p.xlpos", corpus, folds=2, method="crossfit")
    header, rows = read_positions(str(path))
    assert rows == rows_of(SRC)
    assert header.lines == len(SRC) and header.made["folds"] == 2 and header.describe() == "cross-fitted, 2 folds"
    check_made_for(str(path), header, str(corpus), scan_corpus(str(corpus)), rows)


@pytest.mark.parametrize("name", ["onmt_xl.positions", "onmt_xl.core.positions"])
def test_files_of_either_format_name_read(tmp_path, corpus, name):
    """The header's format is ``onmt_xl.positions``; the files written while it named the module's new path
    (``onmt_xl.core.positions``) are the same format and read too."""
    path = write(tmp_path / "p.xlpos", corpus)
    text = path.read_text()
    assert text.startswith('{"format": "onmt_xl.positions", ')
    path.write_text(text.replace('"onmt_xl.positions"', f'"{name}"', 1))
    assert read_positions(str(path))[1] == rows_of(SRC)


@pytest.mark.parametrize("edit, line, problem", [
    (lambda t: "not json\n" + t.split("\n", 1)[1], 1, "not a positions file"),
    (lambda t: t.replace('"onmt_xl.positions"', '"other"', 1), 1, "not a positions file"),
    (lambda t: t.replace('"version": 1', '"version": 9', 1), 1, "format version 9"),
    (lambda t: t.replace('"lines"', '"n"', 1), 1, "does not name its corpus"),
    (lambda t: t.replace("\n2 1 0\n", "\n2 x 0\n", 1), 2, "not space-separated integers"),
    (lambda t: t.replace("\n2 1 0\n", "\n2 2 0\n", 1), 2, "not a permutation of 0..2"),
    (lambda t: t.rsplit("\n", 2)[0] + "\n", None, "has 7 position lines but its header says 8"),
])
def test_each_file_problem_names_the_file_and_line(tmp_path, corpus, edit, line, problem):
    path = write(tmp_path / "p.xlpos", corpus)
    path.write_text(edit(path.read_text()))
    with pytest.raises(XLInputError, match=problem) as err:
        read_positions(str(path))
    assert err.value.path == str(path) and err.value.line == line


def test_a_file_made_for_another_corpus_is_refused(tmp_path, corpus):
    path = write(tmp_path / "p.xlpos", corpus)
    header, rows = read_positions(str(path))
    other = tmp_path / "other.src"
    other.write_text(corpus.read_text().replace("d e", "d f"))
    with pytest.raises(XLInputError, match=r"p.xlpos: made for another corpus \(other bytes\) than .*other.src.*"
                                           "rerun onmt-xl positions"):
        check_made_for(str(path), header, str(other), scan_corpus(str(other)), rows)
    other.write_text(corpus.read_text() + "z y\n")
    with pytest.raises(XLInputError, match=r"made for another corpus \(8 lines\)"):
        check_made_for(str(path), header, str(other), scan_corpus(str(other)), rows)
    bad = rows_of(SRC)
    bad[1] = [0, 1, 2]
    with pytest.raises(XLInputError, match="p.xlpos, line 3: 3 positions but line 2 of .*train.src has 2 tokens"):
        check_made_for(str(path), header, str(corpus), scan_corpus(str(corpus)), bad)


# --- the OpenNMT-py transform --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pre")
    corpus_ = tiny_corpus(out, n=120)
    return corpus_, tiny_preorderer(out, corpus_)


def onmt_opts(pre, data, **kw):
    base = dict(xl_source="preorderer", xl_preorderer=str(pre), xl_noise=0.0, seed=-1, xl_positions_suffix=".xlpos",
                data=data, transforms=[])
    base.update(kw)
    return Namespace(**base)


def make(pre, data, **kw):
    XLPositionTransform._validate_options(onmt_opts(pre, data, **kw))
    t = XLPositionTransform(onmt_opts(pre, data, **kw))
    t.warm_up()
    return t


def data_of(corpus, transforms=("xl_position",)):
    valid = corpus.with_name("valid.src")
    valid.write_text("a b c\n")
    return {"train": {"path_src": str(corpus), "transforms": list(transforms)},
            "valid": {"path_src": str(valid), "transforms": list(transforms)}}


def example(line, cid="train"):
    return {"src": SRC[line].split(), "tgt": None, "cid": cid, "cid_line_number": line}


def test_the_transform_reads_a_corpus_positions_by_line(trained, corpus, caplog):
    _, pre = trained
    write(corpus.with_name("train.src.xlpos"), corpus)
    with caplog.at_level("INFO", logger="onmt"):
        t = make(pre, data_of(corpus))
    assert f"xl_position: corpus 'train' takes pos_XL from {corpus}.xlpos (test)" in caplog.text
    assert "xl_position: corpus 'valid' takes pos_XL from the preorderer" in caplog.text
    for line in (0, 1, 5, 7):
        assert t.apply(example(line), is_train=True)["xl_pos"] == list(reversed(range(len(SRC[line].split()))))
    # the valid corpus has no file: the preorderer's positions (as for onmt_translate's input)
    assert t.apply(example(0, "valid"))["xl_pos"] == t.preorderer.pos_xl("a b c".split())
    assert t.apply({"src": "d e".split(), "tgt": None, "cid": "infer", "cid_line_number": 0})["xl_pos"] == \
        t.preorderer.pos_xl("d e".split())
    clone = pickle.loads(pickle.dumps(t))  # a data worker reads the same
    assert clone.apply(example(5))["xl_pos"] == [3, 2, 1, 0]


def test_a_strided_reader_s_line_numbers_still_find_the_line(trained, corpus):
    _, pre = trained
    rows = rows_of(SRC)
    rows[7] = [1, 0, 2]  # distinct from line 5's, so the wrong line cannot pass
    write(corpus.with_name("train.src.xlpos"), corpus, rows)
    t = make(pre, data_of(corpus))
    ex = example(7)
    ex["cid_line_number"] = 6  # Eole numbers the k-th line of a strided reader k * stride + offset
    assert t.apply(ex)["xl_pos"] == [1, 0, 2]


def test_noise_still_applies_at_training(trained, corpus):
    _, pre = trained
    write(corpus.with_name("train.src.xlpos"), corpus)
    t = make(pre, data_of(corpus), xl_noise=1.0)
    clean = [3, 2, 1, 0]
    assert t.apply(example(5), is_train=False)["xl_pos"] == clean
    noisy = t.apply(example(5), is_train=True)["xl_pos"]
    assert noisy != clean and sorted(noisy) == [0, 1, 2, 3]


def test_tokens_that_are_not_the_file_s_are_refused(trained, corpus):
    _, pre = trained
    write(corpus.with_name("train.src.xlpos"), corpus)
    t = make(pre, data_of(corpus))
    ex = example(5)
    ex["src"] = ["g", "h", "i"]
    with pytest.raises(XLInputError, match=r"train.src, line 6: 3 source tokens reach xl_position, but .*xlpos has "
                                           "4 positions for this line"):
        t.apply(ex)
    ex["src"] = ["g", "h", "i", "X"]
    with pytest.raises(XLInputError, match=r"train.src, line 6: the source tokens reaching xl_position are no line"):
        t.apply(ex)


def test_start_up_errors(trained, corpus):
    _, pre = trained
    path = write(corpus.with_name("train.src.xlpos"), corpus)
    with pytest.raises(XLUsageError, match=r"corpus 'train' \(sentencepiece -> xl_position\): sentencepiece changes "
                                           "the source tokens before xl_position"):
        make(pre, data_of(corpus, ("sentencepiece", "xl_position")), xl_source="align")
    corpus.write_text(corpus.read_text() + "p q\n")
    with pytest.raises(XLInputError, match=f"{path}: made for another corpus .* rerun onmt-xl positions"):
        make(pre, data_of(corpus))


def test_without_the_option_no_file_is_read(trained, corpus):
    _, pre = trained
    corpus.with_name("train.src.xlpos").write_text("not a positions file\n")  # would fail if read
    t = make(pre, data_of(corpus), xl_positions_suffix=None)
    assert t.precomputed == {}
    assert t.apply(example(5))["xl_pos"] == t.preorderer.pos_xl(SRC[5].split())


# --- translation input: onmt_translate -src FILE with FILE + SUFFIX ---------------------------------------------------

def translate_opts(pre, src, *extra):
    import onmt.opts
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser()
    onmt.opts.translate_opts(parser)
    opt = parser.parse_args(["-model", "unused.pt", "-src", str(src), "-transforms", "xl_position", "-xl_preorderer",
                             str(pre), *map(str, extra)])
    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)
    return opt


def test_translation_input_reads_its_positions_file(trained, corpus, caplog):
    _, pre = trained
    src = corpus.with_name("test.src")
    src.write_text("a b c\nd e\n\ng h i j\n")
    rows = [[1, 2, 0], [1, 0], [], [0, 3, 1, 2]]
    write(str(src) + ".xlpos", src, rows)
    with caplog.at_level("INFO", logger="onmt"):
        t = make(pre, None, src=str(src), transforms=["xl_position"])
    assert f"xl_position: the input {src} takes pos_XL from {src}.xlpos (test)" in caplog.text
    for line, row in enumerate(rows):
        tokens = src.read_text().splitlines()[line].split(" ")  # as OpenNMT splits a line: "" is one empty token
        ex = {"src": tokens, "tgt": None, "cid": "infer", "cid_line_number": line}
        assert t.apply(ex)["xl_pos"] == (row or [0])
    with pytest.raises(XLInputError, match=r"test.src, line 2: 3 source tokens reach xl_position"):
        t.apply({"src": ["d", "e", "f"], "tgt": None, "cid": "infer", "cid_line_number": 1})
    # no file beside the input: the preorderer, said once; the server's placeholder -src is no file: nothing read
    other = corpus.with_name("other.src")
    other.write_text("a b c\n")
    with caplog.at_level("INFO", logger="onmt"):
        t = make(pre, None, src=str(other), transforms=["xl_position"])
    assert f"xl_position: the input {other} takes pos_XL from the preorderer {pre} (no {other}.xlpos)" in caplog.text
    assert t.precomputed == {}
    assert make(pre, None, src="dummy_src", transforms=["xl_position"]).precomputed == {}
    # a tokenizer before xl_position: the file's tokens are not the ones it sees
    with pytest.raises(XLUsageError, match=r"the input \(onmt_tokenize -> xl_position\): onmt_tokenize changes"):
        make(pre, None, src=str(src), transforms=["onmt_tokenize", "xl_position"])


@pytest.mark.parametrize("batch", [("1", "sents"), ("2", "sents"), ("3", "sents"), ("24", "tokens")])
def test_translation_batches_keep_each_line_s_positions(trained, tmp_path, batch):
    """OpenNMT's inference iterator sorts a bucket by length and batches it: each example keeps its line number, so
    each row of ``batch["xl_pos"]`` is its own line's (random permutations, lines of different lengths, a repeated
    line with other positions: a lookup by text alone would give both lines the same)."""
    import random

    import pyonmttok
    from onmt.constants import CorpusTask
    from onmt.inputters.dynamic_iterator import build_dynamic_dataset_iter
    from onmt.transforms import get_transforms_cls

    corpus_, pre = trained
    lines = [" ".join(s) for s in corpus_.src[:9]] + [" ".join(corpus_.src[2])]
    src = tmp_path / "test.src"
    src.write_text("\n".join(lines) + "\n")
    rng = random.Random(7)
    rows = [rng.sample(range(len(l.split())), len(l.split())) for l in lines]
    while rows[-1] == rows[2]:
        rows[-1] = rng.sample(rows[2], len(rows[2]))
    assert len({len(r) for r in rows}) > 3
    write(tmp_path / "test.src.xlpos", src, rows)
    opt = translate_opts(pre, src, "-xl_positions_suffix", ".xlpos", "-batch_size", batch[0], "-batch_type", batch[1])
    vocab = pyonmttok.build_vocab_from_tokens(sorted({t for l in lines for t in l.split()}),
                                              special_tokens=["<unk>", "<blank>", "<s>", "</s>"])
    vocab.default_id = 0
    vocabs = {"src": vocab, "tgt": vocab, "data_task": "seq2seq", "decoder_start_token": "<s>"}
    seen = []
    for b, _ in build_dynamic_dataset_iter(opt, get_transforms_cls(opt._all_transform), vocabs,
                                           task=CorpusTask.INFER):
        for r, line in enumerate(b["cid_line_number"]):
            n = int(b["srclen"][r])
            assert b["xl_pos"][r, :n].tolist() == rows[line], line
            seen.append(line)
    assert sorted(seen) == list(range(len(lines))) and seen != sorted(seen)  # every line once, sorted by length


# --- end to end: onmt-xl positions, then onmt_train ----------------------------------------------------------------

def onmt_xl_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "onmt_xl.cli", *map(str, args)], capture_output=True, text=True,
                          env=run_env(), cwd=cwd)


def test_positions_command_errors(tmp_path, corpus):
    proc = onmt_xl_cli("positions", "--src", corpus, "--out", tmp_path / "o.xlpos", "--folds", "2")
    assert proc.returncode == 2 and "error: --folds needs --tgt and --align" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = onmt_xl_cli("positions", "--src", corpus, "--out", tmp_path / "o.xlpos")
    assert proc.returncode == 2 and "give either --folds K" in proc.stderr


def test_positions_then_onmt_train(tmp_path):
    import yaml

    from onmt_xl.experiments.configs import config

    data = tmp_path / "data"
    data.mkdir()
    corpus_ = tiny_corpus(data, n=80)
    lines = (data / "train.src").read_text().splitlines()
    (data / "valid.src").write_text("\n".join(lines[:10]) + "\n")
    (data / "valid.tgt").write_text("\n".join((data / "train.tgt").read_text().splitlines()[:10]) + "\n")
    tiny_preorderer(tmp_path, corpus_).rename(tmp_path / "preorderer.xlp")
    out = data / "train.src.xlpos"
    proc = onmt_xl_cli("positions", "--src", data / "train.src", "--tgt", data / "train.tgt", "--align",
                       data / "train.align", "--folds", "2", "--iterations", "1", "--clusters", "0", "--threads", "1",
                       "--seen-tau", "--quiet", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "out-of-fold positions (2 folds): Kendall tau" in proc.stdout
    figures = json.loads(Path(str(out) + ".json").read_text())["figures"]
    assert figures["folds"] == 2 and 0 <= figures["tau"] <= 1 and "seen_tau" in figures
    header, rows = read_positions(str(out))
    assert len(rows) == 80 and header.made["method"] == "crossfit"

    cfg = config("combination", str(tmp_path), dict(
        enc_layers=1, dec_layers=1, heads=2, hidden_size=16, word_vec_size=16, transformer_ff=32, xl_heads=1,
        train_steps=2, valid_steps=2, save_checkpoint_steps=2, report_every=1, batch_size=256, valid_batch_size=256,
        bucket_size=256, warmup_steps=1, xl_positions_suffix=".xlpos"))
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    for command in (["onmt_build_vocab", "-config", str(path), "-n_sample", "-1"], ["onmt_train", "-config", str(path)]):
        proc = subprocess.run([stock_cli(command[0]), *command[1:]], capture_output=True, text=True, env=run_env())
        assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert f"corpus 'train' takes pos_XL from {out} (cross-fitted, 2 folds)" in log
    assert "corpus 'valid' takes pos_XL from the preorderer" in log
    assert (tmp_path / "models" / "combination_step_2.pt").exists()

    # onmt_translate: the input's own positions file (here the preorderer's positions) gives what the preorderer gives
    valid = data / "valid.src"
    proc = onmt_xl_cli("positions", "--src", valid, "--preorderer", tmp_path / "preorderer.xlp", "--quiet", "--out",
                       str(valid) + ".xlpos")
    assert proc.returncode == 0, proc.stderr[-3000:]

    def translate(out, *extra):
        args = [stock_cli("onmt_translate"), "-model", str(tmp_path / "models" / "combination_step_2.pt"), "-src",
                str(valid), "-output", str(out), "-transforms", "xl_position", "-xl_preorderer",
                str(tmp_path / "preorderer.xlp"), "-beam_size", "2", "-batch_size", "3", *extra]
        return subprocess.run(args, capture_output=True, text=True, env=run_env())

    plain = translate(tmp_path / "hyp.pre")
    read = translate(tmp_path / "hyp.file", "-xl_positions_suffix", ".xlpos")
    assert plain.returncode == 0 and read.returncode == 0, read.stderr[-3000:]
    assert f"xl_position: the input {valid} takes pos_XL from {valid}.xlpos (preorderer " in read.stderr + read.stdout
    assert "takes pos_XL" not in plain.stderr + plain.stdout  # unset: stock behaviour, nothing read or said
    assert (tmp_path / "hyp.file").read_text() == (tmp_path / "hyp.pre").read_text()
    valid.write_text(valid.read_text() + "a b\n")  # the input changed since its positions were made
    stale = translate(tmp_path / "hyp.stale", "-xl_positions_suffix", ".xlpos")
    assert stale.returncode != 0 and "Traceback" not in stale.stderr
    assert f"{valid}.xlpos: made for another corpus (10 lines) than {valid} (11 lines" in stale.stderr
