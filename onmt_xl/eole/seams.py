"""The Eole adapter's seams: what Eole 0.6.4's extension points cannot do, one function each (``reports/EOLE.md``).

Each is applied once, right after the Eole module it changes has executed (:mod:`onmt_xl.eole.hook`), and changes
nothing for a config that names none of our components: stock encoders, transforms and batches are untouched.

* :func:`transforms` (after ``eole.transforms``): register ``xl_position``, *before* ``eole.config.data`` freezes
  ``NestedAllTransformsConfig`` from the registry (else ``transforms_configs.xl_position`` is an unknown key).
* :func:`config_models` (after ``eole.config.models``): add our encoder configs
  (as announced in :mod:`onmt_xl.eole.registry`: the XL encoders and the baselines) to the closed encoder union
  ``BaseModelConfig.encoder`` (discriminator ``encoder_type``), our decoder configs (the reordering-embedding
  decoder) to the decoder union ``BaseModelConfig.decoder`` (``decoder_type``), and rebuild the model configs; an
  encoder or decoder of ours under ``architecture: transformer`` (whose validator silently resets both types) fails
  with the fix (``architecture: custom``). A seam that the hook applies while one of our modules imports Eole waits
  for that module to announce its classes (:mod:`onmt_xl.eole.registry`). Our encoders and decoders take the embeddings'
  ``position_encoding_type`` as Eole's own transformer encoder and decoder do (:func:`share_position_encoding`).
* :func:`encoders` (after ``eole.encoders``): ``str2enc`` entries; :func:`decoders` (after ``eole.decoders``):
  ``str2dec`` entries.
* :func:`model` (after ``eole.models.model``): the ``src_emb`` of an XL, ``xl_relative`` or ``xl_encoder_free``
  model is an :class:`~onmt_xl.eole.encoders.XLSourceEmbeddings` (the look-up only; the encoder adds ``√d``, its
  positions and dropout); after Eole's ``init_weights`` our modules' starting points are put back
  (:func:`reset_starts`).
* :func:`batching` (after ``eole.inputters.dynamic_iterator``): ``tensorify`` has fixed keys; ours adds
  ``batch["xl_pos"]`` ``(batch, src_len)`` when the examples carry positions.
* :func:`trainer`, :func:`translator`: the model's stock forward calls ``encoder(emb, pad_mask=...)`` only, so the
  batch's positions are fed around the calls that encode a batch (:func:`onmt_xl.core.channel.feeding_xl_positions`);
  in training, the encoder's auxiliary loss (ExGRE/ReFSR) joins the loss (:func:`add_encoder_loss`).
* :func:`translator` also: Eole translates an empty source line (one empty token) into a full sentence; a prediction
  with our components (:func:`predicts_with_ours`: our encoder or decoder, or a transform ``xl_*``) gives an empty
  line for it instead (``n_best`` empty hypotheses, score 0), as the OpenNMT-py adapter does
  (:mod:`onmt_xl.opennmt.seams.output`): ``tensorify`` marks the batch's empty sources (``batch["xl_empty_src"]``) while
  such a prediction runs, and ``predict_batch`` blanks their hypotheses (:func:`blank_empty_sources`).
* Exact resume, ``training.xl_exact_resume: true`` (:mod:`onmt_xl.core.resume`): :func:`training_config` (after
  ``eole.config.training``) adds the option to Eole's ``TrainingConfig``; :func:`optimizers` (after
  ``eole.utils.optimizers``) makes an optimizer built with it save the RNG states in its ``optimizer.pt``
  (``optim["onmt_xl_rng"]``) and learn those of the ``train_from`` step directory; :func:`trainer` then, resuming
  at step K+1, draws and drops the batches of steps 1..K (replaying Eole's ``accum_count``/``dropout`` schedules
  between them, as the uninterrupted run did) and restores the RNG states before step K+1. Without the option
  ``optimizer.pt`` is Eole's own, key for key, and ``train_from`` restarts the corpus; :func:`model_saver` keeps the
  option out of every ``config.json`` (it concerns the run, not the model).
* CPU speed, ``training.xl_cpu_precision: fp32|bf16|auto`` and ``training.xl_cpu_kernels: stock|fast`` (the OpenNMT-py
  adapter's ``-xl_cpu_precision``/``-xl_cpu_kernels`` for ``eole train``): :func:`loss` (after ``eole.utils.loss``)
  autocasts and takes the cheaper dropout masks and the fused loss, :func:`optimizers` the fused Adam; both options
  stay out of ``config.json`` too, so that prediction keeps its own precision.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import typing
import weakref
from typing import Union

from onmt_xl.core.channel import feeding_xl_positions
from onmt_xl.core.modules.starts import reset_starts  # noqa: F401  (public here too)

XL_POS_KEY = "xl_pos"
#: batch key: the rows whose source line is empty (only while :data:`_prediction` says a prediction of ours runs)
XL_EMPTY_KEY = "xl_empty_src"
#: ``ours``: True while Eole's ``_predict`` runs for a model or transform pipeline of ours (this thread; Eole builds
#: inference batches in the predicting process, ``num_workers`` 0)
_prediction = threading.local()


def _types(configs, field):
    return {name for cls in configs for name in typing.get_args(cls.model_fields[field].annotation)}


def _xl_encoder_types():
    """Every ``encoder_type`` of ours (XL encoders and baselines) announced so far."""
    from onmt_xl.eole import registry

    return _types(registry.CONFIGS, "encoder_type")


def _xl_decoder_types():
    """Every ``decoder_type`` of ours (the reordering-embedding decoder) announced so far."""
    from onmt_xl.eole import registry

    return _types(registry.DECODER_CONFIGS, "decoder_type")


def _lookup_src_emb_types():
    from onmt_xl.eole.config import LOOKUP_SRC_EMB

    return LOOKUP_SRC_EMB


def transforms() -> None:
    from eole.transforms import AVAILABLE_TRANSFORMS, register_transform

    from onmt_xl.eole import registry

    registry.listen(transforms)
    # our transforms module announces its classes when defined; if it is the one importing eole.transforms right now
    # (partly initialised), its announcement calls this again, still before eole.config.data reads the registry
    import onmt_xl.eole.transforms  # noqa: F401

    for name, cls in registry.TRANSFORMS.items():
        if name not in AVAILABLE_TRANSFORMS:
            register_transform(name)(cls)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def config_models() -> None:
    import eole.config.models as models

    from onmt_xl.eole import registry

    registry.listen(config_models)
    try:  # they announce their classes; one being imported right now announces them when defined, calling this again
        import onmt_xl.eole.baseline_config  # noqa: F401
        import onmt_xl.eole.config  # noqa: F401
    except ImportError:
        pass

    changed = False
    guarded = _guard_transformer_architecture(models)
    for cls in (models.BaseModelConfig, *_subclasses(models.BaseModelConfig)):
        rebuild = False
        for name, ours in (("encoder", tuple(registry.CONFIGS)), ("decoder", tuple(registry.DECODER_CONFIGS))):
            field = cls.model_fields.get(name)
            if field is None or not ours:
                continue
            members = tuple(m for m in typing.get_args(field.annotation) if m is not type(None))
            if all(config in members for config in ours):
                continue
            field.annotation = Union[(*members, *(c for c in ours if c not in members))] | None
            rebuild = True
        if rebuild or (guarded and issubclass(cls, models.TransformerModelConfig)):
            cls.model_rebuild(force=True)
            changed = True
    if getattr(models.build_model_config, "_onmt_xl", False):
        if changed:
            models.build_model_config.rebuild()
        return
    stock_update = models.BaseModelConfig.update_model_opts

    @functools.wraps(stock_update)
    def update_model_opts(self):
        stock_update(self)
        share_position_encoding(self, tuple(registry.CONFIGS), tuple(registry.DECODER_CONFIGS))

    models.BaseModelConfig.update_model_opts = update_model_opts
    models.build_model_config = _guarded_build(models)


def _refuse_ours_under_transformer(data) -> None:
    """The ValueError for an encoder or decoder of ours in a model config of ``architecture: transformer``."""
    for part, ours in (("encoder", _xl_encoder_types), ("decoder", _xl_decoder_types)):
        kind = _section(data, part).get(f"{part}_type")
        if kind in ours() and data.get("architecture", "transformer") == "transformer":
            raise ValueError(f"{part}_type {kind}: set the model's architecture to 'custom' (Eole's 'transformer' "
                             f"architecture resets every {part}_type to 'transformer')")


def _guard_transformer_architecture(models) -> bool:
    """Make ``TransformerModelConfig``'s before-validator, which overwrites ``encoder_type``/``decoder_type`` with
    ``transformer``, refuse ours first (the path of ``eole train``'s ``TrainConfig``, which validates the model field
    itself, not through ``build_model_config``); True if it was changed now (the class needs a rebuild)."""
    validators = models.TransformerModelConfig.__pydantic_decorators__.model_validators
    decorator = validators.get("encoder_decoder_type")
    if decorator is None or getattr(decorator.func, "_onmt_xl", False):
        return False
    stock = decorator.func

    def encoder_decoder_type(data):
        if isinstance(data, dict):
            _refuse_ours_under_transformer(data)
        return stock(data)

    encoder_decoder_type._onmt_xl = True
    validators["encoder_decoder_type"] = dataclasses.replace(decorator, func=encoder_decoder_type)
    return True


def _guarded_build(models):
    """Eole's ``build_model_config`` (a ``TypeAdapter`` of the model-config union, rebuilt when our configs join it)
    that refuses an encoder or decoder of ours under ``architecture: transformer``."""
    from pydantic import TypeAdapter

    stock = {}

    def rebuild():
        stock["build"] = TypeAdapter(models.ModelConfig).validate_python

    def build_model_config(data, *args, **kwargs):
        _refuse_ours_under_transformer(data)
        return stock["build"](data, *args, **kwargs)

    rebuild()
    build_model_config._onmt_xl, build_model_config.rebuild = True, rebuild
    return build_model_config


def _section(data, part):
    """``data[part]`` of a model config's raw data when it is a dict (Eole also accepts a string there), else {}."""
    section = data.get(part) if isinstance(data, dict) else None
    return section if isinstance(section, dict) else {}


