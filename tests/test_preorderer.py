"""The discriminative BTG preorderer (onmt_xl.core.reorder.features / .parser / .preorderer)."""

import os
import pickle
import random
import time

import numpy as np
import pytest

from onmt_xl.core.errors import XLInputError
from onmt_xl.core.reorder.btg import is_btg_permutation, order_to_pos_xl, tree_to_order
from onmt_xl.core.reorder.features import N_VIEWS, UNK, VIEW_POS, VIEW_SHAPE, Vocab, word_shape
from onmt_xl.core.reorder.metrics import evaluate
from onmt_xl.core.reorder.oracle import target_ranks
from onmt_xl.core.reorder.preorderer import Preorderer
from onmt_xl.core.data.synthetic import generate


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


def test_batch_decoding_inside_a_torch_process_keeps_torchs_threads(trained, tmp_path):
    """As in onmt_train with OMP_NUM_THREADS=1: torch loaded first, then the transform's first batch starts numba's
    thread pool. numba's OpenMP layer shares the runtime with torch; torch must still use the threads it was given
    (more would oversubscribe the cores and change float sums), and the positions are those of pos_xl."""
    import subprocess
    import sys

    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one core: numba's pool and torch cannot disagree on the thread count")
    model, train = trained
    model.save(str(tmp_path / "p.xlp"))
    (tmp_path / "src.txt").write_text("\n".join(" ".join(s) for s in train.src[:200]), encoding="utf-8")
    script = (
        "import sys, torch\n"
        "from onmt_xl.core.reorder.preorderer import Preorderer\n"
        "p = Preorderer.load(sys.argv[1])\n"
        "src = [l.split() for l in open(sys.argv[2], encoding='utf-8').read().splitlines()]\n"
        "seen = []\n"
        "for n in (None, 2, 1):  # None: the count OMP_NUM_THREADS gave torch, as in onmt_train\n"
        "    if n is not None:\n"
        "        torch.set_num_threads(n)\n"
        "    same = p.pos_xl_batch(src) == [p.pos_xl(s) for s in src]\n"
        "    seen.append((n or 1, torch.get_num_threads(), same))\n"
        "print(seen)\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("NUMBA_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "p.xlp"), str(tmp_path / "src.txt")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[(1, 1, True), (2, 2, True), (1, 1, True)]"


def test_long_sentences_use_the_span_limit_and_stay_valid(trained):
    model, train = trained
    toks = [w for s in train.src[:80] for w in s][:900]
    longest = max(len(s) for s in train.src)
    assert model.max_span == model.effective_span == longest  # default: the longest training sentence
    order, tree, _ = model.reorder_tree(toks)
    assert order == model.reorder(toks) and tree_to_order(tree) == order
    assert sorted(order) == list(range(len(toks))) and is_btg_permutation(order)
    assert all(not nd.inverted for nd in tree.nodes() if nd.end - nd.start > longest)
    model.max_span = 0  # exact up to max_len; longer inputs get span limit max_len
    try:
        assert model.effective_span == model.max_len < len(toks)
        order, tree, _ = model.reorder_tree(toks)
        assert is_btg_permutation(order) and tree_to_order(tree) == order
        assert all(not nd.inverted for nd in tree.nodes() if nd.end - nd.start > model.max_len)
    finally:
        model.max_span = longest


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
    assert loaded.header()["format"] == "onmt_xl.preorderer" and loaded.header()["version"] == 4
    assert loaded.header()["clustered"] and np.array_equal(loaded.vocab.clusters, model.vocab.clusters)
    assert np.array_equal(loaded.weights, model.weights)


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


def _write_with_header(path, header, vocab=b"[]"):
    import json

    np.savez(
        path,
        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        vocab=np.frombuffer(vocab, dtype=np.uint8),
        clusters=np.zeros(0, dtype=np.int32),
        feat_index=np.zeros(0, dtype=np.int64),
        feat_weight=np.zeros((0, 2), dtype=np.float32),
    )


