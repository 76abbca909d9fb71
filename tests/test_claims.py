"""The report's claim verdicts follow their fixed rules (onmt_xl/experiments/claims.py) on hand-made results."""

import pytest

from onmt_xl.experiments.claims import (AT_CHANCE, HELD, HELD_NS, NOT_HELD, NOT_RUN, REVERSED, check, seed_runs, seed_spread,
                            versus_baseline)


def _res(**bleu):
    """``results.json``-shaped dict: ``name=bleu`` or ``name=(bleu, p_bootstrap)`` for the test variant."""
    jobs = {}
    for name, v in bleu.items():
        b, p = v if isinstance(v, tuple) else (v, None)
        jobs[name] = {"variants": {"test": {"bleu": b, **({} if p is None else {"p_bootstrap": p})}}}
    return {"jobs": jobs}


@pytest.mark.parametrize("bleu, p, direction, verdict", [
    (27.5, 0.01, +1, HELD), (27.5, 0.30, +1, HELD_NS), (26.5, 0.30, +1, NOT_HELD), (26.0, 0.001, +1, REVERSED),
    (27.0, 0.50, +1, NOT_HELD),  # a tie is not an improvement
    (26.0, 0.01, -1, HELD), (28.0, 0.01, -1, REVERSED), (26.9, 0.4, -1, HELD_NS),
])
def test_versus_baseline_rules(bleu, p, direction, verdict):
    res = _res(baseline=27.0, x=(bleu, p))
    assert versus_baseline(res, "x", "paper", "claim", None, direction=direction).verdict == verdict


def test_versus_baseline_flags_a_gain_inside_the_seed_spread():
    res = _res(baseline=27.0, baseline_seed5678=28.0, x=(27.3, 0.2))
    spread = seed_spread(res, ("baseline", "baseline_seed5678"))
    assert spread == pytest.approx(0.7071, abs=1e-4)  # sd of (27, 28)
    c = versus_baseline(res, "x", "p", "c", spread)
    assert c.measured == "27.00 → 27.30 (Δ +0.30, p = 0.200); |Δ| below the baseline's seed spread (0.71)"


def test_versus_baseline_adds_the_mean_over_seeds():
    res = _res(baseline=27.0, baseline_seed5678=28.0, x=(26.5, 0.2), x_seed5678=27.7, x_seed9=28.1, xy_seed2=1.0)
    assert seed_runs(res, "x") == ["x", "x_seed5678", "x_seed9"]  # not xy's
    c = versus_baseline(res, "x", "p", "c", seed_spread(res, seed_runs(res, "baseline")))
    # means by hand: (27 + 28)/2 = 27.50, (26.5 + 27.7 + 28.1)/3 = 27.433
    assert c.measured == ("27.00 → 26.50 (Δ -0.50, p = 0.200); |Δ| below the baseline's seed spread (0.71); "
                          "mean over 3 seeds: 27.50 → 27.43 (Δ -0.07, baseline 2 seeds)")
    assert c.verdict == NOT_HELD  # the verdict stays that of the paired test on the first seed
    assert "mean over" not in versus_baseline(_res(baseline=27.0, baseline_seed5=28.0, x=27.5), "x", "p", "c", None).measured


def _by_claim(claims, text):
    (c,) = [c for c in claims if text in c.claim]
    return c


def test_check_tau_noise_order_and_missing_jobs():
    res = _res(baseline=27.0, inxl=(27.2, 0.3), headxl=27.4, combination=27.6, headxl_tau0=27.0, headxl_tau1=27.1,
               headxl_tau3=27.3, headxl_tau4=26.9, combination_noise5=27.5, combination_noise10=27.6,
               combination_noise15=27.0, combination_noise20=26.8)
    claims = check(res, heads=4)
    assert _by_claim(claims, "best of the XL").verdict == HELD  # 27.6 > 27.4, 27.2
    tau = _by_claim(claims, "intermediate τ")
    assert tau.verdict == HELD and tau.measured == ("τ=0: 27.00, τ=1: 27.10, τ=2: 27.40, τ=3: 27.30, τ=4: 26.90; "
                                                    "peak − τ=0: +0.40, peak − τ=H: +0.50")
    noise = _by_claim(claims, "Noisy training")
    # slope of (0, 27.6), (5, 27.5), (10, 27.6), (15, 27.0), (20, 26.8) by hand: Σ(x−10)(y−27.3)/Σ(x−10)² = (−3 − 1 + 0 − 1.5 − 5)/250
    assert noise.verdict == HELD and "slope -0.042" in noise.measured
    assert [c.verdict for c in claims if "DiSAN" in c.claim] == [NOT_RUN] * 2  # DiSAN as in the paper, one variant
    # the peak at τ = H is not the paper's finding
    res["jobs"]["headxl_tau4"]["variants"]["test"]["bleu"] = 28.0
    assert _by_claim(check(res, heads=4), "intermediate τ").verdict == NOT_HELD


