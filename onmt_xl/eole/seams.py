"""The Eole adapter's seams: what Eole 0.6.4's extension points cannot do, one function each (``reports/EOLE.md``).

Each is applied once, right after the Eole module it changes has executed (:mod:`onmt_xl.eole.hook`), and changes
nothing for a config that names none of our components: stock encoders, transforms and batches are untouched.

* :func:`transforms` (after ``eole.transforms``): register ``xl_position``, *before* ``eole.config.data`` freezes
  ``NestedAllTransformsConfig`` from the registry (else ``transforms_configs.xl_position`` is an unknown key).
* :func:`config_models` (after ``eole.config.models``): add :class:`~onmt_xl.eole.config.XLTransformerEncoderConfig`
  to the closed encoder union ``BaseModelConfig.encoder`` (discriminator ``encoder_type``) and rebuild the model
  configs; an XL encoder under ``architecture: transformer`` (whose validator silently resets ``encoder_type``) fails
  with the fix (``architecture: custom``).
* :func:`encoders` (after ``eole.encoders``): ``str2enc`` entries.
* :func:`model` (after ``eole.models.model``): an XL model's ``src_emb`` is an
  :class:`~onmt_xl.eole.encoders.XLSourceEmbeddings` (the look-up only; the encoder adds ``√d``, PE and dropout).
* :func:`batching` (after ``eole.inputters.dynamic_iterator``): ``tensorify`` has fixed keys; ours adds
  ``batch["xl_pos"]`` ``(batch, src_len)`` when the examples carry positions.
* :func:`trainer`, :func:`translator`: the model's stock forward calls ``encoder(emb, pad_mask=...)`` only, so the
  batch's positions are fed around the calls that encode a batch (:func:`onmt_xl.encoders.common.feeding_xl_positions`).
"""

from __future__ import annotations

import functools
import typing
from typing import Union

from onmt_xl.encoders.common import feeding_xl_positions

XL_POS_KEY = "xl_pos"


def _xl_encoder_types():
    from onmt_xl.eole.config import XL_ENCODERS

    return XL_ENCODERS


def transforms() -> None:
    from eole.transforms import AVAILABLE_TRANSFORMS, register_transform

    from onmt_xl.eole.transforms import TRANSFORM_CLASSES

    for name, cls in TRANSFORM_CLASSES.items():
        if name not in AVAILABLE_TRANSFORMS:
            register_transform(name)(cls)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def config_models() -> None:
    import eole.config.models as models
    from pydantic import TypeAdapter

    from onmt_xl.eole.config import XLTransformerEncoderConfig

    for cls in (models.BaseModelConfig, *_subclasses(models.BaseModelConfig)):
        field = cls.model_fields.get("encoder")
        if field is None:
            continue
        members = tuple(m for m in typing.get_args(field.annotation) if m is not type(None))
        if XLTransformerEncoderConfig in members:
            continue
        field.annotation = Union[(*members, XLTransformerEncoderConfig)] | None
        cls.model_rebuild(force=True)
    stock_build = TypeAdapter(models.ModelConfig).validate_python

    def build_model_config(data, *args, **kwargs):
        enc = (data.get("encoder") or {}).get("encoder_type") if isinstance(data, dict) else None
        if enc in _xl_encoder_types() and data.get("architecture", "transformer") == "transformer":
            raise ValueError(f"encoder_type {enc}: set the model's architecture to 'custom' (Eole's 'transformer' "
                             "architecture resets every encoder_type to 'transformer')")
        return stock_build(data, *args, **kwargs)

    models.build_model_config = build_model_config


def encoders() -> None:
    from eole.encoders import str2enc

    from onmt_xl.eole.encoders import ENCODER_CLASSES

    for name, cls in ENCODER_CLASSES.items():
        str2enc.setdefault(name, cls)


def model() -> None:
    import eole.models.model as model_module

    stock = model_module.build_src_emb

    @functools.wraps(stock)
    def build_src_emb(model_config, vocabs, running_config=None):
        emb = stock(model_config, vocabs, running_config=running_config)
        if getattr(model_config.encoder, "encoder_type", None) in _xl_encoder_types():
            from onmt_xl.eole.encoders import XLSourceEmbeddings

            XLSourceEmbeddings.adopt(emb)
        return emb

    model_module.build_src_emb = build_src_emb


def tensorify_with_xl(stock, vocabs, minibatch, device, left_pad=False):
    """Eole's ``tensorify`` plus ``batch["xl_pos"]`` ``(batch, src_len)`` long, padded like the source."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    batch = stock(vocabs, minibatch, device, left_pad)
    if not any(XL_POS_KEY in ex for ex, _ in minibatch):
        return batch
    seqs = []
    for ex, _ in minibatch:
        pos = ex.get(XL_POS_KEY)
        n_src = len(ex["src"]["src_ids"])
        if pos is None or len(pos) != n_src:
            raise ValueError(f"{'no' if pos is None else len(pos)} XL positions for {n_src} source tokens: "
                             "xl_position must be the last source transform of every corpus")
        pos = torch.tensor(pos, dtype=torch.long, device=device)
        seqs.append(pos.flip(dims=[0]) if left_pad else pos)
    xl = pad_sequence(seqs, batch_first=True, padding_value=0)
    batch[XL_POS_KEY] = xl.flip(dims=[1]) if left_pad else xl
    return batch


def batching() -> None:
    import eole.inputters.dynamic_iterator as dynamic_iterator
    import eole.inputters.text_utils as text_utils

    tensorify = functools.partial(tensorify_with_xl, text_utils.tensorify)
    text_utils.tensorify = dynamic_iterator.tensorify = tensorify


def trainer() -> None:
    from eole.trainer import BatchProcessor, Trainer

    stock_loss, stock_validate = BatchProcessor._compute_loss, Trainer.validate

    @functools.wraps(stock_loss)
    def _compute_loss(self, src, tgt, src_len, batch, *args, **kwargs):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            return stock_loss(self, src, tgt, src_len, batch, *args, **kwargs)

    def fed(items):
        for batch, bucket_idx in items:
            with feeding_xl_positions(batch.get(XL_POS_KEY)):
                yield batch, bucket_idx

    @functools.wraps(stock_validate)
    def validate(self, valid_iter, *args, **kwargs):
        items = fed(valid_iter)
        try:
            return stock_validate(self, items, *args, **kwargs)
        finally:
            items.close()

    BatchProcessor._compute_loss, Trainer.validate = _compute_loss, validate


def translator() -> None:
    from eole.predict.translator import Translator

    stock = Translator._run_encoder

    @functools.wraps(stock)
    def _run_encoder(self, batch):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            return stock(self, batch)

    Translator._run_encoder = _run_encoder


#: Eole module -> the seam applied right after it has executed
AFTER = {
    "eole.config.models": config_models,
    "eole.transforms": transforms,
    "eole.encoders": encoders,
    "eole.models.model": model,
    "eole.inputters.dynamic_iterator": batching,
    "eole.trainer": trainer,
    "eole.predict.translator": translator,
}
