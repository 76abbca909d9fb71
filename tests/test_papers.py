"""``onmt-xl papers``: the per-paper verdict rule, the power figure, and the report from evidence reports' JSON."""

import json
import statistics
import subprocess
import sys

import pytest

from onmt_xl.experiments import papers
from onmt_xl.experiments.papers import (LARGER, NOT_MEASURABLE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, REVERSED,
                                        SMALLER, size_vs_paper, smallest_detectable, verdict)


@pytest.mark.parametrize("low,high,effect,direction,expected", [
    (0.3, 1.5, 0.63, 1, REPRODUCED),        # the adjusted interval excludes 0 on the paper's side
    (-1.5, -0.3, 0.63, 1, REVERSED),        # on the other side
    (-0.9, 0.4, 0.63, 1, NOT_REPRODUCED),   # holds 0, excludes +0.63
    (-2.0, 1.4, 0.63, 1, NOT_MEASURABLE),   # holds 0 and +0.63
    (-2.0, -0.1, -1.40, -1, REPRODUCED),    # a claimed drop
    (-2.0, 0.1, -1.40, -1, NOT_MEASURABLE),
    (-0.4, 1.2, -1.40, -1, NOT_REPRODUCED),  # low −0.4 > −1.40: the paper's drop is excluded
    (-0.5, 0.7, None, 1, NOT_MEASURABLE),    # no figure to exclude
    (0.0, 1.5, 0.63, 1, NOT_MEASURABLE),     # an interval that reaches 0 holds it: not significant
    (-1.5, 0.0, -0.63, -1, NOT_MEASURABLE),
])
def test_verdict_rule_reads_one_interval(low, high, effect, direction, expected):
    assert verdict(low, high, effect, direction) == expected


def test_every_verdict_reads_the_holm_adjusted_interval():
    """One rule on one interval: *not reproduced* reads the same Holm-adjusted interval as *reproduced*. Here the
    95 % interval [−1.79, +0.73] excludes the paper's +0.79, but the row is one of 4 with the largest p, so Holm
    tests it at α · p / Holm p = 0.05 · 0.48 / 0.96 and its interval reaches past +0.79: not measurable."""
    from onmt_xl.experiments.stats import holm_interval
    others = {n: _cmp(-2.0, -2.5, -1.5, 0.001, "the other baselines") for n in ("both_re", "exgre")}
    others["refsr"] = _cmp(0.05, -0.5, 0.6, 0.9, "the other baselines")
    enc = {**_cmp(-0.53, -1.79, 0.73, 0.96, "the other baselines"), "p": 0.48}
    rep = papers.build({"decisive": _study(comparisons={"enc_re": enc, **others})}, heads=4)
    row = _claim(rep, "Encoder REs improve")["measured"][0]
    assert row["p_holm"] == pytest.approx(0.96)  # the second largest of 4 p: 2 · 0.48
    low, high = holm_interval(-0.53, -1.79, 0.73, 0.48, 0.96)
    assert (row["adj_low"], row["adj_high"]) == pytest.approx((low, high))
    assert row["adj_high"] > 0.79 > 0.73 and row["verdict"] == NOT_MEASURABLE
    assert f"| [{low:+.2f}, {high:+.2f}] |" in papers.markdown(rep)


def test_few_seed_rows_carry_the_pooled_seed_variance_and_holm_is_recomputed():
    """A 2-seed system whose two runs agree: its interval carries the seed variance pooled over the 8-seed systems,
    its p grows, Holm moves with it, and a verdict can change (reversed -> not reproduced)."""
    from onmt_xl.experiments.stats import with_seed_variance
    eight = [40.0, 40.5, 39.5, 40.3, 39.7, 40.6, 39.4, 40.0]
    systems = {"baseline": {"test_bleu": {"values": eight}}, "combination": {"test_bleu": {"values": eight}},
               "exgre": {"test_bleu": {"values": [39.27, 39.27]}}}
    exgre = {**_cmp(-0.74, -1.20, -0.27, 0.012, "the other baselines"), "p": 0.0015, "system_runs": 2,
             "baseline_runs": 8}
    refsr = {**_cmp(0.26, -0.30, 0.82, 1.0, "the other baselines"), "p": 0.39, "system_runs": 2, "baseline_runs": 8}
    study = _study(baseline="baseline", systems=systems, comparisons={"exgre": exgre, "refsr": refsr})
    rep = papers.build({"decisive": study}, heads=4)
    row = _claim(rep, "ExGRE improves")["measured"][0]
    pooled = statistics.variance(eight)  # two 8-seed systems with the same runs
    expected = with_seed_variance(-0.74, -1.20, -0.27, 0.0015, [(2, 0.0), (8, statistics.pvariance(eight))], pooled)
    assert (row["low"], row["high"]) == pytest.approx((expected.low, expected.high))
    assert row["p_holm"] == pytest.approx(min(1.0, 2 * expected.p)) and row["seed_variance_pooled"]
    assert row["verdict"] == NOT_REPRODUCED
    assert "2 vs 8 seeds; seed variance pooled" in papers.markdown(rep)
    # the pooling decides this verdict: the row names what its own runs' variance alone would read
    assert row["notes"] == ["*reversed*, Holm p 0.003 with its own runs' seed variance alone"]
    assert row["pooling_decides"] == {"verdict": REVERSED, "systems": ["exgre"]}  # the 8-seed baseline needs none
    assert "1 verdict rests on the pooled seed variance" in papers.markdown(rep)
    assert "Seeds up to 8 of `exgre` would settle it." in papers.markdown(rep)
    refsr_row = _claim(rep, "ReFSR improves")["measured"][0]
    assert refsr_row["seed_variance_pooled"] and refsr_row["notes"] == []  # not reproduced either way
    # the same row without the 8-seed systems to pool from keeps the bootstrap's interval, and its verdict
    rep = papers.build({"decisive": {**study, "systems": {"exgre": systems["exgre"]}}}, heads=4)
    assert _claim(rep, "ExGRE improves")["measured"][0]["verdict"] == REVERSED