def test_load_wrong_version_and_format(trained, tmp_path):
    model, _ = trained
    header = model.header()
    wrong_version = str(tmp_path / "v99.npz")
    _write_with_header(wrong_version, {**header, "version": 99})
    msg = _raises_naming(wrong_version)
    assert "version 99" in msg and "reads versions 2, 3, 4" in msg and "retrain" in msg

    other = str(tmp_path / "other.npz")
    _write_with_header(other, {**header, "format": "something.else"})
    assert "not an onmt_xl.preorderer" in _raises_naming(other)

    plain = str(tmp_path / "plain.npz")
    np.savez(plain, x=np.arange(3))
    assert "not an onmt_xl.preorderer" in _raises_naming(plain)

    ok = str(tmp_path / "ok.npz")
    _write_with_header(ok, {**header, "clustered": False})
    assert Preorderer.load(ok).reorder(["a", "b", "c"]) == [0, 1, 2]

    bad_clusters = str(tmp_path / "bad_clusters.npz")
    _write_with_header(bad_clusters, {**header, "clustered": True}, b'["a", "b"]')  # no classes for 2 words
    assert "0 word classes for 2 vocabulary entries" in _raises_naming(bad_clusters)


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
    w, c, views = vocab.encode(["the", "cat", "dog", "犬"])
    g = views[:, VIEW_SHAPE]
    assert w.shape == c.shape == g.shape == (8,) and w[4] == UNK and w[5] == UNK
    assert views.shape == (8, N_VIEWS) and (views[2:6, VIEW_POS] == UNK).all()  # no tagger: no part of speech
    assert list(w[:2]) == [1, 1] and list(w[-2:]) == [2, 2]  # BOS BOS ... EOS EOS
    assert c[2] == w[2]  # most frequent word is its own class
    assert c[3] != w[3] and c[3] == g[3]  # the others get a shape class (no clustering)
    assert g[4] != g[5]  # unknown words keep their shape
    # "PREFIX first-char-class|last-char-class|length-bucket SUFFIX"; buckets: 1 -> 0, 2 -> 1, 3-4 -> 2, 5-7 -> 3, 8+ -> 4
    assert word_shape("▁Hello") == "▁LATIN^|LATIN|3"
    assert word_shape("ing￭") == "LATIN|LATIN|2￭"  # the joiner is kept as a suffix, "ing" is 3 letters
    assert word_shape("￭ing") == "￭LATIN|LATIN|2"
    assert word_shape("ab@@") == "LATIN|LATIN|1@@"
    assert word_shape("あいう") == "HIRAGANA|HIRAGANA|2"
    assert word_shape("漢字") == "CJK|CJK|1"
    assert word_shape("1999") == "9|9|2" and word_shape("Ω") == "GREEK^|GREEK^|0"
    assert word_shape("Zürich") == "LATIN^|LATIN|3"
    assert word_shape("") == "EMPTY"
    assert word_shape("▁") == "So|So|0"  # a bare joiner is not stripped: U+2581 is a symbol (So), one character
    assert word_shape("@@") == "Po|Po|1"


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
                "--out-order", tmp_path / "o") == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "bad") in err and "line 3" in err and "out of range" in err
    (tmp_path / "short").write_text("x y\n")
    assert _cli("oracle", "--src", tmp_path / "s", "--tgt", tmp_path / "short", "--align", tmp_path / "a",
                "--out-order", tmp_path / "o") == 1
    assert "has 1 line but" in capsys.readouterr().err
    assert _cli("preorder-apply", "--model", tmp_path / "missing.npz", "--src", tmp_path / "s",
                "--out-pos", tmp_path / "x") == 2
    assert "missing.npz" in capsys.readouterr().err


# --- exactness of the parser (brute force over all BTG trees) -----------------------------------


def _all_trees(s, e):
    """Every BTG tree over [s, e) as a tuple of internal nodes (s, m, e, t)."""
    if e - s == 1:
        return [()]
    out = []
    for m in range(s + 1, e):
        for left in _all_trees(s, m):
            for right in _all_trees(m, e):
                for t in (0, 1):
                    out.append(((s, m, e, t),) + left + right)
    return out


def _allowed(tree, K):
    """The span-limit search space: every node over more than K tokens is a straight glue node
    (0, m, e) whose right child has at most K tokens."""
    return all(e - s <= K or (s == 0 and t == 0 and e - m <= K) for s, m, e, t in tree)


def _tree_order(tree, n):
    from onmt_xl.core.reorder.btg import BTGNode

    kids = {(s, e): (m, t) for s, m, e, t in tree}

    def build(s, e):
        if e - s == 1:
            return BTGNode(s, e)
        m, t = kids[s, e]
        return BTGNode(s, e, bool(t), build(s, m), build(m, e))

    return tree_to_order(build(0, n))


@pytest.fixture(scope="module")
def random_model():
    rng = np.random.default_rng(7)
    vocab = Vocab(["a", "b", "c", "d"], 2, np.array([0, 1, 0, 1]))
    weights = rng.normal(size=(1 << 10, 2)).astype(np.float32)
    return Preorderer(vocab, weights)


