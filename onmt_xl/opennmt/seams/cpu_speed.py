"""Cheaper CPU kernels, opt-in: ``-xl_cpu_kernels fast`` (``onmt_train`` and ``onmt_translate``; default
``stock``, OpenNMT-py's own kernels and random streams). :mod:`onmt_xl.core.cpu_training` holds the kernels.

With ``fast``, on CPU tensors only:

- dropout draws its masks four elements per 64-bit random integer (another random stream than PyTorch's
  ``bernoulli_``), put on the model's ``nn.Dropout`` modules where ``LossCompute.from_opts`` sees the model;
- ``LossCompute.forward``'s plain path (no copy attention, sparsemax, alignment, coverage or LM prior) runs the
  output layer and cross-entropy fused, a block of rows at a time with the gradient (:func:`fused_loss_forward`);
- ``Optimizer.from_opt`` switches ``-optim adam`` to PyTorch's fused CPU Adam step;
- ``MultiHeadedAttention.forward`` computes attention with PyTorch's SDPA where OpenNMT's own SDPA branch would
  apply off the CPU (no relative positions, no attention weights asked for, no KV cache), in the encoder too.

Each is the same function up to float rounding (dropout: the same distribution), so results differ from stock
only as two random seeds do. The legacy ``-xl_cpu_dropout_mask fast`` and ``-xl_cpu_loss fused`` (once
``-cpu_dropout_mask``, ``-cpu_loss``) turn on one part each.

Wraps (OpenNMT-py 3.5.1): ``LossCompute.from_opts``, ``LossCompute.forward``, ``Optimizer.from_opt``,
``Inference.from_opt``, ``MultiHeadedAttention.forward``. A model trained or translated without the option never
takes any of these paths.
"""

from __future__ import annotations

import weakref

import torch

from onmt_xl.core import cpu_training
from onmt_xl.opennmt.opts import add
from onmt_xl.opennmt.seams import options
from onmt_xl.opennmt.seams.base import log_once, wrapper

LOST = "-xl_cpu_kernels fast has no effect (OpenNMT's stock CPU kernels run)"

CHOICES = ("stock", "fast")
DEFAULT = "stock"

#: each fast kernel as the training log names it (``onmt_xl.experiments.jobs`` reads the dropout one back)
KERNELS = {"dropout": "fast dropout masks", "loss": "fused loss", "adam": "fused Adam", "sdpa": "SDPA attention"}

_fused_loss: "weakref.WeakSet" = weakref.WeakSet()  # the LossCompute objects that take the fused path
_sdpa: "weakref.WeakSet" = weakref.WeakSet()  # the MultiHeadedAttention modules that take SDPA on the CPU


def add_options(parser) -> None:
    group = parser.add_argument_group("CPU kernels (onmt_xl)")
    add(
        group, "xl_cpu_kernels", type=str, default=DEFAULT, choices=CHOICES,
        help="'fast': cheaper kernels on the CPU, each the same function up to float rounding: dropout masks "
        "from four draws per 64-bit random integer (another random stream than PyTorch's), the output layer and "
        "cross-entropy fused block by block, PyTorch's fused Adam, and scaled-dot-product attention in the "
        "encoder and decoder. 'stock': OpenNMT-py's own kernels and random streams. No effect on a GPU.",
    )


def add_legacy_train_options(parser) -> None:
    group = parser.add_argument_group("CPU kernels (onmt_xl), legacy")
    add(group, "xl_cpu_dropout_mask", type=str, default=None, choices=cpu_training.MASK_CHOICES,
        help="Legacy: 'fast' is the dropout part of -xl_cpu_kernels fast.")
    add(group, "xl_cpu_loss", type=str, default=None, choices=cpu_training.LOSS_CHOICES,
        help="Legacy: 'fused' is the loss part of -xl_cpu_kernels fast.")


def choices(opt) -> dict:
    """Which fast kernels ``opt`` asks for: ``{"dropout": bool, "loss": bool, "adam": bool, "sdpa": bool}``."""
    fast = getattr(opt, "xl_cpu_kernels", DEFAULT) == "fast"
    dropout = getattr(opt, "xl_cpu_dropout_mask", None)
    loss = getattr(opt, "xl_cpu_loss", None)
    return {"dropout": dropout == "fast" if dropout else fast, "loss": loss == "fused" if loss else fast,
            "adam": fast, "sdpa": fast}