def test_a_row_carrying_the_pooled_seed_variance_is_partial_while_any_job_of_its_study_is_left():
    """The pool reads every system's runs, so a job of any system of the study, in the row's family or not, can move
    a pooled row's interval; a row of two 8-seed sides carries nothing and stays final."""
    eight = [40.0, 40.5, 39.5, 40.3, 39.7, 40.6, 39.4, 40.0]
    systems = {"baseline": {"test_bleu": {"values": eight}}, "combination": {"test_bleu": {"values": eight}},
               "exgre": {"test_bleu": {"values": [39.27, 39.27]}}}
    exgre = {**_cmp(-0.74, -1.20, -0.27, 0.012, "the other baselines"), "p": 0.0015, "system_runs": 2,
             "baseline_runs": 8}
    comb = {**_cmp(-0.40, -0.80, -0.05, 0.03, "primary"), "p": 0.03, "system_runs": 8, "baseline_runs": 8}
    study = _study(workdir="decisive_jaen", baseline="baseline", systems=systems,
                   comparisons={"exgre": exgre, "combination": comb},
                   family_members={"the other baselines": ["exgre"], "primary": ["combination"]})
    left = [{"archive": "reports/decisive_jaen", "tier": "h", "seeds": [1, 2], "jobs": 1, "finished": 0,
             "left": ["encoder_free_relative_s8"]}]  # a system of neither row, of another family
    rep = papers.build({"decisive": study}, heads=4, progress=left)
    assert _claim(rep, "ExGRE improves")["verdict"].endswith(papers.PARTIAL)
    assert not _claim(rep, "Combination improves")["verdict"].endswith(papers.PARTIAL)
    rep = papers.build({"decisive": study}, heads=4, progress=[{**left[0], "finished": 1, "left": []}])
    assert not _claim(rep, "ExGRE improves")["verdict"].endswith(papers.PARTIAL)


def test_runs_archived_after_the_report_was_built_make_their_rows_partial():
    """A queue's finished jobs are archived before the 25-minute report reads them: until it does, the rows of their
    system (and its Holm family) read runs that are no longer all, so they are partial."""
    eight = [40.0, 40.5, 39.5, 40.3, 39.7, 40.6, 39.4, 40.0]
    systems = {"baseline": {"seeds": list(range(1, 9)), "test_bleu": {"values": eight}},
               "encoder_free": {"seeds": [1, 2], "test_bleu": {"values": [38.7, 38.8]}}}
    study = _study(workdir="decisive_jaen", baseline="baseline", systems=systems,
                   comparisons={"encoder_free": {**_cmp(-1.3, -1.8, -0.8, 0.0, "the other baselines"),
                                                 "system_runs": 8, "baseline_runs": 8}},
                   family_members={"the other baselines": ["encoder_free"]})
    progress = [{"archive": "reports/decisive_jaen", "tier": "c", "seeds": [3, 4, 5, 6, 7, 8], "jobs": 6,
                 "finished": 6, "left": [], "systems": ["encoder_free"]}]
    full = "The full Transformer beats the encoder-free"
    assert _claim(papers.build({"decisive": study}, heads=4, progress=progress), full)["verdict"].endswith(
        papers.PARTIAL)
    systems["encoder_free"]["seeds"] = list(range(1, 9))  # the report built again reads them all
    assert not _claim(papers.build({"decisive": study}, heads=4, progress=progress), full)["verdict"].endswith(
        papers.PARTIAL)


def test_the_tally_counts_claims_and_an_untrained_comparison_system_is_labelled():
    values = {"baseline": [40.0, 40.2, 39.8], "encoder_free_inxl": [38.4, 38.5], "lstm": [11.0, 11.7]}
    study = _study(baseline="baseline", systems={n: {"test_bleu": {"values": v}} for n, v in values.items()},
                   pairs={"encoder_free_inxl > lstm": {**_cmp(27.1, 25.9, 28.4, 0.001, "orderings among systems"),
                                                       "a": "encoder_free_inxl", "b": "lstm"}},
                   plateau_pairs={"encoder_free_inxl > lstm_plateau": {
                       **_cmp(21.3, 20.4, 22.3, 0.001, "plateau"), "a": "encoder_free_inxl", "b": "lstm_plateau"}},
                   plateaus={"lstm": {"status": "plateau", "runs": {"test_bleu": {"values": [16.8, 17.5]}}}})
    rep = papers.build({"decisive": study}, heads=4)
    assert rep["tally"][REPRODUCED] == 1 and rep["claims_counted"] == len(papers.CLAIMS) - 1
    first, again = (c for c in rep["claims"] if "LSTM" in c["claim"] and c["measured"])
    assert again["repeat"] and not first["repeat"]
    assert any(n.startswith(papers.UNTRAINED + " (lstm 11.3 vs the baseline's 40.0") for n in first["measured"][0]["notes"])
    assert any("lstm_plateau 17.1" in n for n in again["measured"][0]["notes"])
    assert rep["far_from_trained"] == 1
    assert f"Of these, 1 answered against a {papers.UNTRAINED}." in papers.markdown(rep)


@pytest.mark.parametrize("low,high,effect,direction,expected", [
    (1.82, 2.94, 3.80, 1, SMALLER),     # a gain whose interval stops short of the paper's
    (0.44, 1.48, 0.51, 1, None),        # the interval holds the paper's gain
    (0.60, 1.48, 0.51, 1, LARGER),      # the whole interval above it
    (-1.79, -0.81, -4.25, -1, SMALLER),  # a claimed drop: the paper's is deeper than the interval
    (-2.59, -1.57, -1.40, -1, LARGER),   # the interval's drop is deeper than the paper's
    (-2.59, -1.57, -2.00, -1, None),
    (0.1, 0.5, None, 1, None),           # no figure to compare
])
def test_size_vs_paper(low, high, effect, direction, expected):
    assert size_vs_paper(low, high, effect, direction) == expected


def test_only_reproduced_rows_carry_their_size():
    decisive = _study(comparisons={"combination": _cmp(-0.47, -0.88, -0.07, 0.02, "primary"),
                                   "disan": _cmp(2.0, 1.5, 2.5, 0.001, "baselines")})
    rep = papers.build({"decisive": decisive}, heads=4)
    disan = _claim(rep, "DiSAN improves")["measured"][0]
    assert (disan["verdict"], disan["size"]) == (REPRODUCED, LARGER)  # +0.51 lies short of [+1.5, +2.5]
    comb = _claim(rep, "Combination improves")["measured"][0]
    assert (comb["verdict"], comb["size"]) == (REVERSED, None)
    md = papers.markdown(rep)
    assert f"| {REPRODUCED}; {LARGER} |" in md and f"| {REVERSED}; InXL's `identity` start" in md


def test_smallest_detectable_is_the_normal_power_formula():
    # 95 % interval ±0.98 → SE 0.5; one comparison: (1.95996 + 0.84162) · 0.5
    assert smallest_detectable(-0.98, 0.98, 1) == pytest.approx(0.5 * 0.98 / 0.97998 * (1.959964 + 0.841621), rel=1e-4)
    # a larger family asks for a smaller α, so a larger difference
    assert smallest_detectable(-0.98, 0.98, 4) > smallest_detectable(-0.98, 0.98, 1)