def _random_tags(rng, n):
    """Part-of-speech and inflection views as a tagger would give them (a few distinct ids)."""
    return (np.array([rng.randrange(4) + 10 for _ in range(n)], dtype=np.int64),
            np.array([rng.randrange(3) + 20 for _ in range(n)], dtype=np.int64))


@pytest.mark.parametrize("fset", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [2, 3, 5, 7])
def test_cky_finds_the_best_tree_exactly_and_under_span_limits(random_model, n, fset):
    """Every feature group factorizes over the chart's tables: CKY finds the tree the node features score best."""
    from onmt_xl.core.reorder.features import MAX_FEATS_NODE, N_FEATS_NODE, node_features
    from onmt_xl.core.reorder.parser import decode_tree

    model = random_model
    rng = random.Random(n)
    toks = [rng.choice(["a", "b", "c", "d", "zz", "あ"]) for _ in range(n)]
    w, c, g = model.vocab.encode(toks, _random_tags(rng, n))
    buf = np.empty(MAX_FEATS_NODE, dtype=np.int64)
    node_score = {}
    for s in range(n):
        for m in range(s + 1, n):
            for e in range(m + 1, n + 1):
                nf = node_features(w, c, g, 0, s, m, e, model.mask, fset, buf)
                assert (nf == N_FEATS_NODE) == (fset == 0)
                for t in (0, 1):
                    node_score[s, m, e, t] = float(model.weights[buf[:nf], t].astype(np.float64).sum())
    trees = _all_trees(0, n)
    for K in sorted({0, 1, 2, 3, n - 1}):
        allowed = [t for t in trees if K == 0 or _allowed(t, K)]
        scores = [sum(node_score[x] for x in t) for t in allowed]
        best = int(np.argmax(scores))
        order, nodes, score = decode_tree(w, c, g, n, model.weights, model.mask, fset, K)
        assert score == pytest.approx(scores[best], abs=1e-6), (n, K)
        assert order.tolist() == _tree_order(allowed[best], n), (n, K)
        got = tuple(map(tuple, nodes.tolist()))
        assert (K == 0 or _allowed(got, K)) and sorted(got) == sorted(allowed[best])


@pytest.mark.parametrize("K", [0, 2, 3])
def test_latent_oracle_and_loss_augmented_search_are_exact(random_model, K):
    from onmt_xl.core.reorder.oracle import btg_oracle_ranks, kendall_loss
    from onmt_xl.core.reorder.parser import _loss_matrix, cky, score_tables, span_limit

    model = random_model
    rng = np.random.default_rng(K)
    n = 6
    trees = [t for t in _all_trees(0, n) if K == 0 or _allowed(t, K)]
    orders = [_tree_order(t, n) for t in trees]
    for _ in range(5):
        r1 = rng.integers(-1, 5, size=n).astype(np.int64)
        r2 = np.where(r1 < 0, rng.integers(0, 5, size=n), r1).astype(np.int64)
        toks = list(rng.choice(["a", "b", "c", "d"], size=n))
        w, c, g = model.vocab.encode(toks)
        kk = span_limit(n, K)
        tables = score_tables(w, c, g, 0, n, kk, model.weights, model.mask, 0)
        P, kb = _loss_matrix(r1, r2, True)
        best = min(kendall_loss(o, r1) * kb + kendall_loss(o, r2) for o in orders)
        if K == 0:
            assert best // kb == btg_oracle_ranks(r1, False).loss
        _, _, _, loss, _ = cky(*tables, P, 0.0, True, float(kb))
        assert loss == best
        # a huge negative augmentation weight turns the loss-augmented search into loss minimization
        _, _, _, loss, _ = cky(*tables, P, -1e9, False, 1.0)
        assert loss == best
        # a huge positive one finds the worst tree
        _, _, _, loss, _ = cky(*tables, P, 1e9, False, 1.0)
        assert loss == max(kendall_loss(o, r1) * kb + kendall_loss(o, r2) for o in orders)


def test_minibatch_training_gives_the_same_weights_on_any_number_of_threads():
    import numba

    from onmt_xl.core.reorder.preorderer import set_threads

    data = generate(300, seed=9)
    kw = dict(iterations=2, seed=3, hash_size=1 << 16, batch=8, parallel="minibatch", progress=False)
    try:
        one = Preorderer.train(data.src, data.links, threads=1, **kw)
        every = Preorderer.train(data.src, data.links, threads=0, **kw)
    finally:
        set_threads(None)
    assert one.train_info["threads"] == 1 and every.train_info["threads"] == numba.config.NUMBA_NUM_THREADS
    assert np.array_equal(one.weights, every.weights)
    assert one.reorder_batch(data.src[:50]) == every.reorder_batch(data.src[:50])