def share_position_encoding(model_config, ours, our_decoders=()) -> None:
    """What Eole's ``update_model_opts`` does for ``encoder_type``/``decoder_type: transformer`` only: an encoder or
    decoder of ours whose config does not set ``position_encoding_type`` takes the embeddings' (the decoder's PE_abs),
    re-validated."""
    emb = model_config.embeddings
    for part, configs in ((model_config.encoder, ours), (model_config.decoder, our_decoders)):
        if type(part) not in configs or emb is None or "position_encoding_type" in part.model_fields_set:
            continue
        kind = emb.position_encoding_type
        if part.position_encoding_type != kind:
            type(part).model_validate({**part.model_dump(exclude={"dim_per_head"}), "position_encoding_type": kind})
            part.update(position_encoding_type=kind)


def encoders() -> None:
    from eole.encoders import str2enc

    from onmt_xl.eole import registry

    registry.listen(encoders)
    try:  # they announce their classes; one being imported right now announces them when defined, calling this again
        import onmt_xl.eole.baselines  # noqa: F401
        import onmt_xl.eole.encoders  # noqa: F401
    except ImportError:
        pass

    for enc, cls in registry.ENCODERS.items():
        str2enc.setdefault(enc, cls)


def decoders() -> None:
    from eole.decoders import str2dec

    from onmt_xl.eole import registry

    registry.listen(decoders)
    try:  # they announce their classes; one being imported right now announces them when defined, calling this again
        import onmt_xl.eole.baselines  # noqa: F401
    except ImportError:
        pass

    for dec, cls in registry.DECODERS.items():
        str2dec.setdefault(dec, cls)


