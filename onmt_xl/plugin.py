"""The one place that touches OpenNMT-py internals.

``register()`` (idempotent) imports our registered components and applies these small patches:

1. **torch ≥ 2.6 checkpoints**: ``torch.load`` defaults to ``weights_only=True`` and refuses the
   ``argparse.Namespace`` that OpenNMT stores in every checkpoint; we allow-list it, so
   ``onmt_translate`` and ``-train_from`` work.
2. **XL positions channel**: ``tensorify`` (batching) puts each example's ``xl_pos`` (set by the
   ``xl_position`` transform) into ``batch["xl_pos"]``, ``(batch, src_len)`` long, padded like the source;
   ``batch["src"]`` stays stock, token ids (and features) only. The three stock calls that encode a batch,
   ``Translator._run_encoder`` (translation, gold scoring, ``-report_align``, validation scoring, the
   server) and ``Trainer._gradient_accumulation`` / ``Trainer.validate`` (one batch at a time), run with
   that batch's positions fed to the encoder (:func:`onmt_xl.encoders.common.feeding_xl_positions`); our
   encoders read them with :func:`~onmt_xl.encoders.common.split_xl`. No vocabulary and no embedding table
   are involved, so any position (even beyond the longest training sentence) reaches the model exactly.
   Beam search needs nothing more: the encoder runs once, before the search tiles and reorders rows.
3. **Options**: OpenNMT has no extension point for model options, so ``model_opts`` and
   ``validate_model_opts`` are wrapped to add and check ours (they then appear in ``onmt_train -h``
   and are stored in, and restored from, checkpoints).
4. **CPU mixed precision** (``-cpu_precision fp32|bf16|auto``, an option of ``onmt_train`` and
   ``onmt_translate``; :mod:`onmt_xl.precision` decides what it resolves to on this CPU). Training: the
   model's and the two losses' ``forward`` run under CPU autocast (set up where OpenNMT builds the losses,
   which sees both the options and the model); the backward pass, the weights and Adam's state stay
   fp32. Translation: ``Inference._translate`` runs under autocast.
5. **Scaled-dot-product attention on the CPU**: OpenNMT's ``MultiHeadedAttention`` calls PyTorch's SDPA
   only off the CPU; on the CPU its manual path upcasts the scores to fp32 and materialises them. Where
   the stock SDPA branch would apply (no relative positions, no attention weights asked for, no KV
   cache, ``-self_attn_type scaled-dot-flash``, the default), :func:`cpu_sdpa_attention` computes the
   same function with SDPA on the CPU too, in the encoder as well (OpenNMT gives its self-attention no
   ``self_attn_type``, so the stock encoder never takes SDPA); every other call takes the stock path.
6. **Auxiliary encoder losses** (the reordering loss of ExGRE/ReFSR): ``LossCompute`` adds the
   encoder's ``reordering_loss`` (a sum over source words) to its summed token loss while training, so
   OpenNMT's normalisation (``loss /= normalization``) and gradient accumulation apply to it unchanged;
   the statistics (perplexity, accuracy) stay those of translation, and the term is logged.
7. **Exact resume** (``-exact_resume``, an option of ``onmt_train``; :mod:`onmt_xl.resume`): every
   checkpoint's ``optim`` entry also holds the RNG states; resuming with the option, ``Trainer.train`` draws
   and drops the batches of the steps already trained and restores those states before the next step.
8. **Transforms in the REST server** (``onmt_server``): the stock ``ServerModel`` numericalises requests
   without running any transform, so an XL model got no positions, and its ``parse_opt`` turned a JSON list
   into one argument (``"transforms": ["xl_position"]`` became ``-transforms "['xl_position']"``).
   ``parse_opt`` now gives a list one argument per item (:func:`server_argv`) and validates the
   transforms' options as ``onmt_translate`` does; ``ServerModel.run`` marks its thread's model, and the
   server's ``textbatch_to_tensor`` first runs that model's ``-transforms`` on each example
   (:func:`server_textbatch_to_tensor`, as ``onmt_translate`` does on each line: ``is_train=False``,
   corpus ``infer``). A model whose transform options are wrong (no ``xl_preorderer``, a bad file), or an
   XL model served without ``xl_position``, answers each request with ``{"status": "error", "error": ...}``
   naming what to add to its ``"opt"``; the other models of the server are unaffected, and a model
   without ``transforms`` is served exactly as before.
9. **Messages, not tracebacks** (:func:`onmt_xl.errors.install_excepthook`): an uncaught ``XLInputError`` in a
   stock ``onmt_*`` command prints ``PROG: error: MESSAGE`` alone and exits 1; OpenNMT's import-time
   deprecation warnings are silenced by ``onmt_xl_hook`` before ``onmt`` runs
   (:func:`onmt_xl.errors.quiet_onmt_warnings`).
10. **Corpus lines** (:func:`read_corpus`, wrapping ``ParallelCorpusIterator._process``, which every corpus
    of ``onmt_build_vocab``, ``onmt_train`` and ``onmt_translate`` goes through, whatever its transforms).
    Line numbers: a reader with ``stride``/``offset`` (data workers, vocabulary threads, GPU ranks) reads
    the blocks of ``stride`` lines with ``(i // stride) % stride == offset`` but stock numbers its k-th line
    ``k * stride + offset``; ``cid_line_number`` is now the file's 0-based line
    (:func:`stock_line_indices`), and ``example["cid_files"]`` holds the corpus' files, so errors name
    the file and line (:func:`onmt_xl.errors.example_location`). Empty lines: in 3.5.1 an empty or
    whitespace-only line splits to ``[""]``, so the stock ``-skip_empty_level`` check never fires
    (empty sources were dropped silently after the transforms, empty targets trained on). Training and
    validation pairs with an empty side are now skipped before any transform: ``silent``; ``warning``
    (the default) logs ``FILE, line N: empty source line; the pair is skipped (-skip_empty_level
    warning)`` once per line and process; ``error`` raises :class:`~onmt_xl.errors.XLInputError` naming
    the file and line. Translation: empty source lines are set aside and recorded for patch 11.
11. **One output line per input line** (``Inference._translate``): stock ``onmt_translate`` drops empty
    source lines, so every later line of the output is misaligned. The translator's output file is
    wrapped (:class:`RealignedOutput`) so that ``n_best`` empty lines are written at the place of each
    empty source line recorded by patch 10 (OpenNMT writes one ``write`` per translated line, in line
    order), trailing ones included; the returned predictions get ``[""] * n_best`` there (scores 0).
    An input of empty lines only (or no line) no longer crashes the stock summary, which reads the last
    batch. Setting empty lines aside before batching also keeps OpenNMT's output buckets whole (the translator
    closes a bucket after ``bucket_size`` translations, and a data bucket short of dropped lines would mix
    with the next one) and avoids its crash on a bucket with no non-empty line.
12. **The output file opened at the first line** (``build_translator``): stock ``onmt_translate`` empties
    ``-output`` before it loads the model, so a run that stops at startup (a bad option, model, transform
    or preorderer) wiped the translations of an earlier run. :class:`LazyOutput` opens it (``w+``, UTF-8,
    as stock) at the first write or flush; the translator flushes at the end, so an empty input still
    leaves an empty file. Callers that pass their own ``out_file`` (the server, validation scoring) are
    unaffected.
13. **Unknown options said** (``ArgumentParser.parse_known_args`` of ``onmt_train`` and ``onmt_build_vocab``):
    both parse with ``parse_known_args`` and drop what they do not know, so a mistyped option (``xl_haeds: 2``
    in the YAML) trained the wrong model without a word. Each unknown option now gets one warning line with
    the closest known name; ``onmt_build_vocab`` skips those ``onmt_train`` knows (the two share a YAML).
14. **Cheaper CPU training kernels** (:mod:`onmt_xl.cpu_training`). ``-cpu_dropout_mask fast`` (the default; an
    option of ``onmt_train``) gives the model's ``nn.Dropout`` modules a mask drawn four elements per 64-bit
    random integer, on CPU tensors in training (set up where patch 4 sets up autocast); ``stock`` keeps
    PyTorch's ``bernoulli_`` stream. ``Optimizer.from_opt`` switches ``-optim adam`` to PyTorch's fused CPU
    Adam step when every parameter is on the CPU (after a checkpoint's param groups are loaded).
    ``-cpu_loss fused`` (the default) runs ``LossCompute.forward``'s plain path (:func:`fused_loss_forward`:
    no copy attention, sparsemax, alignment, coverage or LM prior) through ``generator_loss``: the output
    layer and the cross-entropy a block of rows at a time, with the gradient; accuracy from its argmax.

Audit of the stock reads of ``batch["src"]`` on the paths users run (OpenNMT-py 3.5.1; the server and
training-time validation scoring go through ``Translator._translate``, ``-report_align`` through
``_run_encoder``). All now see token ids only; the last column says what the read did while the
positions were an extra last column of ``batch["src"]`` (the channel before ``batch["xl_pos"]``).

==================================  ============================================  ===========================
stock code                          reads ``batch["src"]`` as                     with the old XL column
==================================  ============================================  ===========================
``Translator._translate``           ``(src == <tgt ｟newline｠ id>).any()``:        **wrong**: an XL index
                                    re-translate the line segment by segment      equal to that id set it off
``_maybe_retranslate``              ``[:, :, 0] != pad``; slices ``[b, i:j, :]``  (crashes first, see below)
``Translator.translate_batch``      ``size(1)`` (``-max_length_ratio``)           fine
``Translator._run_encoder``,        ``src`` to the encoder; ``init_state`` keeps  ours stripped it; stock
``NMTModel.forward`` (``Trainer``)  it for ``shape[1]``, ``map_state`` tiles it   encoders: a bogus feature
``TranslationBuilder.from_batch``   ``[:, :, 0]`` (output, ``-replace_unk``,      fine
                                    ``-attn_debug``)
``LossCompute.forward``             ``size()`` as 3 dims (``-lambda_align``)      fine
``LossCompute.ignore_prompt``       ``squeeze(2) == pad``                         wrong shape (LM task only)
``GeneratorLM``                     decoder input                                 LM task only
``InferenceEngineCT2``              ``[i, :, 0]``                                 fine (CT2 has no XL)
copy attention, alignment,          never: ``src_map`` / ``src_ex_vocab`` come    fine
beam/greedy search, ``Trainer``     from the text; the searches tile ``enc_out``
==================================  ============================================  ===========================

``_maybe_retranslate`` fails at its first line in 3.5.1 (``torch.sort`` of the list
``batch["ind_in_bucket"]``), with or without XL: a source with a real ``｟newline｠`` token (when the target
vocabulary has one) cannot be translated. Were it fixed, its sub-batches would carry no ``xl_pos`` and an
XL encoder would raise ``MissingXLPositionsError`` rather than guess positions for segments the
preorderer never saw.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import functools
import os
import threading

import torch
from torch.nn.utils.rnn import pad_sequence

from onmt_xl import cpu_training, precision, resume
from onmt_xl.encoders.common import feeding_xl_positions
from onmt_xl.errors import FILES_KEY, XLInputError, XLUsageError, example_location, in_chain, install_excepthook
from onmt_xl.transforms import XL_POS_KEY

_registered = False


def register() -> None:
    """Register onmt_xl's encoders, transform and options with OpenNMT-py. Safe to call repeatedly."""
    global _registered
    if _registered:
        return
    _registered = True
    install_excepthook()  # our XLInputError as one line, not under a traceback
    _allow_namespace_in_checkpoints()
    _patch_batching()
    _patch_encoding()
    _patch_options()
    _patch_loss()
    _patch_precision()
    _patch_attention()
    _patch_resume()
    _patch_server()
    _patch_corpus_lines()
    _patch_empty_translations()
    _patch_lazy_output()
    _patch_unknown_options()
    import onmt_xl.decoders.reordering_embedding  # noqa: F401  (registers the decoder)
    import onmt_xl.encoders.families  # noqa: F401  (registers encoders)
    import onmt_xl.transforms.xl_position  # noqa: F401  (registers the transform)


