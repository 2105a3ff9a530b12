"""Queries on ``sessions``: one persistent claude conversation per (from_team, to_team)."""

from __future__ import annotations

import uuid

import apsw
import msgspec

from irisd.store.rows import stored_team, to_struct
from protocol.messages import SessionInfo


class SessionRow(msgspec.Struct, frozen=True, kw_only=True):
    from_team: str | None
    to_team: str
    session_id: str
    created_at: float
    last_used_at: float
    message_count: int
    status: str
    process_state: str
    last_response_at: float | None
    context_tokens: int | None = None
    context_window: int | None = None
    compactions: int = 0
    last_compacted_at: float | None = None
    compact_trigger: str = ""
    compact_tokens_before: int | None = None
    compact_tokens_after: int | None = None
    compact_messages_before: int | None = None
    archived_at: float | None = None
    files_deleted_at: float | None = None


_COLUMNS = (
    "from_team, to_team, session_id, created_at, last_used_at, message_count, status, "
    "process_state, last_response_at, context_tokens, context_window, compactions, last_compacted_at, "
    "compact_trigger, compact_tokens_before, compact_tokens_after, compact_messages_before, archived_at, "
    "files_deleted_at"
)

ACTIVE = "active"
COMPACT_PENDING = "compact_pending"  # Iris runs /compact on the pair before its next tell
ARCHIVED = "archived"  # unused long (or archived by hand): no claude; the next tell restores it


def _row(values: tuple[object, ...]) -> SessionRow:
    return to_struct(SessionRow, _COLUMNS, values)


def info(row: SessionRow) -> SessionInfo:
    """A stored session as the protocol shows it (the fields the store alone knows)."""
    return SessionInfo(
        from_team=row.from_team, to_team=row.to_team, session_id=row.session_id, created_at=row.created_at,
        last_used_at=row.last_used_at, message_count=row.message_count, status=row.status,
        context_tokens=row.context_tokens, context_window=row.context_window, compactions=row.compactions,
        last_compacted_at=row.last_compacted_at, compact_trigger=row.compact_trigger,
        compact_tokens_before=row.compact_tokens_before, compact_tokens_after=row.compact_tokens_after,
        compact_messages_before=row.compact_messages_before, archived_at=row.archived_at,
        files_deleted=row.files_deleted_at is not None,
    )


def get(db: apsw.Connection, from_team: str | None, to_team: str) -> SessionRow | None:
    row = db.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE from_team = ? AND to_team = ?",
        (stored_team(from_team), to_team),
    ).fetchone()
    return _row(row) if row else None


def get_or_create(db: apsw.Connection, from_team: str | None, to_team: str, now: float) -> SessionRow:
    """The pair's session, created with a fresh id the first time the pair is used."""
    with db:
        existing = get(db, from_team, to_team)
        if existing is not None:
            return existing
        db.execute(
            "INSERT INTO sessions (from_team, to_team, session_id, created_at, last_used_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (stored_team(from_team), to_team, str(uuid.uuid4()), now, now),
        )
    created = get(db, from_team, to_team)
    assert created is not None
    return created


def replace_session_id(
    db: apsw.Connection, from_team: str | None, to_team: str, now: float, session_id: str = ""
) -> SessionRow:
    """Start a new conversation for the pair (the old one is gone or was reset), under
    ``session_id`` (a spare claude's, started with it) or a new one."""
    db.execute(
        "UPDATE sessions SET session_id = ?, created_at = ?, last_used_at = ?, message_count = 0, "
        "context_tokens = NULL, files_deleted_at = NULL "
        "WHERE from_team = ? AND to_team = ?",
        (session_id or str(uuid.uuid4()), now, now, stored_team(from_team), to_team),
    )
    row = get(db, from_team, to_team)
    assert row is not None
    return row


def record_spawn(
    db: apsw.Connection, from_team: str | None, to_team: str, command: list[str], team_snapshot: bytes
) -> None:
    db.execute(
        "UPDATE sessions SET launch_command = ?, team_snapshot = ? WHERE from_team = ? AND to_team = ?",
        (msgspec.json.encode(command).decode(), team_snapshot.decode(), stored_team(from_team), to_team),
    )


