"""The OpenNMT-py adapter's seams: the only code that wraps OpenNMT-py functions, one concern per module.

OpenNMT-py's registries (``register_encoder``, ``register_decoder``, ``register_transform``) take our components
without any wrapping; the seams are what those extension points cannot do. Each seam module says which OpenNMT
functions it wraps and why, declares ``LOST`` (what a user loses if it cannot apply) and ``apply()``. A user who
names none of our components or options gets stock OpenNMT-py's results from every seam.

:func:`register` applies each seam once per process, in the order of :data:`SEAMS`, then imports our components
(which registers them). A seam or component that fails (another OpenNMT-py release, a changed function, a
name taken by another plug-in) logs one line naming what is lost and the OpenNMT-py version, and the rest
still applies; nothing here makes ``import onmt`` fail. ``ONMT_XL_DISABLE=1`` keeps the import hook
(``onmt_xl_hook``) from calling :func:`register` at all.
"""

from __future__ import annotations

import importlib
import sys
from typing import Dict, Tuple

from onmt_xl.opennmt.seams.base import onmt_version

#: seam modules, applied in this order. ``cpu_speed`` comes before ``loss``: the auxiliary loss is added around
#: whichever path (fused or stock) computes the token loss.
SEAMS: Tuple[str, ...] = (
    "checkpoints", "messages", "options", "aliases", "positions", "cpu_speed", "loss", "precision", "resume", "server",
    "corpus", "output", "init",
)

#: the modules whose import registers our components with OpenNMT's registries, and what is lost without each
COMPONENTS: Dict[str, str] = {
    "onmt_xl.opennmt.encoders.families": "onmt_xl's encoders (-encoder_type xl_* and the baselines)",
    "onmt_xl.opennmt.decoders.reordering_embedding": "the reordering-embedding decoder",
    "onmt_xl.opennmt.transforms.xl_position": "the xl_position and xl_prereorder transforms",
}

_applied = set()  # the seams and components in place in this process
_failed: Dict[str, str] = {}  # name -> the line that was logged
_registered = False


def _warn(name: str, lost: str, err: BaseException) -> None:
    line = (f"onmt_xl: warning: could not apply '{name}' to OpenNMT-py {onmt_version()} "
            f"({type(err).__name__}: {err}); lost: {lost}")
    _failed[name] = line
    print(line, file=sys.stderr)


def apply_seam(name: str) -> bool:
    """Apply the seam ``name`` (a module of this package) once; on failure log one line. Whether it is in place."""
    if name in _applied:
        return True
    module = None
    try:
        module = importlib.import_module(f"onmt_xl.opennmt.seams.{name}")
        module.apply()
    except Exception as err:  # any failure: the rest of OpenNMT and of onmt_xl must still work
        _warn(name, getattr(module, "LOST", f"the {name} seam"), err)
        return False
    _applied.add(name)
    return True


def register_components() -> None:
    for module, lost in COMPONENTS.items():
        if module in _applied:
            continue
        try:
            importlib.import_module(module)
        except Exception as err:
            _warn(module, lost, err)
        else:
            _applied.add(module)


def register() -> None:
    """Apply the seams and register our components with OpenNMT-py. Safe to call repeatedly."""
    global _registered
    if _registered:
        return
    _registered = True
    for name in SEAMS:
        apply_seam(name)
    register_components()


def failed() -> Dict[str, str]:
    """The seams and components that could not apply in this process, with the line logged for each."""
    return dict(_failed)