def _cmp(delta, low, high, p_holm, family="XL PE and Relative PE"):
    return {"family": family, "delta": delta, "low": low, "high": high, "p": p_holm, "p_holm": p_holm,
            "system_runs": 3, "baseline_runs": 3}


def _study(**extra):
    rep = {"workdir": "w", "test_sentences": 500, "novel_sentences": 425, "seen_source_sentences": 0,
           "bootstrap": {"samples": 10, "seed": 1}, "comparisons": {}, "sweeps": [], "by_reordering": {}}
    rep.update(extra)
    return rep


def _claim(report, text_start):
    return next(c for c in report["claims"] if c["claim"].startswith(text_start))


def test_the_decisive_study_answers_first_and_missing_systems_are_not_run():
    jaen = _study(comparisons={"combination": _cmp(-0.31, -2.07, 1.46, 1.0), "inxl": _cmp(-0.99, -2.62, 0.6, 0.8)},
                  pairs={"combination > inxl": {**_cmp(0.7, 0.1, 1.3, 0.02, "orderings among systems"),
                                                "a": "combination", "b": "inxl"}})
    decisive = _study(comparisons={"combination": _cmp(0.1, -0.3, 0.5, 0.6, "primary")})
    rep = papers.build({"jaen": jaen, "decisive": decisive}, heads=4)
    comb = _claim(rep, "Combination improves")
    assert [m["study"] for m in comb["measured"]] == ["decisive", "jaen"]
    assert comb["verdict"] == NOT_REPRODUCED  # the decisive row: [-0.3, +0.5] excludes +0.63
    assert comb["measured"][1]["verdict"] == NOT_MEASURABLE
    assert comb["measured"][1]["m"] == 2  # the family's members in that report
    assert _claim(rep, "Combination beats InXL")["verdict"] == REPRODUCED  # one pair: m = 1, interval excludes 0
    assert _claim(rep, "DiSAN")["verdict"] == NOT_RUN
    assert rep["tally"][NOT_RUN] == len(papers.CLAIMS) - 1 - 3  # the claims, the LSTM's plateau row counted once


def test_the_decisive_design_before_its_extension_is_marked_interim():
    """Until the seeds its precision rule requires have run, every verdict the decisive design gives is interim,
    in the row, in the tally and in the list of studies."""
    decisive = _study(comparisons={"combination": _cmp(-0.43, -0.94, 0.08, 0.096, "primary")},
                      attention_aer={"comparisons": {"combination": {"delta": 0.001, "low": -0.004, "high": 0.006,
                                                                     "p": 0.7, "p_holm": 0.7}}},
                      decisive={"extension_pending": True, "seeds": 5, "extended_seeds": 8})
    rep = papers.build({"decisive": decisive, "jaen": _study(comparisons={"combination": _cmp(-0.31, -2.07, 1.46, 1.0)})},
                       heads=4)
    comb = _claim(rep, "Combination improves")
    assert comb["verdict"] == NOT_REPRODUCED + papers.INTERIM
    assert comb["measured"][1]["verdict"] == NOT_MEASURABLE  # the other study is final
    assert _claim(rep, "Combination's attention")["verdict"].endswith(papers.INTERIM)
    assert rep["tally"][NOT_REPRODUCED + papers.INTERIM] == 2 and NOT_REPRODUCED not in rep["tally"]  # BLEU, AER
    text = papers.markdown(rep)
    assert "**Interim**: 5 seeds per system of the 8 its preregistered precision rule requires" in text
    decisive["decisive"]["extension_pending"] = False
    rep = papers.build({"decisive": decisive}, heads=4)
    assert _claim(rep, "Combination improves")["verdict"] == NOT_REPRODUCED and "Interim" not in papers.markdown(rep)


def test_rows_with_jobs_left_in_their_family_or_sweep_are_marked_partial():
    """A row is final only once its own systems' and its Holm family's jobs are all finished in its archive."""
    others = {"disan": _cmp(0.8, 0.3, 1.3, 0.006, "the other baselines"),
              "encoder_free": _cmp(-1.3, -1.8, -0.8, 0.0, "the other baselines")}
    decisive = _study(workdir="decisive_jaen", comparisons=others,
                      family_members={"the other baselines": ["encoder_free", "disan", "enc_re"]},
                      pairs={"encoder_free > encoder_free_none": {
                          **_cmp(9.0, 8.0, 10.0, 0.0, "orderings among systems"),
                          "a": "encoder_free", "b": "encoder_free_none"}},
                      sweeps=[_sweep("τ", [("0", (-2.0, 0.001)), ("2", (None, None)), ("4", (-1.5, 0.01))])])

    def progress(c=(), h=(), d=()):
        return [{"archive": "reports/decisive_jaen", "tier": t, "seeds": [1, 2], "jobs": 9, "finished": 9 - len(left),
                 "left": list(left)} for t, left in (("c", c), ("h", h), ("d", d))]

    rep = papers.build({"decisive": decisive}, heads=4, progress=progress(c=["enc_re_s2"], d=["headxl_tau1_s1"]))
    # enc_re, a member of their family, still trains: DiSAN's and encoder-free's Holm p can move
    assert _claim(rep, "DiSAN")["verdict"] == REPRODUCED + papers.PARTIAL
    assert _claim(rep, "BLEU peaks")["verdict"] == REPRODUCED + papers.PARTIAL
    # enc_re is a side of another ordering: Holm over the orderings can still move this pair's p
    assert _claim(rep, "Without an encoder, absolute PE")["verdict"] == REPRODUCED + papers.PARTIAL
    assert "*(partial)*" in papers.markdown(rep)
    rep = papers.build({"decisive": decisive}, heads=4, progress=progress(c=["disan_s2"]))
    assert _claim(rep, "DiSAN")["verdict"] == REPRODUCED + papers.PARTIAL
    assert _claim(rep, "Without an encoder, absolute PE")["verdict"] == REPRODUCED  # DiSAN is in no ordering
    rep = papers.build({"decisive": decisive}, heads=4, progress=progress(h=["encoder_free_none_s2"]))
    # a row not run yet names only the tiers that still train its systems (tier c's encoder_free is finished)
    assert _claim(rep, "Without an encoder, relative PE")["tiers"] == ["c", "h"]
    rep_h = papers.build({"decisive": decisive}, heads=4, progress=progress(h=["encoder_free_relative_s1"]))
    assert _claim(rep_h, "Without an encoder, relative PE")["tiers"] == ["h"]
    assert "not run yet (tier h) |" in papers.markdown(rep_h) and "not run yet (tiers c and h)" in papers.markdown(rep)
    assert _claim(rep, "DiSAN")["verdict"] == REPRODUCED
    assert _claim(rep, "Without an encoder, absolute PE")["verdict"] == REPRODUCED + papers.PARTIAL
    assert _claim(rep, "BLEU peaks")["verdict"] == REPRODUCED
    # the report's own declared orderings decide, not today's list: without enc_re's ordering it cannot move p
    declared = {**decisive, "orderings": [["encoder_free", "encoder_free_none"]]}
    assert (_claim(papers.build({"decisive": declared}, heads=4, progress=progress(c=["enc_re_s2"])),
                   "Without an encoder, absolute PE")["verdict"] == REPRODUCED)
    declared["orderings"].append(["both_re", "enc_re"])
    assert (_claim(papers.build({"decisive": declared}, heads=4, progress=progress(c=["enc_re_s2"])),
                   "Without an encoder, absolute PE")["verdict"] == REPRODUCED + papers.PARTIAL)
    other = progress(c=["enc_re_s2"])
    other[0]["archive"] = "reports/decisive_jaen_tuned"  # another study's archive leaves this one final
    assert _claim(papers.build({"decisive": decisive}, heads=4, progress=other), "DiSAN")["verdict"] == REPRODUCED