def model() -> None:
    import eole.models.model as model_module

    stock = model_module.build_src_emb
    stock_init = model_module.BaseModel.init_weights

    @functools.wraps(stock)
    def build_src_emb(model_config, vocabs, running_config=None):
        emb = stock(model_config, vocabs, running_config=running_config)
        if getattr(model_config.encoder, "encoder_type", None) in _lookup_src_emb_types():
            from onmt_xl.eole.encoders import XLSourceEmbeddings

            XLSourceEmbeddings.adopt(emb)
        return emb

    @functools.wraps(stock_init)
    def init_weights(self, running_config):
        stock_init(self, running_config)
        reset_starts(self)

    model_module.build_src_emb = build_src_emb
    model_module.BaseModel.init_weights = init_weights


def tensorify_with_xl(stock, vocabs, minibatch, device, left_pad=False):
    """Eole's ``tensorify`` plus ``batch["xl_pos"]`` ``(batch, src_len)`` long, padded like the source."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    batch = stock(vocabs, minibatch, device, left_pad)
    if getattr(_prediction, "ours", False):
        empty = [i for i, (ex, _) in enumerate(minibatch)
                 if not any(str(t).strip() for t in ex["src"].get("src") or ())]
        if empty:
            batch[XL_EMPTY_KEY] = empty
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
    def _compute_loss(self, src, tgt, src_len, batch, normalization, *args, **kwargs):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            loss, stats = stock_loss(self, src, tgt, src_len, batch, normalization, *args, **kwargs)
        return add_encoder_loss(self.model, loss, normalization), stats

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
    Trainer.train = exactly_resumed(Trainer, Trainer.train)


def add_encoder_loss(model, loss, normalization):
    """Eole's normalised training loss plus the encoder's auxiliary loss (ExGRE/ReFSR's ``λ · Σ_j ℓ_j``, a sum over
    source words), normalised alike (as the OpenNMT-py adapter adds it to the summed token loss). Unchanged for a
    model whose encoder has no ``reordering_loss`` (every stock one)."""
    aux = getattr(getattr(model, "encoder", None), "reordering_loss", None)
    if aux is None or loss is None:
        return loss
    return loss + aux / normalization


def predicts_with_ours(model, transforms) -> bool:
    """Whether a prediction uses one of our components: the model's encoder or decoder, or a transform ``xl_*``."""
    from onmt_xl.eole import registry

    ours = (*registry.ENCODERS.values(), *registry.DECODERS.values())
    parts = (getattr(model, "encoder", None), getattr(model, "decoder", None))
    return any(isinstance(part, ours) for part in parts if part is not None) or any(
        str(name).startswith("xl_") for name in (transforms or ()))


