"""onmt_xl.experiments.stats: Holm's correction, mean ± sd, and the seed-pooled paired bootstrap."""

import random

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from onmt_xl.experiments.stats import (bleu_from_statistics, bleu_statistics, holm, mean_sd,
                                       seed_pooled_bootstrap)


def test_holm_by_hand():
    # sorted: d .005 (x4 = .02), a .01 (x3 = .03), c .03 (x2 = .06), b .04 (x1 = .04 -> .06, kept monotone)
    adj = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert adj == pytest.approx({"d": 0.02, "a": 0.03, "c": 0.06, "b": 0.06})


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0, 1), min_size=1, max_size=12))
def test_holm_properties(ps):
    adj = holm(ps)
    assert set(adj) == set(ps)
    for k in ps:
        assert ps[k] <= adj[k] + 1e-15 and adj[k] <= 1.0
        assert adj[k] <= min(1.0, len(ps) * ps[k]) + 1e-15  # never above Bonferroni
    order = sorted(ps, key=ps.get)
    assert all(adj[a] <= adj[b] for a, b in zip(order, order[1:]))


def test_mean_sd():
    assert mean_sd([1.0, 3.0]) == (2.0, pytest.approx(2 ** 0.5))
    assert mean_sd([5.0]) == (5.0, None)


def corpus(n=60, seed=0):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(n)]
    return refs, rng


def noisy(refs, rate, rng):
    """Each word of each reference replaced with probability ``rate``."""
    return [" ".join(w if rng.random() > rate else "zz" for w in r.split()) for r in refs]


def test_statistics_give_sacrebleus_corpus_bleu_on_a_resample():
    refs, rng = corpus()
    hyps = noisy(refs, 0.3, rng)
    stats = bleu_statistics(hyps, refs)
    idx = [rng.randrange(len(refs)) for _ in range(len(refs))]
    summed = sum(stats[i] for i in idx)
    expected = sacrebleu.corpus_bleu([hyps[i] for i in idx], [[refs[i] for i in idx]]).score
    assert bleu_from_statistics(summed) == pytest.approx(expected, abs=1e-9)



def test_statistics_are_memoised_by_content_and_read_only():
    """A report scores each run against several others: the statistics are computed once per content, never per
    list object, so a list edited in place is scored afresh."""
    refs, rng = corpus()
    hyps = noisy(refs, 0.3, rng)
    first = bleu_statistics(hyps, refs)
    assert bleu_statistics(list(hyps), list(refs)) is first and not first.flags.writeable
    hyps[0] = refs[0]  # the same list object, other content
    again = bleu_statistics(hyps, refs)
    assert again is not first and again[0].tolist() != first[0].tolist() and (again[1:] == first[1:]).all()

def test_tokenized_text_is_scored_without_sacrebleus_detokenization_warning(caplog):
    refs = [f"sentence number {i} ." for i in range(150)]  # >= 100 lines ending in " ." make sacrebleu warn
    hyps = [f"sentence {i} ." for i in range(150)]
    with caplog.at_level("WARNING", logger="sacrebleu"):
        stats = bleu_statistics(hyps, refs)
        seed_pooled_bootstrap([hyps], [refs], refs, n_samples=10)
    assert not [r for r in caplog.records if "detokenize" in r.getMessage()]
    assert bleu_from_statistics(stats.sum(axis=0)) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], force=True).score)


def test_identical_systems_have_no_difference():
    refs, rng = corpus()
    runs = [noisy(refs, 0.3, rng) for _ in range(3)]
    c = seed_pooled_bootstrap(runs, runs, refs, n_samples=200)
    assert c.delta == 0 and c.p_value == 1.0 and c.low <= 0 <= c.high


@settings(deadline=None, max_examples=5)
@given(st.integers(0, 10_000))
def test_a_clearly_better_system_is_significant(seed):
    refs, rng = corpus(seed=seed)
    good = [noisy(refs, 0.1, rng) for _ in range(3)]
    bad = [noisy(refs, 0.5, rng) for _ in range(3)]
    c = seed_pooled_bootstrap(good, bad, refs, n_samples=300, seed=seed)
    assert c.delta > 0 and c.low > 0 and c.p_value < 0.01
    r = seed_pooled_bootstrap(bad, good, refs, n_samples=300, seed=seed)
    assert r.delta == pytest.approx(-c.delta) and r.high < 0 and r.p_value < 0.01


def test_seed_spread_widens_the_interval():
    """The same mean difference is less certain when the seed runs of a system disagree."""
    refs, rng = corpus(n=80)
    base = [noisy(refs, 0.3, rng) for _ in range(3)]
    steady = [noisy(refs, 0.25, rng) for _ in range(3)]
    spread = [noisy(refs, 0.05, rng), noisy(refs, 0.25, rng), noisy(refs, 0.45, rng)]
    a = seed_pooled_bootstrap(steady, base, refs, n_samples=400)
    b = seed_pooled_bootstrap(spread, base, refs, n_samples=400)
    assert b.high - b.low > a.high - a.low