def test_aer_rows_are_in_points_and_the_claimed_direction_is_down():
    aer = {"comparisons": {"combination": {"delta": -0.03, "low": -0.05, "high": -0.01, "p": 0.01, "p_holm": 0.01}}}
    rep = papers.build({"decisive": _study(attention_aer=aer)}, heads=4)
    row = _claim(rep, "Combination's attention")["measured"][0]
    assert (row["delta"], row["low"], row["high"]) == pytest.approx((-3.0, -5.0, -1.0))
    assert row["verdict"] == REPRODUCED


def _tier_g_left(left):
    """The progress of tier g (InXL) in the decisive archive with the jobs ``left``."""
    return [{"archive": "reports/decisive_jaen", "tier": "g", "seeds": [1, 2], "jobs": 2,
             "finished": 2 - len(left), "left": list(left)}]


def test_aer_rows_are_partial_while_any_system_of_tab3_still_trains():
    """Tab. 3's comparisons are one Holm family over the systems the report has runs of: a system of Tab. 3 still
    training (here InXL) joins it later and moves every row's p, so each row is partial until it finishes."""
    aer = {"comparisons": {"combination": {"delta": -0.03, "low": -0.05, "high": -0.01, "p": 0.01, "p_holm": 0.02},
                           "headxl": {"delta": -0.05, "low": -0.08, "high": -0.02, "p": 0.001, "p_holm": 0.002}}}
    decisive = _study(workdir="decisive_jaen", attention_aer=aer)

    rep = papers.build({"decisive": decisive}, heads=4, progress=_tier_g_left(["inxl_s2"]))
    assert _claim(rep, "Combination's attention")["verdict"] == REPRODUCED + papers.PARTIAL
    assert _claim(rep, "HeadXL's attention")["verdict"] == REPRODUCED + papers.PARTIAL
    rep = papers.build({"decisive": decisive}, heads=4, progress=_tier_g_left(["disan_s2"]))  # not a system of Tab. 3
    assert _claim(rep, "Combination's attention")["verdict"] == REPRODUCED
    assert _claim(rep, "HeadXL's attention")["verdict"] == REPRODUCED



def test_a_secondary_row_is_partial_while_a_declared_member_of_its_family_still_trains():
    """The secondary family is declared whole (HeadXL and InXL) but reported with its finished members only: HeadXL's
    Holm p is over one comparison until InXL joins, so HeadXL's row is partial while InXL's jobs are left."""
    decisive = _study(workdir="decisive_jaen",
                      comparisons={"headxl": _cmp(-0.33, -0.73, 0.07, 0.109, "secondary")},
                      family_members={"secondary": ["headxl"]},
                      families_declared={"secondary": ["headxl", "inxl"]})

    rep = papers.build({"decisive": decisive}, heads=4, progress=_tier_g_left(["inxl_s2"]))
    assert _claim(rep, "HeadXL PE improves")["verdict"] == NOT_REPRODUCED + papers.PARTIAL
    assert _claim(papers.build({"decisive": decisive}, heads=4, progress=_tier_g_left([])),
                  "HeadXL PE improves")["verdict"] == NOT_REPRODUCED
    # a report that recorded its families only as reported cannot tell: read as written
    older = {k: v for k, v in decisive.items() if k != "families_declared"}
    assert _claim(papers.build({"decisive": older}, heads=4, progress=_tier_g_left(["inxl_s2"])),
                  "HeadXL PE improves")["verdict"] == NOT_REPRODUCED

def _sweep(setting, deltas):
    points = [{"setting": s, "job": f"j{s}", "default": d is None, "test_bleu": 40.0 + (d or 0.0),
               **({} if d is None else {"vs_default": _vs_default(d, p)})} for s, (d, p) in deltas]
    return {"title": "t", "setting": setting, "points": points}


def _vs_default(delta, p_holm):
    """A point against the default run whose interval agrees with its Holm p (excludes 0 where p < 0.05)."""
    half = abs(delta) / 2 if p_holm < 0.05 else abs(delta) + 0.5
    return {"delta": delta, "low": delta - half, "high": delta + half, "p_holm": p_holm}


def test_tau_sweep_needs_both_ends_and_reads_their_significance():
    both_below = _sweep("τ", [("0", (-2.0, 0.001)), ("1", (-0.2, 1.0)), ("2", (None, None)), ("4", (-1.5, 0.01))])
    rep = papers.build({"jaen": _study(sweeps=[both_below])}, heads=4)
    assert _claim(rep, "BLEU peaks")["verdict"] == REPRODUCED
    one_end = _sweep("τ", [("0", (-2.0, 0.001)), ("2", (None, None))])
    assert _claim(papers.build({"jaen": _study(sweeps=[one_end])}, heads=4), "BLEU peaks")["verdict"] == NOT_RUN
    above = _sweep("τ", [("0", (-2.0, 0.001)), ("2", (None, None)), ("4", (+1.0, 0.01))])
    assert _claim(papers.build({"jaen": _study(sweeps=[above])}, heads=4), "BLEU peaks")["verdict"] == REVERSED
    # the decisive split answers first where it has the sweep (reports/PREREG_decisive_baselines.md)
    rep = papers.build({"jaen": _study(sweeps=[both_below]), "decisive": _study(sweeps=[above])}, heads=4)
    assert (_claim(rep, "BLEU peaks")["measured"][0]["study"], _claim(rep, "BLEU peaks")["verdict"]) == ("decisive",
                                                                                                      REVERSED)
    rep = papers.build({"jaen": _study(sweeps=[both_below]), "decisive": _study()}, heads=4)
    assert _claim(rep, "BLEU peaks")["measured"][0]["study"] == "jaen"