def use_fused_loss(loss_compute, on: bool = True) -> None:
    """Let ``loss_compute`` take :func:`fused_loss_forward` where it applies (or not)."""
    (_fused_loss.add if on else _fused_loss.discard)(loss_compute)


def use_cpu_sdpa(model) -> int:
    """Let every ``MultiHeadedAttention`` of ``model`` take SDPA on the CPU; returns how many."""
    from onmt.modules.multi_headed_attn import MultiHeadedAttention

    found = [m for m in model.modules() if isinstance(m, MultiHeadedAttention)]
    for module in found:
        _sdpa.add(module)
    return len(found)


def _on_cpu(model) -> bool:
    param = next(model.parameters(), None)
    return param is not None and param.device.type == "cpu"


def use_training_kernels(opt, model, loss_compute) -> None:
    """The fast kernels ``opt`` asks for, when ``model`` trains on the CPU; each choice logged once."""
    if not _on_cpu(model):
        return
    chosen = choices(opt)
    if chosen["dropout"]:
        cpu_training.use_fast_dropout(model)
    use_fused_loss(loss_compute, chosen["loss"])
    if chosen["sdpa"]:
        use_cpu_sdpa(model)
    said = [what for key, what in KERNELS.items() if chosen[key]]
    if said:
        log_once("-xl_cpu_kernels: " + ", ".join(said) + " (onmt_xl's CPU kernels)")


def fused_loss_applies(loss_compute, output) -> bool:
    """The fused loss asked for, and a plain generator and loss: training on the CPU, no copy attention, sparsemax,
    alignment, coverage or LM-prior term, the generator one ``nn.Linear``, OpenNMT's summed cross-entropy."""
    from onmt.utils.loss import LossCompute

    generator, criterion = loss_compute.generator, loss_compute.criterion
    return (loss_compute in _fused_loss and type(loss_compute) is LossCompute
            and torch.is_grad_enabled() and generator.training and output.device.type == "cpu"
            and not loss_compute.copy_attn and type(generator) is torch.nn.Linear
            and type(criterion) is torch.nn.CrossEntropyLoss and criterion.reduction == "sum"
            and criterion.weight is None and not loss_compute.lambda_align and not loss_compute.lambda_coverage
            and loss_compute.lm_generator is None and loss_compute.lm_prior_model is None)


def fused_loss_forward(self, batch, output, attns, trunc_start=0, trunc_size=None):
    """``LossCompute.forward``'s plain path (OpenNMT-py 3.5.1: the target window, ``generator``, the criterion on
    fp32 scores, ``_stats``) with :func:`onmt_xl.core.cpu_training.generator_loss` computing the last three."""
    if trunc_size is None:
        trunc_size = batch["tgt"].size(1) - trunc_start
    trunc_range = (trunc_start + self.tgt_shift_index, trunc_start + trunc_size)
    target = batch["tgt"][:, trunc_range[0]: trunc_range[1], :]
    output = output[:, trunc_start: trunc_range[1], :].contiguous()
    flat_tgt = target[:, :, 0].contiguous().view(-1)
    dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else torch.float32
    loss, pred = cpu_training.generator_loss(self._bottle(output), self.generator.weight, self.generator.bias, flat_tgt,
                                             self.criterion.ignore_index, self.criterion.label_smoothing, dtype)
    n_sents = len(batch["srclen"]) if trunc_start == 0 else 0
    return loss, self._stats(n_sents, loss.item(), cpu_training.Predicted(pred), flat_tgt)


def fuse_cpu_adam(optim) -> None:
    """Switch OpenNMT's ``torch.optim.Adam`` (``-optim adam``) to PyTorch's fused CPU step when every parameter
    is on the CPU (:func:`onmt_xl.core.cpu_training.fuse_adam_groups`); after ``load_state_dict``."""
    inner = getattr(optim, "_optimizer", None)
    if type(inner) is torch.optim.Adam:
        cpu_training.fuse_adam_groups(inner)


def _cast_once(*inputs):
    """Under CPU autocast, each distinct input cast to the autocast dtype once: autocast itself casts a
    projection's fp32 input at every projection (self-attention: three casts of one tensor, and HeadXL's
    packed input six, one per slice), and each cast has its backward."""
    if not torch.is_autocast_enabled("cpu"):
        return inputs
    dtype = torch.get_autocast_dtype("cpu")
    cast = {}
    for x in inputs:
        if id(x) not in cast:
            cast[id(x)] = x.to(dtype) if x.is_floating_point() else x
    return tuple(cast[id(x)] for x in inputs)