def blank_empty_sources(prediction_batch, rows):
    """Eole's ``predict_batch`` output with no hypothesis (an empty line each) and score 0 for ``rows``."""
    for b in rows:
        prediction_batch["predictions"][b] = []
        prediction_batch["scores"][b] = [0.0] * len(prediction_batch["scores"][b])
    return prediction_batch


def translator() -> None:
    from eole.predict.translator import Translator

    stock, stock_predict, stock_batch = Translator._run_encoder, Translator._predict, Translator.predict_batch

    @functools.wraps(stock)
    def _run_encoder(self, batch):
        with feeding_xl_positions(batch.get(XL_POS_KEY)):
            return stock(self, batch)

    @functools.wraps(stock_predict)
    def _predict(self, infer_iter, transform=None, *args, **kwargs):
        before = getattr(_prediction, "ours", False)
        _prediction.ours = predicts_with_ours(self.model, transform)
        try:
            return stock_predict(self, infer_iter, transform, *args, **kwargs)
        finally:
            _prediction.ours = before

    @functools.wraps(stock_batch)
    def predict_batch(self, batch, *args, **kwargs):
        return blank_empty_sources(stock_batch(self, batch, *args, **kwargs), batch.get(XL_EMPTY_KEY, ()))

    Translator._run_encoder, Translator._predict, Translator.predict_batch = _run_encoder, _predict, predict_batch


