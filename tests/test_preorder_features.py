"""The preorderer's feature groups (``context``, ``pos``), the tagger, and format version 4 of the ``.xlp`` file."""

import json
import os
import pickle

import numpy as np
import pytest

from onmt_xl.core.data.synthetic import generate
from onmt_xl.core.errors import XLInputError
from onmt_xl.core.reorder import features as F
from onmt_xl.core.reorder.btg import is_btg_permutation
from onmt_xl.core.reorder.features import Vocab
from onmt_xl.core.reorder.preorderer import Preorderer

DATA = os.path.join(os.path.dirname(__file__), "data")
V3_FILE = os.path.join(DATA, "preorderer_v3.xlp")  # written by the format-3 code (base features only)
V3_ORDERS = os.path.join(DATA, "preorderer_v3_orders.json")  # its orders of 20 synthetic sentences

SENT = "彼 は 本 を 読 ん だ".split()
MASK = (1 << 20) - 1
GROUPS = [F.feats_start, F.feats_split, F.feats_end]  # one-position groups: (w, c, g, lo, i, mask, fset, out, k)


def _vocab():
    return Vocab(sorted(set(SENT)) + ["犬", "が"], 2)


def _tags(pos, infl=None):
    pos = np.asarray(pos, dtype=np.int64) + F.CLUSTER_BASE  # any ids outside the word range
    infl = pos + 1000 if infl is None else np.asarray(infl, dtype=np.int64)
    return pos, infl


def _one(fn, enc, i, fset):
    out = np.zeros(F.MAX_FEATS_GROUP, dtype=np.int64)
    k = fn(*enc, 0, i, MASK, fset, out, 0)
    return out[:k].tolist()


def _node(enc, s, m, e, fset):
    out = np.zeros(F.MAX_FEATS_NODE, dtype=np.int64)
    k = F.node_features(*enc, 0, s, m, e, MASK, fset, out)
    return out[:k].tolist()


# --- feature extraction on a hand-made sentence -------------------------------------------------------------


def test_groups_add_features_after_the_unchanged_base_templates():
    enc = _vocab().encode(SENT, _tags(range(len(SENT))))
    for fn in GROUPS:
        for i in range(1, len(SENT)):
            base = _one(fn, enc, i, 0)
            for fset in (F.FSET_CONTEXT, F.FSET_POS, F.FSET_CONTEXT | F.FSET_POS):
                more = _one(fn, enc, i, fset)
                assert more[: len(base)] == base and len(more) > len(base), (fn.__name__, i, fset)
    assert len(_node(enc, 1, 3, 6, 0)) == F.N_FEATS_NODE


def test_context_group_sees_the_words_beside_the_split():
    """``彼 は 本 | を 読 ん だ``: the base split features see the words 本 and を and only the classes of は and 読;
    the context group also sees the words は and 読. 読 -> 犬 keeps the class (both are shape-class kanji)."""
    vocab = _vocab()
    m = 3
    a = vocab.encode(SENT)
    b = vocab.encode(["彼", "は", "本", "を", "犬", "ん", "だ"])
    assert a[1][F.PAD + 4] == b[1][F.PAD + 4] and a[0][F.PAD + 4] != b[0][F.PAD + 4]
    assert _one(F.feats_split, a, m, 0) == _one(F.feats_split, b, m, 0)
    assert _one(F.feats_split, a, m, F.FSET_CONTEXT) != _one(F.feats_split, b, m, F.FSET_CONTEXT)
    # template 94: last word of the left child x first and last word of the right child
    y = F.PAD + m
    w = a[0]
    expected = F.fhash(94, w[y - 1], w[y], w[F.PAD + 6], MASK)
    right = np.zeros(F.MAX_FEATS_GROUP, dtype=np.int64)
    k = F.feats_right(*a, 0, m, 7, MASK, F.FSET_CONTEXT, right, 0)
    assert expected in right[:k].tolist()
    k0 = F.feats_right(*a, 0, m, 7, MASK, 0, right, 0)
    assert expected not in right[:k0].tolist()


def test_pos_group_reads_the_tagger_views_and_only_them():
    vocab = _vocab()
    tags_a = _tags([0, 1, 0, 1, 2, 3, 3])
    tags_b = _tags([0, 1, 0, 1, 2, 3, 4])  # another part of speech for the last token
    a, b = vocab.encode(SENT, tags_a), vocab.encode(SENT, tags_b)
    assert a[2][F.PAD:-F.PAD, F.VIEW_POS].tolist() == tags_a[0].tolist()
    assert a[2][F.PAD:-F.PAD, F.VIEW_INFL].tolist() == tags_a[1].tolist()
    assert a[2][:F.PAD, F.VIEW_POS].tolist() == [F.BOS] * F.PAD
    assert np.array_equal(a[2][:, F.VIEW_SHAPE], vocab.encode(SENT)[2][:, F.VIEW_SHAPE])
    for fset in (0, F.FSET_CONTEXT):  # without the pos group the tags change nothing
        assert _node(a, 2, 4, 7, fset) == _node(b, 2, 4, 7, fset)
    assert _node(a, 2, 4, 7, F.FSET_POS) != _node(b, 2, 4, 7, F.FSET_POS)
    assert _node(a, 0, 1, 2, F.FSET_POS) == _node(b, 0, 1, 2, F.FSET_POS)  # far from the changed token
    with pytest.raises(ValueError, match="tags for 7 tokens"):
        vocab.encode(SENT, _tags([0, 1]))


