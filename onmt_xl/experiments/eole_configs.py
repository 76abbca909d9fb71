"""The Eole YAML configurations of ``yaml_configs/eole/``, generated from the OpenNMT-py ones.

Each is :func:`onmt_xl.experiments.configs.config` (the shared ``MODEL``/``TRAINING``, the system's options,
the preset) translated option by option into Eole 0.6.4's nested config: ``model`` (``architecture: custom`` with
``encoder``/``decoder`` for our components, ``transformer`` for a stock model), ``training``, ``data`` and
``transforms_configs``. An option without a translation is an error, so a new option in ``configs.py`` cannot be
dropped silently. Paths point into ``WORKDIR/eole/`` (vocabularies, models), data and preorderer are the
OpenNMT-py demo's (``WORKDIR/data``, ``WORKDIR/preorderer.xlp``). ``tests/test_eole_configs.py`` checks that the
files are what this module renders and, where Eole is installed, that Eole's config machinery accepts them.

Only the systems the Eole adapter has ported are written (:data:`EOLE_SYSTEMS`): add a system there once its
components are in ``onmt_xl/eole/``. An RNN system (``lstm``) becomes Eole's own RNN encoder and decoder
(``architecture: custom``: Eole's ``architecture: rnn`` rewrites every ``encoder_type`` to ``rnn``, so a ``brnn``
would silently lose its backward direction).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from onmt_xl.experiments.configs import DEMO_WORKDIR, config, write_each
from onmt_xl.experiments.systems import ALIGNED_R, PREREORDER, SYSTEMS, XL
from onmt_xl.experiments.tokenization import TRANSFORM_OPTIONS
from onmt_xl.experiments.systems import system as system_named

#: The systems the Eole adapter supports (``onmt_xl/eole/``), in ``SYSTEMS`` order.
EOLE_SYSTEMS: Tuple[str, ...] = (
    "baseline", "relative_pe", "inxl", "headxl", "combination", "disan", "disan_nogate", "enc_re", "dec_re", "both_re",
    "additional_pe", "exgre", "refsr", "exgre_literal", "encoder_free", "encoder_free_none", "encoder_free_relative",
    "encoder_free_inxl", "lstm", "prereorder")

#: Systems whose encoder and decoder types Eole registers but which it cannot build as configured, and why
#: (``tests/test_eole_configs.py`` otherwise asks every such system into :data:`EOLE_SYSTEMS`).
EOLE_NOT_PORTED: Dict[str, str] = {}

#: OpenNMT-py's RNN encoder types, which Eole 0.6.4 has under the same names (``eole/encoders/rnn_encoder.py``; decoder
#: ``rnn``, ``eole/decoders/rnn_decoder.py``), and the RNN options: where each goes in ``model``
RNN_TYPES = ("rnn", "brnn")
RNN_OPTIONS: Dict[str, Tuple[str, ...]] = {"rnn_type": ("encoder", "decoder"), "global_attention": ("decoder",)}

#: Options of OpenNMT-py's flat config and where they go in Eole's nested one (``None``: handled apart below).
PLACES: Dict[str, Optional[Tuple[str, ...]]] = {
    "seed": (), "report_every": (), "overwrite": (),
    "heads": ("model",), "hidden_size": ("model",), "transformer_ff": ("model",),
    "word_vec_size": ("model", "embeddings"),
    **{k: ("training",) for k in (
        "train_steps", "valid_steps", "save_checkpoint_steps", "keep_checkpoint", "batch_type", "batch_size",
        "valid_batch_size", "bucket_size", "num_workers", "optim", "adam_beta2", "decay_method", "learning_rate",
        "warmup_steps", "max_grad_norm", "label_smoothing", "dropout", "attention_dropout", "gpu_ranks", "world_size")},
    **{k: None for k in ("save_data", "src_vocab", "tgt_vocab", "data", "save_model", "encoder_type", "decoder_type",
                         "position_encoding", "enc_layers", "dec_layers", "param_init", "param_init_glorot",
                         "xl_source", "xl_preorderer", *RNN_OPTIONS, *TRANSFORM_OPTIONS)},
}



def is_encoder_option(key: str) -> bool:
    """Our components' options (``xl_*``, other than the transform's) are encoder options in Eole (``model.encoder``,
    :mod:`onmt_xl.eole.config`), where Eole's config machinery checks them."""
    return key.startswith("xl_") and key not in PLACES

