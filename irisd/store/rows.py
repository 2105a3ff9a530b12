"""Rows to Structs, the same way for every table.

The external caller (no team) is stored as from_team '' rather than NULL, because a
UNIQUE constraint lets any number of NULLs through in SQLite: '' gives exactly one
session per target. Rows turn it back into None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

EXTERNAL = ""

T = TypeVar("T")


def stored_team(team: str | None) -> str:
    """How a from_team is stored (see above)."""
    return team or EXTERNAL


def to_struct(
    cls: type[T], columns: str, values: tuple[object, ...], **convert: Callable[[Any], Any]
) -> T:
    """``values`` of a SELECT of ``columns`` (comma-separated) as a ``cls``."""
    fields = dict(zip(columns.split(", "), values, strict=True))
    if "from_team" in fields:
        fields["from_team"] = fields["from_team"] or None
    for name, function in convert.items():
        fields[name] = function(fields[name])
    return msgspec.convert(fields, cls)