# --- training, the file and its versions ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def context_model():
    train = generate(600, seed=2)
    return Preorderer.train(train.src, train.links, iterations=3, seed=1, hash_size=1 << 14, n_clusters=8,
                            progress=False, threads=1, features=("context",))


def test_context_model_learns_and_round_trips_through_the_file(context_model, tmp_path):
    from onmt_xl.core.reorder.metrics import evaluate
    from onmt_xl.core.reorder.oracle import target_ranks

    model = context_model
    assert model.features == ("context",) and model.fset == F.FSET_CONTEXT and model.tagger is None
    test = generate(200, seed=3)
    pred = model.reorder_batch(test.src)
    scores = evaluate(pred, [target_ranks(len(s), l) for s, l in zip(test.src, test.links)])
    assert scores.tau > scores.monotone_tau + 0.1
    path = str(tmp_path / "ctx.xlp")
    model.save(path)
    loaded = Preorderer.load(path)
    head = loaded.header()
    assert head["version"] == 4 and head["features"] == ["context"] and head["tagger"] is None
    assert loaded.fset == F.FSET_CONTEXT and loaded.reorder_batch(test.src) == pred
    assert pickle.loads(pickle.dumps(model)).reorder_batch(test.src) == pred
    assert [model.reorder(s) for s in test.src[:20]] == pred[:20]
    assert all(is_btg_permutation(o) for o in pred)
    # the same weights decoded with the base features only give other orders: the group is really used
    base = Preorderer(loaded.vocab, loaded.weights, {**loaded.hparams, "features": []})
    assert base.reorder_batch(test.src) != pred


def test_version_3_file_still_loads_and_orders_as_it_did():
    model = Preorderer.load(V3_FILE)
    expected = json.load(open(V3_ORDERS, encoding="utf-8"))
    assert model.version == 3 and model.features == () and model.fset == 0 and model.tagger is None
    assert model.reorder_batch([s.split() for s in expected["src"]]) == expected["orders"]
    head = model.header()
    assert head["version"] == 3 and "features" not in head and "tagger" not in head


def test_base_features_train_the_same_weights_as_format_3():
    """The default (no group) is the format-3 preorderer: the same call trains bit-identical weights."""
    old = Preorderer.load(V3_FILE)
    train = generate(300, seed=5)
    new = Preorderer.train(train.src, train.links, iterations=2, seed=1, hash_size=1 << 12, n_clusters=8,
                           progress=False, threads=1)
    assert new.version == 4 and new.features == ()
    assert np.array_equal(new.weights, old.weights)


def test_version_4_header_without_the_feature_record_is_corrupt(context_model, tmp_path):
    state = context_model.__getstate__()
    header = {k: v for k, v in state["header"].items() if k != "features"}
    as_bytes = lambda obj: np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)  # noqa: E731
    bad = str(tmp_path / "v4.npz")
    np.savez(bad, header=as_bytes(header), vocab=as_bytes(state["vocab"]), clusters=state["clusters"],
             feat_index=state["feat_index"], feat_weight=state["feat_weight"])
    with pytest.raises(XLInputError, match="no feature groups") as info:
        Preorderer.load(bad)
    assert bad in str(info.value)


def test_training_options_are_checked():
    train = generate(20, seed=1)
    with pytest.raises(ValueError, match="unknown feature groups"):
        Preorderer.train(train.src, train.links, iterations=1, progress=False, features=("wide",))
    with pytest.raises(ValueError, match="needs a tagger"):
        Preorderer.train(train.src, train.links, iterations=1, progress=False, features=("pos",))


# --- the tagger ----------------------------------------------------------------------------------------------


def _hide_fugashi(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "fugashi" else real(name, *a))


