"""Our options as pydantic fields of Eole's configs, from the framework-free tables of :mod:`onmt_xl.core.options_table`
(the OpenNMT-py adapter adds the same tables to its parsers)::

    xl_heads: annotation("xl_heads") = field("xl_heads")

Imports only pydantic and the tables, so the configs can use it while ``eole.config`` is still being imported."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from onmt_xl.core.options_table import option


def annotation(name: str) -> Any:
    """The field type of option ``name``: ``Literal`` of its choices, or its type; ``Optional`` when it defaults to
    None."""
    o = option(name)
    kind = Literal[tuple(o.choices)] if o.choices is not None else o.type
    return Optional[kind] if o.default is None else kind


def field(name: str, note: str = "") -> Any:
    """``Field`` of option ``name``: its default, bounds and help as Eole shows it, then ``note`` (a sentence about
    Eole only)."""
    o = option(name)
    bounds = {k: v for k, v in (("ge", o.ge), ("gt", o.gt), ("le", o.le)) if v is not None}
    return Field(default=o.default, description=o.help_for("eole") + (f" {note}" if note else ""), **bounds)
