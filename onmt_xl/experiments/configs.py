"""The YAML configurations of ``yaml_configs/``, generated from one place.

Every system shares the same Transformer (``MODEL``) and training settings (``TRAINING``); only the
encoder lines differ (``SYSTEMS``). ``write_configs`` renders them with a work directory, so the
same configurations serve the demo (``runs/demo``) and a user's data (``onmt-xl pipeline``).
``tests/test_configs.py`` checks that the files in ``yaml_configs/`` are what this module renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

import yaml

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

#: Source transforms: ``XL`` = xl_position from the preorderer (training, validation and translation);
#: ``PREREORDER`` = the source itself reordered by the preorderer (idem); ``ALIGNED_R`` = xl_position from
#: the training corpus' alignments (``workdir/align/train.gdfa``), training corpus only: ExGRE/ReFSR's r_j.
XL, PREREORDER, ALIGNED_R = "xl_position", "xl_prereorder", "aligned_r"

#: system name -> (model options, source transform or None)
SYSTEMS: Dict[str, tuple] = {
    "baseline": ({}, None),
    "relative_pe": ({"encoder_type": "xl_relative", "enc_max_relative_positions": 16}, None),
    "inxl": ({"encoder_type": "xl_inxl", "inxl_fusion": "block"}, XL),
    "headxl": ({"encoder_type": "xl_headxl"}, XL),  # xl_heads: half the heads (config())
    "combination": ({"encoder_type": "xl_combination", "inxl_fusion": "block"}, XL),
    "disan": ({"encoder_type": "disan"}, None),
    "disan_nogate": ({"encoder_type": "disan", "disan_fusion": "none"}, None),  # directional heads without the fusion gate
    "enc_re": ({"encoder_type": "reordering_embedding"}, None),
    "dec_re": ({"decoder_type": "reordering_embedding"}, None),
    "both_re": ({"encoder_type": "reordering_embedding", "decoder_type": "reordering_embedding"}, None),
    "additional_pe": ({"encoder_type": "additional_pe"}, None),
    "exgre": ({"encoder_type": "exgre", "reordering_loss_weight": 0.6}, ALIGNED_R),
    "refsr": ({"encoder_type": "refsr", "reordering_loss_weight": 0.6}, ALIGNED_R),
    # Eq. 9 as written: with D = 0.5 its loss gives the predicted positions no gradient (see ExGREEncoder)
    "exgre_literal": ({"encoder_type": "exgre", "reordering_loss_weight": 0.6, "reordering_loss": "literal"}, ALIGNED_R),
    "encoder_free": ({"encoder_type": "encoder_free", "encoder_free_pe": "absolute"}, None),
    "encoder_free_inxl": ({"encoder_type": "encoder_free", "encoder_free_pe": "inxl", "inxl_fusion": "block"}, XL),
    "prereorder": ({}, PREREORDER),
}


#: Model/training sizes. ``demo``: the synthetic demo (MODEL, TRAINING as they are). ``enja``: the
#: size issue 5 calibrated for 50k Japanese->English pairs on a 2-core CPU (about 14 minutes, 1,500
#: steps, for the stock Transformer).
PRESETS: Dict[str, Dict[str, Any]] = {
    "demo": {},
    "enja": {
        "enc_layers": 3, "dec_layers": 3, "heads": 4, "hidden_size": 256, "word_vec_size": 256,
        "transformer_ff": 1024, "learning_rate": 0.5, "warmup_steps": 800, "batch_size": 2048,
        "train_steps": 1500, "valid_steps": 500, "save_checkpoint_steps": 1500, "report_every": 50,
    },
}

#: HeadXL / Combination give the XL position to this many heads unless ``xl_heads`` is set: half of them.
XL_HEAD_ENCODERS = ("xl_headxl", "xl_combination")


def source_transform(system: str) -> Optional[str]:
    """The onmt_xl transform a system needs on its source when translating, or None."""
    transform = SYSTEMS[system][1]
    return transform if transform in (XL, PREREORDER) else None


def config(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None,
           preset: str = "demo") -> Dict[str, Any]:
    """The full ``onmt_train`` configuration of ``system`` reading data from ``workdir/data``.

    Precedence: MODEL/TRAINING < the system's options < ``PRESETS[preset]`` < ``overrides``.
    """
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {sorted(SYSTEMS)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    options, transform = SYSTEMS[system]
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
    cfg.update(overrides or {})
    if cfg["encoder_type"] in XL_HEAD_ENCODERS and "xl_heads" not in cfg:
        cfg["xl_heads"] = cfg["heads"] // 2
    return cfg


def render(system: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None) -> str:
    head = (
        f"# {system}: generated by `onmt-xl write-configs` (onmt_xl/experiments/configs.py); edit there, not here.\n"
        f"# Data and outputs live under {workdir}/ (made by `onmt-xl demo`). For your own data, run\n"
        "# `onmt-xl pipeline --train-src ... --workdir W`, or `onmt-xl write-configs --workdir W` and put\n"
        "# tokenized train/valid files in W/data/ (and a preorderer in W/preorderer.xlp for XL systems).\n"
    )
    return head + yaml.safe_dump(config(system, workdir, overrides), sort_keys=False, default_flow_style=None)


def write_configs(out_dir: str, workdir: str = DEMO_WORKDIR, overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Path]:
    """Write one ``<system>.yaml`` per system into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for system in SYSTEMS:
        paths[system] = out / f"{system}.yaml"
        paths[system].write_text(render(system, workdir, overrides), encoding="utf-8")
    return paths
