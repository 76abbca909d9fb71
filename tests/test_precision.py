"""``-xl_cpu_precision``: what it resolves to from the CPU's capability, and bf16 training/translation end to end.

The end-to-end tests force "this CPU computes bf16 natively" in the subprocess, so they run on any CPU
(slowly where bf16 is emulated, which a tiny model does not mind).
"""

import subprocess
import sys

import pytest
import torch

from onmt_xl.core import precision
from tests.conftest import run_env
from tests.helpers import stock_cli, tiny_model_workdir

NATIVE = (True, "TEST with AVX512-BF16")
EMULATED = (False, "AVX2, without AVX512-BF16, AMX or Arm BF16")


@pytest.mark.parametrize(
    "requested, native, dtype, says",
    [
        ("auto", NATIVE, torch.bfloat16, "bf16 autocast"),
        ("auto", EMULATED, None, "auto: fp32"),
        ("bf16", NATIVE, torch.bfloat16, "bf16 autocast"),
        ("bf16", EMULATED, None, "bf16 is off: this CPU (AVX2"),
        ("fp32", NATIVE, None, None),
        ("fp32", EMULATED, None, None),
    ],
)
def test_resolve_follows_the_capability(monkeypatch, requested, native, dtype, says):
    monkeypatch.setattr(precision, "native_bf16", lambda: native)
    got, message = precision.resolve(requested)
    assert got == dtype
    assert (message is None) if says is None else (says in message)


def test_off_the_cpu_the_option_does_nothing(monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda: NATIVE)
    assert precision.resolve("bf16", "cuda") == (None, None)


def test_mistyped_value_is_refused():
    with pytest.raises(ValueError, match="fp32, bf16, auto"):
        precision.resolve("bf61")


@pytest.mark.parametrize(
    "probes, native",
    [({"_is_avx512_bf16_supported": True, "_is_amx_tile_supported": False}, True),
     ({"_is_avx512_bf16_supported": False, "_is_amx_tile_supported": True}, True),
     ({"_is_avx512_bf16_supported": False, "_is_amx_tile_supported": False}, False)],
)
def test_native_bf16_reads_torchs_cpu_probes(monkeypatch, probes, native):
    monkeypatch.setattr(precision.platform, "machine", lambda: "x86_64")
    for name, value in probes.items():
        monkeypatch.setattr(torch.cpu, name, lambda value=value: value, raising=False)
    assert precision.native_bf16()[0] is native


def test_autocast_forward_runs_the_forward_in_bf16_and_keeps_fp32_weights():
    layer = torch.nn.Linear(4, 3)
    precision.autocast_forward(layer, torch.bfloat16)
    precision.autocast_forward(layer, torch.bfloat16)  # idempotent: not wrapped twice
    out = layer(torch.randn(2, 4))
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert layer.weight.dtype == layer.weight.grad.dtype == torch.float32
    assert set(layer.state_dict()) == {"weight", "bias"}


def _cli(name, *args, force_native=False, check=True):
    if force_native:
        code = ("import onmt_xl.core.precision as p; p.native_bf16 = lambda: (True, 'forced by the test'); "
                f"import sys; from onmt.bin.{name.removeprefix('onmt_')} import main; sys.argv[0] = {name!r}; main()")
        cmd = [sys.executable, "-c", code, *args]
    else:
        cmd = [stock_cli(name), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env())
    if check and proc.returncode != 0:
        raise AssertionError(f"{name} {args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.mark.parametrize("name", ["onmt_train", "onmt_translate"])
def test_option_is_in_the_help(name):
    out = _cli(name, "-h").stdout
    assert "-xl_cpu_precision {fp32,bf16,auto}" in out and "natively" in out


@pytest.fixture(scope="module")
def bf16_model(tmp_path_factory):
    wd = tmp_path_factory.mktemp("bf16")
    tiny_model_workdir(wd, _cli, train_steps=6, valid_steps=6, save_checkpoint_steps=6, xl_cpu_precision="bf16")
    proc = _cli("onmt_train", "-config", str(wd / "cfg.yaml"), force_native=True)
    return wd, wd / "models" / "baseline_step_6.pt", proc.stdout + proc.stderr


def test_forced_bf16_training_has_finite_loss_and_fp32_weights(bf16_model):
    _, model, log = bf16_model
    assert "-xl_cpu_precision bf16: bf16 autocast on this CPU (forced by the test)" in log
    ppl = [float(line.split("ppl:")[1].split(";")[0]) for line in log.splitlines() if "ppl:" in line]
    assert ppl and all(torch.isfinite(torch.tensor(ppl)))
    checkpoint = torch.load(model, map_location="cpu", weights_only=False)
    tensors = list(checkpoint["model"].values()) + list(checkpoint["generator"].values())
    assert tensors and all(t.dtype == torch.float32 for t in tensors)
    states = checkpoint["optim"]["optimizer"]["state"].values()
    assert states and all(v.dtype == torch.float32 for s in states for v in s.values() if torch.is_tensor(v) and v.dim())


def test_bf16_checkpoint_translates_in_bf16_and_fp32(bf16_model):
    wd, model, _ = bf16_model
    src = wd / "data" / "valid.src"
    for flag, forced in (("bf16", True), ("fp32", False)):
        out = wd / f"hyp.{flag}"
        proc = _cli("onmt_translate", "-model", str(model), "-src", str(src), "-output", str(out),
                    "-beam_size", "2", "-max_length", "8", "-xl_cpu_precision", flag, force_native=forced)
        assert len(out.read_text().splitlines()) == 20
        assert ("bf16 autocast" in proc.stderr + proc.stdout) is forced


def test_bf16_asked_on_a_cpu_without_it_says_why_and_runs_fp32(bf16_model):
    wd, model, _ = bf16_model
    if precision.native_bf16()[0]:
        pytest.skip("this CPU computes bf16 natively")
    proc = _cli("onmt_translate", "-model", str(model), "-src", str(wd / "data" / "valid.src"),
                "-output", str(wd / "hyp.off"), "-beam_size", "1", "-max_length", "4", "-xl_cpu_precision", "bf16")
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if "-xl_cpu_precision" in line]
    assert len(lines) == 1 and "bf16 is off" in lines[0] and "running in fp32" in lines[0]


def test_mistyped_value_gets_a_clear_error_from_the_command(bf16_model):
    wd, _, _ = bf16_model
    proc = _cli("onmt_train", "-config", str(wd / "cfg.yaml"), "-xl_cpu_precision", "bf61", check=False)
    assert proc.returncode == 2
    assert any("-xl_cpu_precision" in line and "invalid choice: 'bf61'" in line for line in proc.stderr.splitlines())
    assert "Traceback" not in proc.stderr
