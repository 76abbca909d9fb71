"""Cheaper CPU training kernels: a dropout mask from fewer random draws, the output layer and loss fused, Adam fused.

PyTorch's CPU dropout draws one ``bernoulli_`` sample per element, each from its own Mersenne-Twister
call (on AMD CPUs, without MKL's vector generator, one element at a time); after matrix products it is the
largest cost of a Transformer training step, and bf16 autocast does not shrink it. :func:`dropout` draws
one 64-bit integer per four elements and thresholds 15-bit slices of it: keep probability
``1 - round(p · 2^15) / 2^15`` (within 2^-16 of ``1 - p``), and the kept values are scaled by the inverse
of that probability, so the output's expectation is the input exactly, as in inverted dropout. It is
another random stream than PyTorch's (same seed, other masks), deterministic under ``torch.manual_seed``.

``-xl_cpu_dropout_mask fast|stock`` (an ``onmt_train`` option) chooses it; :func:`use_fast_dropout` puts it
on every ``nn.Dropout`` of a model, for CPU tensors in training mode only (evaluation and other devices
take the stock path). :func:`fused_adam` builds ``torch.optim.Adam`` with PyTorch's fused CPU kernel
(one pass over each parameter instead of a dozen element-wise ops): the same update rule.
:func:`generator_loss` (``-xl_cpu_loss fused``) computes OpenNMT's output layer and label-smoothed
cross-entropy block by block of rows, with the gradient, so the ``(tokens, vocabulary)`` score matrix is
never materialised in fp32 nor cast back and forth: the same loss and gradients up to float rounding.
"""

from __future__ import annotations

from typing import Iterable

import torch

MASK_CHOICES = ("fast", "stock")
MASK_DEFAULT = "fast"
LOSS_CHOICES = ("fused", "stock")
LOSS_DEFAULT = "fused"
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
    """Inverted dropout of ``x`` (any shape) with rate ``p`` (0 ≤ p ≤ 1) and the :func:`keep_mask` mask;
    differentiable."""
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


#: the optimizers whose fused CPU step :func:`fuse_adam_groups` switches on
FUSED_ADAMS = (torch.optim.Adam, torch.optim.AdamW)


def fuse_adam_groups(optimizer: torch.optim.Optimizer) -> bool:
    """Switch ``optimizer`` (``torch.optim.Adam`` or ``AdamW``, built unfused by a framework) to PyTorch's fused CPU
    step when every parameter is on the CPU; call it after ``load_state_dict``, which restores a checkpoint's param
    groups with their flags. Returns whether the step is fused."""
    if type(optimizer) not in FUSED_ADAMS:
        return False
    params = [p for group in optimizer.param_groups for p in group["params"]]
    fuse = fused_adam_applies(params) and not any(g.get("foreach") or g.get("differentiable")
                                                  for g in optimizer.param_groups)
    if not fuse and not any(g.get("fused") for g in optimizer.param_groups):
        return False
    # the step reads the flag of each group at every step; off the CPU (a CPU checkpoint resumed on a GPU), the
    # flag goes back to what the optimizer was built with (``defaults``: loading a state dict changes only the groups)
    flag = True if fuse else optimizer.defaults.get("fused")
    for group in optimizer.param_groups:
        group["fused"] = flag
    return bool(flag)


class Predicted:
    """What a framework's loss statistics read of the scores for the accuracy (``scores.max(1)[1]``), from
    :func:`generator_loss`'s argmax ``pred`` ``(rows,)``."""

    def __init__(self, pred: torch.Tensor):
        self._pred = pred

    def max(self, dim):
        return None, self._pred


class _GeneratorLoss(torch.autograd.Function):
    """Summed cross-entropy of ``hidden @ weight.T + bias`` against ``target``, block by block of rows, with
    its gradient computed in the same pass (see :func:`generator_loss`)."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, ignore_index, smoothing, dtype, rows):
        with torch.autocast(hidden.device.type, enabled=False):  # the dtypes below are the ones chosen
            return _GeneratorLoss._blocks(ctx, hidden, weight, bias, target, ignore_index, smoothing, dtype, rows)

    @staticmethod
    def _blocks(ctx, hidden, weight, bias, target, ignore_index, smoothing, dtype, rows):
        n, vocab = hidden.size(0), weight.size(0)
        w = weight.to(dtype)
        b = bias.to(dtype) if bias is not None else None
        h_all = hidden.to(dtype)
        grad_h = torch.empty_like(hidden)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias) if bias is not None else None
        loss = hidden.new_zeros((), dtype=torch.float32)
        pred = torch.empty(n, dtype=torch.long, device=hidden.device)
        for start in range(0, n, rows):
            end = min(start + rows, n)
            h, t = h_all[start:end], target[start:end]
            logits = (torch.addmm(b, h, w.t()) if b is not None else h @ w.t()).float()  # (r, V)
            pred[start:end] = logits.argmax(1)
            keep = t != ignore_index
            t_safe = t.masked_fill(~keep, 0)[:, None]
            lse = torch.logsumexp(logits, 1)
            row_loss = (lse - logits.gather(1, t_safe).squeeze(1)) * (1.0 - smoothing)
            if smoothing:
                row_loss += smoothing * (lse - logits.mean(1))  # -mean_j log p_j
            loss += row_loss[keep].sum()
            # d loss / d logits = softmax - (1 - smoothing) * onehot - smoothing / V, 0 on ignored rows
            g = logits.sub_(lse[:, None]).exp_()
            if smoothing:
                g.sub_(smoothing / vocab)
            g.scatter_add_(1, t_safe, g.new_full(t_safe.shape, smoothing - 1.0))
            g.mul_(keep[:, None])
            g_low = g.to(dtype)
            grad_h[start:end] = g_low @ w
            grad_w += (g_low.t() @ h).to(grad_w.dtype)
            if grad_b is not None:
                grad_b += g.sum(0)
        ctx.save_for_backward(grad_h, grad_w, *(() if grad_b is None else (grad_b,)))
        ctx.mark_non_differentiable(pred)
        return loss, pred

    @staticmethod
    def backward(ctx, grad_loss, _grad_pred):
        grad_h, grad_w, *grad_b = ctx.saved_tensors
        return (grad_h * grad_loss, grad_w * grad_loss, grad_b[0] * grad_loss if grad_b else None,
                None, None, None, None, None)


def generator_loss(hidden: torch.Tensor, weight: torch.Tensor, bias, target: torch.Tensor, ignore_index: int,
                   smoothing: float = 0.0, dtype: torch.dtype = torch.float32, rows: int = 0):
    """OpenNMT's generator and loss fused: ``(loss, pred)`` where ``loss`` is
    ``cross_entropy((hidden @ weight.T + bias).float(), target, ignore_index, label_smoothing=smoothing,
    reduction="sum")`` and ``pred`` the argmax of each row's scores (for the accuracy).

    ``hidden`` ``(N, d)``, ``weight`` ``(V, d)``, ``bias`` ``(V,)`` or None, ``target`` ``(N,)`` long.
    The projection runs in ``dtype`` (bf16 under CPU autocast) and the softmax in fp32, as in the stock
    path; but ``rows`` rows at a time (default: about 2M scores a block), with the gradient of each block
    computed while it is in cache, so the ``(N, V)`` fp32 scores, their casts, the log-softmax's backward
    and the NLL's zero-filled gradient are never materialised.
    """
    rows = rows or max(1, (1 << 21) // weight.size(0))
    return _GeneratorLoss.apply(hidden, weight, bias, target, ignore_index, float(smoothing), dtype, rows)
