"""The demo end to end at smoke-test size: generate → align → preorderer → the runner's jobs (stock CLIs) → sacrebleu."""

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import run_env


def moved_run(cmd, workdir, steps):
    """``cmd`` (a demo command) in ``workdir`` with ``--train-steps steps``."""
    out = list(cmd)
    out[out.index("--workdir") + 1], out[out.index("--train-steps") + 1] = str(workdir), str(steps)
    return out


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
    assert "Kendall tau" in out.stdout and "BLEU" in out.stdout and "does it help? combination: " in out.stdout
    # a second run finds every output and redoes nothing
    again = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0 and "onmt_train" not in again.stdout and "aligning" not in again.stdout
    assert "Step" not in again.stdout and "onmt_translate" not in again.stdout
    # moved to another folder (its old path gone), asked for more steps: the same run goes on from step 6 there
    moved = tmp_path / "moved"
    shutil.move(wd, moved)
    more = subprocess.run(moved_run(cmd, moved, 8), capture_output=True, text=True, env=run_env())
    assert more.returncode == 0, more.stdout[-3000:] + more.stderr[-3000:]
    assert "aligning" not in more.stdout and (moved / "jobs" / "combination" / "model_step_8.pt").exists()
    log = (moved / "jobs" / "combination" / "train.log").read_text()
    assert f"Loading checkpoint from {moved}/jobs/combination/model_step_6.pt" in log


@pytest.mark.needs_eole
def test_demo_through_eole_runs_and_resumes(tmp_path):
    """``onmt-xl demo --framework eole``: the same data stages, then Eole's build_vocab/train/predict (with the
    adapter's seams) on the yaml_configs/eole/ configurations; the default demo stays OpenNMT-py's (above)."""
    pytest.importorskip("eole", reason="Eole is not installed (bash tools/install.sh eole)")
    wd = tmp_path / "demo"
    cmd = [sys.executable, "-m", "onmt_xl.experiments", "demo", "--framework", "eole", "--workdir", str(wd),
           "--train-steps", "6", "--preorder-iterations", "2", "--beam-size", "1"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((wd / "eole" / "results.json").read_text())
    jobs = result["jobs"]
    assert result["framework"] == "eole" and set(jobs) == {"baseline", "combination"}
    assert result["preorderer"]["tau"] > result["preorderer"]["monotone_tau"]
    assert jobs["combination"]["parameters"] - jobs["baseline"]["parameters"] == 4 * 128  # InXL block fusion, as above
    assert "p_bootstrap" in jobs["combination"]["variants"]["test"]
    model = wd / "eole" / "models" / "combination"
    saved = json.loads((model / "config.json").read_text())
    assert saved["model"]["encoder"]["encoder_type"] == "xl_combination"
    assert (model / "preorderer.xlp").read_bytes() == (wd / "preorderer.xlp").read_bytes()  # the artifact
    test_lines = len((wd / "data" / "test.src").read_text().splitlines())
    assert len((wd / "eole" / "hyp" / "combination.test").read_text().splitlines()) == test_lines
    assert not (wd / "jobs").exists()  # nothing of OpenNMT-py's
    assert "Kendall tau" in out.stdout and "BLEU" in out.stdout and "does it help? combination: " in out.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    assert again.returncode == 0 and "eole train" not in again.stdout and "eole predict" not in again.stdout
    assert "aligning" not in again.stdout and "BLEU" in again.stdout
    # moved to another folder (its old path gone), asked for more steps: each system goes on from its step 6 there
    moved = tmp_path / "moved"
    shutil.move(wd, moved)
    more = subprocess.run(moved_run(cmd, moved, 8), capture_output=True, text=True, env=run_env())
    assert more.returncode == 0, more.stdout[-3000:] + more.stderr[-3000:]
    assert "aligning" not in more.stdout and "eole train" in more.stdout
    assert (moved / "eole" / "models" / "combination" / "step_8").is_dir()


@pytest.mark.needs_eole
def test_demo_through_eole_refuses_before_any_work(tmp_path, monkeypatch, capsys):
    """Without Eole, or with a system not ported to it, one error line, exit 2 and nothing written. Every system is
    ported today, so one is taken out of the adapter's list; Eole's presence is faked either way."""
    from types import SimpleNamespace

    from onmt_xl.experiments import eole_demo
    from onmt_xl.experiments.cli import main

    def eole_installed(found: bool) -> None:
        spec = (lambda name: object()) if found else (lambda name: None)
        monkeypatch.setattr(eole_demo, "importlib", SimpleNamespace(util=SimpleNamespace(find_spec=spec)))

    wd = tmp_path / "demo"
    argv = ["demo", "--framework", "eole", "--workdir", str(wd), "--systems", "baseline,dec_re"]
    monkeypatch.setattr(eole_demo, "EOLE_SYSTEMS", [s for s in eole_demo.EOLE_SYSTEMS if s != "dec_re"])
    eole_installed(True)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--systems dec_re: not ported to Eole yet" in err and "Traceback" not in err and not wd.exists()
    eole_installed(False)
    assert main(argv) == 2
    assert "--framework eole needs Eole 0.6.4" in capsys.readouterr().err and not wd.exists()


def test_the_summary_answers_does_it_help():
    """One line a system against the baseline: its BLEU difference, sacrebleu's paired bootstrap p, Holm-adjusted
    where several systems are compared, and the verdict at 0.05; then what the p-value leaves out."""
    from onmt_xl.experiments.demo import does_it_help, summary

    def job(bleu, p=None):
        test = {"bleu": bleu, "chrf": 50.0}
        if p is not None:
            test["p_bootstrap"] = p
        return {"variants": {"test": test}, "parameters": 1}

    one = does_it_help({"jobs": {"baseline": job(30.0), "combination": job(30.6, 0.02)}})
    assert one[0] == ("does it help? combination: +0.60 BLEU against the baseline (paired bootstrap p 0.020): better "
                      "than the baseline at 0.05")
    assert one[1].startswith("  (one training run a system:") and len(one) == 2
    two = does_it_help({"jobs": {"baseline": job(30.0), "inxl": job(29.2, 0.01), "combination": job(30.6, 0.04)}})
    assert two[0] == ("does it help? inxl: -0.80 BLEU against the baseline (paired bootstrap p 0.010, Holm-adjusted "
                      "over 2 systems 0.020): worse than the baseline at 0.05")
    assert two[1].endswith("(paired bootstrap p 0.040, Holm-adjusted over 2 systems 0.040): better than the baseline "
                           "at 0.05")
    assert does_it_help({"jobs": {"baseline": job(30.0), "combination": job(30.1, 0.3)}})[0].endswith(
        "no significant difference at 0.05")
    assert does_it_help({"jobs": {"combination": job(30.0, 0.5)}}) == []
    assert does_it_help({"jobs": {"baseline": job(30.0)}}) == []
    lines = summary({"jobs": {"baseline": job(30.0), "combination": job(30.6, 0.02)}}).splitlines()
    assert lines[3].startswith("does it help? combination: +0.60")