def _allow_namespace_in_checkpoints() -> None:
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])


def tensorify_with_xl(stock_tensorify, vocabs, minibatch, device, left_pad=False):
    """OpenNMT's ``tensorify`` plus the XL channel: ``batch["xl_pos"]``, ``(batch, src_len)``, beside ``batch["src"]``."""
    batch = stock_tensorify(vocabs, minibatch, device, left_pad=left_pad)
    with_xl = [XL_POS_KEY in ex for ex, _ in minibatch]
    if not any(with_xl):
        return batch
    seqs = []
    for ex, _ in minibatch:
        where = example_location(ex)
        if XL_POS_KEY not in ex:
            raise XLInputError(
                *where,
                "example has no XL positions while others in its batch do: add the xl_position "
                "transform to every corpus of a model with an XL encoder",
            )
        if len(ex[XL_POS_KEY]) != len(ex["src"]["src_ids"]):
            raise XLInputError(
                *where,
                f"{len(ex[XL_POS_KEY])} XL positions for {len(ex['src']['src_ids'])} source tokens: "
                "xl_position must come after every transform that changes the source tokens",
            )
        pos = torch.tensor(ex[XL_POS_KEY], dtype=torch.long, device=device)
        seqs.append(pos.flip(dims=[0]) if left_pad else pos)
    xl = pad_sequence(seqs, batch_first=True, padding_value=0)
    if left_pad:
        xl = xl.flip(dims=[1])
    batch[XL_POS_KEY] = xl
    return batch