#: OpenNMT-py's layer-norm epsilon (Eole's default is 1e-5), so that both frameworks train the same model.
ONMT_NORM_EPS = 1e-6


def eole_paths(system: str, workdir: str) -> Dict[str, str]:
    """Where the Eole runs of ``workdir`` keep their files (beside the OpenNMT-py demo's, under ``eole/``)."""
    root = f"{workdir}/eole"
    return {"root": root, "src_vocab": f"{root}/vocab.src", "tgt_vocab": f"{root}/vocab.tgt",
            "save_data": f"{root}/samples/{system}", "model_path": f"{root}/models/{system}"}


def _put(out: Dict[str, Any], place: Tuple[str, ...], key: str, value: Any) -> None:
    for part in place:
        out = out.setdefault(part, {})
    out[key] = value


def eole_config(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None,
                preset: str = "demo", name: Optional[str] = None) -> Dict[str, Any]:
    """The Eole ``train``/``build_vocab`` configuration of ``system`` (one of :data:`EOLE_SYSTEMS`): the
    OpenNMT-py :func:`~onmt_xl.experiments.configs.config` with the same arguments, translated; its files under the
    run's ``name`` (default: the system's, :func:`eole_paths`)."""
    if system not in EOLE_SYSTEMS:
        raise ValueError(f"system {system!r} is not ported to Eole yet; the Eole adapter has {', '.join(EOLE_SYSTEMS)}")
    spec = system_named(system)
    onmt = config(system, workdir, overrides, preset)
    unknown = sorted(k for k in onmt if k not in PLACES and not is_encoder_option(k))
    if unknown:
        raise ValueError(f"system {system}: no Eole translation for {', '.join(unknown)} "
                         "(onmt_xl.experiments.eole_configs.PLACES)")
    paths = eole_paths(name or system, workdir)
    data = {split: {k: v for k, v in d.items()} for split, d in onmt["data"].items()}
    if set(data) != {"train", "valid"} or any(set(d) - {"path_src", "path_tgt", "path_align", "transforms"}
                                              for d in data.values()):
        raise ValueError(f"system {system}: only train/valid corpora of path_src/path_tgt/path_align translate to Eole")
    cfg: Dict[str, Any] = {k: v for k, v in onmt.items() if PLACES.get(k) == ()}  # seed, report_every, overwrite
    cfg.update(src_vocab=paths["src_vocab"], tgt_vocab=paths["tgt_vocab"], save_data=paths["save_data"], data=data)
    if spec.transform in (XL, PREREORDER):  # the preorderer: a model artifact in Eole (onmt_xl.eole.transforms)
        cfg["transforms_configs"] = {spec.transform: {"xl_preorderer": onmt["xl_preorderer"]}}
    elif spec.transform == ALIGNED_R:  # r_j from the training corpus' path_align (training only)
        cfg["transforms_configs"] = {XL: {"xl_source": "align"}}
    elif spec.transform is not None:
        raise ValueError(f"system {system}: transform {spec.transform} has no Eole translation")
    tokenize = {k: onmt[k] for k in TRANSFORM_OPTIONS if k in onmt}
    if tokenize:  # raw text (onmt_xl.experiments.tokenization): Eole's onmt_tokenize, kept in the model's config.json
        cfg.setdefault("transforms_configs", {})["onmt_tokenize"] = {
            k: ast.literal_eval(v) if k.endswith("_kwargs") else v for k, v in tokenize.items()}
    stock = onmt["encoder_type"] == "transformer" and onmt["decoder_type"] == "transformer"
    rnn = onmt["encoder_type"] in RNN_TYPES
    if rnn != (onmt["decoder_type"] == "rnn"):
        raise ValueError(f"system {system}: an RNN encoder with a non-RNN decoder (or the reverse) has no Eole "
                         "translation")
    model: Dict[str, Any] = {"architecture": "transformer" if stock else "custom"}
    if onmt["enc_layers"] != onmt["dec_layers"]:
        raise ValueError(f"system {system}: Eole's model-level 'layers' needs enc_layers == dec_layers")
    model["layers"] = onmt["enc_layers"]
    if rnn:  # no PE and no √d (Eole scales inside its PositionalEncoding), no layer norm
        if onmt["position_encoding"]:
            raise ValueError(f"system {system}: an RNN with position encoding has no Eole translation here")
        model["embeddings"] = {"position_encoding_type": None}
    else:
        model["norm_eps"] = ONMT_NORM_EPS
        if not onmt["position_encoding"]:
            raise ValueError(f"system {system}: a Transformer without position encoding has no Eole translation here")
        model["embeddings"] = {"position_encoding_type": "SinusoidalInterleaved"}  # OpenNMT-py's sinusoid (Eq. 1)
    cfg["model"] = model
    cfg["training"] = {"model_path": paths["model_path"]}
    for key, value in onmt.items():
        if PLACES.get(key) and not (rnn and key in ("heads", "transformer_ff")):  # Transformer sizes: unused by an RNN
            _put(cfg, PLACES[key], key, value)
    if not stock:
        model["encoder"] = {"encoder_type": onmt["encoder_type"],
                            **{k: v for k, v in onmt.items() if is_encoder_option(k)}}
        model["decoder"] = {"decoder_type": onmt["decoder_type"]}
    for key, parts in RNN_OPTIONS.items():
        if key in onmt:
            if not rnn:
                raise ValueError(f"system {system}: {key} is an RNN option, but the model is a Transformer")
            for part in parts:
                model[part][key] = onmt[key]
    if onmt["param_init_glorot"]:
        cfg["training"]["param_init_method"] = "xavier_uniform"  # weights only; biases 0, as OpenNMT-py's glorot
    else:
        cfg["training"].update(param_init_method="uniform", param_init=onmt["param_init"])
    return cfg


