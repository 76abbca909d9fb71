"""The payoff curve's interpolation: positions part way along a shortest Kendall path (onmt_xl.core.reorder.interpolate)."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from onmt_xl.core.reorder.interpolate import discordant_pairs, kendall_path


def permutations(max_n=9):
    return st.integers(1, max_n).flatmap(lambda n: st.tuples(st.permutations(range(n)), st.permutations(range(n))))


def adjacent(a, b):
    """Whether the orders of pos_xl a and b differ by one swap of neighbours in the sentence's target order."""
    diff = [j for j in range(len(a)) if a[j] != b[j]]
    return len(diff) == 2 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]] and abs(a[diff[0]] - a[diff[1]]) == 1


def test_ends_are_the_prediction_and_the_reference():
    pred, ref = [2, 0, 1, 3], [0, 1, 2, 3]
    assert kendall_path(pred, ref, 0.0) == pred
    assert kendall_path(pred, ref, 1.0) == ref


def test_a_worked_example():
    # the reversed order of 3 tokens is 3 swaps from the monotone one; bubble sort swaps places (0,1), (1,2), (0,1)
    pred, ref = [2, 1, 0], [0, 1, 2]
    assert discordant_pairs(pred, ref) == 3
    assert kendall_path(pred, ref, 1 / 3) == [2, 0, 1]
    assert kendall_path(pred, ref, 2 / 3) == [1, 0, 2]
    assert kendall_path(pred, ref, 0.5) == [1, 0, 2]  # round(1.5) = 2


@settings(max_examples=200, deadline=None)
@given(permutations(), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
def test_distance_to_the_reference_falls_linearly(pair, alpha):
    pred, ref = pair
    d = discordant_pairs(pred, ref)
    pos = kendall_path(pred, ref, alpha)
    assert sorted(pos) == list(range(len(pred)))
    assert discordant_pairs(pos, ref) == d - round(alpha * d)
    assert discordant_pairs(pos, pred) == round(alpha * d)  # on a shortest path: both distances add up to d


@settings(max_examples=100, deadline=None)
@given(permutations(7))
def test_consecutive_levels_are_one_adjacent_swap_apart(pair):
    pred, ref = pair
    d = discordant_pairs(pred, ref)
    path = [kendall_path(pred, ref, k / d) for k in range(d + 1)] if d else [list(pred)]
    assert path[0] == list(pred) and path[-1] == list(ref)
    assert all(adjacent(a, b) for a, b in zip(path, path[1:]))


def test_discordant_pairs_counts_every_disagreeing_pair():
    for pred in itertools.permutations(range(4)):
        brute = sum((pred[i] < pred[j]) != (i < j) for i in range(4) for j in range(4) if i < j)
        assert discordant_pairs(pred, range(4)) == brute


@pytest.mark.parametrize("pred, ref, alpha, message", [
    ([0, 1], [0, 1, 2], 0.5, "2 and 3 tokens"),
    ([0, 0], [0, 1], 0.5, "permutations"),
    ([0, 1], [1, 0], 1.5, "alpha must lie in"),
])
def test_bad_input_is_refused(pred, ref, alpha, message):
    with pytest.raises(ValueError, match=message):
        kendall_path(pred, ref, alpha)
