"""tools/study/tune_options.py's decision helper: reports/TUNING.md's rule (a lead larger than its standard error)."""

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "study" / "tune_options.py"


@pytest.fixture(scope="module")
def tune():
    spec = importlib.util.spec_from_file_location("tune_options", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(name, bleus):
    return [{"name": name, "seed": s, "bleu": b} for s, b in enumerate(bleus, 1)]


def test_paired_lead_is_the_mean_paired_difference_and_its_standard_error(tune):
    rows = _rows("inxl_absolute", [28.0, 27.0, 29.0]) + _rows("inxl_identity", [27.0, 26.5, 27.0])
    d = tune.paired_lead(rows, "inxl_absolute", "inxl_identity")
    assert d["diffs"] == [1.0, 0.5, 2.0] and d["lead"] == pytest.approx(7 / 6)
    assert d["se"] == pytest.approx(0.7637626 / 3 ** 0.5) and d["ahead"]
    # noisy: the same mean lead with a spread larger than it is not a lead
    noisy = _rows("inxl_absolute", [30.0, 25.0, 28.0]) + _rows("inxl_identity", [27.0, 27.0, 26.5])
    assert not tune.paired_lead(noisy, "inxl_absolute", "inxl_identity")["ahead"]
    # only the seeds both ran count; fewer than two give no decision
    assert tune.paired_lead(_rows("headxl_tau1", [1.0]) + _rows("headxl_tau2", [2.0, 3.0]), "headxl_tau1",
                            "headxl_tau2") is None


def test_decide_option_names_two_candidates(tune):
    import argparse

    assert tune.decide_option("headxl_tau2:headxl_tau1") == ("headxl_tau2", "headxl_tau1")
    with pytest.raises(argparse.ArgumentTypeError, match="not A:B"):
        tune.decide_option("headxl_tau2")
    with pytest.raises(argparse.ArgumentTypeError, match="not A:B"):
        tune.decide_option("headxl_tau2:nope")
