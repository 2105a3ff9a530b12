"""Rows to Structs, the same way for every table.

The external caller (no team) is stored as from_team '' rather than NULL, because a
UNIQUE constraint lets any number of NULLs through in SQLite: '' gives exactly one
session per target. Rows turn it back into None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import apsw
import msgspec

from protocol.messages import TranscriptEntry

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


def transcript(db: apsw.Connection, table: str, key: str, value: str) -> list[TranscriptEntry]:
    """The lines stored in ``table`` for ``key = value``, in order, as the protocol sends them.
    SQLite turns them into text (claude writes UTF-8 JSON): about twice as fast for a long
    history as decoding each line here; a line that is not UTF-8 is read the slow way."""
    query = f"SELECT at, type, CAST(raw AS TEXT) FROM {table} WHERE {key} = ? ORDER BY id"
    try:
        return [TranscriptEntry(at=at, type=kind, raw=raw) for at, kind, raw in db.execute(query, (value,))]
    except UnicodeDecodeError:
        rows = db.execute(f"SELECT at, type, raw FROM {table} WHERE {key} = ? ORDER BY id", (value,))
        return [TranscriptEntry(at=at, type=kind, raw=bytes(raw).decode(errors="replace")) for at, kind, raw in rows]
