"""The xl_position transform: sources of pos_XL, noise, pickling to data workers, start-up errors."""

import pickle
import random
from argparse import Namespace

import pytest

import onmt_xl
from onmt_xl.core.errors import XLInputError
from tests.helpers import tiny_corpus, tiny_preorderer

onmt_xl.register()
from onmt_xl.opennmt.transforms.xl_position import XLPositionTransform, swap_noise  # noqa: E402


def opts(**kw):
    base = dict(xl_source="preorderer", xl_preorderer=None, xl_noise=0.0, seed=-1)
    base.update(kw)
    return Namespace(**base)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pre")
    corpus = tiny_corpus(out, n=300)
    return corpus, tiny_preorderer(out, corpus)


def make(**kw):
    XLPositionTransform._validate_options(opts(**kw))
    t = XLPositionTransform(opts(**kw))
    t.warm_up()
    return t


def test_positions_come_from_the_preorderer(trained):
    corpus, path = trained
    t = make(xl_preorderer=str(path))
    ex = t.apply({"src": list(corpus.src[0]), "tgt": list(corpus.tgt[0])}, is_train=True)
    assert ex["xl_pos"] == t.preorderer.pos_xl(corpus.src[0])
    assert sorted(ex["xl_pos"]) == list(range(len(corpus.src[0])))


def test_transform_pickles_for_data_workers(trained):
    corpus, path = trained
    t = make(xl_preorderer=str(path))
    clone = pickle.loads(pickle.dumps(t))
    src = corpus.src[1]
    assert clone.apply({"src": list(src), "tgt": None})["xl_pos"] == t.apply({"src": list(src), "tgt": None})["xl_pos"]


def test_positions_from_alignments_use_the_btg_oracle():
    t = make(xl_source="align")
    src, tgt = "a b c d".split(), "w x y z".split()
    ex = t.apply({"src": src, "tgt": tgt, "align": ["0-3", "1-2", "2-0", "3-1"], "cid": "train", "cid_line_number": 0})
    # target order c d b a (words 2 3 1 0; BTG tree <0 <1 [2 3]>>): word 0 goes to position 3, word 2 to 0
    assert ex["xl_pos"] == [3, 2, 0, 1]


def test_align_source_errors_name_corpus_and_line():
    t = make(xl_source="align")
    with pytest.raises(XLInputError, match="train.*line 5.*out of range"):
        t.apply({"src": ["a", "b"], "tgt": ["x"], "align": ["0-0", "1-3"], "cid": "train", "cid_line_number": 4})
    with pytest.raises(XLInputError, match="line 5.*malformed Pharaoh token"):
        t.apply({"src": ["a", "b"], "tgt": ["x"], "align": ["0-0", "1:0"], "cid": "train", "cid_line_number": 4})
    with pytest.raises(XLInputError, match="set path_align"):
        t.apply({"src": ["a"], "tgt": ["x"], "cid": "train", "cid_line_number": 4})