def test_the_seed_makes_it_reproducible():
    refs, rng = corpus()
    x, y = [noisy(refs, 0.3, rng) for _ in range(2)], [noisy(refs, 0.35, rng) for _ in range(2)]
    assert seed_pooled_bootstrap(x, y, refs, n_samples=100, seed=7) == seed_pooled_bootstrap(x, y, refs, n_samples=100, seed=7)
    assert seed_pooled_bootstrap(x, y, refs, n_samples=100, seed=7) != seed_pooled_bootstrap(x, y, refs, n_samples=100, seed=8)


def _reference_bootstrap(system, baseline, metric, n_samples, seed, confidence=0.95):
    """The bootstrap written out plainly: each run's statistics summed in int64, scored for every draw."""
    import statistics

    import numpy as np

    n = system.shape[1]
    mean = lambda stats, runs, w: statistics.mean(float(metric(w @ stats[r])) for r in runs)  # noqa: E731
    ones = np.ones(n, dtype=np.int64)
    delta = mean(system, range(len(system)), ones) - mean(baseline, range(len(baseline)), ones)
    rng = np.random.Generator(np.random.PCG64(seed))
    draws = []
    for _ in range(n_samples):
        w = np.bincount(rng.integers(0, n, n), minlength=n)
        s, b = rng.integers(0, len(system), len(system)), rng.integers(0, len(baseline), len(baseline))
        draws.append(mean(system, s, w) - mean(baseline, b, w))
    d = np.asarray(draws)
    low, high = np.quantile(d, [(1 - confidence) / 2, (1 + confidence) / 2])
    p = min(1.0, (int(np.sum(np.abs(d - d.mean()) >= abs(delta) - 1e-12)) + 1) / (n_samples + 1))
    return delta, float(low), float(high), p


@pytest.mark.parametrize("scale", [1, 2 ** 50 + 1])  # sums exact in float64; then too large for it (int64 path)
def test_the_bootstrap_equals_the_plain_replicate_by_replicate_computation_exactly(scale):
    """Summing all runs in one product and scoring each distinct run once must not move a reported digit."""
    import numpy as np

    from onmt_xl.experiments.stats import pooled_bootstrap

    rng = np.random.default_rng(3)
    refs, prng = corpus(n=80)
    system = np.stack([bleu_statistics(noisy(refs, 0.3, prng), refs) for _ in range(3)])
    baseline = np.stack([bleu_statistics(noisy(refs, 0.35, prng), refs) for _ in range(2)])
    got = pooled_bootstrap(system, baseline, bleu_from_statistics, n_samples=150, seed=5)
    assert (got.delta, got.low, got.high, got.p_value) == _reference_bootstrap(system, baseline, bleu_from_statistics,
                                                                                150, 5)
    counts = lambda runs: rng.integers(0, 6, (runs, 80, 3)) * scale  # noqa: E731
    ratio = lambda c: c[0] / max(c[1] + c[2], 1)  # noqa: E731  (a ratio metric, like AER)
    x, y = counts(4), counts(4)
    got = pooled_bootstrap(x, y, ratio, n_samples=150, seed=9)
    assert (got.delta, got.low, got.high, got.p_value) == _reference_bootstrap(x, y, ratio, 150, 9)
    with pytest.raises(TypeError, match="integer counts"):  # summed as counts: fractions would be truncated
        pooled_bootstrap(x / 2, y, ratio, n_samples=10)


def test_mismatched_lengths_are_refused():
    refs, rng = corpus()
    with pytest.raises(ValueError, match="hypotheses for"):
        seed_pooled_bootstrap([refs[:-1]], [refs], refs)


def test_paired_bootstrap_seed_is_used(monkeypatch):
    """sacrebleu's PairedTest seeds its generator from SACREBLEU_SEED, not numpy's global state: the seed
    argument reaches it, the same seed gives the same p-values whatever the environment says."""
    import random

    from onmt_xl.experiments.scoring import paired_bootstrap

    rng = random.Random(4)
    words = [f"w{k}" for k in range(30)]
    refs = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(40)]
    noisy = lambda keep: [" ".join(t if rng.random() < keep else rng.choice(words) for t in r.split())  # noqa: E731
                          for r in refs]
    base, hyp = noisy(0.5), noisy(0.5)  # equally good: a p-value far from the extremes, moved by the draws
    runs = {seed: paired_bootstrap({"s": hyp}, base, refs, n_samples=200, seed=seed)["s"] for seed in (1, 2, 3)}
    assert len(set(runs.values())) > 1  # the seed matters
    monkeypatch.setenv("SACREBLEU_SEED", "None")
    assert paired_bootstrap({"s": hyp}, base, refs, n_samples=200, seed=2)["s"] == runs[2]
    import os

    assert os.environ["SACREBLEU_SEED"] == "None"  # restored