def test_sweep_without_its_default_run_is_not_run_and_names_the_run():
    """Points whose default run has not finished carry no comparison: not run yet, never not measurable."""
    no_default = _sweep("τ", [("0", (-2.0, 0.001)), ("4", (-1.5, 0.01))])
    for p in no_default["points"]:
        del p["vs_default"]
    no_default["default_job"] = "headxl_s1"
    row = _claim(papers.build({"decisive": _study(sweeps=[no_default])}, heads=4), "BLEU peaks")
    assert row["verdict"] == NOT_RUN and "headxl_s1" in row["measured"][0]["figure"]
    # the row names the tier its default run trains in, besides its own
    left = [{"archive": "reports/w", "tier": t, "seeds": [1], "jobs": 5, "finished": 5 - len(names), "left": names}
            for t, names in (("d", []), ("f", ["headxl_s1", "headxl_s2"]))]
    rep = papers.build({"decisive": _study(sweeps=[no_default])}, heads=4, progress=left)
    assert _claim(rep, "BLEU peaks")["measured"][0]["tiers"] == ["d", "f"]
    assert "not run yet (tiers d and f)" in papers.markdown(rep)
    left[1]["left"] = ["headxl_s2"]  # the default run finished, its report not yet regenerated: tier d alone
    assert _claim(papers.build({"decisive": _study(sweeps=[no_default])}, heads=4, progress=left),
                  "BLEU peaks")["measured"][0]["tiers"] == ["d"]
    noise = _sweep("noise", [("5 %", (-0.3, 1.0)), ("20 %", (-2.4, 0.01))])
    for p in noise["points"]:
        del p["vs_default"]
    assert _claim(papers.build({"decisive": _study(sweeps=[noise])}, heads=4), "Noisier")["verdict"] == NOT_RUN
    one_end = _sweep("τ", [("0", (-2.0, 0.001)), ("2", (None, None))])
    figure = _claim(papers.build({"decisive": _study(sweeps=[one_end])}, heads=4), "BLEU peaks")["measured"][0]
    assert figure["verdict"] == NOT_RUN and "τ = 4 needed" in figure["figure"] and "τ = 0 needed" not in figure["figure"]


def test_noise_attack_reads_the_noisiest_point():
    flat = _sweep("noise", [("0 %", (None, None)), ("5 %", (-0.3, 1.0)), ("20 %", (-0.4, 0.9))])
    assert _claim(papers.build({"jaen": _study(sweeps=[flat])}, heads=4), "Noisier")["verdict"] == NOT_MEASURABLE
    drop = _sweep("noise", [("0 %", (None, None)), ("5 %", (-0.3, 1.0)), ("20 %", (-2.4, 0.01))])
    assert _claim(papers.build({"jaen": _study(sweeps=[drop])}, heads=4), "Noisier")["verdict"] == REPRODUCED


def test_corrections_quote_the_reports():
    enja = _study(seen_source_sentences=75, novel_sentences=500,
                  by_reordering={"rows": [{"system": "combination", "more": {"p_holm": 1.0}, "less": {"p_holm": 0.65}}]})
    text = "\n".join(papers.corrections({"enja": enja, "jaen": _study()}, heads=4))
    assert "75 of the 500 test sources" in text and "combination less 0.650" in text and "2 of the preset's 4" in text


def test_cli_writes_markdown_and_json(tmp_path):
    jaen = tmp_path / "jaen.json"
    jaen.write_text(json.dumps(_study(comparisons={"headxl": _cmp(-0.19, -1.76, 1.41, 1.0)})))
    out = tmp_path / "PAPERS.md"
    res = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "papers", "--study", f"jaen={jaen}",
                          "--report", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    md = out.read_text(encoding="utf-8")
    assert "| Tab. 2 | HeadXL PE improves" in md and "-0.19 [-1.76, +1.41]" in md
    assert json.loads(out.with_suffix(".json").read_text())["claims"][2]["verdict"] == NOT_MEASURABLE


def test_cli_refuses_a_bad_study_in_one_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "papers", "--study", "xx=a.json",
                          "--report", str(tmp_path / "P.md")], capture_output=True, text=True)
    assert res.returncode != 0 and "Traceback" not in res.stderr and "--study 'xx=a.json'" in res.stderr


def test_orderings_compare_two_systems_runs_and_read_oracle_runs(tmp_path):
    import sacrebleu

    from onmt_xl.experiments.evidence_report import pair_rows

    refs = ["the cat sat on the mat", "a dog ran in the park", "it rains today"]
    good, bad = refs, ["the cat sat", "a dog in park", "it rains"]

    def run(name, hyps, split="test"):
        jd = tmp_path / "jobs" / name
        jd.mkdir(parents=True)
        (jd / "done.json").write_text(json.dumps({"resumed_exactly": True}))
        (jd / f"hyp.{split}").write_text("\n".join(hyps) + "\n")

    run("refsr_s1", good), run("exgre_s1", bad), run("prereorder_oracle_s1", good, "oracle"), run("baseline_s1", bad)
    rows = pair_rows(tmp_path, [("refsr", "exgre"), ("prereorder_oracle", "baseline"), ("both_re", "enc_re")], [1, 2],
                     refs, n_samples=20, seed=1, alpha=0.05)
    assert set(rows) == {"refsr > exgre", "prereorder_oracle > baseline"}  # enc_re/both_re have no runs
    expected = sacrebleu.corpus_bleu(good, [refs], force=True).score - sacrebleu.corpus_bleu(bad, [refs], force=True).score
    assert rows["refsr > exgre"]["delta"] == pytest.approx(expected)
    assert rows["prereorder_oracle > baseline"]["delta"] == pytest.approx(expected)  # its oracle translation
    assert all(r["family"] == "orderings among systems" and "p_holm" in r for r in rows.values())


def test_aer_at_chance_is_not_measurable_and_the_eflomal_row_follows():
    chance = {"diagonal": {"aer": 0.889}}
    gold = {"systems": {"baseline": {"aer": {"mean": 0.924}}, "combination": {"aer": {"mean": 0.928}}},
            "chance": chance, "comparisons": {"combination": {"delta": 0.004, "low": -0.01, "high": 0.02, "p_holm": 0.6}}}
    test = {"systems": {"baseline": {"aer": {"mean": 0.675}}, "combination": {"aer": {"mean": 0.652}}},
            "chance": {"diagonal": {"aer": 0.74}},
            "comparisons": {"combination": {"delta": -0.022, "low": -0.03, "high": -0.015, "p_holm": 0.001}}}
    rep = papers.build({"decisive": _study(attention_aer=gold, attention_aer_test=test)}, heads=4)
    claim = _claim(rep, "Combination's attention")
    # the row names its study, and the links it is measured against beside it
    assert [(m["study"], m["reference"]) for m in claim["measured"]] == [("decisive", "gold links"),
                                                                         ("decisive", "eflomal test links")]
    text = papers.markdown(rep)
    assert "| decisive, gold links (" in text and "| decisive, eflomal test links (" in text
    assert claim["verdict"] == papers.AT_CHANCE and claim["measured"][1]["verdict"] == REPRODUCED