def test_noise_only_at_training(trained):
    corpus, path = trained
    t = make(xl_preorderer=str(path), xl_noise=0.5)
    src = max(corpus.src, key=len)
    clean = t.preorderer.pos_xl(src)
    assert t.apply({"src": list(src), "tgt": None}, is_train=False)["xl_pos"] == clean
    noisy = t.apply({"src": list(src), "tgt": None}, is_train=True)["xl_pos"]
    # R·n/2 swaps of distinct positions, rounded down or up: twice that many indices move; still a permutation
    assert sorted(noisy) == list(range(len(src))) == sorted(clean)
    assert 0 < 2 * (len(src) // 4) <= sum(a != b for a, b in zip(noisy, clean)) <= 2 * -(-len(src) // 4)


@pytest.mark.parametrize("n,ratio", [(10, 0.2), (10, 1.0), (7, 0.5), (20, 0.05), (1, 1.0), (6, 0.0)])
def test_swap_noise_moves_whole_pairs_around_the_requested_ratio(n, ratio):
    pos = list(range(n))
    random.Random(0).shuffle(pos)
    rng = random.Random(1)
    for _ in range(50):
        noisy = swap_noise(pos, ratio, rng)
        assert sorted(noisy) == sorted(pos)
        moved = sum(a != b for a, b in zip(pos, noisy))
        low, high = int(ratio * n / 2), -int(-ratio * n // 2)  # floor and ceiling of the expected pairs
        assert moved % 2 == 0 and 2 * low <= moved <= 2 * min(high, n // 2) if n > 1 else moved == 0


@pytest.mark.parametrize("ratio", [0.05, 0.1, 0.15, 0.2])
@pytest.mark.parametrize("n", [4, 9, 10, 16, 40])
def test_swap_noise_moves_the_requested_share_in_expectation(n, ratio):
    """Short sentences too: 5 % of a 10-token sentence is a quarter of a swap, not none (Fig. 4's lowest ratio)."""
    rng, draws = random.Random(3), 4000
    share = sum(sum(a != b for a, b in zip(range(n), swap_noise(list(range(n)), ratio, rng)))
                for _ in range(draws)) / (draws * n)
    assert share == pytest.approx(ratio, abs=0.01)


def test_startup_errors(tmp_path):
    with pytest.raises(ValueError, match="needs -xl_preorderer"):
        XLPositionTransform._validate_options(opts())
    with pytest.raises(ValueError, match="-xl_noise must be in"):
        XLPositionTransform._validate_options(opts(xl_source="align", xl_noise=1.5))
    missing = tmp_path / "nope.xlp"
    with pytest.raises(XLInputError, match=str(missing)):
        XLPositionTransform._validate_options(opts(xl_preorderer=str(missing)))
    corrupt = tmp_path / "corrupt.xlp"
    corrupt.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(XLInputError, match=str(corrupt)):
        XLPositionTransform._validate_options(opts(xl_preorderer=str(corrupt)))


def test_preorderer_positions_are_cached_per_sentence(trained):
    corpus, path = trained
    t = make(xl_preorderer=str(path), xl_cache_size=2)
    calls = []
    real = t.preorderer.pos_xl
    t.preorderer.pos_xl = lambda tokens: calls.append(tuple(tokens)) or real(tokens)
    for src in (corpus.src[0], corpus.src[1], corpus.src[0], corpus.src[2], corpus.src[2]):
        ex = t.apply({"src": list(src), "tgt": None}, is_train=True)
        assert ex["xl_pos"] == real(src)
    assert calls == [tuple(corpus.src[i]) for i in (0, 1, 2, 2)]  # third sentence: cache full
    assert len(t.cache) == 2


def test_empty_source_gets_no_positions(trained):
    _, path = trained
    assert make(xl_preorderer=str(path)).apply({"src": [], "tgt": None})["xl_pos"] == []


def test_prereorder_puts_source_tokens_in_preorderer_order(trained):
    from onmt_xl.opennmt.transforms.xl_position import XLPreReorderTransform

    corpus, path = trained
    t = XLPreReorderTransform(opts(xl_preorderer=str(path)))
    t.warm_up()
    src = list(max(corpus.src, key=len))
    order = t.preorderer.reorder(src)
    assert t.apply({"src": list(src), "tgt": None})["src"] == [src[i] for i in order]


def test_prereorder_with_oracle_alignments():
    from onmt_xl.opennmt.transforms.xl_position import XLPreReorderTransform

    t = XLPreReorderTransform(opts(xl_source="align"))
    t.warm_up()
    ex = {"src": ["I", "ate", "apples"], "tgt": ["W", "R", "T"], "align": ["0-0", "1-2", "2-1"],
          "cid": "train", "cid_line_number": 0}
    assert t.apply(ex)["src"] == ["I", "apples", "ate"]


def test_oracle_positions_at_translation_from_an_alignment_file(tmp_path):
    """Oracle upper bound (test-side alignments): the INFER corpus carries no path_align."""
    path = tmp_path / "test.align"
    path.write_text("0-1 1-0\n0-0 1-2 2-1\n")
    t = make(xl_source="align", xl_align_path=str(path))
    ex = t.apply({"src": ["a", "b", "c"], "tgt": None, "cid": "infer", "cid_line_number": 1})
    assert ex["xl_pos"] == [0, 2, 1]  # line 2 of the file: words 1 and 2 swap
    with pytest.raises(XLInputError, match="test.align, line 3: no alignment line"):
        t.apply({"src": ["a"], "tgt": None, "cid": "infer", "cid_line_number": 2})
    with pytest.raises(XLInputError, match="test.align, line 1: .*source index 1 out of range"):
        t.apply({"src": ["a"], "tgt": None, "cid": "infer", "cid_line_number": 0})


def test_preorderer_file_is_read_once_per_process_and_again_when_rewritten(tmp_path):
    from onmt_xl.opennmt.transforms import xl_position

    corpus = tiny_corpus(tmp_path, n=60)
    path = tiny_preorderer(tmp_path, corpus)
    first = xl_position._load_preorderer(str(path))
    assert xl_position._load_preorderer(str(path)) is first
    import os

    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 10**9))  # "rewritten"
    again = xl_position._load_preorderer(str(path))
    assert again is not first and again.pos_xl(corpus.src[0]) == first.pos_xl(corpus.src[0])


def test_a_bucket_parses_its_cache_misses_in_one_batch_with_the_same_positions_and_noise(trained):
    corpus, path = trained
    srcs = [corpus.src[i] for i in (0, 1, 0, 2, 3, 1)] + [["one"], []]
    one_by_one, bucketed = make(xl_preorderer=str(path), xl_noise=0.3), make(xl_preorderer=str(path), xl_noise=0.3)
    one_by_one._set_seed(7)
    bucketed._set_seed(7)
    expected = [one_by_one.apply({"src": list(s), "tgt": None}, is_train=True)["xl_pos"] for s in srcs]
    batches, singles = [], []  # (the preorderer object is shared: read once per process)
    real_batch, real_one = bucketed.preorderer.pos_xl_batch, bucketed.preorderer.pos_xl
    bucketed.preorderer.pos_xl_batch = lambda batch: batches.append([tuple(s) for s in batch]) or real_batch(batch)
    bucketed.preorderer.pos_xl = lambda tokens: singles.append(tuple(tokens)) or real_one(tokens)
    out = bucketed.batch_apply([({"src": list(s), "tgt": None}, None, "train") for s in srcs], is_train=True)
    assert [ex["xl_pos"] for ex, _, _ in out] == expected  # noise drawn in the same order
    assert batches == [[tuple(corpus.src[i]) for i in (0, 1, 2, 3)]]
    assert singles == [("one",), ()]  # a sentence of one token or none needs no parse
    bucketed.batch_apply([({"src": list(corpus.src[0]), "tgt": None}, None, "train")])
    assert len(batches) == 1  # all cached: no parse at all


def test_a_bucket_larger_than_the_cache_keeps_its_positions_for_the_bucket_only(trained):
    corpus, path = trained
    t = make(xl_preorderer=str(path), xl_cache_size=1)
    singles = []
    real_one = t.preorderer.pos_xl
    t.preorderer.pos_xl = lambda tokens: singles.append(tuple(tokens)) or real_one(tokens)
    out = t.batch_apply([({"src": list(corpus.src[i]), "tgt": None}, None, "train") for i in range(3)])
    assert [ex["xl_pos"] for ex, _, _ in out] == [real_one(corpus.src[i]) for i in range(3)]
    assert singles == [] and len(t.cache) == 1 and t._bucket is None


def test_the_noise_report_names_the_rule_its_runs_had():
    """RESULTS.md's runs (onmt_xl 0.1) rounded R·n/2 to the nearest whole; later ones swap it in expectation."""
    from onmt_xl.experiments.report.noise import noise_rule

    assert noise_rule({"versions": {"onmt_xl": "0.1.0"}}).startswith("`round(ratio·n/2)`")
    assert "in expectation" in noise_rule({"versions": {"onmt_xl": "0.2.0"}}) == noise_rule(None)


# --- the foreign-text warning (onmt_xl.core.reorder.coverage) ---------------------------------------------------------


def _foreign_warnings(caplog):
    return [r.getMessage() for r in caplog.records if "source tokens of" in r.getMessage()]


def test_a_preorderer_on_other_text_warns_once_per_process(trained, caplog, monkeypatch):
    """The synthetic target language as the source: the preorderer knows none of its words. One warning with the
    figure, the file and what to do, after the first 200 tokens; a second transform of the same process says nothing."""
    from onmt_xl.core import position_source
    from onmt_xl.core.data.synthetic import generate

    monkeypatch.setattr(position_source, "_WARNED_FOREIGN", set())
    corpus, path = trained
    foreign = generate(60, seed=9).tgt
    for _ in range(2):
        t = make(xl_preorderer=str(path))
        with caplog.at_level("WARNING", logger="onmt_xl.core.position_source"):
            for k, src in enumerate(foreign):
                t.apply({"src": list(src), "tgt": None, "cid": "test.ja", "cid_line_number": k})
    [message] = _foreign_warnings(caplog)
    assert message.startswith(f"xl_position: warning: the preorderer {path} knows only 0% of the first ")
    assert "source tokens of test.ja" in message
    assert "train a preorderer on this language pair's source text: onmt-xl preorder-train" in message


def test_no_warning_on_its_own_kind_of_text(trained, caplog, monkeypatch):
    from onmt_xl.core import position_source
    from onmt_xl.core.data.synthetic import generate

    monkeypatch.setattr(position_source, "_WARNED_FOREIGN", set())
    corpus, path = trained
    t = make(xl_preorderer=str(path))
    held_out = generate(60, seed=10).src  # other sentences of the same language
    with caplog.at_level("WARNING", logger="onmt_xl.core.position_source"):
        for src in held_out:
            t.apply({"src": list(src), "tgt": None})
    assert t._coverage is None  # the check ran to its end
    assert _foreign_warnings(caplog) == []
