"""tools/study/compare_archives.py: each system's test BLEU in two archives, and what moved."""

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "study"))

import compare_archives  # noqa: E402

REFS = ["the cat sat on the mat", "a dog ran in the park today", "we like green tea very much"]


def _archive(root: Path, runs: dict) -> Path:
    for name, lines in runs.items():
        d = root / "jobs" / name
        d.mkdir(parents=True)
        with gzip.open(d / "hyp.test.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return root


def test_rows_give_both_sides_and_what_moved(tmp_path):
    worse = ["the cat sat", "a dog ran", "we like tea"]
    before = _archive(tmp_path / "before", {"baseline_s1": REFS, "baseline_s2": REFS, "inxl_s1": worse, "inxl_s2": worse,
                                            "inxl_s3": worse, "combination_s1": worse})
    after = _archive(tmp_path / "after", {"baseline_s1": REFS, "baseline_s2": REFS, "inxl_s1": REFS, "inxl_s2": REFS})
    rows = compare_archives.compare(before, after, ["inxl", "combination"], REFS, "baseline", 200, 1)
    inxl = rows[2].split(" | ")
    assert inxl[1] == "1,2"  # the seeds both archives hold
    after_bleu = float(inxl[3].split(" ± ")[0])
    before_bleu = float(inxl[2].split(" ± ")[0])
    assert after_bleu == pytest.approx(100.0) and before_bleu < 50
    assert inxl[4].startswith(f"+{after_bleu - before_bleu:.2f} [")
    assert inxl[7].startswith("+0.00 [+0.00, +0.00]")  # after: the baseline's translations exactly
    assert "no seed finished in both archives" in rows[3]


def test_a_hypothesis_file_of_another_length_and_a_missing_archive_are_one_line(tmp_path):
    before = _archive(tmp_path / "before", {"baseline_s1": REFS, "inxl_s1": REFS[:2]})
    after = _archive(tmp_path / "after", {"baseline_s1": REFS, "inxl_s1": REFS})
    refs = tmp_path / "refs.txt"
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    tool = [sys.executable, str(REPO / "tools" / "study" / "compare_archives.py"), "--refs", str(refs), "--systems", "inxl"]
    out = subprocess.run(tool + ["--before", str(before), "--after", str(after)], capture_output=True, text=True)
    assert out.returncode == 2 and "inxl: a hypothesis file has 2 lines, the references 3" in out.stderr
    assert "Traceback" not in out.stderr
    out = subprocess.run(tool + ["--before", str(tmp_path / "none"), "--after", str(after)], capture_output=True, text=True)
    assert out.returncode == 2 and "has no jobs/ directory" in out.stderr and "Traceback" not in out.stderr


def test_report_file_holds_the_heading_and_the_table_and_regenerates_byte_for_byte(tmp_path):
    before = _archive(tmp_path / "before", {"baseline_s1": REFS, "inxl_s1": ["the cat sat", "a dog", "we like tea"]})
    after = _archive(tmp_path / "after", {"baseline_s1": REFS, "inxl_s1": REFS})
    refs = tmp_path / "refs.txt"
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    report = tmp_path / "MOVED.md"
    argv = ["--refs", str(refs), "--systems", "inxl", "--samples", "50", "--before", str(before), "--after", str(after),
            "--report", str(report)]
    assert compare_archives.main(argv) == 0
    text = report.read_text(encoding="utf-8")
    assert text.startswith(f"# What moved: `{after}` against `{before}`")
    assert "--samples 50 --bootstrap-seed 12345" in text
    # references outside the checkout (a temporary work directory's) are named by their last three parts only
    assert f"`--refs WORKDIR/{'/'.join(refs.parts[-3:])}`" in text
    table = compare_archives.compare(before, after, ["inxl"], REFS, "baseline", 50, 12345)
    assert text.endswith("\n".join(table) + "\n")
    compare_archives.main(argv)
    assert report.read_text(encoding="utf-8") == text


def test_a_unicode_line_separator_inside_a_hypothesis_stays_in_its_line(tmp_path):
    """Hypotheses are read as the evidence report reads them (``stock.read_lines``): U+2028 or U+0085 inside a
    translation does not split it, so the line count still matches the references."""
    odd = ["the cat\u2028sat on the mat", "a dog ran in the park\x85today", "we like green tea very much"]
    before = _archive(tmp_path / "before", {"inxl_s1": odd})
    after = _archive(tmp_path / "after", {"inxl_s1": REFS})
    rows = compare_archives.compare(before, after, ["inxl"], REFS, "baseline", 20, 1)
    assert rows[2].split(" | ")[1] == "1"
