"""Queries on ``tells`` and their transcripts (``tell_lines``, irisd/store/lines.py).

A tell's lines are appended in one write each time its state is saved, and at least
every half second while it runs (``irisd/tell/transcript.py`` says which lines are kept),
so the transcript survives a crash of the child, and of irisd but for its last moment.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw
import msgspec

from irisd.store import ledger, lines
from irisd.store.rows import stored_team
from protocol.messages import TellInfo

_COLUMNS = (
    "id, from_team, to_team, message, status, text, session_id, created_at, started_at, "
    "finished_at, error, cost_usd, new_session, chain_id, hops, kind, input_tokens, output_tokens, "
    "cache_read_tokens, cache_creation_tokens, num_turns, duration_ms, max_budget_usd, thread"
)


_FIELDS = tuple(_COLUMNS.split(", "))


def _info(values: tuple[object, ...]) -> TellInfo:
    """A row as a TellInfo, built directly: the row's types are the table's, so it needs
    none of ``to_struct``'s checking (``Report`` of 1,000 tells: 3x faster)."""
    fields = dict(zip(_FIELDS, values, strict=True))
    fields["from_team"] = fields["from_team"] or None
    fields["new_session"] = bool(fields["new_session"])
    return TellInfo(**fields)  # type: ignore[arg-type]


def insert(db: apsw.Connection, tell: TellInfo) -> None:
    db.execute(
        "INSERT INTO tells (id, from_team, to_team, message, status, created_at, chain_id, hops, kind, "
        "error, finished_at, max_budget_usd, thread) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tell.id,
            stored_team(tell.from_team),
            tell.to_team,
            tell.message,
            tell.status,
            tell.created_at,
            tell.chain_id,
            tell.hops,
            tell.kind,
            tell.error,
            tell.finished_at,
            tell.max_budget_usd,
            tell.thread,
        ),
    )


def update(db: apsw.Connection, tell: TellInfo, usage: bytes | None = None) -> None:
    """Write the tell's current state (status, text, times, result figures); a finished
    tell with a cost also gets its row in the ledger, in the same transaction."""
    with db:
        _update(db, tell, usage)
        if tell.cost_usd is not None and tell.finished_at is not None:
            ledger.record(db, tell)


def _update(db: apsw.Connection, tell: TellInfo, usage: bytes | None) -> None:
    db.execute(
        "UPDATE tells SET status = ?, text = ?, session_id = ?, started_at = ?, finished_at = ?, "
        "error = ?, cost_usd = ?, new_session = ?, usage = coalesce(?, usage), input_tokens = ?, "
        "output_tokens = ?, cache_read_tokens = ?, cache_creation_tokens = ?, num_turns = ?, duration_ms = ? "
        "WHERE id = ?",
        (
            tell.status,
            tell.text,
            tell.session_id,
            tell.started_at,
            tell.finished_at,
            tell.error,
            tell.cost_usd,
            int(tell.new_session),
            usage.decode() if usage else None,
            tell.input_tokens,
            tell.output_tokens,
            tell.cache_read_tokens,
            tell.cache_creation_tokens,
            tell.num_turns,
            tell.duration_ms,
            tell.id,
        ),
    )


def append_message(db: apsw.Connection, tell_id: str, at: float, type_: str, raw: bytes) -> None:
    lines.append(db, lines.TELLS, tell_id, [(at, type_, raw)])


def append_messages(db: apsw.Connection, tell_id: str, stored: list[lines.Line]) -> None:
    """A tell's lines (wall time, type, raw), in order, in one transaction."""
    lines.append(db, lines.TELLS, tell_id, stored)


def get(db: apsw.Connection, tell_id: str) -> TellInfo | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM tells WHERE id = ?", (tell_id,)).fetchone()
    return _info(row) if row else None


def messages(db: apsw.Connection, tell_id: str) -> list[lines.Line]:
    return lines.every(db, lines.TELLS, tell_id)


def interrupt_unfinished(db: apsw.Connection, now: float, answer_of: Callable[[list[bytes]], str]) -> int:
    """At start-up: a tell still queued or running belonged to a daemon that died. It
    keeps the answer it had so far, rebuilt from its stored lines by ``answer_of``."""
    unfinished = [
        (str(tell_id), str(text or ""))
        for tell_id, text in db.execute(
            "SELECT id, text FROM tells WHERE status IN ('queued', 'running', 'awaiting_approval')"
        )
    ]
    for tell_id, text in unfinished:
        text = text or answer_of([raw for _, _, raw in messages(db, tell_id)])
        kept = "; its answer so far is kept" if text else ""
        db.execute(
            "UPDATE tells SET status = 'interrupted', finished_at = ?, text = ?, error = ? WHERE id = ?",
            (now, text, f"irisd stopped before this tell finished{kept}", tell_id),
        )
    return len(unfinished)