def _patch_batching() -> None:
    import onmt.inputters.dynamic_iterator as dynamic_iterator
    import onmt.inputters.text_utils as text_utils

    stock = text_utils.tensorify
    if getattr(stock, "_onmt_xl", False):
        return
    patched = functools.partial(tensorify_with_xl, stock)
    patched._onmt_xl = True
    for module in (text_utils, dynamic_iterator):
        module.tensorify = patched


def feed_each(items, batch_of):
    """Yield ``items`` unchanged, each while its batch's ``xl_pos`` is fed to the encoders: the stock loops
    that take them (``Trainer._gradient_accumulation``, ``Trainer.validate``) finish with one batch
    before they take the next."""
    for item in items:
        with feeding_xl_positions(batch_of(item).get(XL_POS_KEY)):
            yield item


def _patch_encoding() -> None:
    from onmt.trainer import Trainer
    from onmt.translate.translator import Translator

    if getattr(Translator._run_encoder, "_onmt_xl", False):
        return
    stock_run_encoder = Translator._run_encoder

    def _run_encoder(self, batch):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            return stock_run_encoder(self, batch)

    def fed(stock, batch_of):
        def method(self, items, *args, **kwargs):
            items = feed_each(items, batch_of)
            try:
                return stock(self, items, *args, **kwargs)
            finally:
                items.close()  # the last batch's positions are not left fed if the loop stopped early

        method._onmt_xl = True
        return functools.wraps(stock)(method)

    _run_encoder._onmt_xl = True
    Translator._run_encoder = functools.wraps(stock_run_encoder)(_run_encoder)
    Trainer._gradient_accumulation = fed(Trainer._gradient_accumulation, lambda batch: batch)
    Trainer.validate = fed(Trainer.validate, lambda item: item[0])  # (batch, bucket_idx)


class _AuxLossLog:
    """Running mean of the auxiliary loss per source word, logged every ``every`` (``-report_every``) batches."""

    def __init__(self, every: int = 100):
        self.every, self.total, self.words, self.batches = every, 0.0, 0, 0

    def add(self, value: float, words: int) -> None:
        from onmt.utils.logging import logger

        self.total, self.words, self.batches = self.total + value, self.words + words, self.batches + 1
        if self.batches % self.every == 0:
            logger.info("reordering loss (lambda * l_j, -reordering_loss) per source word, last %d batches: %.4f",
                        self.every, self.total / max(self.words, 1))
            self.total, self.words = 0.0, 0


def add_encoder_loss(stock_forward, loss_compute, batch, output, attns, trunc_start=0, trunc_size=None):
    """``LossCompute.forward`` plus the encoder's auxiliary loss (once per batch, training only)."""
    loss, stats = stock_forward(loss_compute, batch, output, attns, trunc_start=trunc_start, trunc_size=trunc_size)
    encoder = loss_compute.__dict__.get("_onmt_xl_encoder")
    aux = getattr(encoder, "reordering_loss", None)
    if aux is not None and encoder.training and trunc_start == 0 and loss is not None:
        loss = loss + aux
        log = loss_compute.__dict__.setdefault("_onmt_xl_log", _AuxLossLog(loss_compute.__dict__.get("_onmt_xl_every", 100)))
        log.add(aux.item(), int(encoder.similarity[1]))
    return loss, stats


class _Predicted:
    """What ``LossCompute._stats`` reads of the scores (``scores.max(1)[1]``, for the accuracy), from
    :func:`onmt_xl.cpu_training.generator_loss`'s argmax."""

    def __init__(self, pred: torch.Tensor):
        self._pred = pred

    def max(self, dim):
        return None, self._pred


