"""BTG trees and the Kendall-loss BTG oracle (onmt_xl.core.reorder.btg / .oracle)."""

import itertools
import random
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onmt_xl.core.reorder.btg import (
    BTGNode,
    is_btg_permutation,
    leaf,
    node,
    order_to_pos_xl,
    order_to_tree,
    pos_xl_to_order,
    tree_to_order,
    tree_to_str,
)
from onmt_xl.core.reorder.oracle import (
    btg_oracle,
    btg_oracle_ranks,
    kendall_loss,
    ordered_pairs,
    target_ranks,
)


def has_2413_or_3142(p):
    for a, b, c, d in itertools.combinations(range(len(p)), 4):
        x = [p[a], p[b], p[c], p[d]]
        pattern = tuple(sorted(x).index(v) for v in x)
        if pattern in ((1, 3, 0, 2), (2, 0, 3, 1)):
            return True
    return False


@lru_cache(maxsize=None)
def all_btg_orders(s, e):
    """Every order any BTG tree over [s, e) yields (brute force)."""
    if e - s == 1:
        return frozenset([(s,)])
    out = set()
    for m in range(s + 1, e):
        for left in all_btg_orders(s, m):
            for right in all_btg_orders(m, e):
                out.add(left + right)
                out.add(right + left)
    return frozenset(out)


def random_btg_tree(rng, s, e):
    if e - s == 1:
        return leaf(s)
    m = rng.randrange(s + 1, e)
    return node(random_btg_tree(rng, s, m), random_btg_tree(rng, m, e), rng.random() < 0.5)


links_strategy = st.integers(0, 12).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, 14)), max_size=2 * n if n else 0),
    )
)


# --- btg.py -------------------------------------------------------------------------------


def test_is_btg_permutation_matches_pattern_avoidance():
    for n in range(0, 8):
        for p in itertools.permutations(range(n)):
            assert is_btg_permutation(p) == (not has_2413_or_3142(p)), p


def test_is_btg_permutation_rejects_non_permutations():
    assert not is_btg_permutation([0, 0])
    assert not is_btg_permutation([1, 2])
    assert not is_btg_permutation([-1, 0])
    assert is_btg_permutation([])


def test_order_to_tree_round_trip_and_bracket_form():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 30)
        tree = random_btg_tree(rng, 0, n)
        order = tree_to_order(tree)
        assert sorted(order) == list(range(n)) and is_btg_permutation(order)
        assert tree_to_order(order_to_tree(order)) == order
    with pytest.raises(ValueError):
        order_to_tree([1, 3, 0, 2])
    tree = node(leaf(0), node(leaf(1), node(leaf(2), leaf(3)), inverted=True))
    assert tree_to_str(tree, "I ate the apple".split()) == "[I <ate [the apple]>]"
    assert tree_to_order(tree) == [0, 2, 3, 1]
    assert tree_to_str(None) == "[]"
    assert tree_to_order(BTGNode(0, 3)) == [0, 1, 2]  # a multi-word leaf keeps source order


def test_pos_xl_is_inverse():
    order = [2, 0, 3, 1]
    pos = order_to_pos_xl(order)
    assert pos == [1, 3, 0, 2]
    assert [order[p] for p in pos] == [0, 1, 2, 3]
    assert pos_xl_to_order(pos) == order


# --- ranks and loss ----------------------------------------------------------------------


def test_target_ranks_spans_ties_and_unaligned():
    # word 0 -> {2}, word 1 -> {0, 3} (span 0..3), word 2 unaligned, word 3 -> {0}, word 4 -> {2}
    ranks = target_ranks(5, [(0, 2), (1, 0), (1, 3), (3, 0), (4, 2)])
    # spans: (2,2) (0,3) - (0,0) (2,2) -> sorted (0,0) < (0,3) < (2,2)
    assert ranks.tolist() == [2, 1, -1, 0, 2]
    assert target_ranks(0, []).tolist() == []
    with pytest.raises(ValueError):
        target_ranks(2, [(2, 0)])


