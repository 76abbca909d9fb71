"""The discriminative BTG preorderer (onmt_xl.reorder.features / .parser / .preorderer)."""

import os
import pickle
import random
import time

import numpy as np
import pytest

from onmt_xl.errors import XLInputError
from onmt_xl.reorder.btg import is_btg_permutation, order_to_pos_xl
from onmt_xl.reorder.features import UNK, Vocab, word_shape
from onmt_xl.reorder.metrics import evaluate
from onmt_xl.reorder.oracle import target_ranks
from onmt_xl.reorder.preorderer import Preorderer
from onmt_xl.synthetic import generate


@pytest.fixture(scope="module")
def trained():
    train = generate(2000, seed=1)
    t0 = time.perf_counter()
    model = Preorderer.train(train.src, train.links, iterations=5, seed=1, progress=False)
    model.train_seconds = time.perf_counter() - t0
    return model, train


def test_learns_synthetic_reordering(trained):
    model, _ = trained
    test = generate(500, seed=2)
    pred = model.reorder_batch(test.src)
    ranks = [target_ranks(len(s), links) for s, links in zip(test.src, test.links)]
    scores = evaluate(pred, ranks)
    print(f"\ntrain {model.train_seconds:.1f}s (incl. compile)\n" + scores.format())
    assert scores.tau >= 0.95
    assert scores.tau > scores.monotone_tau + 0.2
    assert scores.exact_match > scores.monotone_exact_match


def test_predictions_are_btg_permutations_on_random_tokens(trained):
    model, train = trained
    rng = random.Random(0)
    known = sorted({t for s in train.src for t in s})
    unseen = ["UNSEEN", "あいう", "▁the", "￭ing", "Zürich", "42", "", "@@", "日本"]
    batch = []
    for n in list(range(0, 61)) + [61, 120]:
        toks = [rng.choice(known if rng.random() < 0.7 else unseen) for _ in range(n)]
        order = model.reorder(toks)
        assert sorted(order) == list(range(n)) and is_btg_permutation(order), toks
        assert model.pos_xl(toks) == order_to_pos_xl(order)
        batch.append(toks)
    assert model.reorder_batch(batch) == [model.reorder(t) for t in batch]
    assert model.reorder_batch([]) == []
    assert model.pos_xl_batch(batch[:3]) == [model.pos_xl(t) for t in batch[:3]]


def test_long_sentences_are_chunked_and_valid(trained):
    model, train = trained
    toks = [w for s in train.src[:80] for w in s][:900]
    order = model.reorder(toks)
    assert sorted(order) == list(range(len(toks))) and is_btg_permutation(order)
    # chunks keep their own span: nothing crosses a max_len boundary
    ml = model.max_len
    assert sorted(order[:ml]) == list(range(ml))


def test_untrained_model_is_monotone():
    model = Preorderer(Vocab(["a", "b"], 1), np.zeros((16, 2), dtype=np.float32))
    assert model.reorder(["a", "b", "c", "a"]) == [0, 1, 2, 3]
    assert model.reorder([]) == [] and model.reorder(["x"]) == [0]
    with pytest.raises(TypeError):
        model.reorder("a b")


def test_save_load_round_trip(trained, tmp_path):
    model, _ = trained
    path = str(tmp_path / "model.pre")  # no suffix is added
    model.save(path)
    assert os.path.exists(path)
    loaded = Preorderer.load(path)
    test = generate(200, seed=3)
    assert loaded.reorder_batch(test.src) == model.reorder_batch(test.src)
    assert loaded.header() == model.header()
    assert loaded.header()["format"] == "onmt_xl.preorderer" and loaded.header()["version"] == 1


def test_pickle_is_small_and_equivalent(trained):
    model, _ = trained
    blob = pickle.dumps(model)
    assert len(blob) < 2_000_000
    clone = pickle.loads(blob)
    test = generate(100, seed=4)
    assert clone.reorder_batch(test.src) == model.reorder_batch(test.src)