def _fused_loss_applies(loss_compute, output) -> bool:
    """``-cpu_loss fused`` and a plain generator and loss: training on the CPU, no copy attention, sparsemax,
    alignment, coverage or LM-prior term, the generator one ``nn.Linear``, OpenNMT's summed cross-entropy."""
    from onmt.utils.loss import LossCompute

    generator, criterion = loss_compute.generator, loss_compute.criterion
    return (loss_compute.__dict__.get("_onmt_xl_fused_loss", False) and type(loss_compute) is LossCompute
            and torch.is_grad_enabled() and generator.training and output.device.type == "cpu"
            and not loss_compute.copy_attn and type(generator) is torch.nn.Linear
            and type(criterion) is torch.nn.CrossEntropyLoss and criterion.reduction == "sum"
            and criterion.weight is None and not loss_compute.lambda_align and not loss_compute.lambda_coverage
            and loss_compute.lm_generator is None and loss_compute.lm_prior_model is None)


def fused_loss_forward(self, batch, output, attns, trunc_start=0, trunc_size=None):
    """``LossCompute.forward``'s plain path (OpenNMT-py 3.5.1: the target window, ``generator``, the criterion on
    fp32 scores, ``_stats``) with :func:`onmt_xl.cpu_training.generator_loss` computing the last three."""
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
    return loss, self._stats(n_sents, loss.item(), _Predicted(pred), flat_tgt)


def _patch_loss() -> None:
    from onmt.utils.loss import LossCompute

    if getattr(LossCompute.forward, "_onmt_xl", False):
        return
    stock_from_opts = LossCompute.from_opts.__func__

    def from_opts(cls, opt, model, vocab, train=True):
        loss_compute = stock_from_opts(cls, opt, model, vocab, train)
        dtype = _resolve_precision(opt, model)
        precision.autocast_forward(model, dtype)
        precision.autocast_forward(loss_compute, dtype)
        if train:
            _use_cpu_training_kernels(opt, model, loss_compute)
        if train and getattr(model, "encoder", None) is not None:
            loss_compute.__dict__["_onmt_xl_encoder"] = model.encoder  # not a submodule of the loss
            loss_compute.__dict__["_onmt_xl_every"] = max(int(getattr(opt, "report_every", 100)), 1)
        return loss_compute

    stock_forward = LossCompute.forward

    def forward(self, batch, output, attns, trunc_start=0, trunc_size=None):
        inner = fused_loss_forward if _fused_loss_applies(self, output) else stock_forward
        return add_encoder_loss(inner, self, batch, output, attns, trunc_start, trunc_size)

    forward._onmt_xl = True
    LossCompute.from_opts = classmethod(from_opts)
    LossCompute.forward = forward


def _patch_options() -> None:
    import onmt.opts as opts
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.encoders.options import add_model_options, validate_model_options

    if getattr(opts.model_opts, "_onmt_xl", False):
        return
    stock_model_opts = opts.model_opts

    @functools.wraps(stock_model_opts)
    def model_opts(parser):
        from onmt_xl.encoders.families import FAMILIES  # at call time: registration may run mid-import of it

        stock_model_opts(parser)
        add_model_options(parser, FAMILIES)

    model_opts._onmt_xl = True
    opts.model_opts = model_opts

    stock_validate = ArgumentParser.validate_model_opts.__func__

    def validate_model_opts(cls, model_opt):
        from onmt_xl.encoders.families import FAMILIES

        stock_validate(cls, model_opt)
        with usage_errors():
            validate_model_options(model_opt, FAMILIES)

    ArgumentParser.validate_model_opts = classmethod(validate_model_opts)


@contextlib.contextmanager
def usage_errors():
    """Our options' ``ValueError`` exceptions as :class:`XLUsageError`: the stock commands print them alone, exit 2."""
    try:
        yield
    except XLInputError:
        raise
    except ValueError as err:
        raise XLUsageError(None, None, str(err)) from None


_logged = set()


def _log_once(message) -> None:
    from onmt.utils.logging import logger

    if message and message not in _logged:
        _logged.add(message)
        logger.info(message)


def _resolve_precision(opt, model):
    """The autocast dtype of ``-cpu_precision`` for ``model`` (None: fp32), logged once per process."""
    param = next(model.parameters(), None)
    device = param.device.type if param is not None else "cpu"
    if param is not None and param.dtype != torch.float32:
        return None  # a half or quantised model: its own precision rules
    dtype, message = precision.resolve(getattr(opt, "cpu_precision", precision.DEFAULT), device)
    _log_once(message)
    return dtype


def add_precision_options(parser) -> None:
    group = parser.add_argument_group("CPU precision (onmt_xl)")
    group.add(
        "--cpu_precision", "-cpu_precision", type=str, default=precision.DEFAULT, choices=precision.CHOICES,
        help="Arithmetic of the forward pass and loss when running on the CPU. 'bf16': bf16 autocast "
        "(weights, gradients and optimizer state stay fp32), only where the CPU computes bf16 natively "
        "(AVX512-BF16, AMX or Arm BF16); elsewhere it says why and runs fp32, since emulated bf16 is "
        "many times slower. 'auto': bf16 where native, fp32 elsewhere. 'fp32': never autocast. "
        "No effect on a GPU.",
    )


def _patch_precision() -> None:
    import onmt.opts as opts
    from onmt.translate.translator import Inference

    if getattr(opts.train_opts, "_onmt_xl", False):
        return
    for name in ("train_opts", "translate_opts"):
        stock = getattr(opts, name)

        def with_precision(parser, _stock=stock, _training=name == "train_opts"):
            _stock(parser)
            add_precision_options(parser)
            if _training:
                add_resume_options(parser)
                add_cpu_training_options(parser)

        with_precision = functools.wraps(stock)(with_precision)
        with_precision._onmt_xl = True
        setattr(opts, name, with_precision)

    stock_from_opt = Inference.from_opt.__func__
    stock_translate = Inference._translate

    def from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs):
        translator = stock_from_opt(cls, model, vocabs, opt, model_opt, *args, **kwargs)
        translator._onmt_xl_autocast = _resolve_precision(opt, model)
        return translator

    def _translate(self, *args, **kwargs):
        with precision.autocast(getattr(self, "_onmt_xl_autocast", None)):
            return stock_translate(self, *args, **kwargs)

    Inference.from_opt = classmethod(functools.wraps(stock_from_opt)(from_opt))
    Inference._translate = functools.wraps(stock_translate)(_translate)