def test_the_gpu_routes_work_directories_answer_where_the_cpu_study_has_nothing():
    tau = _sweep("τ", [("0", (-2.0, 0.001)), ("2", (None, None)), ("4", (-1.5, 0.01))])
    gpu_c = _study(comparisons={"disan": _cmp(0.2, -0.5, 0.9, 0.8, "the other baselines")})
    rep = papers.build({"jaen": _study(), "jaen_gpu": gpu_c, "jaen_gpu_d": _study(sweeps=[tau])}, heads=4)
    peak = _claim(rep, "BLEU peaks")
    assert peak["measured"][0]["study"] == "jaen_gpu_d" and peak["verdict"] == REPRODUCED
    assert [m["study"] for m in _claim(rep, "DiSAN")["measured"]] == ["jaen_gpu"]


def test_the_preregistered_primary_leads_and_the_addendum_is_a_second_look_beside_it():
    """The design (identity start) and its addendum (tuned start) ask one question twice: the design's answer leads
    (its row first, its verdict the claim's, the report's opening paragraph), the addendum follows as a second look
    with the order of events; each verdict keeps its own rule, and Holm runs over the two primaries
    (``PREREG_decisive_tuned.md``), none before both exist."""
    decisive = _study(comparisons={"combination": {**_cmp(-0.47, -0.88, -0.07, 0.024, "primary"), "p": 0.024}})
    tuned = _study(comparisons={"combination": {**_cmp(-0.10, -0.50, 0.30, 0.60, "primary"), "p": 0.60}})
    assert papers.build({"decisive": decisive}, heads=4)["primaries"] is None
    rep = papers.build({"decisive": decisive, "decisive_tuned": tuned}, heads=4)
    comb = _claim(rep, "Combination improves")
    assert [m["study"] for m in comb["measured"]] == ["decisive", "decisive_tuned"]
    assert [m["verdict"] for m in comb["measured"]] == [REVERSED, NOT_REPRODUCED]  # each by its own p
    assert comb["verdict"] == REVERSED and rep["tally"][REVERSED] == 1
    assert rep["primaries"]["decisive"]["p_holm"] == pytest.approx(0.048)  # the smaller p times 2
    assert rep["primaries"]["decisive_tuned"]["p_holm"] == pytest.approx(0.60)
    md = papers.markdown(rep)
    opening = md.split("**How to read it.**")[0]
    assert opening.index("-0.47 [-0.88, -0.07], p 0.024 (Holm over the two primaries 0.048)") < opening.index(
        "A second look") < opening.index(papers.ADDENDUM_HISTORY) < opening.index("-0.10 [-0.50, +0.30], p 0.600")
    assert "**decisive_tuned**: the decisive design's addendum, `reports/PREREG_decisive_tuned.md`, a second look" in md


def test_the_third_look_joins_the_opening_paragraph_with_holm_over_three_looks(tmp_path):
    """``reports/PREREG_xlpos.md``: once the third look's report exists, the opening paragraph gives its primary
    beside the two others, every p Holm-corrected over the three looks (as that report computed them); before,
    it says the third look is running."""
    decisive = _study(comparisons={"combination": {**_cmp(-0.47, -0.88, -0.07, 0.024, "primary"), "p": 0.024}})
    tuned = _study(comparisons={"combination": {**_cmp(-0.16, -0.52, 0.20, 0.372, "primary"), "p": 0.372}})
    looks = [{"look": "1: DECISIVE_jaen", "delta": -0.47, "low": -0.88, "high": -0.07, "p": 0.024, "p_holm": 0.072,
              "verdict": "hurts"},
             {"look": "2: DECISIVE_jaen_tuned", "delta": -0.16, "low": -0.52, "high": 0.20, "p": 0.372,
              "p_holm": 0.744, "verdict": "excluded"},
             {"look": "3: this design", "delta": 0.12, "low": -0.20, "high": 0.44, "p": 0.45, "p_holm": 0.744,
              "verdict": "an effect of the paper's size (+0.63 BLEU) is excluded at this data size"}]
    before = papers.markdown(papers.build({"decisive": decisive, "decisive_tuned": tuned}, heads=4))
    assert "it has no result here yet" in before and "Holm over the two primaries 0.048" in before
    assert papers.third_look({"looks": looks[:2]}) is None  # not before the third look has its primary
    rep = papers.build({"decisive": decisive, "decisive_tuned": tuned}, heads=4, third={"looks": looks})
    opening = papers.markdown(rep).split("**How to read it.**")[0]
    assert "Holm over the two primaries" not in opening and "no result here yet" not in opening
    assert opening.index("-0.47 [-0.88, -0.07], p 0.024 (Holm over the three looks 0.072)") < opening.index(
        "-0.16 [-0.52, +0.20], p 0.372 (Holm over the three looks 0.744)") < opening.index(
        "+0.12 [-0.20, +0.44], p 0.450 (Holm over the three looks 0.744): \"an effect of the paper's size")
    assert "none replaces another" in opening
    # with its evidence report, the third look's Combination row follows the two others
    xlpos = _study(comparisons={"combination": {**_cmp(0.12, -0.20, 0.44, 0.45, "primary"), "p": 0.45}})
    rep = papers.build({"decisive": decisive, "decisive_tuned": tuned}, heads=4,
                       third={"looks": looks, "evidence": xlpos})
    comb = _claim(rep, "Combination improves")
    assert [m["study"] for m in comb["measured"]] == ["decisive", "decisive_tuned", "decisive_xlpos"]
    assert comb["measured"][2]["notes"] == ["cross-fitted training positions"]
    assert comb["verdict"] == comb["measured"][0]["verdict"]
    assert "**decisive_xlpos**: the third look" in papers.markdown(rep)
    # the command reads it from --third-look where the file exists
    (tmp_path / "d.json").write_text(json.dumps(decisive))
    (tmp_path / "t.json").write_text(json.dumps(tuned))
    (tmp_path / "x.json").write_text(json.dumps({"looks": looks}))
    out = tmp_path / "P.md"
    papers.write({"decisive": tmp_path / "d.json", "decisive_tuned": tmp_path / "t.json"}, out, 4,
                 third=tmp_path / "x.json")
    assert "(Holm over the three looks 0.744): \"an effect" in out.read_text()
    papers.write({"decisive": tmp_path / "d.json", "decisive_tuned": tmp_path / "t.json"}, out, 4,
                 third=tmp_path / "missing.json")
    assert "no result here yet" in out.read_text()


