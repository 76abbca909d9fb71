"""Tests for onmt_xl.core.align.subword: projection of word links, word <-> sub-word maps, order collapse."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from onmt_xl.core.align.subword import (
    JOINER,
    Segmentation,
    SubwordModel,
    collapse_links,
    collapse_order,
    expand_order,
    merge_pieces,
    offsets_from_pieces,
    piece_to_word,
    project_corpus,
    project_links,
)

REPO = Path(__file__).resolve().parents[1]
ENJA_DIR = REPO / ".." / "shared" / "data" / "enja"
J = JOINER


# --- projection (hand-made) ---------------------------------------------------------------------------


def test_project_links_hand_example():
    # source words: [ab, c] -> pieces a￭ b | c (offsets 0,2,3); target words [x, yz] -> x | y￭ z (0,1,3)
    # word links 0-1 and 1-0: each piece of source word 0 to each piece of target word 1, c to x.
    assert project_links([(0, 1), (1, 0)], [0, 2, 3], [0, 1, 3]) == [(0, 1), (0, 2), (1, 1), (1, 2), (2, 0)]
    # many-to-many at word level stays a full block per link; duplicates are merged
    assert project_links([(0, 0), (0, 0), (1, 0)], [0, 1, 3], [0, 2]) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    # target left at word level
    assert project_links([(1, 4), (0, 0)], [0, 3, 4]) == [(0, 0), (1, 0), (2, 0), (3, 4)]
    # identity offsets: links unchanged; no links: none
    assert project_links([(2, 0), (0, 1)], [0, 1, 2, 3], [0, 1, 2]) == [(0, 1), (2, 0)]
    assert project_links([], [0, 2], [0, 1]) == []


def test_collapse_links():
    # any piece pair linked -> word pair linked
    assert collapse_links([(1, 2), (2, 0)], [0, 2, 3], [0, 1, 3]) == [(0, 1), (1, 0)]
    assert collapse_links([(0, 5), (1, 5), (3, 1)], [0, 2, 4]) == [(0, 5), (1, 1)]
    rng = random.Random(2)
    for _ in range(100):
        so, to = [0], [0]
        for _ in range(rng.randint(1, 6)):
            so.append(so[-1] + rng.randint(1, 3))
        for _ in range(rng.randint(1, 6)):
            to.append(to[-1] + rng.randint(1, 3))
        links = [(rng.randrange(len(so) - 1), rng.randrange(len(to) - 1)) for _ in range(rng.randint(0, 8))]
        assert collapse_links(project_links(links, so, to), so, to) == sorted(set(links))
    with pytest.raises(ValueError, match="source piece 3"):
        collapse_links([(3, 0)], [0, 1, 3])


def test_project_links_errors():
    with pytest.raises(ValueError, match="source word 2 out of range"):
        project_links([(2, 0)], [0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="target word 1 out of range"):
        project_links([(0, 1)], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="increase strictly"):
        project_links([], [0, 1, 1], None)  # a word without pieces


def test_project_corpus_and_target_ranks_agree():
    from onmt_xl.core.reorder import target_ranks

    src = Segmentation(["a" + J, "b", "c", "d" + J, "e" + J, "f"], [0, 2, 3, 6])
    tgt = Segmentation(["x", "y" + J, "z", "w"], [0, 1, 3, 4])
    word_links = [(0, 2), (1, 1), (2, 0)]  # fully inverted
    (sub,) = project_corpus([word_links], [src], [tgt])
    assert sub == [(0, 3), (1, 3), (2, 1), (2, 2), (3, 0), (4, 0), (5, 0)]
    # every piece of a word gets its word's rank: the pieces of one word tie
    ranks = target_ranks(6, sub).tolist()
    assert ranks == [2, 2, 1, 0, 0, 0]
    assert target_ranks(3, word_links).tolist() == [2, 1, 0]


# --- joiners, maps, orders ---------------------------------------------------------------------------------


def test_offsets_and_merge_both_joiner_styles():
    bpe_style = ["ハン" + J, "バ" + J, "ー", "は", "東" + J, "京"]
    sp_style = ["ハン", J + "バ", J + "ー", "は", "東", J + "京"]
    for pieces in (bpe_style, sp_style):
        assert offsets_from_pieces(pieces) == [0, 3, 4, 6]
        assert merge_pieces(pieces) == ["ハンバー", "は", "東京"]
    assert offsets_from_pieces([]) == [0] and merge_pieces([]) == []
    assert piece_to_word([0, 3, 4, 6]) == [0, 0, 0, 1, 2, 2]
    seg = Segmentation(sp_style, [0, 3, 4, 6])
    assert seg.n_words == 3 and list(seg.word_pieces(2)) == [4, 5] and seg.words() == ["ハンバー", "は", "東京"]


def test_collapse_order_hand_examples():
    offsets = [0, 1, 2, 4, 5]  # words: w0=[0] w1=[1] w2=[2,3] w3=[4]
    assert collapse_order([0, 1, 2, 3, 4], offsets) == [0, 1, 2, 3]
    assert collapse_order([2, 3, 0, 1, 4], offsets) == [2, 0, 1, 3]
    # pieces of w2 torn apart: positions 0 and 4 -> mean 2, ties with w1 (position 2) -> source order
    assert collapse_order([2, 0, 1, 4, 3], offsets) == [0, 1, 2, 3]
    assert collapse_order([3, 0, 1, 4, 2], offsets) == [0, 1, 2, 3]
    # mean, not first piece: w2 at positions 1 and 4 (mean 2.5) goes after w0 (position 2)
    assert collapse_order([4, 2, 0, 1, 3], offsets) == [3, 0, 2, 1]
    with pytest.raises(ValueError, match="not a permutation"):
        collapse_order([0, 0, 1, 2, 3], offsets)


def test_collapse_is_a_permutation_and_inverts_expand():
    rng = random.Random(0)
    for _ in range(300):
        n_words = rng.randint(0, 12)
        sizes = [rng.randint(1, 4) for _ in range(n_words)]
        offsets = [0]
        for s in sizes:
            offsets.append(offsets[-1] + s)
        sub = list(range(offsets[-1]))
        rng.shuffle(sub)
        words = collapse_order(sub, offsets)
        assert sorted(words) == list(range(n_words))
        word_order = list(range(n_words))
        rng.shuffle(word_order)
        expanded = expand_order(word_order, offsets)
        assert sorted(expanded) == list(range(offsets[-1]))
        assert collapse_order(expanded, offsets) == word_order


# --- pyonmttok models ----------------------------------------------------------------------------------------


def _toy_corpus(n=400, seed=1):
    rng = random.Random(seed)
    stems = ["tabe", "nomi", "kaki", "yomi", "hashiri", "oyogi", "utai", "aruki"]
    ends = ["masu", "mashita", "masen", "tai", "nagara"]
    nouns = ["gakusei", "sensei", "hon", "mizu", "kuruma", "tegami", "ongaku"]
    return [
        [rng.choice(nouns), rng.choice(["ga", "wa", "o"]), rng.choice(nouns), "o", rng.choice(stems) + rng.choice(ends), "."]
        for _ in range(n)
    ]


@pytest.mark.parametrize("kind,size", [("bpe", 30), ("sentencepiece", 50)])
def test_subword_model_round_trip(tmp_path, kind, size):
    corpus = _toy_corpus()
    model = SubwordModel.learn(corpus, str(tmp_path / f"m.{kind}"), kind=kind, size=size)
    split = 0
    for words in corpus[:100] + [["gakuseitabemashita", "x\u3000y", "\u3000", "Ω"]]:
        seg = model.segment(words)
        assert seg.n_words == len(words)
        assert all(len(seg.word_pieces(i)) >= 1 for i in range(len(words)))
        if "\u3000" not in "".join(words):  # pyonmttok drops Unicode spaces inside a token
            assert seg.words() == words  # from the map
            assert merge_pieces(seg.pieces) == words  # from the joiners alone
            assert offsets_from_pieces(seg.pieces) == seg.offsets
            assert model.tokenize_line(" ".join(words)) == seg.pieces  # same as pyonmttok on the line
        split += sum(len(seg.word_pieces(i)) > 1 for i in range(len(words)))
    assert split > 0  # the model does split words
    odd = model.segment(["x\u3000y", "\u3000", "Ω"])
    assert odd.n_words == 3 and odd.pieces[-2:] == ["\u3000", "Ω"]  # a word with no piece is kept whole
    assert odd.words()[1:] == ["\u3000", "Ω"] and merge_pieces(odd.pieces)[0] == "xy"
    assert SubwordModel(kind, model.model_path).segment(corpus[0]).pieces == model.segment(corpus[0]).pieces


def test_subword_model_errors(tmp_path):
    with pytest.raises(ValueError, match="kind must be"):
        SubwordModel.learn([["a"]], str(tmp_path / "m"), kind="wordpiece")
    with pytest.raises(FileNotFoundError):
        SubwordModel("bpe", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="no sentences"):
        SubwordModel.learn([], str(tmp_path / "m"))
    model = SubwordModel.learn(_toy_corpus(50), str(tmp_path / "m"), size=10)
    with pytest.raises(TypeError):
        model.segment("a string")


# --- shared data -----------------------------------------------------------------------------------------------


def test_enja_bpe_round_trip(tmp_path):
    if not (ENJA_DIR / "train.ja").is_file() or not (ENJA_DIR / "dev.ja").is_file():
        pytest.skip(f"enja data {ENJA_DIR}/{{train,dev}}.ja not present")
    from onmt_xl.core.align.eflomal_aligner import read_tokenized

    train, dev = read_tokenized(str(ENJA_DIR / "train.ja")), read_tokenized(str(ENJA_DIR / "dev.ja"))
    model = SubwordModel.learn(train[:10000], str(tmp_path / "ja.bpe"), size=2000)
    for words in dev:
        seg = model.segment(words)
        assert merge_pieces(seg.pieces) == words
        assert model.tokenize_line(" ".join(words)) == seg.pieces


def test_bench_subword_tool(tmp_path, capsys):
    """tools/bench/bench_subword.py end to end on synthetic data (train/dev files named like enja's): learn BPE,
    align, project, train word- and sub-word-level preorderers, collapse, score."""
    import importlib.util
    import json

    from onmt_xl.core.data import synthetic

    for split, n, seed in (("train", 300, 2), ("dev", 30, 3)):
        c = synthetic.generate(n, seed=seed)
        for lang, sents in (("xx", c.src), ("yy", c.tgt)):
            (tmp_path / f"{split}.{lang}").write_text("".join(" ".join(s) + "\n" for s in sents), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("bench_subword", REPO / "tools" / "bench" / "bench_subword.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "r.json"
    calls = []  # every (orders per seed, sentences, links) the tool scores
    real_scores_runs = mod.scores_runs
    mod.scores_runs = lambda runs, sents, links: calls.append((runs, sents, links)) or real_scores_runs(runs, sents, links)
    assert mod.main(["--data", str(tmp_path), "--src", "xx", "--tgt", "yy", "--subword", "bpe:40",
                     "--iterations", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| sub-word preorderer, projected links |" in text
    res = json.loads(out.read_text(encoding="utf-8"))
    (row,) = res["subword"]
    assert row["dev_pieces_per_word"] > 1 and row["line_tokenization_mismatches"] == 0
    # tau by hand from the scored orders: aligned pairs with distinct target spans (min, max link), concordant
    # when the word placed first has the smaller span; scored in order: word, sub-word, collapsed, expanded
    word_call, sub_call, collapsed_call, expanded_call = calls
    for figures, call in ((res["word"], word_call), (row["subword"], sub_call), (row["collapsed"], collapsed_call),
                          (row["word_model_expanded"], expanded_call)):
        runs, sents, links = call
        assert figures["tau"] == pytest.approx(_tau_by_hand(runs[0], sents, links), abs=1e-12)
        assert figures["monotone_tau"] == pytest.approx(
            _tau_by_hand([list(range(len(x))) for x in sents], sents, links), abs=1e-12)
    # SVO -> SOV is learnable: the collapsed sub-word predictions beat the monotone order
    assert row["collapsed"]["monotone_tau"] < row["collapsed"]["tau"]
    assert row["vs_word"]["diff"] == pytest.approx(row["collapsed"]["tau"] - res["word"]["tau"], abs=1e-12)
    assert row["vs_word"]["lo"] <= row["vs_word"]["diff"] <= row["vs_word"]["hi"]


def _tau_by_hand(orders, sents, links):
    """Normalized Kendall tau over a corpus, counted pair by pair (independent of onmt_xl.core.reorder)."""
    concordant = pairs = 0
    for order, sent, ls in zip(orders, sents, links):
        span = {}
        for i, j in ls:
            lo, hi = span.get(i, (j, j))
            span[i] = (min(lo, j), max(hi, j))
        placed = [i for i in order if i in span]
        for a in range(len(placed)):
            for b in range(a + 1, len(placed)):
                sa, sb = span[placed[a]], span[placed[b]]
                if sa != sb:
                    pairs += 1
                    concordant += sa < sb
    return concordant / pairs
