"""The demo end to end at smoke-test size: generate → align → preorderer → the runner's jobs (stock CLIs) → sacrebleu."""

import json
import subprocess
import sys

from tests.conftest import run_env


def test_demo_runs_and_resumes(tmp_path):
    wd = tmp_path / "demo"
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "demo", "--workdir", str(wd), "--train-steps", "6",
           "--preorder-iterations", "2", "--beam-size", "1"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((wd / "results.json").read_text())
    jobs = result["jobs"]
    assert set(jobs) == {"baseline", "combination"}
    assert result["preorderer"]["links"] == "gold"  # the synthetic corpus' gold test links score the preorderer
    assert result["preorderer"]["tau"] > result["preorderer"]["monotone_tau"]
    assert jobs["combination"]["parameters"] - jobs["baseline"]["parameters"] == 4 * 128  # InXL block fusion
    assert "p_bootstrap" in jobs["combination"]["variants"]["test"]
    assert (wd / "jobs" / "combination" / "model_step_6.pt").exists() and (wd / "preorderer.xlp").exists()
    assert (wd / "data" / "valid.src").read_text() == (wd / "synthetic" / "valid.src").read_text()  # the given split
    assert "Kendall tau" in out.stdout and "BLEU" in out.stdout and "vs baseline" in out.stdout
    # a second run finds every output and redoes nothing
    again = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0 and "onmt_train" not in again.stdout and "aligning" not in again.stdout
    assert "Step" not in again.stdout and "onmt_translate" not in again.stdout