def test_span_limit_is_a_decoding_option(trained, tmp_path):
    model, train = trained
    long = [w for s in train.src[:12] for w in s]
    default = model.max_span
    model.max_span = 0
    exact = model.reorder(long)
    model.max_span = 6
    try:
        limited, tree, _ = model.reorder_tree(long)
        assert limited == model.reorder(long) == model.reorder_batch([long])[0]
        assert is_btg_permutation(limited) and tree_to_order(tree) == limited
        assert all(not nd.inverted for nd in tree.nodes() if nd.end - nd.start > 6)
        model.save(str(tmp_path / "k6.npz"))
        assert Preorderer.load(str(tmp_path / "k6.npz")).max_span == 6
        model.max_span = len(long)  # a limit >= the length is exact
        assert model.reorder(long) == exact
    finally:
        model.max_span = default


def test_parameter_mixing_learns_and_is_deterministic_per_thread_count():
    from onmt_xl.core.reorder.preorderer import set_threads

    data = generate(600, seed=11)
    test = generate(200, seed=12)
    ranks = [target_ranks(len(s), links) for s, links in zip(test.src, test.links)]
    kw = dict(iterations=4, seed=3, hash_size=1 << 16, parallel="mix", progress=False)
    try:
        one = Preorderer.train(data.src, data.links, threads=1, **kw)
        # one shard = the plain online perceptron = minibatch training with batches of one sentence
        online = Preorderer.train(data.src, data.links, threads=1, **{**kw, "parallel": "minibatch", "batch": 1})
        every = Preorderer.train(data.src, data.links, threads=0, **kw)
        again = Preorderer.train(data.src, data.links, threads=0, **kw)
    finally:
        set_threads(None)
    assert one.hparams["parallel"] == "mix" and one.hparams["train_threads"] == 1
    assert np.array_equal(every.weights, again.weights)
    assert one.reorder_batch(test.src) == online.reorder_batch(test.src)
    for model in (one, every):
        assert evaluate(model.reorder_batch(test.src), ranks).tau > 0.9


# --- version-1 files (an unreleased format) -----------------------------------------------------


def test_version_1_files_fail_naming_the_file_and_the_readable_versions(tmp_path):
    path = str(tmp_path / "v1.npz")
    _write_with_header(path, {"format": "onmt_xl.preorderer", "version": 1, "hash_size": 4096, "class_words": 1,
                              "max_len": 400}, vocab=b'["a", "b", "c"]')
    msg = _raises_naming(path)
    assert "version 1" in msg and "reads versions 2, 3, 4" in msg and "retrain" in msg


# --- word clusters -------------------------------------------------------------------------------


def test_exchange_clustering_recovers_word_roles():
    from onmt_xl.core.reorder.clusters import exchange_clusters
    from onmt_xl.core.reorder.features import N_SPECIAL

    rng = random.Random(0)
    roles = [["the", "a", "this"], ["cat", "dog", "bird", "fish"], ["runs", "sleeps", "eats"]]
    sents = [[rng.choice(r) for r in roles] for _ in range(400)]
    vocab = Vocab.build(sents, min_count=1, class_words=0)
    ids = [vocab.encode(s)[0] for s in sents]
    classes = exchange_clusters(ids, len(vocab), N_SPECIAL, n_classes=3)
    by_word = dict(zip(vocab.tokens, classes.tolist()))
    groups = {frozenset(by_word[w] for w in r) for r in roles}
    assert all(len(g) == 1 for g in groups) and len(groups) == 3
    assert np.array_equal(classes, exchange_clusters(ids, len(vocab), N_SPECIAL, n_classes=3))  # deterministic
    # a clustered vocabulary gives its words their cluster as class (beyond the class_words first)
    clustered = Vocab.build(sents, min_count=1, class_words=0, n_clusters=3)
    cls = {t: clustered.encode([t])[1][2] for t in clustered.tokens}
    assert all(len({cls[w] for w in r}) == 1 for r in roles) and len({cls[r[0]] for r in roles}) == 3
    assert clustered.encode(["unseen"])[1][2] == clustered.encode(["unseen"])[2][2, VIEW_SHAPE]  # unknown: its shape


