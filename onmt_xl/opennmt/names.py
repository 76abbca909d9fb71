"""Our names in OpenNMT-py's shared namespaces, and the legacy names they replace.

Every option string and every encoder, decoder and transform name onmt_xl adds to OpenNMT-py starts with
:data:`PREFIX` (``xl_``), so another plug-in's names cannot collide with ours (``tests/test_names.py`` computes
it). Each option and component is declared once, under its new name, where it always was; the names it had
before (:data:`LEGACY_OPTIONS`, :data:`LEGACY_ENCODERS`, :data:`LEGACY_DECODERS`) keep working without taking a
name from anyone:

- an old option string (``-inxl_init``, a YAML key ``inxl_init:``) is attached to our option when a parser
  parses, only where that parser has no option of that name (:mod:`onmt_xl.opennmt.seams.options`); ``-h`` shows it
  beside the new name, marked legacy;
- an old encoder or decoder name is registered as an alias of ours only where OpenNMT's registry lacks it
  (:func:`register_aliases`), and a configuration naming it as ours reads as the new name (:func:`upgrade_namespace`);
- a checkpoint written with the old names (its ``opt`` has our old attributes, e.g. ``inxl_fusion``, and none
  of the new ones) is read with the new ones, whoever owns the old encoder name now (:func:`upgrade_namespace`);
- the workbench reads a job configuration written with the old names as the same configuration (:func:`upgrade_config`).

Each use of a legacy name logs one line naming the new one (:func:`note`). This module imports nothing of
OpenNMT-py at import time.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Mapping, MutableMapping, Optional

PREFIX = "xl_"

#: model options (stored in every checkpoint's ``opt``), old name -> new name
LEGACY_MODEL_OPTIONS: Dict[str, str] = {old: PREFIX + old for old in (
    "inxl_fusion", "inxl_init", "enc_max_relative_positions", "disan_fusion", "encoder_free_pe",
    "reordering_loss_weight", "reordering_loss", "exgre_window",
)}
#: options of onmt_train / onmt_translate that say how a model runs, old name -> new name
LEGACY_RUN_OPTIONS: Dict[str, str] = {old: PREFIX + old for old in (
    "cpu_precision", "exact_resume", "cpu_dropout_mask", "cpu_loss",
)}
LEGACY_OPTIONS: Dict[str, str] = {**LEGACY_MODEL_OPTIONS, **LEGACY_RUN_OPTIONS}
#: ``-encoder_type`` / ``-decoder_type`` names, old -> new
LEGACY_ENCODERS: Dict[str, str] = {old: PREFIX + old for old in (
    "disan", "encoder_free", "exgre", "refsr", "additional_pe", "reordering_embedding",
)}
LEGACY_DECODERS: Dict[str, str] = {"reordering_embedding": PREFIX + "reordering_embedding"}

#: a Namespace with at least this many of our old model attributes (and none of the new) was written by onmt_xl
#: before the rename: every such version stored all of ``inxl_fusion`` and ``enc_max_relative_positions`` at least
LEGACY_SIGNATURE = 2

#: how the line :func:`note` logs begins
LEGACY_NOTE = "onmt_xl: legacy name"

_NEW_TO_OLD = {new: old for old, new in LEGACY_OPTIONS.items()}
_noted = set()


def legacy_option(new: str) -> Optional[str]:
    """The legacy name of our option ``new`` (``xl_inxl_init`` -> ``inxl_init``), or None."""
    return _NEW_TO_OLD.get(new)


def note(renamed: str, what: str) -> None:
    """Log once per process, on stderr, one line saying which legacy names (``renamed``: "old -> new, ...") of
    ``what`` (an option, a model's options) were read as the new ones."""
    line = f"{LEGACY_NOTE} ({what}) read as the new one: {renamed}; please use the new name"
    if line not in _noted:
        _noted.add(line)
        print(line, file=sys.stderr)


def is_legacy_namespace(opt: argparse.Namespace) -> bool:
    """Whether ``opt`` (a checkpoint's options) was written by onmt_xl before the rename: it has our old model
    attributes and none of the new ones. A Namespace parsed now never has the old ones (their option strings
    are aliases whose ``dest`` is the new name) unless another plug-in owns them, and then has the new ones too."""
    names = vars(opt)
    if any(new in names for new in LEGACY_MODEL_OPTIONS.values()):
        return False
    return sum(old in names for old in LEGACY_MODEL_OPTIONS) >= LEGACY_SIGNATURE


def is_alias(registry: Mapping[str, Any], old: str, new: str) -> bool:
    """Whether ``registry[old]`` is our component ``registry[new]`` (the alias :func:`register_aliases` made)."""
    return old in registry and registry.get(old) is registry.get(new)


def upgrade_namespace(opt: argparse.Namespace, encoders: Optional[Mapping[str, Any]] = None,
                      decoders: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Read the legacy names of ``opt`` (model options, in place) as the new ones; returns what it renamed.

    A checkpoint's options written before the rename (:func:`is_legacy_namespace`) have each old attribute
    renamed and an old encoder/decoder name replaced, whoever owns that name in the registries now. Any other
    Namespace has only its ``encoder_type``/``decoder_type`` replaced, where the old name is our alias in
    ``encoders``/``decoders`` (OpenNMT's ``str2enc``/``str2dec``); another plug-in's component of that name stays.
    """
    changed: List[str] = []
    legacy = is_legacy_namespace(opt)
    if legacy:
        for old, new in LEGACY_OPTIONS.items():
            if old in vars(opt) and new not in vars(opt):
                setattr(opt, new, vars(opt).pop(old))
                changed.append(f"{old} -> {new}")
    for attr, table, registry in (("encoder_type", LEGACY_ENCODERS, encoders),
                                  ("decoder_type", LEGACY_DECODERS, decoders)):
        old = getattr(opt, attr, None)
        if isinstance(old, str) and old in table and (
                legacy or (registry is not None and is_alias(registry, old, table[old]))):
            setattr(opt, attr, table[old])
            changed.append(f"{attr} {old} -> {table[old]}")
    return changed


def upgrade_config(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    """A configuration (``onmt_train``'s YAML as a dict) with our legacy option keys and encoder/decoder names
    replaced by the new ones, in the same order; a key given under both names keeps the new name's value."""
    out: Dict[str, Any] = {}
    for key, value in cfg.items():
        new = LEGACY_OPTIONS.get(key)
        if new is None:
            out[key] = value
        elif new not in cfg:
            out[new] = value
    for attr, table in (("encoder_type", LEGACY_ENCODERS), ("decoder_type", LEGACY_DECODERS)):
        if isinstance(out.get(attr), str) and out[attr] in table:
            out[attr] = table[out[attr]]
    return out


def register_aliases(registry: MutableMapping[str, Any], table: Mapping[str, str]) -> List[str]:
    """Register each legacy name of ``table`` as an alias of our component in ``registry`` (OpenNMT's ``str2enc``
    or ``str2dec``), only where the registry does not have that name; never raises. Returns the aliases made."""
    made = []
    for old, new in table.items():
        ours = getattr(registry.get(new), "__module__", "").startswith("onmt_xl.")
        if ours and old not in registry:
            registry[old] = registry[new]
            made.append(old)
    return made
