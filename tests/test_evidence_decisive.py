"""The decisive design's reading in the evidence report: reports/PREREG_decisive.md's decision rule, the achieved
half-width, and the corpus' own and the carved test pairs apart."""

import json

import pytest

from onmt_xl.experiments.evidence_report import Run, decision, decisive_design


@pytest.mark.parametrize("low,high,expected", [
    (0.2, 1.0, ["helps"]),
    (0.1, 0.5, ["helps, by less than the paper reports"]),
    (-0.9, -0.1, ["hurts", "an effect of the paper's size (+0.63 BLEU) is excluded"]),
    (-0.4, 0.4, ["an effect of the paper's size (+0.63 BLEU) is excluded"]),
    (-0.2, 0.8, ["inconclusive"]),
    (0.0, 0.63, ["inconclusive"]),  # L = 0 is not above 0, U = +0.63 not below it
])
def test_the_preregistered_decision_rule(low, high, expected):
    assert decision(low, high, 0.63) == expected


def _run(system, seed, hyps):
    return Run(f"{system}_s{seed}", system, seed, {"test": hyps})


def test_decisive_design_splits_given_and_carved_pairs(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "carve.json").write_text(json.dumps(
        {"test_given": 2, "carved": 3, "train_before": 100, "train_after": 95}))
    refs = ["the cat sat on the mat", "a dog ran in the park", "it rains today", "we eat rice", "he reads a book"]
    worse = ["the cat sat", "a dog in park", "it rains", "we eat", "he reads"]
    # Combination equals the baseline on the two given pairs and is perfect on the carved ones
    kept = {"baseline": [_run("baseline", 1, worse)], "combination": [_run("combination", 1, worse[:2] + refs[2:])]}
    comparisons = {"combination": {"delta": 5.0, "low": 0.2, "high": 1.3, "p": 0.01, "p_holm": 0.01,
                                   "system_runs": 1, "baseline_runs": 1}}
    d = decisive_design(tmp_path, kept, "baseline", comparisons, refs, n_samples=20, seed=1)
    row = d["rows"]["combination"]
    assert row["primary"] and row["decision"] == ["helps"] and row["half_width"] == pytest.approx(0.55)
    assert not row["target_met"]
    assert row["parts"]["given"]["delta"] == pytest.approx(0.0) and row["parts"]["carved"]["delta"] > 0
    report = {"comparisons": comparisons, "decisive": d}
    from onmt_xl.experiments.evidence_markdown import _decisive_section

    text = "\n".join(_decisive_section(report))
    assert "combination (primary)" in text and "0.55 (above the target)" in text
    # one seed of the 8 the precision rule asks for once the width misses the target: an interim reading
    assert d["extension_pending"] and d["seeds"] == 1
    assert "interim (k = 1): helps" in text and "trains seeds 2–8 of both systems (`SEEDS=1,2,3,4,5,6,7,8`)" in text
    comparisons["combination"].update(system_runs=8, baseline_runs=8)
    final = decisive_design(tmp_path, kept, "baseline", comparisons, refs, n_samples=20, seed=1)
    assert not final["extension_pending"] and final["seeds"] == 8
    text = "\n".join(_decisive_section({"comparisons": comparisons, "decisive": final}))
    assert "interim" not in text and "At the final k = 8 the primary half-width is 0.55, 0.05 above" in text
    comparisons["combination"].update(low=0.3, high=1.2, system_runs=5, baseline_runs=5)  # the target met at 5
    met = decisive_design(tmp_path, kept, "baseline", comparisons, refs, n_samples=20, seed=1)
    assert not met["extension_pending"] and met["rows"]["combination"]["target_met"]
    assert "interim" not in "\n".join(_decisive_section({"comparisons": comparisons, "decisive": met}))
    assert "## The decisive design (`reports/PREREG_decisive.md`)" in text and "prereg" not in met
    addendum = decisive_design(tmp_path, kept, "baseline", comparisons, refs, 20, 1,
                               prereg="reports/PREREG_decisive_tuned.md")  # the same reading, citing its addendum
    assert {k: v for k, v in addendum.items() if k != "prereg"} == met
    assert "## The decisive design (`reports/PREREG_decisive_tuned.md`)" in "\n".join(
        _decisive_section({"comparisons": comparisons, "decisive": addendum}))
    assert decisive_design(tmp_path / "nowhere", kept, "baseline", comparisons, refs, 20, 1) is None


def test_the_plateau_check_is_reported_beside_the_fixed_step_count():
    """The decisive design keeps S = 8,000 whatever the step rule gives on the new split; the report gives the
    rule's answer and each curve's validation BLEU gained after S, and calls a different answer a caveat."""
    from onmt_xl.experiments.evidence_markdown import _decisive_section
    from onmt_xl.experiments.evidence_report import plateau_check

    steps = range(500, 10500, 500)
    flat = [{"step": s, "bleu": min(s, 8000) / 200} for s in steps]  # 40.0 from 8,000 on
    rising = [{"step": s, "bleu": min(s, 8000) / 200 + (s > 8000) * (s - 8000) / 1000} for s in steps]  # +2.0 by 10,000
    check = plateau_check({"baseline_s1": flat, "combination_s1": rising})
    assert check["rule_step"] is None and check["last_step"] == 10000 and check["steps"] == 8000
    assert check["late_gain"]["baseline_s1"]["gain"] == pytest.approx(0.0)
    assert check["late_gain"]["combination_s1"] == {"to_step": 10000, "gain": pytest.approx(2.0)}
    assert plateau_check({"baseline_s1": flat})["rule_step"] == 8000
    assert plateau_check({}) is None
    report = {"comparisons": {}, "decisive": {"carve": {"test_given": 2, "carved": 3, "train_before": 100,
                                                         "train_after": 95},
                                              "target_half_width": 0.5, "rows": {}, "plateau": check}}
    assert _decisive_section(report) == []  # nothing to read before a comparison
    report["comparisons"] = {"combination": {"delta": 0.1, "low": -0.2, "high": 0.4, "p": 0.5, "system_runs": 5,
                                             "baseline_runs": 5}}
    report["decisive"]["rows"] = {"combination": {"paper_gain": 0.63, "primary": True, "half_width": 0.3,
                                                  "target_met": True, "decision": ["x"], "parts": {}}}
    text = "\n".join(_decisive_section(report))
    assert "step rule is not met within the 10,000 steps scored" in text and "keeps S = 8,000, and this is a caveat" in text
    assert "combination_s1 +2.00 (to 10,000)" in text and "baseline_s1 +0.00" in text
    report["decisive"]["plateau"] = plateau_check({"baseline_s1": flat})
    assert "gives step 8,000; the design keeps S = 8,000." in "\n".join(_decisive_section(report))