# --- show-reordering -----------------------------------------------------------------------------


def test_show_reordering_text_and_png(tmp_path, capsys):
    pre = tmp_path / "syn"
    assert _cli("synth", "--n", 300, "--seed", 1, "--prefix", pre) == 0
    corpus = ["--src", f"{pre}.src", "--tgt", f"{pre}.tgt", "--align", f"{pre}.align"]
    model = tmp_path / "m.npz"
    assert _cli("preorder-train", *corpus, "--model", model, "--iterations", 2, "--quiet", "--hash-bits", 16) == 0
    capsys.readouterr()
    png = tmp_path / "show.png"
    assert _cli("show-reordering", "--model", model, *corpus, "--line", 3, "--png", png) == 0
    captured = capsys.readouterr()
    out = captured.out
    for needle in ("source", "target", "predicted", "oracle", "predicted tree:", "oracle tree:", "Kendall loss",
                   "aligned to", "straight"):
        assert needle in out, needle
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "drawing written" in captured.err
    assert _cli("show-reordering", "--model", model, "--sentence", "the cat sees a dog", "--max-span", 2) == 0
    out = capsys.readouterr().out
    assert "predicted tree" in out and "oracle" not in out
    assert _cli("show-reordering", "--model", model, *corpus, "--line", 999) == 2
    assert "out of range" in capsys.readouterr().err


def test_draw_png_falls_back_to_labels_without_a_font(tmp_path):
    from onmt_xl.core.reorder.btg import order_to_tree
    from onmt_xl.core.reorder.show import Reordering, draw_png

    toks = ["\ue000", "\ue001", "x"]  # private-use characters: no font draws them
    sysm = Reordering("predicted", [2, 0, 1], order_to_tree([2, 0, 1]), 1, 3)
    note = draw_png(str(tmp_path / "f.png"), toks, [sysm], ["p", "q", "r"], [(0, 1), (2, 0)])
    assert "no installed font" in note and (tmp_path / "f.png").stat().st_size > 1000


def test_cli_defaults_are_the_library_defaults():
    import argparse
    import inspect

    from onmt_xl.core.reorder import cli, preorderer

    assert (cli.DEFAULT_CLUSTERS, cli.DEFAULT_BATCH, cli.DEFAULT_ITERATIONS, cli.DEFAULT_PARALLEL) == (
        preorderer.DEFAULT_CLUSTERS, preorderer.DEFAULT_BATCH, preorderer.DEFAULT_ITERATIONS,
        preorderer.DEFAULT_PARALLEL)
    parser = argparse.ArgumentParser()
    cli.add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["preorder-train", "--src", "s", "--tgt", "t", "--align", "a", "--model", "m"])
    sig = inspect.signature(Preorderer.train).parameters
    for arg, param in (("attach_null", "attach_null"), ("tiebreak_null", "tiebreak_null"), ("max_span", "max_span"),
                       ("iterations", "iterations"), ("clusters", "n_clusters"), ("batch", "batch"),
                       ("class_words", "class_words"), ("min_count", "min_count"), ("loss_aug", "loss_aug"),
                       ("max_len", "max_len"), ("parallel", "parallel")):
        assert getattr(args, arg) == sig[param].default, arg
    assert 1 << args.hash_bits == sig["hash_size"].default


def test_kernels_load_without_scipy_and_leave_blas_to_others():
    # numba's BLAS probe imported scipy.linalg (~0.4 s of a translation's start-up); our kernels need no BLAS,
    # and numba code that does (np.dot) still gets it once scipy is imported normally
    import subprocess
    import sys

    pytest.importorskip("scipy", reason="without SciPy numba's BLAS probe costs nothing and np.dot has no BLAS")
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from onmt_xl.core.reorder.features import Vocab\n"
        "from onmt_xl.core.reorder.preorderer import Preorderer\n"
        "model = Preorderer(Vocab(['a', 'b'], 1), np.zeros((16, 2), dtype=np.float32))\n"
        "assert model.reorder('a b c'.split()) == [0, 1, 2]\n"
        "assert 'scipy.linalg' not in sys.modules, 'the probe imported scipy.linalg'\n"
        "import numpy as np, numba, scipy.linalg\n"
        "dot = numba.njit(lambda a, b: np.dot(a, b))\n"
        "a = np.arange(6.0).reshape(2, 3)\n"
        "assert np.allclose(dot(a, a.T), a @ a.T)\n"
        "print('ok')\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr[-2000:]