def test_inxl_with_its_default_start_follows_the_designs_identity_start_rows():
    """Issue 78: InXL with its default start on the design's split (``decisive_inxl``) is measured beside the design's
    InXL rows (the `identity` start), after them; each row says its start, the design's row keeps the verdict."""
    decisive = _study(comparisons={"inxl": _cmp(-0.40, -0.80, 0.00, 0.05, "secondary")})
    inxl = _study(comparisons={"inxl": _cmp(0.20, -0.15, 0.55, 0.3, "primary")})
    rep = papers.build({"decisive": decisive, "decisive_inxl": inxl}, heads=4)
    row = _claim(rep, "InXL PE improves")
    assert [m["study"] for m in row["measured"]] == ["decisive", "decisive_inxl"]
    assert [m["notes"] for m in row["measured"]] == [["InXL's `identity` start, rejected by tuning"],
                                                    ["InXL's default start"]]
    assert row["verdict"] == row["measured"][0]["verdict"]
    assert papers.DEFAULT_STUDIES["decisive_inxl"] == "reports/DECISIVE_jaen_inxl.json"
    assert "**decisive_inxl**: InXL with its default (tuned) start" in papers.markdown(rep)


def test_the_decisive_split_on_a_gpu_answers_after_the_cpu_design_and_before_the_small_study():
    """The decisive split's runs on a lent GPU (tools/study/gpu_evidence.sh waves 4-6) come after the CPU design and before
    the 500-pair study, for the claims (decisive_gpu) and the sweeps (decisive_gpu_d)."""
    jaen = _study(comparisons={"disan": _cmp(-0.5, -2.0, 1.0, 0.6, "the other baselines")})
    gpu = _study(comparisons={"disan": _cmp(0.2, -0.3, 0.7, 0.4, "the other baselines")})
    rep = papers.build({"jaen": jaen, "decisive_gpu": gpu}, heads=4)
    assert [m["study"] for m in _claim(rep, "DiSAN")["measured"]] == ["decisive_gpu", "jaen"]
    assert papers.SWEEP_STUDIES.index("decisive_gpu_d") < papers.SWEEP_STUDIES.index("jaen")
    assert set(papers.DEFAULT_STUDIES) >= {"decisive_gpu", "decisive_gpu_d"}


