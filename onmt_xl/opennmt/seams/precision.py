"""CPU mixed precision (``-xl_cpu_precision fp32|bf16|auto``, default fp32, an option of ``onmt_train`` and
``onmt_translate``; :mod:`onmt_xl.core.precision` decides what it resolves to on this CPU).

Wraps (OpenNMT-py 3.5.1, which autocasts only on CUDA):

- ``LossCompute.from_opts`` (which sees both the options and the model): while training, the model's and the two
  losses' ``forward`` run under CPU autocast; the backward pass, the weights and Adam's state stay fp32;
- ``Inference.from_opt`` and ``Inference._translate``: translation runs under autocast.

At the default (fp32) nothing is autocast: stock numerics.
"""

from __future__ import annotations

import weakref

from onmt_xl.core import precision
from onmt_xl.opennmt.opts import add
from onmt_xl.opennmt.seams import options
from onmt_xl.opennmt.seams.base import log_once, wrapper

LOST = "-xl_cpu_precision has no effect (everything runs in fp32)"

_translators: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Inference -> its autocast dtype


def add_options(parser) -> None:
    group = parser.add_argument_group("CPU precision (onmt_xl)")
    add(
        group, "xl_cpu_precision", type=str, default=precision.DEFAULT, choices=precision.CHOICES,
        help="Arithmetic of the forward pass and loss when running on the CPU. 'bf16': bf16 autocast "
        "(weights, gradients and optimizer state stay fp32), only where the CPU computes bf16 natively "
        "(AVX512-BF16, AMX or Arm BF16); elsewhere it says why and runs fp32, since emulated bf16 is "
        "many times slower. 'auto': bf16 where native, fp32 elsewhere. 'fp32': never autocast. "
        "No effect on a GPU.",
    )


def resolve_for(opt, model):
    """The autocast dtype of ``-xl_cpu_precision`` for ``model`` (None: fp32), logged once per process."""
    import torch

    param = next(model.parameters(), None)
    device = param.device.type if param is not None else "cpu"
    if param is not None and param.dtype != torch.float32:
        return None  # a half or quantised model: its own precision rules
    dtype, message = precision.resolve(getattr(opt, "xl_cpu_precision", precision.DEFAULT), device)
    log_once(message)
    return dtype


def apply() -> None:
    from onmt.translate.translator import Inference
    from onmt.utils.loss import LossCompute

    stock_loss_from_opts = LossCompute.from_opts.__func__
    stock_from_opt, stock_translate = Inference.from_opt.__func__, Inference._translate

    def loss_from_opts(cls, opt, model, vocab, train=True):
        loss_compute = stock_loss_from_opts(cls, opt, model, vocab, train)
        dtype = resolve_for(opt, model)
        precision.autocast_forward(model, dtype)
        precision.autocast_forward(loss_compute, dtype)
        return loss_compute

    def from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs):
        translator = stock_from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs)
        _translators[translator] = resolve_for(opt, model)
        return translator

    def _translate(self, *args, **kwargs):
        with precision.autocast(_translators.get(self)):
            return stock_translate(self, *args, **kwargs)

    LossCompute.from_opts = classmethod(wrapper(stock_loss_from_opts, loss_from_opts))
    Inference.from_opt = classmethod(wrapper(stock_from_opt, from_opt))
    Inference._translate = wrapper(stock_translate, _translate)
    options.add_train_options(add_options)
    options.add_translate_options(add_options)
