"""The synthetic SVO -> SOV parallel corpus (onmt_xl.core.data.synthetic)."""

import numpy as np
import pytest

from onmt_xl.core.align.pharaoh import read_pharaoh
from onmt_xl.core.reorder.btg import is_btg_permutation
from onmt_xl.core.reorder.oracle import btg_oracle, kendall_loss, target_ranks
from onmt_xl.core.data.synthetic import MAX_LEN, MIN_LEN, generate, vocab, write


@pytest.fixture(scope="module")
def corpus():
    return generate(1500, seed=7, divergence=1.0)


def test_deterministic_with_seed():
    a, b = generate(200, seed=3), generate(200, seed=3)
    assert a.src == b.src and a.tgt == b.tgt and a.links == b.links
    c = generate(200, seed=4)
    assert a.src != c.src
    # the lexicon is fixed: other seeds share the vocabulary
    assert set(vocab(c.src)) <= set(vocab(generate(3000, seed=3).src))


def test_shapes_lengths_and_links(corpus):
    assert len(corpus) == 1500 and len(corpus.tgt) == len(corpus.links) == len(corpus.orders) == 1500
    lens = [len(s) for s in corpus.src]
    assert MIN_LEN <= min(lens) and max(lens) <= MAX_LEN
    assert 7 <= np.mean(lens) <= 15
    for src, tgt, links in zip(corpus.src, corpus.tgt, corpus.links):
        assert links == sorted(set(links))
        for i, j in links:
            assert 0 <= i < len(src) and 0 <= j < len(tgt)
        assert tgt[-1] == "。"


def test_vocabularies_small_and_distinct(corpus):
    src_v, tgt_v = set(vocab(corpus.src)), set(vocab(corpus.tgt))
    assert 50 < len(src_v) < 300 and 50 < len(tgt_v) < 300
    assert not (src_v & tgt_v)


def test_true_reordering_is_btg_expressible(corpus):
    for src, links, order in zip(corpus.src, corpus.links, corpus.orders):
        res = btg_oracle(len(src), links)
        assert res.loss == 0
        assert is_btg_permutation(order)
        assert kendall_loss(order, target_ranks(len(src), links)) == 0


def test_divergence_zero_is_monotone():
    mono = generate(500, seed=2, divergence=0.0)
    for src, links, order in zip(mono.src, mono.links, mono.orders):
        assert btg_oracle(len(src), links).order == list(range(len(src)))
        assert order == list(range(len(src)))


def test_divergence_controls_reordering():
    def reordered_fraction(d):
        c = generate(400, seed=9, divergence=d)
        return np.mean([btg_oracle(len(s), l).order != list(range(len(s))) for s, l in zip(c.src, c.links)])

    fractions = [reordered_fraction(d) for d in (0.0, 0.3, 1.0)]
    assert fractions[0] == 0.0 < fractions[1] < fractions[2]
    assert fractions[2] > 0.8
    with pytest.raises(ValueError):
        generate(1, divergence=1.5)


def test_write_round_trip(tmp_path):
    c = generate(30, seed=11)
    paths = write(c, str(tmp_path / "syn"))
    src = [l.split() for l in open(paths["src"], encoding="utf-8")]
    tgt = [l.split() for l in open(paths["tgt"], encoding="utf-8")]
    assert src == c.src and tgt == c.tgt
    assert read_pharaoh(paths["align"], [len(s) for s in src], [len(t) for t in tgt]) == c.links