def test_kendall_loss_ignores_ties_and_unaligned():
    ranks = np.array([0, 0, -1, 1])
    assert kendall_loss([0, 1, 2, 3], ranks) == 0
    assert kendall_loss([1, 0, 3, 2], ranks) == 0  # tie swapped, unaligned moved
    assert kendall_loss([3, 2, 1, 0], ranks) == 2
    assert ordered_pairs(ranks) == 2


# --- oracle -------------------------------------------------------------------------------


def test_svo_to_sov_hand_computed():
    # "John ate the apple" -> "John wa ringo o tabeta": the unaligned, "wa"/"o" unaligned
    src = "John ate the apple".split()
    res = btg_oracle(4, [(0, 0), (1, 4), (3, 2)])
    assert res.loss == 0
    assert res.order == [0, 2, 3, 1]  # determiner stays with its noun
    assert res.pos_xl == [0, 3, 1, 2]
    assert tree_to_str(res.tree, src) == "[John <ate [the apple]>]"
    assert tree_to_order(res.tree) == res.order


def test_unavoidable_loss_hand_computed():
    # target order 2 4 1 3 (pattern 2413) is not BTG: best is one wrong pair
    res = btg_oracle(4, [(0, 1), (1, 3), (2, 0), (3, 2)])
    assert res.loss == 1
    assert is_btg_permutation(res.order)


def test_small_lengths():
    assert btg_oracle(0, []).order == [] and btg_oracle(0, []).loss == 0
    r1 = btg_oracle(1, [(0, 5)])
    assert r1.order == [0] and r1.pos_xl == [0] and r1.loss == 0 and r1.tree == BTGNode(0, 1)
    assert btg_oracle(2, [(0, 1), (1, 0)]).order == [1, 0]
    assert btg_oracle(2, [(0, 0), (1, 0)]).order == [0, 1]  # tie: keep source order


def test_unaligned_words_stay_in_place():
    assert btg_oracle(6, []).order == list(range(6))
    # u a b c with a < b < c: monotone, the unaligned word stays first
    assert btg_oracle(4, [(1, 0), (2, 1), (3, 2)]).order == [0, 1, 2, 3]
    # a u b c with target c a b: u stays between a and b
    res = btg_oracle(4, [(0, 1), (2, 2), (3, 0)])
    assert res.loss == 0 and res.order == [3, 0, 1, 2]
    # ties stay in source order too
    assert btg_oracle(3, [(0, 0), (1, 0), (2, 0)]).order == [0, 1, 2]


@settings(max_examples=300, deadline=None)
@given(links_strategy)
def test_oracle_is_btg_permutation_and_beats_baselines(case):
    n, links = case
    res = btg_oracle(n, links)
    ranks = target_ranks(n, links)
    assert sorted(res.order) == list(range(n))
    assert is_btg_permutation(res.order)
    assert res.pos_xl == order_to_pos_xl(res.order)
    assert res.loss == kendall_loss(res.order, ranks)
    assert res.loss <= kendall_loss(list(range(n)), ranks)
    assert res.loss <= kendall_loss(list(range(n))[::-1], ranks)
    assert tree_to_order(res.tree) == res.order


def test_oracle_recovers_random_btg_permutations():
    rng = random.Random(1)
    for _ in range(300):
        n = rng.randint(1, 40)
        order = tree_to_order(random_btg_tree(rng, 0, n))
        pos = order_to_pos_xl(order)
        res = btg_oracle(n, [(i, pos[i]) for i in range(n)])
        assert res.loss == 0
        assert res.order == order


def test_oracle_matches_brute_force_over_all_btg_trees():
    rng = np.random.default_rng(2)
    for _ in range(400):
        n = int(rng.integers(1, 7))
        ranks = rng.integers(-1, 4, size=n)  # ties and unaligned words
        res = btg_oracle_ranks(ranks)
        brute = min(kendall_loss(o, ranks) for o in all_btg_orders(0, n))
        assert res.loss == brute, (ranks, res.order)


