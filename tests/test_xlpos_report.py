"""The third look's report (onmt_xl.experiments.xlpos_report, reports/PREREG_xlpos.md): the preregistered decision
rule, the drift check of the control, Holm over the looks, and how the runs are assembled for the evidence report."""

import gzip
import json

import pytest

from onmt_xl.core.errors import XLUsageError
from onmt_xl.experiments import xlpos_report as xr

REFS = ["the cat sat on the mat", "a dog ran in the park today", "we like green tea very much"]


def _job(archive, name, hyps, done=True, packed=True):
    jd = archive / "jobs" / name
    jd.mkdir(parents=True)
    text = "\n".join(hyps) + "\n"
    if packed:
        with gzip.open(jd / "hyp.test.gz", "wt", encoding="utf-8") as f:
            f.write(text)
        if done:
            with gzip.open(jd / "done.json.gz", "wt", encoding="utf-8") as f:
                f.write(json.dumps({"step": 8000}))
    else:
        (jd / "hyp.test").write_text(text, encoding="utf-8")
        if done:
            (jd / "done.json").write_text("{}", encoding="utf-8")
    return jd


@pytest.mark.parametrize("low,high,expected", [
    (0.01, 0.9, "helps"), (-0.9, -0.01, "hurts"), (-0.5, 0.62, "excluded"), (-0.5, 0.63, "inconclusive"),
    (0.0, 0.5, "excluded"), (-1.0, 0.0, "excluded")])
def test_verdict_is_the_preregistered_rule(low, high, expected):
    assert expected in xr.verdict(low, high)


def test_holm_over_the_looks_and_each_verdict():
    looks = [("1", {"delta": -0.47, "low": -0.88, "high": -0.07, "p": 0.024}),
             ("2", {"delta": -0.16, "low": -0.52, "high": 0.20, "p": 0.372}),
             ("3", {"delta": 0.30, "low": 0.05, "high": 0.55, "p": 0.02})]
    rows = {r["look"]: r for r in xr.looks_holm(looks)}
    assert rows["3"]["p_holm"] == pytest.approx(0.06) and rows["1"]["p_holm"] == pytest.approx(0.06)
    assert rows["2"]["p_holm"] == pytest.approx(0.372)
    assert rows["1"]["verdict"] == "hurts" and rows["3"]["verdict"] == "helps"
    assert "excluded" in rows["2"]["verdict"]


def test_drift_check_reads_both_archives_and_applies_the_limit(tmp_path):
    control, drift = tmp_path / "control", tmp_path / "drift"
    for s in (1, 2):
        _job(control, f"baseline_s{s}", REFS)
    _job(drift, "baseline_s1", REFS, packed=False)
    pending = xr.drift_check(control, drift, REFS)
    assert pending["status"] == "pending" and pending["missing"] == ["current-code baseline_s2"]
    _job(drift, "baseline_s2", ["the cat", "a dog", "we like tea"])
    d = xr.drift_check(control, drift, REFS)
    assert d["status"] == "done" and d["archived"][1] == pytest.approx(100.0)
    assert d["delta"] < -xr.DRIFT_LIMIT and d["exceeded"]
    assert d["delta"] == pytest.approx((d["current"][1] + d["current"][2]) / 2 - 100.0)
    assert d["identical"] == [1]  # seed 1's translations are the archived ones word for word, seed 2's are not
    text = "\n".join(xr.extras_markdown({"drift": d}))
    assert "word for word (seed 1's)" in text


def test_an_unfinished_job_is_not_read(tmp_path):
    _job(tmp_path, "baseline_s1", REFS, done=False)
    assert xr.seed_hyps(tmp_path, "baseline", (1,)) == {}


def test_assemble_links_the_data_and_renames_the_design_runs(tmp_path):
    data, control, design, work = (tmp_path / n for n in ("design_work", "control", "design", "work"))
    (data / "data").mkdir(parents=True)
    (data / "data" / "test.ref").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    (data / "align").mkdir()
    (data / "align" / "test.gdfa").write_text("0-0\n", encoding="utf-8")
    for s in (1, 2):
        _job(control, f"baseline_s{s}", REFS)
        _job(design, f"combination_xfit_s{s}", REFS[::-1], packed=s == 1)
    _job(design, "combination_xfit_s3", REFS, done=False)
    with gzip.open(design / "jobs" / "combination_xfit_s1" / "hyp.payoff100.gz", "wt", encoding="utf-8") as f:
        f.write("oracle\n")
    found = xr.assemble(work, data, control, design, seeds=(1, 2, 3))
    assert found == {"baseline": [1, 2], "combination": [1, 2]}
    assert (work / "data" / "test.ref").read_text(encoding="utf-8").splitlines() == REFS
    assert (work / "align" / "test.gdfa").read_text(encoding="utf-8") == "0-0\n"
    assert (work / "jobs" / "combination_s1" / "hyp.test").read_text(encoding="utf-8").splitlines() == REFS[::-1]
    assert json.loads((work / "jobs" / "combination_s1" / "done.json").read_text()) == {"step": 8000}
    assert (work / "jobs" / "combination_s1" / "hyp.oracle").read_text(encoding="utf-8") == "oracle\n"
    assert not (work / "jobs" / "combination_s2" / "hyp.oracle").exists()
    assert xr.assemble(work, data, control, design, seeds=(1, 2, 3)) == found  # again: replaced, not doubled
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    (other / "data" / "test.ref").write_text("x\n", encoding="utf-8")
    with pytest.raises(XLUsageError, match="give an empty --workdir"):
        xr.assemble(work, other, control, design)