EXACT_RESUME = "xl_exact_resume"
EXACT_RESUME_HELP = (
    "onmt_xl: optimizer.pt also carries the RNG states; with train_from a step directory (MODEL_PATH/step_K), skip the "
    "batches steps 1..K trained on (Eole's accum_count/accum_steps schedule) and restore those states before step "
    "K+1, so the resumed run trains as an uninterrupted one would (on the CPU: the same weights). Give it in the "
    "first run too (the same config); it needs the same data, seed and batching options (reset_optim all or "
    "keep_states start the steps again: nothing is skipped). Without it Eole's own checkpoints and train_from (the "
    "corpus restarts).")

CPU_PRECISION, CPU_KERNELS = "xl_cpu_precision", "xl_cpu_kernels"
CPU_PRECISION_HELP = (
    "onmt_xl: arithmetic of the forward pass and loss when training on the CPU. 'bf16': bf16 autocast (weights, "
    "gradients and optimizer state stay fp32), only where the CPU computes bf16 natively (AVX512-BF16, AMX or Arm "
    "BF16); elsewhere it says why and trains in fp32, since emulated bf16 is many times slower. 'auto': bf16 where "
    "native, fp32 elsewhere. 'fp32': never autocast. Unlike compute_dtype, not saved with the model: prediction keeps "
    "its own precision. No effect on a GPU.")
CPU_KERNELS_HELP = (
    "onmt_xl: 'fast': cheaper kernels when training on the CPU, each the same function up to float rounding: dropout "
    "masks from four draws per 64-bit random integer (another random stream than PyTorch's), the output layer and "
    "cross-entropy fused block by block, PyTorch's fused Adam/AdamW. 'stock': Eole's own kernels and random streams. "
    "No effect on a GPU.")
#: the training options of ours: name -> (type, default, description). Each concerns the run, not the model: kept
#: out of every ``config.json`` (:func:`model_saver`)
TRAINING_OPTIONS = {
    EXACT_RESUME: (bool, False, EXACT_RESUME_HELP),
    CPU_PRECISION: (typing.Literal["fp32", "bf16", "auto"], "fp32", CPU_PRECISION_HELP),
    CPU_KERNELS: (typing.Literal["stock", "fast"], "stock", CPU_KERNELS_HELP),
}

#: Eole Optimizer -> None (saves its RNG states) or ``(rng or None,)`` (and resumes a checkpoint with those states)
_exact: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def training_config() -> None:
    """:data:`TRAINING_OPTIONS` in Eole's ``TrainingConfig`` (in place: the config's JSON schema and its validation
    know them; ``eole train -h`` lists only the top-level sections, ``--training`` among them), and the configs already
    built around it rebuilt."""
    import sys

    from eole.config.training import TrainingConfig
    from pydantic import Field
    from pydantic.fields import FieldInfo

    if all(name in TrainingConfig.model_fields for name in TRAINING_OPTIONS):
        return
    for name, (kind, default, description) in TRAINING_OPTIONS.items():
        TrainingConfig.model_fields[name] = FieldInfo.from_annotated_attribute(
            kind, Field(default=default, description=description))
        TrainingConfig.__annotations__[name] = kind
    TrainingConfig.model_rebuild(force=True)
    run = sys.modules.get("eole.config.run")  # imported before the seam (install() called late): rebuild its configs
    for name in ("TrainConfig", "PredictConfig"):
        if run is not None and hasattr(run, name):
            getattr(run, name).model_rebuild(force=True)