def add_cpu_training_options(parser) -> None:
    group = parser.add_argument_group("CPU training kernels (onmt_xl)")
    group.add(
        "--cpu_dropout_mask", "-cpu_dropout_mask", type=str, default=cpu_training.MASK_DEFAULT,
        choices=cpu_training.MASK_CHOICES,
        help="How dropout draws its masks when training on the CPU. 'fast': four mask elements from one 64-bit "
        "random draw (keep probability within 2^-16 of 1 - p, rescaled so the expectation is exact), about twice "
        "as fast as 'stock': PyTorch's bernoulli_, the random stream of stock OpenNMT-py. No effect on a GPU "
        "or in evaluation. (Adam on the CPU always takes PyTorch's fused kernel: the same update rule.)",
    )
    group.add(
        "--cpu_loss", "-cpu_loss", type=str, default=cpu_training.LOSS_DEFAULT, choices=cpu_training.LOSS_CHOICES,
        help="The training loss on the CPU. 'fused': the output layer, log-softmax and (label-smoothed) "
        "cross-entropy computed together, a block of rows at a time with their gradient, so the tokens x "
        "vocabulary scores are never materialised in fp32 or cast (same loss and gradients up to float "
        "rounding). 'stock': OpenNMT's. Applies to the plain generator and loss (no copy attention, "
        "sparsemax, alignment, coverage or LM prior: those keep the stock path). No effect on a GPU.",
    )


def _use_cpu_training_kernels(opt, model, loss_compute) -> None:
    """``-cpu_dropout_mask`` and ``-cpu_loss`` when ``model`` trains on the CPU: the fast masks on its dropouts,
    the fused loss marked on ``loss_compute`` (for :func:`fused_loss_forward`); each choice logged once."""
    param = next(model.parameters(), None)
    if param is None or param.device.type != "cpu":
        return
    mask = getattr(opt, "cpu_dropout_mask", cpu_training.MASK_DEFAULT)
    if mask == "fast":
        cpu_training.use_fast_dropout(model)
    _log_once(f"-cpu_dropout_mask {mask}: dropout masks from "
              + ("four 15-bit draws per 64-bit random integer" if mask == "fast" else "PyTorch's bernoulli_"))
    loss = getattr(opt, "cpu_loss", cpu_training.LOSS_DEFAULT)
    loss_compute.__dict__["_onmt_xl_fused_loss"] = loss == "fused"
    _log_once(f"-cpu_loss {loss}: " + ("the output layer and cross-entropy fused, block by block of rows"
                                       if loss == "fused" else "OpenNMT's output layer and cross-entropy"))


def _fuse_cpu_adam(optim) -> None:
    """Switch OpenNMT's ``torch.optim.Adam`` (``-optim adam``) to PyTorch's fused CPU step when every parameter
    is on the CPU; after ``load_state_dict``, which restores a checkpoint's param groups with their flags."""
    inner = getattr(optim, "_optimizer", None)
    if type(inner) is not torch.optim.Adam:
        return
    params = [p for group in inner.param_groups for p in group["params"]]
    fuse = cpu_training.fused_adam_applies(params) and not any(g.get("foreach") or g.get("differentiable")
                                                              for g in inner.param_groups)
    if not fuse and not any(g.get("fused") for g in inner.param_groups):
        return
    # Adam.step reads the flag of each group at every step; off the CPU (a CPU checkpoint resumed on a GPU),
    # the flag goes back to what the optimizer was built with (``defaults``: loading a state dict changes only
    # the groups), as stock OpenNMT runs it
    flag = True if fuse else inner.defaults.get("fused")
    for group in inner.param_groups:
        group["fused"] = flag


def add_resume_options(parser) -> None:
    group = parser.add_argument_group("Exact resume (onmt_xl)")
    group.add(
        "--exact_resume", "-exact_resume", action="store_true",
        help="With -train_from: continue the data where the checkpoint stopped (the batches its steps trained "
        "on are drawn and skipped) and restore its RNG states, so the resumed run trains as an uninterrupted "
        "one would. Without it OpenNMT restarts the corpus. Needs the same data, -seed and batching options; "
        "checkpoints written without onmt_xl continue the data but cannot restore the dropout RNG.",
    )


def _patch_resume() -> None:
    """Exact resume (:mod:`onmt_xl.resume`): checkpoints carry the RNG states in ``optim``; with
    ``-exact_resume``, ``Optimizer.from_opt`` keeps the loaded states and ``Trainer.train`` skips the batches
    of the steps already trained, then restores them."""
    from onmt.trainer import Trainer
    from onmt.utils.logging import logger
    from onmt.utils.optimizers import Optimizer

    if getattr(Optimizer.state_dict, "_onmt_xl", False):
        return
    stock_state_dict = Optimizer.state_dict
    stock_from_opt = Optimizer.from_opt.__func__
    stock_train = Trainer.train

    def state_dict(self):
        return {**stock_state_dict(self), resume.RNG_KEY: resume.rng_state()}

    def from_opt(cls, model, opt, checkpoint=None):
        optim = stock_from_opt(cls, model, opt, checkpoint=checkpoint)
        _fuse_cpu_adam(optim)
        if getattr(opt, "exact_resume", False) and opt.train_from and checkpoint is not None:
            saved = checkpoint.get("optim")
            optim._onmt_xl_resume = saved.get(resume.RNG_KEY) if isinstance(saved, dict) else None
            optim._onmt_xl_resuming = True
        return optim

    def train(self, train_iter, train_steps, *args, **kwargs):
        if getattr(self.optim, "_onmt_xl_resuming", False):
            step = self.optim.training_step
            skip = resume.batches_before(step, self.accum_count_l, self.accum_steps)
            rng = self.optim._onmt_xl_resume
            logger.info("-exact_resume: skipping the %d batches of steps 1-%d, then %s", skip, step - 1,
                        "restoring the checkpoint's RNG states" if rng is not None
                        else "continuing without the RNG states (the checkpoint has none)")
            train_iter = resume.skip_then_restore(train_iter, skip, rng, log=logger.info)
        return stock_train(self, train_iter, train_steps, *args, **kwargs)

    state_dict._onmt_xl = True
    Optimizer.state_dict = functools.wraps(stock_state_dict)(state_dict)
    Optimizer.from_opt = classmethod(functools.wraps(stock_from_opt)(from_opt))
    Trainer.train = functools.wraps(stock_train)(train)


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