def recent(
    db: apsw.Connection, to_team: str, from_team: str | None, *, all_callers: bool, limit: int
) -> list[TellInfo]:
    """The newest tells of a pair (or to a team from anyone), newest first."""
    if all_callers:
        return _newest(db, "WHERE to_team = ?", (to_team,), limit)
    return _newest(db, "WHERE to_team = ? AND from_team = ?", (to_team, stored_team(from_team)), limit)


def recent_all(
    db: apsw.Connection, to_team: str | None, from_team: str | None, status: str | None, limit: int
) -> list[TellInfo]:
    """The newest tells of every pair, newest first; each filter applies when given
    (``from_team`` "external" is the external caller)."""
    where, values = [], []
    if to_team is not None:
        where.append("to_team = ?")
        values.append(to_team)
    if from_team is not None:
        where.append("from_team = ?")
        values.append(stored_team(None if from_team == "external" else from_team))
    if status is not None:
        where.append("status = ?")
        values.append(status)
    return _newest(db, f"WHERE {' AND '.join(where)}" if where else "", tuple(values), limit)


def _json_field(column: str) -> str:
    if column == "from_team":
        return "'from_team', nullif(from_team, '')"  # the external caller: None
    if column == "new_session":
        return "'new_session', json(CASE WHEN new_session THEN 'true' ELSE 'false' END)"
    return f"'{column}', {column}"


# Many tells at once (a Report of 1,000): SQLite writes them as one JSON array and msgspec
# reads it in C, 2x faster than a TellInfo built per row in Python.
_AS_JSON = f"json_object({', '.join(_json_field(column) for column in _FIELDS)})"
_many = msgspec.json.Decoder(list[TellInfo])


def _newest(db: apsw.Connection, where: str, values: tuple[str, ...], limit: int) -> list[TellInfo]:
    row = db.execute(
        f"SELECT json_group_array({_AS_JSON} ORDER BY created_at DESC) FROM "
        f"(SELECT {_COLUMNS} FROM tells {where} ORDER BY created_at DESC LIMIT ?)",
        (*values, limit),
    ).fetchone()
    assert row is not None  # an aggregate always has its row
    return _many.decode(row[0])


def clear_finished(db: apsw.Connection, to_team: str, from_team: str | None) -> int:
    """Forget a pair's finished tells and their transcripts; running ones stay."""
    with db:
        db.execute(
            "DELETE FROM tells WHERE to_team = ? AND from_team = ? "
            "AND status NOT IN ('queued', 'running', 'awaiting_approval')",
            (to_team, stored_team(from_team)),
        )
    return db.changes()


def prune(db: apsw.Connection, finished_before: float, keep_per_pair: int) -> int:
    """Retention: drop finished tells older than ``finished_before``, keeping at least the
    newest ``keep_per_pair`` of every pair."""
    with db:
        db.execute(
            "DELETE FROM tells WHERE finished_at IS NOT NULL AND finished_at < ? AND id NOT IN ("
            "  SELECT id FROM (SELECT id, row_number() OVER ("
            "    PARTITION BY from_team, to_team ORDER BY created_at DESC) AS n FROM tells)"
            "  WHERE n <= ?)",
            (finished_before, keep_per_pair),
        )
    return db.changes()


def latest_init_line(db: apsw.Connection, to_team: str) -> bytes | None:
    """The newest ``init`` line a claude of ``to_team`` printed (it names its slash
    commands), from the stored transcripts: known after a restart of irisd too."""
    marker = '"subtype":"init"'
    found = db.execute(
        "SELECT l.count, l.lines FROM tell_lines l JOIN tells t ON t.id = l.tell_id "
        "WHERE t.to_team = ? AND instr(l.lines, ?) > 0 ORDER BY l.id DESC",  # lines is a BLOB: no LIKE
        (to_team, marker.encode()),
    )
    for count, stored in found:  # the newest row naming it (another line may quote it)
        for entry in reversed(lines.decoded(count, stored)):
            if entry.type == "system" and marker in entry.raw:
                return entry.raw.encode()
    return None