def optimizers() -> None:
    from eole.utils.optimizers import Optimizer

    from onmt_xl.core import cpu_training, resume

    stock_state_dict, stock_from_config = Optimizer.state_dict, Optimizer.from_config.__func__

    @functools.wraps(stock_state_dict)
    def state_dict(self):
        state = stock_state_dict(self)
        if self in _exact:
            state = {**state, resume.RNG_KEY: resume.rng_state()}
        return state

    @functools.wraps(stock_from_config)
    def from_config(cls, model, config, metadata=None):
        optim = stock_from_config(cls, model, config, metadata=metadata)
        if getattr(config.training, EXACT_RESUME, False):
            resuming = None
            saved = (metadata or {}).get("optim") if config.training.train_from else None
            if isinstance(saved, dict) and optim.training_step > 1:  # reset_optim all/keep_states: step 1 again
                resuming = (saved.get(resume.RNG_KEY),)
            _exact[optim] = resuming
        if getattr(config.training, CPU_KERNELS, "stock") == "fast":
            cpu_training.fuse_adam_groups(optim._optimizer)  # after the stock load_state_dict
        return optim

    Optimizer.state_dict, Optimizer.from_config = state_dict, classmethod(from_config)


def model_saver() -> None:
    """A step directory's ``config.json`` without our training options (:data:`TRAINING_OPTIONS`): they concern the
    training run that writes the checkpoints, not the model, so a model trained with them (a baseline among them)
    stays loadable by stock Eole, and predicts with its own precision; a resumed run takes them from its own config."""
    import json
    import os

    from eole.models.model_saver import TrainingModelSaver

    stock_save_config = TrainingModelSaver._save_config

    @functools.wraps(stock_save_config)
    def _save_config(self):
        stock_save_config(self)
        path = os.path.join(self.model_path, self.step_dir, "config.json")
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        ours = [name for name in TRAINING_OPTIONS if name in (saved.get("training") or {})]
        if ours:
            for name in ours:
                del saved["training"][name]
            with open(path, "w", encoding="utf-8") as f:
                json.dump(saved, f, indent=2, ensure_ascii=False)

    TrainingModelSaver._save_config = _save_config


#: the training ``LossCompute`` objects that take the fused output layer and loss on the CPU
_fused_loss: "weakref.WeakSet" = weakref.WeakSet()
_said: set = set()  # the lines logged once per process


def _log_once(line) -> None:
    if line and line not in _said:
        from eole.utils.logging import logger

        _said.add(line)
        logger.info(line)


def _cpu_dtype(training, param):
    """The autocast dtype ``training.xl_cpu_precision`` resolves to for a model whose first parameter is ``param``
    (None: fp32), logged once."""
    import torch

    from onmt_xl.core import precision

    if param is None or param.dtype != torch.float32:
        return None  # a half or quantised model: Eole's own precision rules
    dtype, line = precision.resolve(getattr(training, CPU_PRECISION, "fp32"), param.device.type,
                                    name=f"training.{CPU_PRECISION}")
    _log_once(line)
    return dtype


def fused_loss_applies(loss_compute, output) -> bool:
    """The fused loss asked for, and a plain generator and criterion: training on the CPU, the generator one
    ``nn.Linear``, Eole's summed cross-entropy without class weights, no LM prior."""
    import torch

    generator, criterion = loss_compute.generator, loss_compute.criterion
    return (loss_compute in _fused_loss and torch.is_grad_enabled() and output.device.type == "cpu"
            and type(generator) is torch.nn.Linear and generator.training
            and type(criterion) is torch.nn.CrossEntropyLoss and criterion.reduction == "sum"
            and criterion.weight is None and loss_compute.lm_generator is None
            and loss_compute.lm_prior_model is None)