def _sdpa_applies(attn, query, return_attn) -> bool:
    """The stock condition for its SDPA branch, with the CPU let in and the encoder's attention too (which
    OpenNMT builds without a ``self_attn_type``, so that it never takes SDPA); plus no KV cache."""
    return (
        query.device.type == "cpu"
        and not attn.layer_cache[0]
        and attn.max_relative_positions == 0
        and not return_attn
        and attn.self_attn_type in (None, "scaled-dot-flash")
        and attn.num_kv == 0
        and attn.parallel_gpu == 1
        and "key_pad_mask" not in attn.layer_cache[1]
    )


def _patch_attention() -> None:
    from onmt.modules.multi_headed_attn import MultiHeadedAttention

    if getattr(MultiHeadedAttention.forward, "_onmt_xl", False):
        return
    stock = MultiHeadedAttention.forward

    def forward(self, key, value, query, mask=None, sliding_window=0, step=0, return_attn=False,
                self_attn_type=None):
        if _sdpa_applies(self, query, return_attn):
            return cpu_sdpa_attention(self, key, value, query, mask), None
        return stock(self, key, value, query, mask=mask, sliding_window=sliding_window, step=step,
                     return_attn=return_attn, self_attn_type=self_attn_type)

    forward._onmt_xl = True
    MultiHeadedAttention.forward = functools.wraps(stock)(forward)


XL_SERVER_HINT = ('add "transforms": ["xl_position"] and "xl_preorderer": "path/to/preorderer.xlp" '
                  '(a file from `onmt-xl preorder-train`) to this model\'s "opt" in the server\'s JSON config')


def server_argv(opt: dict) -> list:
    """A model's ``"opt"`` from the server's JSON config as command-line arguments, as the stock
    ``ServerModel.parse_opt`` writes them (``models`` -> ``-model``; a boolean -> its flag), except that a
    list gives one argument per item, so that ``"transforms": ["xl_position", ...]`` parses."""
    argv = []
    for key, value in opt.items():
        if key == "models":
            argv += ["-model", *(str(m) for m in value)]
        elif type(value) is bool:
            argv.append(f"-{key}")  # as stock: the flag, whatever the value
        elif isinstance(value, (list, tuple)):
            argv += [f"-{key}", *(str(v) for v in value)]
        else:
            argv += [f"-{key}", str(value)]
    return argv


def server_config_error(opt, err: Exception) -> str:
    """What to tell a client of a model whose transform options failed validation (``err``)."""
    transforms = list(getattr(opt, "transforms", None) or [])
    if ("xl_position" in transforms or "xl_prereorder" in transforms) and \
            getattr(opt, "xl_source", "preorderer") == "preorderer" and not getattr(opt, "xl_preorderer", None):
        return ('the xl_position transform needs a preorderer: add "xl_preorderer": "path/to/preorderer.xlp" '
                '(a file from `onmt-xl preorder-train`) to this model\'s "opt" in the server\'s JSON config')
    return f"{err} (transform options go in this model's \"opt\" in the server's JSON config)"


class _Serving(threading.local):
    model = None  # the ServerModel whose ``run`` this thread is in


_serving = _Serving()


def server_transform_pipe(model):
    """The ``TransformPipe`` of the server model's ``-transforms`` (None without), built once per loaded
    translator, with its vocabularies, as ``onmt_translate`` builds it."""
    from onmt.transforms import TransformPipe, get_transforms_cls, make_transforms

    cached = model.__dict__.get("_onmt_xl_pipe")
    if cached is not None and cached[0] is model.translator:
        return cached[1]
    names = list(getattr(model.opt, "transforms", None) or [])
    pipe = None
    if names:
        built = make_transforms(model.opt, get_transforms_cls(names), model.translator.vocabs)
        pipe = TransformPipe.build_from([built[name] for name in names if name in built])
    model.__dict__["_onmt_xl_pipe"] = (model.translator, pipe)
    return pipe


def transform_server_example(pipe, ex: dict, index: int) -> dict:
    """One server example (``{"src": {"src": text[, "feats"]}, "tgt": ...}``) through ``pipe``, as the
    inference corpus puts each line through it, back in the server's form."""
    from onmt.constants import CorpusName
    from onmt.inputters.text_utils import clean_example

    src = ex["src"]["src"].split(" ")
    tgt = ex["tgt"]["tgt"].split(" ") if ex.get("tgt") else None
    example = {"src": src, "tgt": tgt, "src_original": list(src), "tgt_original": None if tgt is None else list(tgt),
               "cid": CorpusName.INFER, "cid_line_number": index}
    if "feats" in ex["src"]:
        example["src_feats"] = [f.split(" ") for f in ex["src"]["feats"]]
    out = pipe.apply(example, is_train=False, corpus_name=CorpusName.INFER)
    if out is None:
        raise ValueError(f"the model's transforms dropped input {index + 1} ({ex['src']['src'][:60]!r})")
    return clean_example(out)


