"""A transcript's lines as stored: many consecutive lines of one tell (or unsolicited turn)
in one row, each as the msgpack of the ``TranscriptEntry`` it is on the wire.

How it works
------------
A row of ``tell_lines`` (``unsolicited_lines``) holds ``count`` lines one after another,
each the msgpack map of its ``TranscriptEntry`` (at, type, raw), without an array header:
so a write appends to its tell's last row in SQL (``lines = lines || ?``), and a page is
its rows' bytes joined behind one header, the msgpack of a ``list[TranscriptEntry]``: it
goes to a reader that asked for it packed as it is (``TranscriptPage.packed``), and is
decoded in one call of msgspec's C decoder for the others. A row takes lines until it
holds ``CHUNK_BYTES`` or ``CHUNK_LINES``; a write that does not fit starts new rows.
Reading 10,000 lines was stepping through 10,000 rows and making a Python object of each
(most of irisd's time on a long read); now it is a row per 32 KiB, whether the lines came
in one write or in many. SQLite writes a row whole, so an append costs up to a row's
rewrite (measured: about 0.1 ms for a line into a 32 KiB row, 0.02 ms more than an
insert for a warm tell's one write of its lines).

A reader pages through with a cursor: (row id, lines of that row read). A row only grows
at its end, so lines written while a reader pages come after its cursor, each once.

A line that is not UTF-8 (claude writes JSON: only a broken line) keeps its bytes (a
msgpack bin): nothing is lost; readers see it with the bad bytes replaced.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

import apsw
import msgspec

from protocol.messages import TranscriptEntry

Line = tuple[float, str, bytes]  # wall time, claude's type, the raw line (irisd/tell/transcript.py)
Cursor = tuple[int, int]  # (row id, lines of that row already read); (0, 0): from the start

# A row takes lines until it holds this much; a larger line is a row of its own. (Rows of
# 16 KiB read 10,000 lines 5% slower, of 64 KiB no faster, and an append rewrites more.)
CHUNK_BYTES = 32 * 1024
CHUNK_LINES = 500

# A page of a transcript read in pieces (``ReadTranscript(paged=True)``): rows until it
# holds this many lines or bytes, so at most a row (CHUNK_BYTES, CHUNK_LINES) more. Small
# enough that irisd holds little however long the transcript (pages of 512 KiB took 0.88x
# the CPU per read, and twice the memory while reading: about 5 MB for both ends of the
# socket in tests/subsystem/test_transcript_pages.py, half a 10 MB transcript).
PAGE_LINES = 2000
PAGE_BYTES = 256 * 1024

# The tables of lines: (table, the column naming whose lines they are).
TELLS = ("tell_lines", "tell_id")
UNSOLICITED = ("unsolicited_lines", "turn_id")


class _Bytes(msgspec.Struct):
    """A line as stored when its raw is not UTF-8: the same map as a TranscriptEntry's,
    its raw a msgpack bin."""

    at: float
    type: str
    raw: bytes


_encoder = msgspec.msgpack.Encoder()
_entries = msgspec.msgpack.Decoder(list[TranscriptEntry])
_any = msgspec.msgpack.Decoder(list[dict[str, Any]])  # a raw is str or bytes


def array_header(count: int) -> bytes:
    """The msgpack header of an array of ``count`` items."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 2**16:
        return b"\xdc" + struct.pack(">H", count)
    return b"\xdd" + struct.pack(">I", count)


def encoded(line: Line) -> tuple[bytes, bool]:
    """One line as a row stores it, and whether its raw is text (UTF-8)."""
    at, type_, raw = line
    try:
        return _encoder.encode(TranscriptEntry(at=at, type=type_, raw=raw.decode())), True
    except UnicodeDecodeError:
        return _encoder.encode(_Bytes(at=at, type=type_, raw=bytes(raw))), False


def decoded(count: int, lines: bytes) -> list[TranscriptEntry]:
    """``count`` lines stored one after another (rows' ``lines`` joined)."""
    data = array_header(count) + lines
    try:
        return _entries.decode(data)
    except msgspec.ValidationError:  # a line that is not UTF-8: the slow way
        return [TranscriptEntry(at=at, type=type_, raw=_text(raw)) for at, type_, raw in _lines(data)]


def _lines(data: bytes) -> list[tuple[float, str, str | bytes]]:
    return [(line["at"], line["type"], line["raw"]) for line in _any.decode(data)]


def _text(raw: str | bytes) -> str:
    return raw if isinstance(raw, str) else raw.decode(errors="replace")


