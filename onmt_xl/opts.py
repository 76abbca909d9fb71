"""Our OpenNMT options declared as data: one :class:`Option` per flag, added to a parser group by :func:`add_all`.

Every option is added by :func:`add`, which spells it as OpenNMT spells its own (``--NAME``, ``-NAME``) and marks
the action with its legacy option strings (:data:`LEGACY_ATTR`, from :data:`onmt_xl.names.LEGACY_OPTIONS`), which
:mod:`onmt_xl.seams.options` attaches when the parser parses, where no one else has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from onmt_xl.names import legacy_option

#: set on an action of ours that has a legacy name: ``("--old", "-old")``
LEGACY_ATTR = "_onmt_xl_legacy"


@dataclass(frozen=True)
class Option:
    """``--NAME``/``-NAME`` of ``type`` with ``default`` (and ``choices``), as OpenNMT spells its own options."""

    name: str
    type: type
    default: Any
    help: str
    choices: Optional[Sequence[str]] = None


def add(group, name: str, **kwargs):
    """Add the option ``--name``/``-name`` to a configargparse group of OpenNMT's parser; returns its action."""
    action = group.add(f"--{name}", f"-{name}", **kwargs)
    old = legacy_option(name)
    if old is not None:
        setattr(action, LEGACY_ATTR, (f"--{old}", f"-{old}"))
    return action


def add_all(group, options: Sequence[Option]) -> None:
    """Add ``options`` to a configargparse group of OpenNMT's parser."""
    for o in options:
        add(group, o.name, type=o.type, default=o.default, choices=o.choices, help=o.help)