def test_paired_bootstrap_of_equal_bleu_is_one_and_of_a_better_system_small():
    """sacrebleu's bootstrap returns its floor 1/(n+1) when every resample ties (identical translations; two
    systems with no word of the references): both are p = 1 here; a clearly better system keeps sacrebleu's p."""
    import random

    from onmt_xl.experiments.scoring import paired_bootstrap

    rng = random.Random(5)
    words = [f"w{k}" for k in range(30)]
    refs = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(60)]
    base = [" ".join(t if rng.random() < 0.4 else rng.choice(words) for t in r.split()) for r in refs]
    p = paired_bootstrap({"same": list(base), "none": ["x y z"] * 60, "better": refs}, base, refs, n_samples=200)
    assert p["same"] == 1.0 and p["better"] < 0.05
    assert paired_bootstrap({"none": ["y z x"] * 60}, ["x y z"] * 60, refs, n_samples=200) == {"none": 1.0}


def test_pooled_variance_weights_each_system_by_its_degrees_of_freedom():
    from onmt_xl.experiments.stats import pooled_variance
    # variances 1 (3 values, 2 df) and 4 (2 values, 1 df): (2·1 + 1·4) / 3 = 2
    assert pooled_variance([[1.0, 2.0, 3.0], [0.0, 2 * 2 ** 0.5]]) == (pytest.approx(2.0), 3)
    assert pooled_variance([[5.0]]) == (None, 0)


def test_with_seed_variance_adds_the_pooled_term_a_few_seed_side_lacks():
    """Δ = 1.0 with a bootstrap SE of 0.3 (95 % interval 1 ± 1.96·0.3), a 2-seed side whose runs agree (v = 0) and
    an 8-seed side: the pooled variance 0.14 adds 0.14/2 = 0.07, so SE′ = √(0.09 + 0.07) = 0.4 exactly, the interval
    is 1 ± z·0.4 and p is the normal p of 1/0.4 = 2.5."""
    from statistics import NormalDist

    from onmt_xl.experiments.stats import with_seed_variance
    z = NormalDist().inv_cdf(0.975)
    out = with_seed_variance(1.0, 1 - z * 0.3, 1 + z * 0.3, 0.001, [(2, 0.0), (8, 0.5)], pooled=0.14)
    assert out.added == pytest.approx(0.07)
    assert (out.low, out.high) == pytest.approx((1 - z * 0.4, 1 + z * 0.4))
    assert out.p == pytest.approx(2 * (1 - NormalDist().cdf(2.5)))  # 0.0124
    # an asymmetric percentile interval keeps its shape: each side widens by SE′/SE
    lop = with_seed_variance(1.0, 0.5, 1.0 + 2 * z * 0.3 - 0.5, 0.001, [(2, 0.0)], pooled=0.14)
    assert (1.0 - lop.low) / (lop.high - 1.0) == pytest.approx(0.5 / (2 * z * 0.3 - 0.5))
    # a side's own spread counts where it is the larger (0.10 of 0.14 seen: 0.02 added), never a narrower interval
    assert with_seed_variance(1.0, 0.4, 1.6, 0.01, [(2, 0.10)], pooled=0.14).added == pytest.approx(0.02)
    same = with_seed_variance(1.0, 0.4, 1.6, 0.01, [(2, 0.30), (8, 0.0)], pooled=0.14)
    assert (same.low, same.high, same.p, same.added) == (0.4, 1.6, 0.01, 0.0)
    # sides with 8 runs, or nothing pooled, leave the bootstrap's interval and p
    assert with_seed_variance(1.0, 0.4, 1.6, 0.01, [(8, 0.0), (8, 0.0)], pooled=0.14).added == 0.0
    assert with_seed_variance(1.0, 0.4, 1.6, 0.01, [(2, 0.0)], pooled=None).high == 1.6
    # the normal p never goes below the bootstrap's
    assert with_seed_variance(1.0, 1 - z * 0.3, 1 + z * 0.3, 0.5, [(2, 0.0)], pooled=0.14).p == 0.5


def test_holm_interval_is_the_interval_at_holms_level_for_the_row():
    """Δ = 1, SE 0.5 (95 % interval 1 ± 0.98): a family of one keeps the 95 % interval; the smallest of 4 p
    (Holm p = 4p) gets the Bonferroni interval at 1 − 0.05/4; the interval holds 0 exactly where Holm p ≥ α."""
    from statistics import NormalDist

    from onmt_xl.experiments.stats import holm_interval
    nd, z = NormalDist(), NormalDist().inv_cdf(0.975)
    low, high = 1 - z * 0.5, 1 + z * 0.5
    assert holm_interval(1.0, low, high, 0.0455, 0.0455) == pytest.approx((low, high))
    z4 = nd.inv_cdf(1 - 0.05 / 8)
    assert holm_interval(1.0, low, high, 0.0455, 4 * 0.0455) == pytest.approx((1 - z4 * 0.5, 1 + z4 * 0.5))
    for se in (0.3, 0.45, 0.6):  # normal p of Δ/se against the interval at Holm's level, m = 3, smallest p
        p = 2 * (1 - nd.cdf(1.0 / se))
        lo, _ = holm_interval(1.0, 1 - z * se, 1 + z * se, p, min(1.0, 3 * p))
        assert (lo > 0) == (min(1.0, 3 * p) < 0.05)