def append(db: apsw.Connection, table: tuple[str, str], owner: str, lines: Iterable[Line]) -> None:
    """Store ``lines`` (in order) after ``owner``'s lines in ``table`` (``TELLS``,
    ``UNSOLICITED``), in one transaction: into its last row while it has room, then in
    new rows."""
    name, key = table
    pending = [encoded(line) for line in lines]
    if not pending:
        return
    with db:
        last = db.execute(
            f"SELECT id, count, length(lines) FROM {name} WHERE {key} = ? ORDER BY id DESC LIMIT 1", (owner,)
        ).fetchone()
        start = 0
        if last is not None:
            row_id, count, size = last
            start = _fits(pending, 0, count, size)
            if start:  # || makes text: the row stays a BLOB
                db.execute(
                    f"UPDATE {name} SET lines = CAST(lines || ? AS BLOB), count = count + ?, clean = clean AND ? "
                    "WHERE id = ?",
                    (*_joined(pending[:start]), row_id),
                )
        while start < len(pending):
            end = max(_fits(pending, start, 0, 0), start + 1)  # a line larger than a row is a row
            db.execute(
                f"INSERT INTO {name} ({key}, lines, count, clean) VALUES (?, ?, ?, ?)",
                (owner, *_joined(pending[start:end])),
            )
            start = end


def _joined(pending: list[tuple[bytes, bool]]) -> tuple[bytes, int, bool]:
    return b"".join(line for line, _ in pending), len(pending), all(text for _, text in pending)


def _fits(pending: list[tuple[bytes, bool]], start: int, count: int, size: int) -> int:
    """Where the lines from ``start`` stop fitting into a row of ``count`` lines and ``size`` bytes."""
    end = start
    while end < len(pending) and count < CHUNK_LINES and size + len(pending[end][0]) <= CHUNK_BYTES:
        count += 1
        size += len(pending[end][0])
        end += 1
    return end


def every(db: apsw.Connection, table: tuple[str, str], owner: str) -> list[Line]:
    """All of ``owner``'s lines, as they were written (a line that is not UTF-8 as its bytes)."""
    name, key = table
    out: list[Line] = []
    for count, lines in db.execute(f"SELECT count, lines FROM {name} WHERE {key} = ? ORDER BY id", (owner,)):
        out.extend((at, type_, raw if isinstance(raw, bytes) else raw.encode())
                   for at, type_, raw in _lines(array_header(count) + lines))
    return out


class Page(NamedTuple):
    packed: bytes  # its lines: the msgpack of their list[TranscriptEntry] (``TranscriptPage.packed``)
    line_count: int  # how many
    cursor: Cursor  # where the next page starts
    full: bool  # it stopped at a limit: more lines may follow

    def entries(self) -> list[TranscriptEntry]:
        return _entries.decode(self.packed)


def page(
    db: apsw.Connection, table: tuple[str, str], owner: str, after: Cursor = (0, 0),
    max_lines: int | None = None, max_bytes: int | None = None,
) -> Page:
    """``owner``'s lines after ``after``, in order: whole rows until the page holds
    ``max_lines`` (PAGE_LINES) or ``max_bytes`` (PAGE_BYTES; at least one row). The rows'
    bytes are joined, not decoded; a row with a line that is not UTF-8 is, and its lines
    made text (their bad bytes replaced)."""
    max_lines = PAGE_LINES if max_lines is None else max_lines
    max_bytes = PAGE_BYTES if max_bytes is None else max_bytes
    name, key = table
    first_id, skip = after
    rows = db.execute(f"SELECT id, count, lines, clean FROM {name} WHERE {key} = ? AND id >= ? ORDER BY id",
                      (owner, first_id))
    parts: list[bytes] = []
    count = size = 0
    last = after
    full = False
    try:
        for row_id, row_count, lines, clean in rows:
            done = skip if row_id == first_id else 0  # of the row the last page ended in: what it got since
            if row_count <= done:
                continue
            if done or not clean:
                lines = b"".join(map(_encoder.encode, decoded(row_count, lines)[done:]))
            parts.append(lines)
            count += row_count - done
            size += len(lines)
            last = (row_id, row_count)
            if count >= max_lines or size >= max_bytes:
                full = True
                break
    finally:
        rows.close()
    return Page(b"".join([array_header(count), *parts]), count, last, full)


def packed(held: list[Line]) -> Page:
    """Lines not stored yet (a running tell's, in memory) as a page."""
    parts = [line for line, _ in map(encoded, held)]
    stored = decoded(len(parts), b"".join(parts))  # as a reader gets them: text
    return Page(_encoder.encode(stored), len(stored), (0, 0), False)
