"""``tools/bench/bench_cpu.py`` end to end on the demo preset: every configuration asked for gets its row and ratio."""

import re
import subprocess
import sys

from tests.conftest import REPO, run_env


def test_bench_cpu_prints_each_configuration_beside_its_reference(tmp_path):
    out = tmp_path / "bench.txt"
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "bench" / "bench_cpu.py"), "--preset", "demo", "--reps", "5", "--threads", "1",
         "--systems", "baseline,combination", "--stock-kernels", "--batch-tokens", "120", "--vocab", "120",
         "--out", str(out)], capture_output=True, text=True, env=run_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("command: python tools/bench/bench_cpu.py --preset demo")
    rows = {m.group(1): (m.group(2), m.group(3))
            for m in re.finditer(r"^\| ([^|]+?) \| [^|]+ \| ([^|]+?) \| ([^|]+?) \|$", text, re.M)
            if m.group(1) not in ("configuration", "---")}
    assert rows["baseline fp32"] == ("—", "1")
    assert rows["combination fp32"][0] == "baseline fp32"
    assert rows["baseline fp32 (stock kernels)"][0] == "baseline fp32"
    assert rows["combination fp32 (stock kernels)"][0] == "combination fp32"
    ratios = [ratio for name, (ref, ratio) in rows.items() if ref != "—"]
    assert len(ratios) == len(rows) - 1 >= 3
    assert all(re.fullmatch(r"\d+\.\d{3}× \(IQR \d+\.\d{3}–\d+\.\d{3}; \d+\.\d{3}–\d+\.\d{3}\)", r) for r in ratios)


def test_benchmark_models_are_initialised_as_onmt_train_does():
    """``build_base_model`` leaves OpenNMT's ``skip_init`` layers as uninitialised memory; a benchmark timing
    NaNs and denormals measures nothing a user trains."""
    import torch

    from onmt_xl.experiments.analysis import build_model

    for system in ("baseline", "combination"):
        model = build_model(system, "demo", vocab_size=60)
        for name, param in model.named_parameters():
            assert torch.isfinite(param).all(), name
            if name.endswith("bias"):
                assert not param.any(), name
            elif name.endswith("weight") and param.dim() > 1:  # Glorot-uniform: |w| <= sqrt(6 / (fan_in + fan_out))
                bound = (6 / (param.size(0) + param.size(1))) ** 0.5
                assert 0 < param.abs().max() <= bound + 1e-6, name