def test_missing_tagger_package_is_named_when_training(monkeypatch):
    from onmt_xl.core.reorder.tagger import TaggerMissing

    _hide_fugashi(monkeypatch)
    train = generate(20, seed=1)
    with pytest.raises(TaggerMissing, match="fugashi") as info:
        Preorderer.train(train.src, train.links, iterations=1, progress=False, tagger="unidic")
    assert "pip install" in str(info.value) and "onmt-xl[ja]" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_tagger_gives_each_token_the_morpheme_at_its_first_character():
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    from onmt_xl.core.reorder.tagger import INFL_BASE, POS_BASE, Tagger, _stable_id

    tagger = Tagger()
    # MeCab: 分かり ませ ん 。  -- finer tokens take the morpheme they start in, marked ~ when inside it
    pos, infl = tagger.tags("分か り ま せ ん 。".split())
    labels = ["動詞-一般", "動詞-一般~", "助動詞-*", "助動詞-*~", "助動詞-*", "補助記号-句点"]
    assert pos.tolist() == [_stable_id(POS_BASE, x) for x in labels]
    assert infl[0] == infl[1] == _stable_id(INFL_BASE, "動詞|五段-ラ行|連用形-一般")
    assert infl[5] == _stable_id(INFL_BASE, "補助記号-句点-*")
    assert [len(x) for x in tagger.tags([])] == [0, 0]
    assert pickle.loads(pickle.dumps(tagger)).tags(["本"])[0].tolist() == tagger.tags(["本"])[0].tolist()


@pytest.fixture(scope="module")
def pos_model():
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    train = generate(300, seed=2)
    return Preorderer.train(train.src, train.links, iterations=2, seed=1, hash_size=1 << 14, n_clusters=8,
                            progress=False, threads=1, tagger="unidic")


def test_tagged_model_records_its_tagger_and_tags_its_own_input(pos_model, tmp_path, monkeypatch):
    from onmt_xl.core.reorder.tagger import TaggerMissing

    model = pos_model
    assert model.features == ("pos",) and model.fset == F.FSET_POS
    test = generate(50, seed=4)
    pred = model.reorder_batch(test.src)
    path = str(tmp_path / "pos.xlp")
    model.save(path)
    loaded = Preorderer.load(path)
    head = loaded.header()
    assert head["features"] == ["pos"] and head["tagger"]["name"] == "unidic"
    assert set(head["tagger"]["packages"]) == {"fugashi", "unidic-lite"} and all(head["tagger"]["packages"].values())
    assert loaded.reorder_batch(test.src) == pred and loaded.pos_xl(test.src[0]) == model.pos_xl(test.src[0])
    assert all(is_btg_permutation(o) for o in pred)
    assert [loaded.reorder(s) for s in test.src[:10]] == pred[:10]  # tagged one sentence at a time, the same
    assert pickle.loads(pickle.dumps(loaded)).reorder_batch(test.src) == pred
    # where the analyser is not installed, loading fails naming the file and the package
    _hide_fugashi(monkeypatch)
    with pytest.raises(TaggerMissing) as info:
        Preorderer.load(path)
    assert path in str(info.value) and "fugashi" in str(info.value) and "pip install" in str(info.value)


def test_cli_trains_with_feature_groups_and_rejects_unknown_ones(tmp_path, capsys):
    from onmt_xl.cli import main

    data = generate(60, seed=1)
    prefix = tmp_path / "syn"
    from onmt_xl.core.data.synthetic import write

    paths = write(data, str(prefix))
    model = tmp_path / "m.xlp"
    args = ["preorder-train", "--src", paths["src"], "--tgt", paths["tgt"], "--align", paths["align"], "--model",
            str(model), "--iterations", "1", "--quiet", "--threads", "1", "--hash-bits", "12"]
    assert main(args + ["--features", "context"]) == 0
    assert Preorderer.load(str(model)).features == ("context",)
    with pytest.raises(SystemExit):
        main(args + ["--features", "pos"])
    assert "unknown feature group" in capsys.readouterr().err


def test_sentence_taus_weigh_each_sentence_alike():
    from onmt_xl.core.reorder.metrics import evaluate, sentence_taus

    ranks = [np.array([0, 1, 2]), np.array([1, 0, -1, 2, 3]), np.array([-1, 0]), np.array([0, 0])]
    orders = [[2, 1, 0], [0, 1, 2, 3, 4], [1, 0], [1, 0]]
    # 3 pairs, all reversed; 6 pairs, one reversed; no pair (one aligned word); no pair (a tie)
    assert sentence_taus(orders, ranks) == [0.0, 5 / 6, None, None]
    assert evaluate(orders, ranks).tau == pytest.approx(5 / 9)  # micro-averaged: the long sentence weighs more
    with pytest.raises(ValueError):
        sentence_taus(orders[:1], ranks)


def test_tagger_reads_sub_word_pieces_as_the_word_they_make():
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    from onmt_xl.core.reorder.tagger import Tagger

    tagger = Tagger()
    words = [x.tolist() for x in tagger.tags("彼 は 本 を 読 ん だ".split())]
    assert [x.tolist() for x in tagger.tags("彼 は 本 を 読￭ ん￭ だ".split())] == words
    assert [x.tolist() for x in tagger.tags("▁彼 ▁は ▁本 ▁を ▁読 ん だ".split())] == words