def _trends(**changed):
    bleu = dict(baseline=27.0, combination=27.6, combination_seed5678=28.2,  # sd (27.6, 28.2) = 0.6/√2 = 0.424
                headxl_tau0=27.0, headxl_tau1=27.1, headxl=27.9, headxl_tau3=27.3, headxl_tau4=26.9,
                combination_noise5=27.5, combination_noise10=27.6, combination_noise15=27.0, combination_noise20=26.8)
    claims = check(_res(**{**bleu, **changed}), heads=4)
    return _by_claim(claims, "intermediate τ"), _by_claim(claims, "Noisy training")


def test_trends_must_clear_the_largest_seed_spread():
    tau, noise = _trends()
    # peak 27.9 at τ = 2: +0.90 over τ = 0, +1.00 over τ = H; 0 % → 20 % noise: −0.80; all beyond 0.42
    assert (tau.verdict, noise.verdict) == (HELD, HELD)
    assert tau.measured.endswith("peak − τ=0: +0.90, peak − τ=H: +1.00; largest seed spread 0.42")
    tau, noise = _trends(headxl_tau0=27.6, combination_noise20=27.3)
    # a rise of 0.30 from τ = 0, a fall of 0.30 at 20 % noise (slope (−2 − 0.5 + 0 − 2 − 1)/250 < 0): within 0.42
    assert (tau.verdict, noise.verdict) == (HELD_NS, HELD_NS)
    _, noise = _trends(combination_noise5=28.3)  # 5 % noise beats the clean run by 0.70 > 0.42: noise helped
    assert noise.verdict == NOT_HELD and noise.measured.endswith("; 5 % beats 0 % by 0.70")


def test_check_aer_sim_and_robustness():
    res = _res(baseline=27.0, both_re=27.5, exgre=27.1)
    res["jobs"]["baseline"]["variants"].update(gold_align={"aer": 0.90}, swap10={"bleu": 25.0}, swap20={"bleu": 23.0},
                                               swap30={"bleu": 22.0})
    res["jobs"]["both_re"]["variants"].update(swap10={"bleu": 25.5}, swap20={"bleu": 22.0}, swap30={"bleu": 22.1})
    res["jobs"]["combination"] = {"variants": {"gold_align": {"aer": 0.85}}}
    res["jobs"]["exgre"]["sim"] = {"sim": 0.61, "pe_sim": 0.72, "words": 10}
    claims = check(res, heads=4)
    assert _by_claim(claims, "combination attention has a lower AER than the baseline's (gold").verdict == HELD
    assert _by_claim(claims, "inxl attention has a lower AER than the baseline's (gold").verdict == NOT_RUN
    # both worse than a diagonal: the comparison says nothing about attention
    res["aer_references"] = {"gold_align": {"random": {"aer": 0.95}, "diagonal": {"aer": 0.80}}}
    at_chance = _by_claim(check(res, heads=4), "combination attention has a lower AER than the baseline's (gold")
    assert at_chance.verdict == AT_CHANCE and "diagonal 80.00 %" in at_chance.measured
    res["aer_references"]["gold_align"]["diagonal"]["aer"] = 0.87
    assert _by_claim(check(res, heads=4), "combination attention has a lower AER than the baseline's (gold").verdict == HELD
    robust = _by_claim(claims, "swapped")
    assert robust.verdict == NOT_HELD and "-0.13" in robust.measured  # mean of (+0.5, −1.0, +0.1)
    assert _by_claim(claims, "exgre's reordered PE").verdict == NOT_HELD
    assert _by_claim(claims, "refsr's reordered PE").verdict == NOT_RUN


def test_versus_baseline_shows_the_validation_pairs_beside_the_test_set():
    res = _res(baseline=27.0, x=(26.0, 0.01))
    res["jobs"]["baseline"]["variants"]["valid"] = {"bleu": 27.4}
    res["jobs"]["x"]["variants"]["valid"] = {"bleu": 27.95, "p_bootstrap": 0.2}
    c = versus_baseline(res, "x", "p", "c", None)
    assert c.verdict == REVERSED and c.measured == "27.00 → 26.00 (Δ -1.00, p = 0.010); valid pairs: Δ +0.55, p = 0.200"