def server_textbatch_to_tensor(stock, vocabs, batch, device, is_train=False):
    """The server's ``textbatch_to_tensor``, after the serving model's transforms (see :func:`_patch_server`)."""
    model = _serving.model
    if model is not None:
        error = getattr(model.opt, "_onmt_xl_error", None)
        if error:
            raise ValueError(error)
        pipe = server_transform_pipe(model)
        if pipe is not None:
            batch = [transform_server_example(pipe, ex, i) for i, ex in enumerate(batch)]
    return stock(vocabs, batch, device, is_train=is_train)


def _caused_by(err: BaseException, kind) -> bool:
    return in_chain(err, kind) is not None


def _patch_server() -> None:
    import onmt.translate.translation_server as server
    from onmt.utils.parse import ArgumentParser

    from onmt_xl.encoders.common import MissingXLPositionsError

    ServerModel = server.ServerModel
    if getattr(ServerModel.run, "_onmt_xl", False):
        return
    stock_run = ServerModel.run

    def parse_opt(self, opt):
        import onmt.opts

        models = opt["models"]
        models = models if isinstance(models, (list, tuple)) else [models]
        opt["models"] = [os.path.join(self.model_root, model) for model in models]
        opt["src"] = "dummy_src"
        parser = ArgumentParser()
        onmt.opts.translate_opts(parser)
        parsed = parser.parse_args(server_argv(opt))
        ArgumentParser.validate_translate_opts(parsed)
        parsed.cuda = parsed.gpu > -1
        parsed._onmt_xl_error = None
        if parsed.transforms:
            try:
                ArgumentParser._get_all_transform_translate(parsed)
                ArgumentParser._validate_transforms_opts(parsed)
            except (ValueError, OSError) as err:  # told to every request, not a server that fails to start
                parsed._onmt_xl_error = server_config_error(parsed, err)
        return parsed

    def run(self, inputs):
        previous, _serving.model = _serving.model, self
        try:
            return stock_run(self, inputs)
        except server.ServerModelError as err:
            transforms = getattr(self.opt, "transforms", None) or []
            if _caused_by(err, MissingXLPositionsError) and "xl_position" not in transforms:
                raise server.ServerModelError(
                    f"Error: model {self.model_id} has an encoder that reads cross-lingual positions, but the "
                    f"server runs no xl_position transform for it: {XL_SERVER_HINT}"
                ) from err
            raise
        finally:
            _serving.model = previous

    run._onmt_xl = True
    ServerModel.parse_opt = functools.wraps(ServerModel.parse_opt)(parse_opt)
    ServerModel.run = functools.wraps(stock_run)(run)
    server.textbatch_to_tensor = functools.partial(server_textbatch_to_tensor, server.textbatch_to_tensor)


LINE_KEY = "_onmt_xl_line"  # the file's 0-based line, set on the raw example before OpenNMT's own reading