def render(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None) -> str:
    """The Eole YAML file of ``system``: a comment header, then :func:`eole_config`."""
    spec = system_named(system)
    head = (
        f"# {system} for Eole 0.6.4: generated by `onmt-xl write-configs` (onmt_xl/experiments/systems.py, "
        "configs.py,\n"
        "# eole_configs.py); edit there, not here. The same model and training as ../"
        + f"{system}.yaml (OpenNMT-py).\n"
        + (f"# Reproduces: {spec.reproduces}.\n" if spec.reproduces else "")
        + f"# Data and preorderer live under {workdir}/ (made by `onmt-xl demo --framework eole`), vocabularies and\n"
        f"# models under {workdir}/eole/. Run: eole build_vocab -config THIS -n_sample -1; eole train -config THIS\n"
        "# (or `python -m onmt_xl.eole build_vocab|train ...`).\n"
    )
    return head + yaml.safe_dump(eole_config(system, workdir, overrides), sort_keys=False, default_flow_style=None)


def missing_systems() -> List[str]:
    """The systems of :data:`onmt_xl.experiments.systems.SYSTEMS` not ported to Eole yet."""
    return [s for s in SYSTEMS if s not in EOLE_SYSTEMS]


def write_eole_configs(out_dir: str, workdir: str = DEMO_WORKDIR,
                       overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Path]:
    """Write one ``<system>.yaml`` per Eole system into ``out_dir``; returns their paths."""
    return write_each(out_dir, EOLE_SYSTEMS, lambda system: render(system, workdir, overrides))