def cpu_sdpa_attention(attn, key, value, query, mask):
    """What OpenNMT's ``MultiHeadedAttention`` computes without KV cache, with PyTorch's SDPA.

    ``key``/``value``/``query`` ``(batch, len, d)`` (HeadXL: its packed inputs), ``mask`` True where a key
    is hidden, broadcastable to ``(batch, heads, q_len, k_len)`` -> ``(batch, q_len, d_model)``.
    """
    from onmt.modules.multi_headed_attn import shape, unshape

    key, value, query = _cast_once(key, value, query)
    k = shape(attn.maybe_ckpt(attn.linear_keys, key), attn.dim_per_head)
    v = shape(attn.maybe_ckpt(attn.linear_values, value), attn.dim_per_head)
    q = shape(attn.maybe_ckpt(attn.linear_query, query), attn.dim_per_head)
    dropout = attn.dropout_p if attn.training else 0.0
    context = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, None if mask is None else ~mask, dropout_p=dropout
    )
    return attn.maybe_ckpt(attn.final_linear, unshape(context))


def sdpa_applies(attn, query, return_attn) -> bool:
    """SDPA asked for on this module, and the stock condition for its SDPA branch with the CPU let in and the
    encoder's attention too (which OpenNMT builds without a ``self_attn_type``, so that it never takes SDPA);
    plus no KV cache."""
    return (
        attn in _sdpa
        and query.device.type == "cpu"
        and not attn.layer_cache[0]
        and attn.max_relative_positions == 0
        and not return_attn
        and attn.self_attn_type in (None, "scaled-dot-flash")
        and attn.num_kv == 0
        and attn.parallel_gpu == 1
        and "key_pad_mask" not in attn.layer_cache[1]
    )


def apply() -> None:
    from onmt.modules.multi_headed_attn import MultiHeadedAttention
    from onmt.translate.translator import Inference
    from onmt.utils.loss import LossCompute
    from onmt.utils.optimizers import Optimizer

    stock_loss_from_opts, stock_forward = LossCompute.from_opts.__func__, LossCompute.forward
    stock_optim_from_opt = Optimizer.from_opt.__func__
    stock_inference_from_opt = Inference.from_opt.__func__
    stock_attention = MultiHeadedAttention.forward

    def loss_from_opts(cls, opt, model, vocab, train=True):
        loss_compute = stock_loss_from_opts(cls, opt, model, vocab, train)
        if train:
            use_training_kernels(opt, model, loss_compute)
        return loss_compute

    def forward(self, batch, output, attns, trunc_start=0, trunc_size=None):
        inner = fused_loss_forward if fused_loss_applies(self, output) else stock_forward
        return inner(self, batch, output, attns, trunc_start=trunc_start, trunc_size=trunc_size)

    def optim_from_opt(cls, model, opt, checkpoint=None):
        optim = stock_optim_from_opt(cls, model, opt, checkpoint=checkpoint)
        if choices(opt)["adam"]:
            fuse_cpu_adam(optim)
        return optim

    def inference_from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs):
        translator = stock_inference_from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs)
        if choices(opt)["sdpa"] and _on_cpu(model):
            use_cpu_sdpa(model)
        return translator

    def attention(self, key, value, query, mask=None, sliding_window=0, step=0, return_attn=False,
                  self_attn_type=None):
        if sdpa_applies(self, query, return_attn):
            return cpu_sdpa_attention(self, key, value, query, mask), None
        return stock_attention(self, key, value, query, mask=mask, sliding_window=sliding_window, step=step,
                               return_attn=return_attn, self_attn_type=self_attn_type)

    LossCompute.from_opts = classmethod(wrapper(stock_loss_from_opts, loss_from_opts))
    LossCompute.forward = wrapper(stock_forward, forward)
    Optimizer.from_opt = classmethod(wrapper(stock_optim_from_opt, optim_from_opt))
    Inference.from_opt = classmethod(wrapper(stock_inference_from_opt, inference_from_opt))
    MultiHeadedAttention.forward = wrapper(stock_attention, attention)
    options.add_train_options(add_options)
    options.add_train_options(add_legacy_train_options)
    options.add_translate_options(add_options)