def test_oracle_deterministic():
    rng = np.random.default_rng(3)
    ranks = rng.integers(-1, 5, size=25)
    a, b = btg_oracle_ranks(ranks), btg_oracle_ranks(ranks.copy())
    assert a.order == b.order and a.loss == b.loss


def test_oracle_long_sentence():
    n = 300
    rng = np.random.default_rng(4)
    links = [(i, int(j)) for i, j in enumerate(rng.permutation(n))]
    res = btg_oracle(n, links, with_tree=False)
    assert sorted(res.order) == list(range(n)) and is_btg_permutation(res.order)
    assert res.tree is None


def test_target_ranks_attach_null():
    links = [(1, 3), (3, 1)]
    assert target_ranks(6, links).tolist() == [-1, 1, -1, 0, -1, -1]
    assert target_ranks(6, links, "right").tolist() == [1, 1, 0, 0, 0, 0]
    assert target_ranks(6, links, "left").tolist() == [1, 1, 1, 0, 0, 0]
    assert target_ranks(3, [], "right").tolist() == [-1, -1, -1]
    with pytest.raises(ValueError):
        target_ranks(3, [], "middle")
    # "V the N" -> "N V": attached right, "the" must now precede "V" as well
    res = btg_oracle(3, [(0, 1), (2, 0)], attach_null="right")
    assert res.order == [1, 2, 0] and res.loss == 0


# --- metrics ------------------------------------------------------------------------------


def test_chunks_and_fuzzy_reordering_score():
    from onmt_xl.core.reorder.metrics import count_chunks, fuzzy_reordering_score

    assert count_chunks([0, 1, 2, 3], [0, 1, 2, 3]) == 1
    assert count_chunks([2, 3, 0, 1], [0, 1, 2, 3]) == 2
    assert count_chunks([3, 2, 1, 0], [0, 1, 2, 3]) == 4
    assert fuzzy_reordering_score([2, 3, 0, 1], [0, 1, 2, 3]) == pytest.approx(1 - 1 / 3)
    assert fuzzy_reordering_score([3, 2, 1, 0], [0, 1, 2, 3]) == 0.0
    assert fuzzy_reordering_score([0], [0]) == 1.0


def test_evaluate_hand_computed():
    from onmt_xl.core.reorder.metrics import evaluate

    # sentence 1: target order 2 0 1 (3 pairs); sentence 2: unaligned word + tie (1 pair)
    r1 = target_ranks(3, [(0, 1), (1, 2), (2, 0)])
    r2 = target_ranks(3, [(0, 0), (1, 0), (2, 1)])  # ranks 0 0 1: a tie
    r3 = target_ranks(2, [(0, 0)])  # one aligned, one unaligned word: no pairs
    pred = [[0, 1, 2], [1, 0, 2], [1, 0]]
    s = evaluate(pred, [r1, r2, r3])
    # pairs: s1 3 (monotone gets (0,1) right only), s2 2, s3 0
    assert s.n_sentences == 3 and s.n_pairs == 5
    assert s.tau == pytest.approx((1 + 2 + 0) / 5)
    assert s.exact_match == pytest.approx(2 / 3)  # s2 (tie swapped) and s3 have zero loss
    assert s.monotone_tau == pytest.approx(3 / 5) and s.oracle_tau == 1.0
    # FRS vs oracle orders [2 0 1], [0 1 2], [0 1]: chunks 2, 3, 2 over M-1 = 2 + 2 + 1
    assert s.frs == pytest.approx(1 - (1 + 2 + 1) / 5)
    # over aligned words only: s3 has one aligned word, so 2 + 2 word gaps; monotone breaks s1 once
    assert s.frs_aligned == pytest.approx(1 - (1 + 2) / 4) and s.monotone_frs_aligned == pytest.approx(1 - 1 / 4)
    assert "monotone" in s.format() and "oracle" in s.format() and "FRS-al" in s.format()
    with pytest.raises(ValueError):
        evaluate([[0, 0, 1]], [r1])
    with pytest.raises(ValueError):
        evaluate([[0, 1]], [r1])
    empty = evaluate([], [])
    assert empty.n_sentences == 0 and empty.tau == 1.0
