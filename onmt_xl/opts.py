"""Our OpenNMT options declared as data: one :class:`Option` per flag, added to a parser group by :func:`add_all`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence


@dataclass(frozen=True)
class Option:
    """``--NAME``/``-NAME`` of ``type`` with ``default`` (and ``choices``), as OpenNMT spells its own options."""

    name: str
    type: type
    default: Any
    help: str
    choices: Optional[Sequence[str]] = None


def add_all(group, options: Sequence[Option]) -> None:
    """Add ``options`` to a configargparse group of OpenNMT's parser."""
    for o in options:
        group.add(f"--{o.name}", f"-{o.name}", type=o.type, default=o.default, choices=o.choices, help=o.help)
