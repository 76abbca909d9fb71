"""Our OpenNMT options, added to a parser group by :func:`add_all` from the framework-free tables of
:mod:`onmt_xl.core.options_table` (one :class:`~onmt_xl.core.options_table.Option` per flag, shared with the Eole
adapter).

Every option is added by :func:`add`, which spells it as OpenNMT spells its own (``--NAME``, ``-NAME``) and marks
the action with its legacy option strings (:data:`LEGACY_ATTR`, from :data:`onmt_xl.opennmt.names.LEGACY_OPTIONS`),
which :mod:`onmt_xl.opennmt.seams.options` attaches when the parser parses, where no one else has them.
"""

from __future__ import annotations

from typing import Sequence

from onmt_xl.opennmt.names import legacy_option
from onmt_xl.core.options_table import Option  # noqa: F401  (public here too)

#: set on an action of ours that has a legacy name: ``("--old", "-old")``
LEGACY_ATTR = "_onmt_xl_legacy"


def add(group, name: str, **kwargs):
    """Add the option ``--name``/``-name`` to a configargparse group of OpenNMT's parser; returns its action."""
    action = group.add(f"--{name}", f"-{name}", **kwargs)
    old = legacy_option(name)
    if old is not None:
        setattr(action, LEGACY_ATTR, (f"--{old}", f"-{old}"))
    return action


def add_all(group, options: Sequence[Option]) -> None:
    """Add ``options`` to a configargparse group of OpenNMT's parser, as OpenNMT spells its own options."""
    for o in options:
        add(group, o.name, type=o.type, default=o.default, choices=o.choices, help=o.help_for("onmt"))
