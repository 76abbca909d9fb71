"""reports/RESULTS.md is regenerated from its archive, reports/exp_enja, by one command, bit for bit."""

import subprocess
import sys
from pathlib import Path

from tests.conftest import run_env

REPO = Path(__file__).resolve().parents[1]


def test_results_md_regenerates_from_the_archive(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "onmt_xl.experiments", "experiments", "--workdir", str(tmp_path / "wd"),
                           "--archive", str(REPO / "reports" / "exp_enja"), "--report-only", "--report-dir",
                           str(tmp_path / "rep")], capture_output=True, text=True, env=run_env(), cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "rep" / "RESULTS.md").read_bytes() == (REPO / "reports" / "RESULTS.md").read_bytes()