def test_the_report_refuses_the_archived_control_when_the_drift_exceeds_the_limit(tmp_path):
    data, control, drift, design = (tmp_path / n for n in ("w", "control", "drift", "design"))
    (data / "data").mkdir(parents=True)
    (data / "data" / "test.ref").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    for s in (1, 2):
        _job(control, f"baseline_s{s}", REFS)
        _job(drift, f"baseline_s{s}", ["the", "a", "we"])
    (design / "jobs").mkdir(parents=True)
    args = ["--data", str(data), "--design", str(design), "--control", str(control), "--drift", str(drift),
            "--workdir", str(tmp_path / "work"), "--report", str(tmp_path / "r.md")]
    with pytest.raises(XLUsageError, match="retrains baseline seeds 3-8"):
        xr.main(args)
    assert not (tmp_path / "r.md").exists()


def test_a_pending_design_still_writes_the_drift_and_tau_sections(tmp_path, capsys):
    data, control, drift, design = (tmp_path / n for n in ("w", "control", "drift", "design"))
    (data / "data").mkdir(parents=True)
    (data / "data" / "test.ref").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    for s in (1, 2):
        _job(control, f"baseline_s{s}", REFS)
        _job(drift, f"baseline_s{s}", REFS)
    (design / "jobs").mkdir(parents=True)
    (design / "crossfit.json").write_text(json.dumps({"crossfit": {"tau": 0.85}, "sample": {
        "full_preorderer": {"tau": 0.90}, "crossfit": {"tau": 0.853}}}), encoding="utf-8")
    (design / "preorderer.json").write_text(json.dumps({"tau": 0.8607, "tune": {"tau": 0.86},
                                                        "options": {"tagger": "unidic"}}), encoding="utf-8")
    xr.main(["--data", str(data), "--design", str(design), "--control", str(control), "--drift", str(drift),
             "--workdir", str(tmp_path / "work"), "--report", str(tmp_path / "r.md")])
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "Δ_drift = +0.00 BLEU" in text and "within it" in text
    assert "Pending: not every run has finished." in text
    assert "| chosen | tagger unidic | 0.9000 | 0.8530 | 0.8500 | 0.8600 | 0.8607 |" in text
    assert json.loads((tmp_path / "r.json").read_text())["primary"] is None


def _valid(jd, hyps):
    with gzip.open(jd / "hyp.valid.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(hyps) + "\n")


@pytest.mark.parametrize("better", ["design", "tuned"])
def test_the_pipeline_default_is_decided_on_the_validation_split(tmp_path, better):
    """reports/XLPOS.md: crossfit becomes the default only when the validation Δ's lower bound is above 0; pending
    until all 8 runs of both sides have a validation translation; the test translations play no part."""
    data, design, tuned = tmp_path / "w", tmp_path / "design", tmp_path / "tuned"
    refs = [f"sentence number {i} is here with words {i % 7} and {i % 5}" for i in range(40)]
    worse = [f"sentence {i} words" for i in range(40)]
    (data / "data").mkdir(parents=True)
    (data / "data" / "valid.tgt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    for s in xr.SEEDS:
        good_design = better == "design"
        _valid(_job(design, f"combination_xfit_s{s}", worse if good_design else refs), refs if good_design else worse)
        if s < 8:
            _valid(_job(tuned, f"combination_s{s}", refs), worse if good_design else refs)
    pending = xr.pipeline_default(data, design, tuned, samples=200)
    assert pending == {"status": "pending", "missing": ["combination_s8"]}
    assert "Pending: combination_s8 without a validation translation." in "\n".join(
        xr.extras_markdown({"drift": {"status": "pending", "missing": []}, "pipeline_default": pending}))
    _valid(_job(tuned, "combination_s8", refs), worse if better == "design" else refs)
    d = xr.pipeline_default(data, design, tuned, samples=200)
    assert d["status"] == "done" and d["valid_pairs"] == 40
    assert d["default"] == ("crossfit" if better == "design" else "preorderer")
    sign = 1 if better == "design" else -1  # the better side scores 100 BLEU (its hypotheses are the references)
    assert (d["low"] > 0) == (better == "design") and d["delta"] * sign > 90
    text = "\n".join(xr.extras_markdown({"drift": {"status": "pending", "missing": []}, "pipeline_default": d}))
    assert ("becomes **crossfit**." if better == "design" else "stays **preorderer**.") in text


@pytest.mark.parametrize("delta,low,default", [(0.3, -0.1, "preorderer"), (0.3, 0.01, "crossfit"),
                                               (-0.2, -0.5, "preorderer")])
def test_the_pipeline_default_reads_the_lower_bound_not_the_estimate(tmp_path, monkeypatch, delta, low, default):
    from onmt_xl.experiments.stats import Comparison

    data, design, tuned = tmp_path / "w", tmp_path / "design", tmp_path / "tuned"
    (data / "data").mkdir(parents=True)
    (data / "data" / "valid.tgt").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    for s in xr.SEEDS:
        _valid(_job(design, f"combination_xfit_s{s}", REFS), REFS)
        _valid(_job(tuned, f"combination_s{s}", REFS), REFS)
    monkeypatch.setattr(xr, "seed_pooled_bootstrap", lambda *a, **k: Comparison(delta, low, delta + 0.4, 0.2, 8, 8,
                                                                                 3, 10, 1))
    assert xr.pipeline_default(data, design, tuned)["default"] == default