def stock_line_indices(stride: int, offset: int):
    """The 0-based file lines that OpenNMT-py 3.5.1's ``ParallelCorpus.load(offset, stride)`` yields, in order:
    those with ``(i // stride) % stride == offset`` (blocks of ``stride`` lines per reader), whereas its
    ``cid_line_number`` is ``k * stride + offset`` for the k-th line read (correct only for ``stride`` 1)."""
    i = 0
    while True:
        if (i // stride) % stride == offset:
            yield i
        i += 1


def _is_empty(tokens) -> bool:
    return tokens is not None and not any(tokens)  # "" and whitespace-only lines split to [""] in 3.5.1


def read_corpus(iterator, stock_process, stream):
    """``ParallelCorpusIterator._process`` with the file's line number, the corpus' files and the empty-line
    policy (see the module docstring, patch 10). ``iterator``: the stock iterator, ``stream``: its raw examples."""
    from onmt.constants import CorpusName
    from onmt.utils.logging import logger

    corpus = iterator.corpus
    files = {side: (path if isinstance(path, str) else None)
             for side, path in (("src", corpus.src), ("tgt", corpus.tgt), ("align", corpus.align))}
    inferring = iterator.cid == CorpusName.INFER
    if inferring:
        iterator._onmt_xl_empty = set()  # read by the translator (patch 11) as the lines come in
    warned = iterator.__dict__.setdefault("_onmt_xl_warned", set())

    def numbered():
        for line, example in zip(stock_line_indices(iterator.stride, iterator.offset), stream):
            example[LINE_KEY] = line
            yield example

    for item in stock_process(iterator, numbered()):
        example = item[0]
        line = example.pop(LINE_KEY, None)
        if line is not None:
            example["cid_line_number"] = line
        example[FILES_KEY] = files
        src_empty, tgt_empty = _is_empty(example["src"]), _is_empty(example.get("tgt"))
        if inferring:
            if src_empty:
                iterator._onmt_xl_empty.add(example["cid_line_number"])
                continue
        elif src_empty or tgt_empty:
            side = "src" if src_empty else "tgt"
            path, number = example_location(example, side)
            what = ("empty source and target lines" if src_empty and tgt_empty
                    else f"empty {'source' if src_empty else 'target'} line")
            level = iterator.skip_empty_level
            if level == "error":
                raise XLInputError(path, number, f"{what}: remove the pair, or skip empty pairs with "
                                                 "-skip_empty_level warning (or silent)")
            if level == "warning" and (path, number) not in warned:
                warned.add((path, number))
                logger.warning("%s, line %s: %s; the pair is skipped (-skip_empty_level warning)", path, number, what)
            continue
        yield item


def _patch_corpus_lines() -> None:
    from onmt.inputters.text_corpus import ParallelCorpusIterator

    if getattr(ParallelCorpusIterator._process, "_onmt_xl", False):
        return
    stock = ParallelCorpusIterator._process

    def _process(self, stream):
        return read_corpus(self, stock, stream)

    _process._onmt_xl = True
    ParallelCorpusIterator._process = functools.wraps(stock)(_process)


class RealignedOutput:
    """The translator's output file, with ``n_best`` empty lines written for every empty source line at its
    place: OpenNMT writes one ``write`` per translated line, in line order; ``empty()`` gives the empty lines
    read so far (0-based), which always include those before the line being written."""

    def __init__(self, out, empty, n_best: int):
        self.out, self.empty, self.n_best, self.line = out, empty, max(int(n_best), 1), 0

    def pad(self) -> None:
        empty = self.empty()
        while self.line in empty:
            self.out.write("\n" * self.n_best)
            self.line += 1

    def write(self, text):
        self.pad()
        self.out.write(text)
        self.line += 1

    def __getattr__(self, name):
        return getattr(self.out, name)


class _Batches:
    """``infer_iter`` (its attributes too), calling ``on_none()`` once it ends having yielded no batch."""

    def __init__(self, batches, on_none):
        self.batches, self.on_none = batches, on_none

    def __iter__(self):
        n = 0
        for n, item in enumerate(self.batches, 1):
            yield item
        if n == 0:
            self.on_none()

    def __getattr__(self, name):
        return getattr(self.batches, name)


def _infer_corpus(infer_iter):
    from onmt.constants import CorpusName

    mixer = getattr(infer_iter, "mixer", None)
    return getattr(mixer, "iterables", {}).get(CorpusName.INFER)


def _patch_empty_translations() -> None:
    from onmt.translate.translator import Inference

    if getattr(Inference._translate, "_onmt_xl_empty", False):
        return
    stock = Inference._translate

    def _translate(self, infer_iter, *args, **kwargs):
        corpus = _infer_corpus(infer_iter)
        if corpus is None or self.out_file is None:
            return stock(self, infer_iter, *args, **kwargs)
        empty = lambda: getattr(corpus, "_onmt_xl_empty", ())  # noqa: E731  (set once reading starts)
        out, self.out_file = self.out_file, RealignedOutput(self.out_file, empty, self.n_best)
        reports = self.report_score, self.report_time

        def no_batch():  # the stock summary reads the last batch (and divides by the line count)
            self.report_score = self.report_time = False

        try:
            scores, predictions = stock(self, _Batches(infer_iter, no_batch), *args, **kwargs)
            self.out_file.pad()  # the empty lines at the end
            self.out_file.flush()
        finally:
            self.out_file = out
            self.report_score, self.report_time = reports
        for line in sorted(empty()):
            if line <= len(predictions):
                predictions.insert(line, [""] * self.n_best)
                scores.insert(line, [0.0] * self.n_best)
        return scores, predictions

    _translate._onmt_xl_empty = True
    Inference._translate = functools.wraps(stock)(_translate)


class LazyOutput:
    """A text file opened (``w+``, UTF-8) at the first ``write`` or ``flush``, not before (patch 12)."""

    def __init__(self, path: str):
        self.path, self._file = path, None

    def _opened(self):
        if self._file is None:
            self._file = codecs.open(self.path, "w+", "utf-8")
        return self._file

    def write(self, text):
        return self._opened().write(text)

    def flush(self):
        self._opened().flush()

    def close(self):
        if self._file is not None:
            self._file.close()

    def __getattr__(self, name):
        return getattr(self._opened(), name)


def _patch_lazy_output() -> None:
    from onmt.translate import translator

    if getattr(translator.build_translator, "_onmt_xl", False):
        return
    stock = translator.build_translator

    def build_translator(opt, device_id=0, report_score=True, logger=None, out_file=None):
        if out_file is None:
            out_file = LazyOutput(opt.output)
        return stock(opt, device_id=device_id, report_score=report_score, logger=logger, out_file=out_file)

    build_translator._onmt_xl = True
    translator.build_translator = functools.wraps(stock)(build_translator)
    from onmt.utils import distributed  # multi-GPU translation imported the name itself

    distributed.build_translator = translator.build_translator


def unknown_option_warnings(prog: str, unknown, known, also_fine=()) -> list:
    """One ``PROG: warning:`` line per unknown option (``--name=value``, ``-name`` or a value), with the closest
    of ``known`` option names; names in ``also_fine`` (known to a sibling command) are left out."""
    import difflib

    lines = []
    for item in unknown:
        if not item.startswith("-") or item.lstrip("-")[:1].isdigit():
            continue  # the value of an unknown option, or a negative number
        name = item.lstrip("-").split("=", 1)[0]
        if name in also_fine:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]}?" if close else f"; see {prog} -h"
        lines.append(f"{prog}: warning: unknown option {name} (command line or -config file) is ignored{hint}")
    return lines


def _option_names(parser) -> list:
    return sorted({s.lstrip("-") for s in parser._option_string_actions})


def _patch_unknown_options() -> None:
    import sys

    from onmt.utils.parse import ArgumentParser

    if getattr(ArgumentParser.parse_known_args, "_onmt_xl", False):
        return
    stock = ArgumentParser.parse_known_args
    commands = {"train.py": "onmt_train", "build_vocab.py": "onmt_build_vocab"}

    def parse_known_args(self, args=None, namespace=None, *rest, **kwargs):
        opt, unknown = stock(self, args, namespace, *rest, **kwargs)
        prog = commands.get(self.description)
        if args is None and unknown and prog:  # the command line of one of the two commands
            also_fine = ()
            if prog == "onmt_build_vocab":
                from onmt.opts import train_opts

                train = ArgumentParser(description="onmt_train options")
                train_opts(train)
                also_fine = set(_option_names(train))
            known = sorted(set(_option_names(self)) | set(also_fine))
            for line in unknown_option_warnings(prog, unknown, known, also_fine):
                print(line, file=sys.stderr)
        return opt, unknown

    parse_known_args._onmt_xl = True
    ArgumentParser.parse_known_args = functools.wraps(stock)(parse_known_args)