def set_process_state(db: apsw.Connection, from_team: str | None, to_team: str, state: str) -> None:
    db.execute(
        "UPDATE sessions SET process_state = ? WHERE from_team = ? AND to_team = ?",
        (state, stored_team(from_team), to_team),
    )


def record_turn(
    db: apsw.Connection, from_team: str | None, to_team: str, now: float,
    context_tokens: int | None = None, context_window: int | None = None,
) -> None:
    """A tell got its answer: one more exchange in the conversation, and (when its result
    said) how full the conversation is now."""
    db.execute(
        "UPDATE sessions SET message_count = message_count + 1, last_used_at = ?, last_response_at = ?, "
        "context_tokens = coalesce(?, context_tokens), context_window = coalesce(?, context_window) "
        "WHERE from_team = ? AND to_team = ?",
        (now, now, context_tokens, context_window, stored_team(from_team), to_team),
    )


def set_status(db: apsw.Connection, from_team: str | None, to_team: str, status: str) -> None:
    db.execute(
        "UPDATE sessions SET status = ? WHERE from_team = ? AND to_team = ?",
        (status, stored_team(from_team), to_team),
    )


def record_compaction(
    db: apsw.Connection,
    from_team: str | None,
    to_team: str,
    now: float,
    trigger: str,
    tokens_before: int | None,
    tokens_after: int | None,
) -> None:
    """A compaction of the conversation happened (Iris's, a /compact or claude's own): one
    more, with its figures and the message count it found; a pending one is done."""
    db.execute(
        "UPDATE sessions SET compactions = compactions + 1, last_compacted_at = ?, compact_trigger = ?, "
        "compact_tokens_before = coalesce(?, context_tokens), compact_tokens_after = ?, "
        "compact_messages_before = message_count, context_tokens = coalesce(?, context_tokens), "
        "status = CASE status WHEN ? THEN ? ELSE status END WHERE from_team = ? AND to_team = ?",
        (now, trigger, tokens_before, tokens_after, tokens_after, COMPACT_PENDING, ACTIVE,
         stored_team(from_team), to_team),
    )


def archive(db: apsw.Connection, from_team: str | None, to_team: str, now: float) -> SessionRow | None:
    """Mark the pair's conversation archived (its history stays); None if it has none or
    is archived already."""
    db.execute(
        "UPDATE sessions SET status = ?, archived_at = ? WHERE from_team = ? AND to_team = ? AND status != ?",
        (ARCHIVED, now, stored_team(from_team), to_team, ARCHIVED),
    )
    return get(db, from_team, to_team) if db.changes() else None


def restore(
    db: apsw.Connection, from_team: str | None, to_team: str, now: float, *, fresh: bool
) -> SessionRow | None:
    """An archived conversation is active again: the same one, or (``fresh``) a new one.
    None if the pair's conversation is not archived."""
    with db:
        db.execute(
            "UPDATE sessions SET status = ?, archived_at = NULL, last_used_at = ? "
            "WHERE from_team = ? AND to_team = ? AND status = ?",
            (ACTIVE, now, stored_team(from_team), to_team, ARCHIVED),
        )
        if not db.changes():
            return None
        if fresh:
            return replace_session_id(db, from_team, to_team, now)
    return get(db, from_team, to_team)


def files_deleted(db: apsw.Connection, from_team: str | None, to_team: str, now: float) -> None:
    db.execute(
        "UPDATE sessions SET files_deleted_at = ? WHERE from_team = ? AND to_team = ?",
        (now, stored_team(from_team), to_team),
    )


def list_all(db: apsw.Connection) -> list[SessionRow]:
    return [
        _row(row)
        for row in db.execute(f"SELECT {_COLUMNS} FROM sessions ORDER BY to_team, from_team")
    ]


def reset_process_states(db: apsw.Connection) -> int:
    """At start-up: no child of a previous run is alive, whatever the table says."""
    db.execute("UPDATE sessions SET process_state = 'stopped' WHERE process_state != 'stopped'")
    return db.changes()
