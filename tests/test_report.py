"""The report's sections (onmt_xl/experiments/report/) and the claims on results with nothing run, and the
size guide (no function over 60 lines) on the scoring, report and claims modules."""

import ast
from pathlib import Path

import pytest

from onmt_xl.experiments.claims import NOT_RUN, check
from onmt_xl.experiments.plan import EXPERIMENTS, SIM_SYSTEMS, SWAP_RATIOS, plan
from onmt_xl.experiments.report import write_report
from onmt_xl.experiments.report.aer import aer
from onmt_xl.experiments.report.encoder_free import encoder_free
from onmt_xl.experiments.report.format import fmt, p_value, speed_marks
from onmt_xl.experiments.report.main_table import main_table
from onmt_xl.experiments.report.robustness import robustness
from onmt_xl.experiments.report.sim import sim
from onmt_xl.experiments.report.tau import tau

ROOT = Path(__file__).resolve().parents[1]
MODULES = [ROOT / "onmt_xl/experiments/scoring.py", ROOT / "onmt_xl/experiments/claims.py",
           *sorted((ROOT / "onmt_xl/experiments/report").glob("*.py"))]
NOTHING = {"jobs": {}}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_function_over_60_lines_and_no_runner_import(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60]
    assert not long
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "onmt_xl.experiments.runner" not in imported


def test_formatting_helpers():
    assert fmt(None) == fmt(float("nan")) == "–"
    assert fmt(1234.5, ",.0f") == "1,234" and fmt(0.5, "+.2f") == "+0.50"
    assert [p_value(p) for p in (None, 0.2, 0.03, 0.001)] == ["–", "0.200", "0.030 *", "0.001 **"]
    assert speed_marks({}) == "" and speed_marks({"concurrent_jobs": 2, "resumed_from": "x"}) == "†‡"


def test_every_claim_is_not_run_on_empty_results():
    claims = check(NOTHING, heads=4)
    # main (14), oracle (2), tau, noise, AER (2 references x 3 systems), encoder-free (2), robustness, Sim
    assert len(claims) == 14 + 2 + 1 + 1 + 6 + 2 + 1 + len(SIM_SYSTEMS)
    assert {c.verdict for c in claims} == {NOT_RUN} and {c.measured for c in claims} == {"–"}


def test_sections_on_empty_results_say_not_run_and_draw_no_plot(tmp_path):
    jobs = plan(EXPERIMENTS, [1], heads=4)
    main = main_table(NOTHING, jobs)
    assert main[0].startswith("## 1. Main table") and "| baseline | not run | | | | | | | | | | | | |" in main
    assert "| none | not run | – | – | – |" in encoder_free(NOTHING)
    assert "| exgre | – | – | – | – | – | – |" in sim(NOTHING)
    swap = robustness(NOTHING, jobs, tmp_path)
    assert swap[4] == "| system | 0 % | " + " | ".join(f"{round(100 * r)} %" for r in SWAP_RATIOS) + " |"
    assert not any("![" in line for line in tau(NOTHING, jobs, 4, tmp_path) + swap)
    assert not list(tmp_path.iterdir())


def test_aer_section_rows_and_chance_note():
    jobs = plan(["aer"], [1], heads=4)
    res = {"jobs": {"baseline": {"variants": {"gold_align": {"aer": 0.5, "precision": 0.25, "recall": 0.75}}}},
           "aer_references": {"gold_align": {"random": {"aer": 0.9}, "diagonal": {"aer": 0.6}, "src_oov": 0.125,
                                             "src_words_per_sentence": 20.0}}}
    md = aer(res, jobs)
    assert "| baseline | 0.5000 | 0.2500 | 0.7500 | – | – | – |" in md
    assert "| *chance: diagonal* | 0.6000 | – | – | – | – | – |" in md
    note = next(line for line in md if line.startswith("*chance* rows"))
    assert note.endswith("gold: 12.5 % of source and – % of target tokens outside the vocabularies, "
                         "20.0 source words per sentence.")


def test_write_report_needs_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="no data/test.ref"):
        write_report(tmp_path, [], str(tmp_path / "rep"))
