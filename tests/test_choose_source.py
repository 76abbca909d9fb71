"""tools/study/choose_source.py: reports/PREREG_xlpos.md's stage-2 rule (highest mean per-sentence tau, chosen over S0 only
when its paired bootstrap gain has a 95 % lower bound above 0)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

TOOL = Path(__file__).resolve().parents[1] / "tools" / "study" / "choose_source.py"
spec = importlib.util.spec_from_file_location("choose_source", TOOL)
choose_source = importlib.util.module_from_spec(spec)
spec.loader.exec_module(choose_source)


def models(**gains):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 1.0, 400)
    out = {"S0": {"sentence_tau": base.tolist()}}
    for name, (shift, noise) in gains.items():
        out[name] = {"sentence_tau": (base + shift + rng.normal(0, noise, 400)).tolist()}
    return out


def test_a_clear_gain_is_chosen_and_a_noisy_one_is_not():
    result = choose_source.choose(models(S1_context=(0.02, 0.01), S2_pos=(0.001, 0.05)))
    assert result["highest"] == "S1_context" and result["chosen"] == "S1_context"
    assert result["chosen_options"] == {"features": ["context"]}
    assert result["candidates"]["S1_context"]["low"] > 0
    noisy = choose_source.choose(models(S2_pos=(0.001, 0.05)))
    assert noisy["candidates"]["S2_pos"]["low"] <= 0 and noisy["chosen"] == "S0"


def test_no_candidate_above_s0_keeps_s0():
    result = choose_source.choose(models(S2_pos=(-0.02, 0.001)))
    assert result["highest"] == "S2_pos" and result["chosen"] == "S0" and result["chosen_options"] == {}


def test_the_interval_is_the_percentile_bootstrap_of_the_mean_gain():
    gain = np.array([0.0, 1.0] * 50)
    mean, low, high = choose_source.paired_bootstrap(gain, samples=2000, seed=1)
    assert mean == 0.5 and 0.38 < low < 0.42 and 0.58 < high < 0.62  # ±1.96·0.05 about 0.5


def test_the_command_prints_and_writes_the_choice(tmp_path):
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({"models": models(S2_pos=(0.05, 0.01))}))
    out = subprocess.run([sys.executable, str(TOOL), str(scores), "--json", str(tmp_path / "c.json")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "chosen: S2_pos" in out.stdout
    assert json.loads((tmp_path / "c.json").read_text())["chosen_options"] == {"tagger": "unidic"}
