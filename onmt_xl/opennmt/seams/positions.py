"""How XL positions reach the encoder.

Wraps (OpenNMT-py 3.5.1):

- ``onmt.inputters.text_utils.tensorify`` (and the name ``dynamic_iterator`` imported): batching puts each example's
  ``xl_pos`` (set by the ``xl_position`` transform) into ``batch["xl_pos"]``, ``(batch, src_len)`` long, padded like
  the source; ``batch["src"]`` stays stock, token ids (and features) only. A batch without positions is stock's.
- ``Translator._run_encoder`` (translation, gold scoring, ``-report_align``, validation scoring, the server),
  ``Trainer._gradient_accumulation`` and ``Trainer.validate`` (one batch at a time): each runs with its batch's
  positions fed to the encoder (:func:`onmt_xl.opennmt.encoders.common.feeding_xl_positions`); our encoders read them
  with :func:`~onmt_xl.opennmt.encoders.common.split_xl`. Stock encoders never read them.

No vocabulary and no embedding table are involved, so any position (even beyond the longest training sentence)
reaches the model exactly. Beam search needs nothing more: the encoder runs once, before the search tiles and
reorders rows.

Audit of the stock reads of ``batch["src"]`` (OpenNMT-py 3.5.1), which all see token ids only:
``Translator._translate`` (the ``｟newline｠`` check), ``_maybe_retranslate``, ``Translator.translate_batch``
(``-max_length_ratio``), ``NMTModel.forward`` / ``_run_encoder`` (``init_state``, ``map_state``),
``TranslationBuilder.from_batch`` (``-replace_unk``, ``-attn_debug``), ``LossCompute`` (``-lambda_align``,
``ignore_prompt``), ``GeneratorLM``, ``InferenceEngineCT2``; copy attention, alignment and the searches read
``src_map`` / ``enc_out`` instead. ``_maybe_retranslate`` fails at its first line in 3.5.1 (``torch.sort`` of a
list), with or without XL; were it fixed, its sub-batches would carry no ``xl_pos`` and an XL encoder would raise
``MissingXLPositionsError`` rather than guess positions for segments the preorderer never saw.
"""

from __future__ import annotations

import functools

from onmt_xl.opennmt.encoders.common import feeding_xl_positions
from onmt_xl.core.errors import XLInputError, example_location
from onmt_xl.opennmt.seams.base import wrapper
from onmt_xl.opennmt.transforms import XL_POS_KEY

LOST = "XL encoders get no positions (training, translation and the server fail with a missing-positions error)"


def tensorify_with_xl(stock_tensorify, vocabs, minibatch, device, left_pad=False):
    """OpenNMT's ``tensorify`` plus the XL channel: ``batch["xl_pos"]``, ``(batch, src_len)``, beside ``batch["src"]``.

    The channel is padded (with 0, on the side ``left_pad`` says) in Python and made one tensor with a single
    ``torch.tensor`` call, so a batch built on a GPU (``-num_workers 0``) costs one host-to-device copy rather than
    one per example plus a padding kernel (same values as per-example tensors through ``pad_sequence``)."""
    import torch

    batch = stock_tensorify(vocabs, minibatch, device, left_pad=left_pad)
    if not any(XL_POS_KEY in ex for ex, _ in minibatch):
        return batch
    width = max(len(ex["src"]["src_ids"]) for ex, _ in minibatch)
    rows = []
    for ex, _ in minibatch:
        if XL_POS_KEY not in ex:
            raise XLInputError(
                *example_location(ex),
                "example has no XL positions while others in its batch do: add the xl_position "
                "transform to every corpus of a model with an XL encoder",
            )
        pos = ex[XL_POS_KEY]
        if len(pos) != len(ex["src"]["src_ids"]):
            raise XLInputError(
                *example_location(ex),
                f"{len(pos)} XL positions for {len(ex['src']['src_ids'])} source tokens: "
                "xl_position must come after every transform that changes the source tokens",
            )
        pad = [0] * (width - len(pos))
        rows.append(pad + list(pos) if left_pad else list(pos) + pad)
    batch[XL_POS_KEY] = torch.tensor(rows, dtype=torch.long, device=device)
    return batch


def feed_each(items, batch_of):
    """Yield ``items`` unchanged, each while its batch's ``xl_pos`` is fed to the encoders: the stock loops
    that take them (``Trainer._gradient_accumulation``, ``Trainer.validate``) finish with one batch
    before they take the next."""
    for item in items:
        with feeding_xl_positions(batch_of(item).get(XL_POS_KEY)):
            yield item


def _fed(stock, batch_of):
    def method(self, items, *args, **kwargs):
        items = feed_each(items, batch_of)
        try:
            return stock(self, items, *args, **kwargs)
        finally:
            items.close()  # the last batch's positions are not left fed if the loop stopped early

    return wrapper(stock, method)


def apply() -> None:
    import onmt.inputters.dynamic_iterator as dynamic_iterator
    import onmt.inputters.text_utils as text_utils
    from onmt.trainer import Trainer
    from onmt.translate.translator import Translator

    stock_tensorify = text_utils.tensorify
    stock_run_encoder = Translator._run_encoder
    stock_accumulation, stock_validate = Trainer._gradient_accumulation, Trainer.validate

    def _run_encoder(self, batch):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            return stock_run_encoder(self, batch)

    tensorify = functools.partial(tensorify_with_xl, stock_tensorify)
    tensorify._onmt_xl = True
    text_utils.tensorify = dynamic_iterator.tensorify = tensorify
    Translator._run_encoder = wrapper(stock_run_encoder, _run_encoder)
    Trainer._gradient_accumulation = _fed(stock_accumulation, lambda batch: batch)
    Trainer.validate = _fed(stock_validate, lambda item: item[0])  # (batch, bucket_idx)