def test_what_is_missing_lists_each_tiers_unfinished_jobs_from_the_archive(tmp_path):
    archive = tmp_path / "archive"
    for name in ("relative_pe_s1", "headxl_tau0_s1", "combination_s9"):
        (archive / "jobs" / name).mkdir(parents=True)
        (archive / "jobs" / name / "done.json").write_text("{}")
    (archive / "jobs" / "relative_pe_s2").mkdir()  # training: no done.json
    rows = papers.tier_progress(f"{archive}:i,d") + papers.tier_progress(f"{archive}:e:8,9")
    assert [(r["tier"], r["seeds"], r["finished"], r["jobs"]) for r in rows] == [
        ("i", [1, 2], 1, 2), ("d", [1], 1, 9), ("e", [8, 9], 1, 4)]
    assert rows[0]["left"] == ["relative_pe_s2"]
    assert rows[1]["left"] == ["headxl_tau1_s1", "headxl_tau3_s1", "headxl_tau4_s1", "combination_rerun_s1",
                               "combination_noise5_s1", "combination_noise10_s1", "combination_noise15_s1",
                               "combination_noise20_s1"]
    assert rows[2]["left"] == ["baseline_s8", "combination_s8", "baseline_s9"]
    jaen = tmp_path / "jaen.json"
    jaen.write_text(json.dumps(_study(comparisons={"headxl": _cmp(-0.19, -1.76, 1.41, 1.0)})))
    out = tmp_path / "PAPERS.md"
    cli = [sys.executable, "-m", "onmt_xl.experiments", "papers", "--study", f"jaen={jaen}", "--report", str(out)]
    res = subprocess.run(cli + ["--progress", f"{archive}:i"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"| `{archive}` | i | 1, 2 | 1 of 2 | relative_pe_s2 |" in out.read_text(encoding="utf-8")
    assert json.loads(out.with_suffix(".json").read_text())["progress"][0]["left"] == ["relative_pe_s2"]
    out.unlink()
    for bad, said in ((f"{archive}:z", "unknown tier 'z'"), (f"{archive}", "expected ARCHIVE:TIERS"),
                      (f"{archive}:e:1,x", "SEEDS must be")):
        res = subprocess.run(cli + ["--progress", bad], capture_output=True, text=True)
        assert res.returncode != 0 and said in res.stderr and "Traceback" not in res.stderr and not out.exists()


def test_progress_can_follow_some_systems_of_a_tier_and_their_jobs_make_their_rows_partial(tmp_path):
    """Issue 78's extra seeds of ExGRE and ReFSR: ``ARCHIVE:TIERS:SEEDS:SYSTEMS`` follows only those systems' jobs,
    the table names them, and their rows (and their Holm family's) read *(partial)* until the jobs are archived."""
    archive = tmp_path / "decisive_jaen"
    (archive / "jobs" / "exgre_s3").mkdir(parents=True)
    (archive / "jobs" / "exgre_s3" / "done.json").write_text("{}")
    row, = papers.tier_progress(f"{archive}:c:3,4:exgre,refsr")
    assert (row["jobs"], row["finished"], row["left"]) == (4, 1, ["refsr_s3", "exgre_s4", "refsr_s4"])
    assert row["systems"] == ["exgre", "refsr"]
    family = "the other baselines"
    decisive = _study(workdir="decisive_jaen", family_members={family: ["relative_pe", "exgre"]}, comparisons={
        "exgre": _cmp(-0.74, -1.32, -0.16, 0.052, family), "relative_pe": _cmp(-0.05, -0.65, 0.56, 1.0, family),
        "combination": _cmp(-0.47, -0.88, -0.07, 0.024, "primary")})
    rep = papers.build({"decisive": decisive}, heads=4, progress=[row])
    assert papers.PARTIAL in _claim(rep, "ExGRE improves")["verdict"]
    assert papers.PARTIAL in _claim(rep, "Relative PE improves")["verdict"]  # the same Holm family
    assert papers.PARTIAL not in _claim(rep, "Combination improves")["verdict"]
    md = papers.markdown(rep)
    assert f"| `{archive}` | c (exgre, refsr) | 3, 4 | 1 of 4 | refsr_s3, exgre_s4, refsr_s4 |" in md
    assert "Rows marked *(partial)* (2 claims) read finished runs" in md and "Every row has its verdict" not in md
    cli = [sys.executable, "-m", "onmt_xl.experiments", "papers", "--report", str(tmp_path / "P.md")]
    res = subprocess.run(cli + ["--progress", f"{archive}:c:3:exgre,lstm"], capture_output=True, text=True)
    assert res.returncode != 0 and "no system 'lstm' in tier c" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "P.md").exists()


def test_added_runs_are_queued_until_their_study_reads_them_with_8_seeds():
    """What is missing names each run added after the third look (issue 78's, the encoder-free seeds) as queued until
    its study holds its systems with 8 seeds, then as done, with the study that reads it."""
    missing = lambda r: papers.markdown(r).split("## What is missing")[1]  # noqa: E731
    seeds = lambda n: {"seeds": list(range(1, n + 1))}  # noqa: E731
    queued = missing(papers.build({"decisive_inxl": _study(systems={"inxl": seeds(7)})}, heads=4))
    assert "Queued on the CPU (`tools/study/xlpos_queue.sh`): InXL with the default (tuned) start" in queued
    done = missing(papers.build({"decisive_inxl": _study(systems={"inxl": seeds(8)}),
                                 "decisive": _study(systems={"exgre": seeds(8), "refsr": seeds(2)})}, heads=4))
    assert "Done: InXL with the default (tuned) start, 8 seeds, on the decisive split" in done
    assert "read by study **decisive_inxl**'s row" in done and "Queued on the CPU (`tools/study/xlpos_queue.sh`): " \
        "ExGRE and ReFSR seeds 3-8" in done
    both = missing(papers.build({"decisive_inxl": _study(systems={"inxl": seeds(8)}),
                                 "decisive": _study(systems={"exgre": seeds(8), "refsr": seeds(8)})}, heads=4))
    assert "read by their rows of study **decisive**, 8 seeds each" in both
    assert "Queued on the CPU (`tools/study/xlpos_queue.sh`): the encoder-free Transformer's seeds 3-8" in both
    assert "ExGRE and ReFSR seeds 3-8" not in both.split("Done:")[0]
    encfree = {n: seeds(8) for n in ("encoder_free", "encoder_free_relative", "encoder_free_inxl")}
    every = missing(papers.build({"decisive_inxl": _study(systems={"inxl": seeds(8)}),
                                  "decisive": _study(systems={"exgre": seeds(8), "refsr": seeds(8), **encfree})},
                                 heads=4))
    assert "Queued on the CPU" not in every and "read by their Tab. 4 rows of study **decisive**" in every


def test_a_verdict_that_exgre_and_refsrs_extra_seeds_changed_says_what_it_read_before():
    """Issue 78: once ExGRE's and ReFSR's seeds 3-8 are in, the design's reading without them (``decisive_2seeds``)
    adds no row; a **decisive** row whose verdict differs from it names the earlier verdict and why, the others
    stay as they are."""
    family = "the other baselines"
    members = {family: ["exgre", "disan"]}
    before = _study(family_members=members, comparisons={"exgre": _cmp(-0.74, -1.40, 0.05, 0.07, family),
                                                         "disan": _cmp(0.96, 0.36, 1.55, 0.007, family)})
    after = _study(family_members=members, comparisons={"exgre": _cmp(-0.70, -1.10, -0.30, 0.004, family),
                                                        "disan": _cmp(0.96, 0.36, 1.55, 0.007, family)})
    rep = papers.build({"decisive": after, papers.BEFORE_FEWSEED: before}, heads=4)
    exgre, disan = _claim(rep, "ExGRE improves"), _claim(rep, "DiSAN improves")
    assert [m["study"] for m in exgre["measured"]] == ["decisive"]
    assert exgre["verdict"] == "reversed"
    assert exgre["measured"][0]["notes"] == ["*not reproduced*, Holm p 0.070 with the pooled seed variance and seeds "
                                             "1-2 alone of ExGRE, ReFSR and the three encoder-free systems, before "
                                             "their seeds 3-8"]
    assert disan["measured"][0]["notes"] == []
    assert "*not reproduced*, Holm p 0.070 with the pooled seed variance" in papers.markdown(rep)
    alone = papers.build({"decisive": after}, heads=4)
    assert _claim(alone, "ExGRE improves")["measured"][0]["notes"] == []


def test_what_is_missing_says_nothing_is_only_when_no_row_waits_and_no_job_is_left():
    jaen = _study(comparisons={"combination": _cmp(-0.31, -2.07, 1.46, 1.0)})
    rep = papers.build({"jaen": jaen}, heads=4)
    missing = lambda r: papers.markdown(r).split("## What is missing")[1]  # noqa: E731
    assert "Rows marked *not run yet* wait" in missing(rep) and "Every row has its verdict" not in missing(rep)
    done = {**rep, "claims": [c for c in rep["claims"] if c["verdict"] != NOT_RUN]}
    assert missing(done).startswith("\n\nEvery row has its verdict from finished runs")
    assert "Queued on the CPU (" in missing(done)  # the runs issue 78 asks for, named only
    finished = {"archive": "a", "tier": "c", "seeds": [1, 2], "finished": 18, "jobs": 18, "left": []}
    assert "Every row has its verdict" in missing({**done, "progress": [finished]})
    assert "| `a` | c | 1, 2 | 18 of 18 | – |" in missing({**done, "progress": [finished]})
    waiting = {**finished, "finished": 17, "left": ["disan_s2"]}
    assert "no tier has a job left" not in missing({**done, "progress": [waiting]})
    assert "the jobs left in the table below feed no row yet" in missing({**done, "progress": [waiting]})
    assert "Rows marked *not run yet*" not in missing({**done, "progress": [waiting]})
    partial = [{**c, "measured": [{**m, "verdict": m["verdict"] + papers.PARTIAL} for m in c["measured"]]}
               for c in done["claims"]]
    assert "Every row has its verdict" not in missing({**done, "claims": partial})


def test_the_report_lists_its_studies_in_one_order_whatever_order_they_are_named_in():
    """`onmt-xl papers --study ...` (the script's order) and `onmt-xl papers` alone (the defaults) write one report."""
    named = {"decisive_tuned": _study(), "decisive": _study(), "jaen": _study(), papers.BEFORE_FEWSEED: _study()}
    first = papers.build(named, heads=4)
    again = papers.build(dict(reversed(list(named.items()))), heads=4)
    assert list(first["studies"]) == ["jaen", "decisive", papers.BEFORE_FEWSEED, "decisive_tuned"]
    assert papers.markdown(first) == papers.markdown(again)
