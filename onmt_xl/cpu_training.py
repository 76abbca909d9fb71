"""Cheaper CPU training kernels: a dropout mask from fewer random draws, and Adam's fused CPU step.

PyTorch's CPU dropout draws one ``bernoulli_`` sample per element, each from its own Mersenne-Twister
call (on AMD CPUs, without MKL's vector generator, one element at a time); after matrix products it is the
largest cost of a Transformer training step, and bf16 autocast does not shrink it. :func:`dropout` draws
one 64-bit integer per four elements and thresholds 15-bit slices of it: keep probability
``1 - round(p · 2^15) / 2^15`` (within 2^-16 of ``1 - p``), and the kept values are scaled by the inverse
of that probability, so the output's expectation is the input exactly, as in inverted dropout. It is
another random stream than PyTorch's (same seed, other masks), deterministic under ``torch.manual_seed``.

``-cpu_dropout_mask fast|stock`` (an ``onmt_train`` option) chooses it; :func:`use_fast_dropout` puts it
on every ``nn.Dropout`` of a model, for CPU tensors in training mode only (evaluation and other devices
take the stock path). :func:`fused_adam` builds ``torch.optim.Adam`` with PyTorch's fused CPU kernel
(one pass over each parameter instead of a dozen element-wise ops): the same update rule.
"""

from __future__ import annotations

from typing import Iterable

import torch

MASK_CHOICES = ("fast", "stock")
MASK_DEFAULT = "fast"
_LEVELS = 1 << 15  # a mask element's random integer is uniform on [0, 2^15)


def keep_mask(shape: torch.Size, p: float) -> torch.Tensor:
    """A bool tensor of ``shape``, each element True with probability ``1 - round(p · 2^15) / 2^15``.

    Each int64 from ``random_()`` (63 random bits) gives four int16 slices; the lowest 15 bits of each
    are uniform on [0, 2^15), and an element is dropped where its slice is below ``round(p · 2^15)``.
    """
    n = 1
    for size in shape:
        n *= size
    draws = torch.empty((n + 3) // 4, dtype=torch.int64).random_()
    slices = draws.view(torch.int16)[:n].bitwise_and_(_LEVELS - 1)
    return slices.ge(round(p * _LEVELS)).view(shape)


def dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout of ``x`` (any shape) with rate ``p`` (0 ≤ p ≤ 1) and the :func:`keep_mask` mask; differentiable."""
    dropped = round(p * _LEVELS)
    if dropped == 0:
        return x
    if dropped == _LEVELS:
        return x * 0.0
    scale = _LEVELS / (_LEVELS - dropped)  # 1 / keep probability: the expectation stays x
    mask = keep_mask(x.shape, p).to(x.dtype).mul_(scale)
    return x * mask


def _fast_forward(module: torch.nn.Dropout, stock_forward):
    def forward(x):
        if module.training and x.device.type == "cpu" and not module.inplace:
            return dropout(x, module.p)
        return stock_forward(x)

    return forward


def use_fast_dropout(model: torch.nn.Module) -> int:
    """Give every ``nn.Dropout`` of ``model`` the :func:`dropout` mask on CPU tensors in training, in place;
    idempotent; ``state_dict`` and the classes are untouched. Returns how many modules it changed."""
    changed = 0
    for module in model.modules():
        if type(module) is torch.nn.Dropout and "_onmt_xl_fast" not in module.__dict__:
            module.__dict__["forward"] = _fast_forward(module, module.forward)  # an instance attribute
            module.__dict__["_onmt_xl_fast"] = True
            changed += 1
    return changed


def fused_adam_applies(params: Iterable[torch.Tensor]) -> bool:
    """Whether every parameter is a CPU floating-point tensor (where Adam's fused CPU kernel runs)."""
    params = list(params)
    return bool(params) and all(p.device.type == "cpu" and p.is_floating_point() for p in params)


def fused_adam(params, **kwargs) -> torch.optim.Adam:
    """``torch.optim.Adam(params, **kwargs)`` with the fused CPU step."""
    return torch.optim.Adam(params, fused=True, **kwargs)
