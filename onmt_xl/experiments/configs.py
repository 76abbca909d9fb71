"""The YAML configurations of ``yaml_configs/``, generated from one place.

Every system shares the same Transformer (``MODEL``) and training settings (``TRAINING``); only the
encoder lines differ (:data:`onmt_xl.experiments.systems.SYSTEMS`). ``write_configs`` renders them with a work
directory, so the same configurations serve the demo (``runs/demo``) and a user's data (``onmt-xl pipeline``).
``tests/test_configs.py`` checks that the files in ``yaml_configs/`` are what this module renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional

import yaml

from onmt_xl.opennmt.encoders.options import default_xl_heads
from onmt_xl.opennmt.names import upgrade_config
from onmt_xl.core.options_table import option

from onmt_xl.experiments.systems import ALIGNED_R, PREREORDER, SYSTEMS, XL  # noqa: F401 - re-exported
from onmt_xl.experiments.systems import system as system_named

DEMO_WORKDIR = "runs/demo"

MODEL: Dict[str, Any] = {
    "encoder_type": "transformer",
    "decoder_type": "transformer",
    "position_encoding": True,
    "enc_layers": 2,
    "dec_layers": 2,
    "heads": 8,
    "hidden_size": 128,
    "word_vec_size": 128,
    "transformer_ff": 256,
    "dropout": [0.1],
    "attention_dropout": [0.1],
}

TRAINING: Dict[str, Any] = {
    "seed": 1234,
    "train_steps": 400,
    "valid_steps": 200,
    "save_checkpoint_steps": 400,
    "keep_checkpoint": 2,
    "report_every": 50,
    "batch_type": "tokens",
    "batch_size": 2048,
    "valid_batch_size": 2048,
    "bucket_size": 8192,
    "num_workers": 0,
    "optim": "adam",
    "adam_beta2": 0.998,
    "decay_method": "noam",
    "learning_rate": 1.0,
    "warmup_steps": 150,
    "max_grad_norm": 0.0,
    "label_smoothing": 0.1,
    "param_init": 0.0,
    "param_init_glorot": True,
}

#: Model/training sizes. ``demo``: the synthetic demo (MODEL, TRAINING as they are). ``enja``: a size
#: for about 50k Japanese->English pairs that trains the stock Transformer on a 2-core CPU in minutes.
PRESETS: Dict[str, Dict[str, Any]] = {
    "demo": {},
    "enja": {
        "enc_layers": 3, "dec_layers": 3, "heads": 4, "hidden_size": 256, "word_vec_size": 256,
        "transformer_ff": 1024, "learning_rate": 0.5, "warmup_steps": 800, "batch_size": 2048,
        "train_steps": 1500, "valid_steps": 500, "save_checkpoint_steps": 1500, "report_every": 50,
    },
    # Vaswani et al. 2017's base and BIG Transformers (Ding et al. 2020 train BIG on 2 M pairs), for a GPU
    "base": {
        "enc_layers": 6, "dec_layers": 6, "heads": 8, "hidden_size": 512, "word_vec_size": 512,
        "transformer_ff": 2048, "learning_rate": 2.0, "warmup_steps": 4000, "batch_size": 4096,
        "train_steps": 100000, "valid_steps": 5000, "save_checkpoint_steps": 5000, "report_every": 100,
    },
    "big": {
        "enc_layers": 6, "dec_layers": 6, "heads": 16, "hidden_size": 1024, "word_vec_size": 1024,
        "transformer_ff": 4096, "dropout": [0.3], "attention_dropout": [0.1], "learning_rate": 2.0,
        "warmup_steps": 4000, "batch_size": 4096, "train_steps": 300000, "valid_steps": 5000,
        "save_checkpoint_steps": 5000, "report_every": 100,
    },
}

#: ``onmt-xl pipeline --preset auto``: the preset for a corpus, by training pairs (the first bound above it) and
#: device: ``demo`` for small corpora, the study's ``enja`` (d 256, 3+3 layers) for tens of thousands of pairs and on
#: any CPU, ``base`` and ``big`` on a GPU beyond
AUTO_PRESETS = ((10_000, "demo"), (200_000, "enja"), (2_000_000, "base"))


def auto_preset(train_pairs: int, gpu: bool) -> str:
    """The preset ``--preset auto`` gives ``train_pairs`` training pairs on a GPU (``gpu``) or the CPU."""
    preset = next((name for bound, name in AUTO_PRESETS if train_pairs < bound), "big")
    return preset if gpu or preset == "demo" else "enja"

#: HeadXL / Combination: the configs spell out the plug-in's default τ
#: (:func:`onmt_xl.opennmt.encoders.options.default_xl_heads`).
XL_HEAD_ENCODERS = ("xl_headxl", "xl_combination")
#: the start InXL was trained with where a configuration written before :func:`config` spelled it out names none:
#: ``-xl_inxl_init``'s default until the tuning of reports/TUNING.md changed it (:mod:`onmt_xl.experiments.jobs`
#: reads such a configuration with it)
LEGACY_INXL_INIT = "identity"


def uses_inxl(cfg: Dict[str, Any]) -> bool:
    """Whether the configuration ``cfg`` builds an InXL fusion (Eq. 7), whose start ``-xl_inxl_init`` sets."""
    enc = cfg.get("encoder_type")
    return (enc in ("xl_inxl", "xl_combination")
            or (enc == "xl_encoder_free" and cfg.get("xl_encoder_free_pe") == "inxl"))


def source_transform(name: str) -> Optional[str]:
    """The onmt_xl transform a system needs on its source when translating, or None."""
    return system_named(name).translate_transform


def config(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None,
           preset: str = "demo", inxl_init: Optional[str] = None) -> Dict[str, Any]:
    """The full ``onmt_train`` configuration of ``system`` reading data from ``workdir/data``.

    Precedence: MODEL/TRAINING < the system's options < ``PRESETS[preset]`` < the system's ``over_preset`` <
    ``overrides`` (whose legacy option names, e.g. ``inxl_init``, read as the new ones,
    :func:`onmt_xl.opennmt.names.upgrade_config`). ``onmt_tokenize``'s options among ``overrides`` (raw text,
    :mod:`onmt_xl.experiments.tokenization`) put that transform first in the training and validation pipelines. A system
    with InXL spells out its start: ``overrides``' one, else ``inxl_init``, else ``-xl_inxl_init``'s default; like τ, so
    that a default changed later is a changed job.
    """
    spec = system_named(system)
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    options, transform = spec.options, spec.transform
    data = f"{workdir}/data"
    train = {"path_src": f"{data}/train.src", "path_tgt": f"{data}/train.tgt", "transforms": []}
    valid = {"path_src": f"{data}/valid.src", "path_tgt": f"{data}/valid.tgt", "transforms": []}
    cfg: Dict[str, Any] = {
        "save_data": f"{workdir}/{system}",
        "src_vocab": f"{workdir}/vocab.src",
        "tgt_vocab": f"{workdir}/vocab.tgt",
        "overwrite": True,
        "data": {"train": train, "valid": valid},
    }
    if transform in (XL, PREREORDER):
        train["transforms"], valid["transforms"] = [transform], [transform]
        cfg["xl_source"] = "preorderer"
        cfg["xl_preorderer"] = f"{workdir}/preorderer.xlp"
    elif transform == ALIGNED_R:
        train["path_align"] = f"{workdir}/align/train.gdfa"
        train["transforms"] = [XL]
        cfg["xl_source"] = "align"
    cfg["save_model"] = f"{workdir}/models/{system}"
    cfg.update(MODEL)
    cfg.update(options)
    cfg.update(TRAINING)
    cfg.update(PRESETS[preset])
    cfg.update(spec.over_preset)
    cfg.update(upgrade_config(overrides or {}))
    if "src_onmttok_kwargs" in cfg:  # raw text: onmt_tokenize before anything else (experiments/tokenization.py)
        for split in (train, valid):
            split["transforms"] = ["onmt_tokenize"] + split["transforms"]
    if cfg["encoder_type"] in XL_HEAD_ENCODERS and "xl_heads" not in cfg:
        cfg["xl_heads"] = default_xl_heads(cfg["heads"])
    if uses_inxl(cfg) and "xl_inxl_init" not in cfg:
        cfg["xl_inxl_init"] = inxl_init or option("xl_inxl_init").default
    return cfg


def render(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None) -> str:
    """The YAML file of ``system``: a comment header, then :func:`config`."""
    spec = system_named(system)
    head = (
        f"# {system}: generated by `onmt-xl write-configs` (onmt_xl/experiments/systems.py, configs.py); edit there, "
        "not here.\n"
        + (f"# Reproduces: {spec.reproduces}.\n" if spec.reproduces else "")
        + f"# Data live under {workdir}/ (made by `onmt-xl demo`). For your own data, run\n"
        "# `onmt-xl pipeline --train-src ... --workdir W`, or `onmt-xl write-configs --workdir W` and put\n"
        "# tokenized train/valid files in W/data/ (and a preorderer in W/preorderer.xlp for XL systems).\n"
    )
    return head + yaml.safe_dump(config(system, workdir, overrides), sort_keys=False, default_flow_style=None)


def write_each(out_dir: str, systems: Iterable[str], render_one: Callable[[str], str]) -> Dict[str, Path]:
    """Write ``render_one(system)`` to ``<out_dir>/<system>.yaml`` for each system; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for system in systems:
        paths[system] = out / f"{system}.yaml"
        paths[system].write_text(render_one(system), encoding="utf-8")
    return paths


def write_configs(out_dir: str, workdir: str = DEMO_WORKDIR,
                  overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Path]:
    """Write one ``<system>.yaml`` per system into ``out_dir``; returns their paths."""
    return write_each(out_dir, SYSTEMS, lambda system: render(system, workdir, overrides))
