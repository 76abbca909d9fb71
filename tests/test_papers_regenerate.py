"""reports/PAPERS.md is what ``onmt-xl papers`` writes from the committed evidence reports' JSON and the archives, as
``tools/study/papers_report.sh`` calls it: a change to the reading (``papers.py``, ``row_intervals.py``) must come with
the regenerated report."""

import json
from pathlib import Path

import pytest

from onmt_xl.experiments import papers

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
#: tools/study/papers_report.sh's --study and --progress arguments once the decisive design has its 8 seeds archived
STUDIES = {"jaen": "EVIDENCE_jaen.json", "enja": "EVIDENCE_enja.json", "decisive": "DECISIVE_jaen.json",
           "decisive_tuned": "DECISIVE_jaen_tuned.json"}
PROGRESS = ("reports/decisive_jaen_tuned:e:1,2,3,4,5,6,7,8", "reports/decisive_jaen:c,i,d,h",
            "reports/decisive_jaen:f,g:1,2,3,4,5,6,7,8")
#: studies the script adds once their runs are analysed (InXL's default start; the design before the few-seed systems'
#: seeds 3-8, once ExGRE's and ReFSR's are archived)
LATER_STUDIES = {"decisive_inxl": "DECISIVE_jaen_inxl.json", papers.BEFORE_FEWSEED: "DECISIVE_jaen_2seeds.json"}
#: the progress rows of issue 78's runs: InXL's default start (once its archive exists), the seeds 3-8 of ExGRE and
#: ReFSR (always named)
INXL_PROGRESS = "reports/decisive_jaen_inxl:g:1,2,3,4,5,6,7,8"
FEWSEED_PROGRESS = "reports/decisive_jaen:c:3,4,5,6,7,8:exgre,refsr"
#: and those of the encoder-free systems' seeds 3-8 (reports/PREREG_encfree_seeds.md; always named)
ENCFREE_PROGRESS = ("reports/decisive_jaen:c:3,4,5,6,7,8:encoder_free",
                    "reports/decisive_jaen:h:3,4,5,6,7,8:encoder_free_relative,encoder_free_inxl")


def test_papers_md_regenerates_from_the_committed_json(monkeypatch):
    if not all((REPORTS / f).exists() for f in STUDIES.values()) or not (REPORTS / "decisive_jaen" / "jobs").is_dir():
        pytest.skip("the committed reports or archives are not in this checkout")
    monkeypatch.chdir(REPO)  # --progress names archives relative to the repository, as the script does
    # the script adds InXL's default-start tier once its archive exists (issue 78's queue creates it)
    inxl = (INXL_PROGRESS,) if (REPORTS / "decisive_jaen_inxl").is_dir() else ()
    specs = PROGRESS + inxl + (FEWSEED_PROGRESS,) + ENCFREE_PROGRESS
    progress = [row for spec in specs for row in papers.tier_progress(spec)]
    third_path = REPO / papers.THIRD_LOOK  # read by the CLI where it exists, as here
    third = json.loads(third_path.read_text(encoding="utf-8")) if third_path.exists() else None
    studies = {**STUDIES, **{k: v for k, v in LATER_STUDIES.items() if (REPORTS / v).exists()}}
    report = papers.build(papers.load_studies({k: REPORTS / v for k, v in studies.items()}), 4, progress, third)
    assert papers.markdown(report) == (REPORTS / "PAPERS.md").read_text(encoding="utf-8")
    # what issue 78 changed, read from the regenerated report rather than written here: the preregistered primary
    # leads, and its row is the claim's verdict
    comb = next(c for c in report["claims"] if c["claim"].startswith("Combination improves"))
    assert [m["study"] for m in comb["measured"]][:2] == ["decisive", "decisive_tuned"]
    assert comb["verdict"] == comb["measured"][0]["verdict"]