def _raises_naming(path):
    with pytest.raises(XLInputError) as info:
        Preorderer.load(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_load_missing_file(tmp_path):
    msg = _raises_naming(str(tmp_path / "nope.npz"))
    assert "not found" in msg


def test_load_corrupt_files(trained, tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"\x00\x01not a model at all" * 10)
    assert "cannot read" in _raises_naming(str(garbage))

    model, _ = trained
    good = tmp_path / "good.npz"
    model.save(str(good))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: os.path.getsize(good) // 2])
    _raises_naming(str(truncated))

    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    _raises_naming(str(empty))

    _raises_naming(str(tmp_path))  # a directory


def _write_with_header(path, header):
    import json

    np.savez(
        path,
        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        vocab=np.frombuffer(b"[]", dtype=np.uint8),
        feat_index=np.zeros(0, dtype=np.int64),
        feat_weight=np.zeros((0, 2), dtype=np.float32),
    )


def test_load_wrong_version_and_format(trained, tmp_path):
    model, _ = trained
    header = model.header()
    wrong_version = str(tmp_path / "v99.npz")
    _write_with_header(wrong_version, {**header, "version": 99})
    assert "version 99" in _raises_naming(wrong_version)

    other = str(tmp_path / "other.npz")
    _write_with_header(other, {**header, "format": "something.else"})
    assert "not an onmt_xl.preorderer" in _raises_naming(other)

    plain = str(tmp_path / "plain.npz")
    np.savez(plain, x=np.arange(3))
    assert "not an onmt_xl.preorderer" in _raises_naming(plain)

    ok = str(tmp_path / "ok.npz")
    _write_with_header(ok, header)
    assert Preorderer.load(ok).reorder(["a", "b", "c"]) == [0, 1, 2]


def test_train_rejects_mismatched_input():
    with pytest.raises(ValueError):
        Preorderer.train([["a", "b"]], [], iterations=1, progress=False)
    with pytest.raises(ValueError):
        Preorderer.train([["a", "b"]], [[(2, 0)]], iterations=1, progress=False)


def test_training_is_deterministic():
    data = generate(150, seed=5)
    a = Preorderer.train(data.src, data.links, iterations=2, seed=3, hash_size=1 << 16, progress=False)
    b = Preorderer.train(data.src, data.links, iterations=2, seed=3, hash_size=1 << 16, progress=False)
    assert np.array_equal(a.weights, b.weights)


def test_vocab_and_word_classes():
    vocab = Vocab.build([["the", "cat", "the", "dog", "cat", "the"]], min_count=2, class_words=1)
    assert vocab.tokens == ["the", "cat"]
    w, c = vocab.encode(["the", "cat", "dog", "犬"])
    assert w.shape == (6,) and w[3] == UNK and w[4] == UNK
    assert c[1] == w[1]  # most frequent word is its own class
    assert c[2] != w[2]  # the others get a shape class
    assert word_shape("▁Hello") == "▁LATIN^|LATIN|3"
    assert word_shape("ing￭") == word_shape("ing￭")
    assert word_shape("あいう").startswith("HIRAGANA|HIRAGANA")
    assert word_shape("漢字").startswith("CJK")
    assert word_shape("") == "EMPTY" and word_shape("▁") != ""


# --- CLI -------------------------------------------------------------------------------------


def _cli(*argv):
    from onmt_xl.cli import main

    return main([str(a) for a in argv])


def test_cli_round_trip(tmp_path, capsys):
    pre = tmp_path / "syn"
    assert _cli("synth", "--n", 400, "--seed", 1, "--prefix", pre) == 0
    files = {k: f"{pre}.{k}" for k in ("src", "tgt", "align")}
    corpus = ["--src", files["src"], "--tgt", files["tgt"], "--align", files["align"]]
    assert _cli("oracle", *corpus, "--out-order", tmp_path / "o", "--out-pos", tmp_path / "p") == 0
    orders = [list(map(int, l.split())) for l in open(tmp_path / "o")]
    pos = [list(map(int, l.split())) for l in open(tmp_path / "p")]
    assert len(orders) == 400 and all(order_to_pos_xl(o) == p for o, p in zip(orders, pos))
    model = tmp_path / "m.npz"
    assert _cli("preorder-train", *corpus, "--model", model, "--iterations", 2, "--max-sentences", 300,
                "--quiet", "--hash-bits", 18) == 0
    assert "300 sentences" in capsys.readouterr().err
    assert _cli("preorder-apply", "--model", model, "--src", files["src"], "--out-pos", tmp_path / "ap",
                "--out-order", tmp_path / "ao", "--out-reordered", tmp_path / "ar") == 0
    src = [l.split() for l in open(files["src"])]
    ao = [list(map(int, l.split())) for l in open(tmp_path / "ao")]
    ar = [l.split() for l in open(tmp_path / "ar")]
    assert all(sorted(o) == list(range(len(s))) for o, s in zip(ao, src))
    assert ar == [[s[i] for i in o] for s, o in zip(src, ao)]
    capsys.readouterr()
    assert _cli("preorder-eval", "--model", model, *corpus) == 0
    out = capsys.readouterr().out
    assert "model" in out and "monotone" in out and "sentences/s" in out


def test_cli_input_errors(tmp_path, capsys):
    (tmp_path / "s").write_text("a b c\n\nd e\n")
    (tmp_path / "t").write_text("x y\nz\nw v\n")
    (tmp_path / "a").write_text("0-0 2-1\n\n1-0 0-1\n")
    corpus = ["--src", tmp_path / "s", "--tgt", tmp_path / "t", "--align", tmp_path / "a"]
    # an empty side is skipped (monotone in the oracle output) and reported
    assert _cli("oracle", *corpus, "--out-order", tmp_path / "o") == 0
    assert "1 of 3 pairs have an empty side (lines 2)" in capsys.readouterr().err
    assert open(tmp_path / "o").read().splitlines() == ["0 1 2", "", "1 0"]
    # a link out of range names the file and the line
    (tmp_path / "bad").write_text("0-0 2-1\n\n1-5\n")
    assert _cli("oracle", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--align", tmp_path / "bad",
                "--out-order", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "bad") in err and "line 3" in err and "out of range" in err
    (tmp_path / "short").write_text("x y\n")
    assert _cli("oracle", "--src", tmp_path / "s", "--tgt", tmp_path / "short", "--align", tmp_path / "a",
                "--out-order", tmp_path / "o") == 2
    assert "has 1 lines" in capsys.readouterr().err
    assert _cli("preorder-apply", "--model", tmp_path / "missing.npz", "--src", tmp_path / "s",
                "--out-pos", tmp_path / "x") == 2
    assert "missing.npz" in capsys.readouterr().err