def loss() -> None:
    """CPU speed, ``training.xl_cpu_precision`` and ``training.xl_cpu_kernels`` (:data:`TRAINING_OPTIONS`):
    ``LossCompute.from_config`` sees the config and the model, so there the model's and the losses' ``forward`` go
    under CPU autocast (:func:`onmt_xl.core.precision.autocast_forward`; the backward, weights and optimizer state
    stay fp32), and, with ``fast``, the model's dropouts take the cheaper masks and the training loss the fused
    output layer and cross-entropy (:func:`onmt_xl.core.cpu_training.generator_loss`) in ``_compute_ce_loss``; the
    fused Adam is :func:`optimizers`'. Each choice is logged once; at the defaults nothing changes."""
    import torch
    from eole.utils.loss import LossCompute

    from onmt_xl.core import cpu_training, precision

    stock_from_config, stock_ce = LossCompute.from_config.__func__, LossCompute._compute_ce_loss

    @functools.wraps(stock_from_config)
    def from_config(cls, config, model, vocabs, train=True):
        compute = stock_from_config(cls, config, model, vocabs, train=train)
        training = config.training
        param = next(model.parameters(), None)
        dtype = _cpu_dtype(training, param)
        precision.autocast_forward(model, dtype)
        precision.autocast_forward(compute, dtype)
        if train and getattr(training, CPU_KERNELS, "stock") == "fast" and param is not None \
                and param.device.type == "cpu":
            cpu_training.use_fast_dropout(model)
            _fused_loss.add(compute)
            fused_adam = " and fused Adam" if training.optim in ("adam", "adamw") else ""
            _log_once(f"training.{CPU_KERNELS} fast: fast dropout masks, fused loss{fused_adam} "
                      "(onmt_xl's CPU kernels)")
        return compute

    @functools.wraps(stock_ce)
    def _compute_ce_loss(self, output, flat_tgt):
        if not fused_loss_applies(self, output):
            return stock_ce(self, output, flat_tgt)
        dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else torch.float32
        loss, pred = cpu_training.generator_loss(self._bottle(output), self.generator.weight, self.generator.bias,
                                                 flat_tgt, self.criterion.ignore_index,
                                                 self.criterion.label_smoothing, dtype)
        return loss, cpu_training.Predicted(pred)

    LossCompute.from_config, LossCompute._compute_ce_loss = classmethod(from_config), _compute_ce_loss


def exactly_resumed(trainer, train):
    """``Trainer.train`` that, for an optimizer resuming with ``xl_exact_resume`` at step K+1, feeds the stock loop
    the accumulated batches of steps K+1… only: those of steps 1..K are drawn and dropped, each followed by the
    scheduled-parameter update the uninterrupted loop made after it, then the checkpoint's RNG states are restored."""
    from eole.utils.logging import logger

    from onmt_xl.core import resume

    @functools.wraps(train)
    def exact_train(self, train_iter, train_steps, *args, **kwargs):
        try:
            resuming = _exact.get(self.optim)
        except TypeError:  # an optimizer stand-in that takes no weak reference (Eole's own tests): never ours
            resuming = None
        if resuming is None:
            return train(self, train_iter, train_steps, *args, **kwargs)
        rng, step = resuming[0], self.optim.training_step

        def accum_batches(iterator):
            def replayed(groups):
                for s, group in enumerate(groups, 1):
                    yield group
                    if s < step:  # Eole's loop updates the schedules at the top of step s, before it collects s+1
                        self._update_scheduled_params(s)

            yield from resume.skip_then_restore(replayed(stock_accum(self, iterator)), step - 1, rng, log=logger.info,
                                                option=EXACT_RESUME, unit="steps' batches")

        logger.info("%s: skipping the batches of steps 1-%d, then %s", EXACT_RESUME, step - 1,
                    "restoring the checkpoint's RNG states" if rng is not None
                    else "continuing without RNG states (the checkpoint has none)")
        self._accum_batches = accum_batches
        try:
            return train(self, train_iter, train_steps, *args, **kwargs)
        finally:
            del self._accum_batches

    stock_accum = trainer._accum_batches
    return exact_train


#: Eole module -> the seam applied right after it has executed
AFTER = {
    "eole.config.training": training_config,
    "eole.utils.optimizers": optimizers,
    "eole.utils.loss": loss,
    "eole.models.model_saver": model_saver,
    "eole.config.models": config_models,
    "eole.transforms": transforms,
    "eole.encoders": encoders,
    "eole.decoders": decoders,
    "eole.models.model": model,
    "eole.inputters.dynamic_iterator": batching,
    "eole.trainer": trainer,
    "eole.predict.translator": translator,
}
