"""CPU mixed precision: which dtype ``-xl_cpu_precision`` resolves to on this machine, and the autocast context.

bf16 autocast pays off only where the CPU computes bf16 natively (x86 AVX512-BF16 or AMX, an Arm core
with the BF16 extension); elsewhere oneDNN emulates it, many times slower than fp32. So ``bf16`` is
honoured only on such a CPU, ``auto`` picks it there and fp32 everywhere else, and ``fp32`` never
autocasts. Under autocast the forward pass and the loss run in bf16 where PyTorch's CPU autocast policy
allows (matrix products, attention); weights, gradients and optimizer state stay fp32.
"""

from __future__ import annotations

import contextlib
import platform
from typing import ContextManager, Optional, Tuple

import torch

CHOICES = ("fp32", "bf16", "auto")
DEFAULT = "fp32"


def cpu_capability() -> str:
    """PyTorch's name for the vector ISA its CPU kernels use here (``AVX2``, ``AVX512``, ``DEFAULT``, ...)."""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # pragma: no cover - very old or unusual builds
        return "unknown"


def native_bf16() -> Tuple[bool, str]:
    """Whether this CPU computes bf16 natively, and the evidence in words."""
    cpu = torch.cpu
    features = []
    for name, probe in (("AVX512-BF16", "_is_avx512_bf16_supported"), ("AMX", "_is_amx_tile_supported")):
        check = getattr(cpu, probe, None)
        if check is not None and check():
            features.append(name)
    if platform.machine().lower() in ("aarch64", "arm64") and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        features.append("Arm BF16")
    if features:
        return True, f"{cpu_capability()} with {' and '.join(features)}"
    return False, f"{cpu_capability()}, without AVX512-BF16, AMX or Arm BF16"


def resolve(requested: str, device_type: str = "cpu", name: str = "-xl_cpu_precision"
            ) -> Tuple[Optional[torch.dtype], Optional[str]]:
    """``-xl_cpu_precision`` -> (autocast dtype or None for fp32, a line to log or None); ``name``: the option as
    the lines spell it (Eole: ``training.xl_cpu_precision``).

    Only CPU computation is affected: on another device the option has no effect. ``bf16`` on a CPU
    without native bf16 falls back to fp32 with a line that says why.
    """
    if requested not in CHOICES:
        raise ValueError(f"{name} must be one of {', '.join(CHOICES)}, got {requested!r}")
    if device_type != "cpu" or requested == "fp32":
        return None, None
    native, evidence = native_bf16()
    if native:
        return torch.bfloat16, f"{name} {requested}: bf16 autocast on this CPU ({evidence})"
    if requested == "bf16":
        return None, (f"{name} bf16 is off: this CPU ({evidence}) has no native bf16 arithmetic, "
                      "where bf16 runs many times slower than fp32; running in fp32")
    return None, f"{name} auto: fp32 (this CPU: {evidence})"


def autocast(dtype: Optional[torch.dtype]) -> ContextManager:
    """CPU autocast to ``dtype``, or nothing when ``dtype`` is None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=dtype)


def autocast_forward(module: torch.nn.Module, dtype: Optional[torch.dtype]) -> torch.nn.Module:
    """Run ``module``'s forward (not its backward) under CPU autocast to ``dtype``, in place; idempotent."""
    if dtype is None or "_onmt_xl_autocast" in module.__dict__:
        return module
    forward = module.forward

    def autocast_forward(*args, **kwargs):
        with autocast(dtype):
            return forward(*args, **kwargs)

    module.__dict__["forward"] = autocast_forward  # an instance attribute: state_dict and the class are untouched
    module.__dict__["_onmt_xl_autocast"] = dtype
    return module
