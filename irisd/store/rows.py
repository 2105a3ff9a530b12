"""Rows to Structs, the same way for every table.

The external caller (no team) is stored as from_team '' rather than NULL, because a
UNIQUE constraint lets any number of NULLs through in SQLite: '' gives exactly one
session per target. Rows turn it back into None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

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


# A page of a transcript read in pieces (``ReadTranscript(paged=True)``): at most this many
# lines, and it ends at the line that takes it past this many bytes. Small enough that
# irisd holds little however long the transcript; large enough that the thread hop per
# page (about 0.2 ms) stays a small part of reading it.
PAGE_LINES = 2000
PAGE_BYTES = 256 * 1024


class Page(NamedTuple):
    entries: list[TranscriptEntry]
    last_id: int  # the row id of its last line (the cursor for the next page)
    full: bool  # it stopped at a limit: more lines may follow


def transcript_page(
    db: apsw.Connection, table: str, key: str, value: str, after: int,
    max_lines: int | None = None, max_bytes: int | None = None,
) -> Page:
    """The lines stored in ``table`` for ``key = value`` after row id ``after``, in order, up
    to ``max_lines`` (PAGE_LINES) and the line that reaches ``max_bytes`` (PAGE_BYTES; at
    least one line). SQLite makes the text (claude writes UTF-8 JSON): about twice as fast for
    a long history as decoding each line here; a line that is not UTF-8 sends the page the
    slow way."""
    max_lines = PAGE_LINES if max_lines is None else max_lines
    max_bytes = PAGE_BYTES if max_bytes is None else max_bytes
    query = f"SELECT id, at, type, CAST(raw AS TEXT) FROM {table} WHERE {key} = ? AND id > ? ORDER BY id LIMIT ?"
    try:
        return _page(db.execute(query, (value, after, max_lines)), after, max_lines, max_bytes)
    except UnicodeDecodeError:
        slow = query.replace("CAST(raw AS TEXT)", "raw")
        rows = ((row_id, at, kind, bytes(raw).decode(errors="replace"))
                for row_id, at, kind, raw in db.execute(slow, (value, after, max_lines)))
        return _page(rows, after, max_lines, max_bytes)


def _page(rows: Iterable[tuple[int, float, str, str]], after: int, max_lines: int, max_bytes: int) -> Page:
    entries: list[TranscriptEntry] = []
    add = entries.append
    size = 0
    row_id = after
    for row_id, at, kind, raw in rows:  # the last one's id is the cursor
        add(TranscriptEntry(at=at, type=kind, raw=raw))
        size += len(raw)
        if size >= max_bytes:
            return Page(entries, row_id, True)
    return Page(entries, row_id, len(entries) >= max_lines)
