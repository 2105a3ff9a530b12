"""Queries on ``unsolicited``: turns a pair's claude took while no tell was running, and
the lines it printed then (``unsolicited_lines``, irisd/store/lines.py), appended as they stream."""

from __future__ import annotations

import apsw

from irisd.store import lines
from irisd.store.rows import stored_team, to_struct
from protocol.messages import UnsolicitedInfo

_COLUMNS = "id, from_team, to_team, session_id, status, text, error, started_at, finished_at, cost_usd"


def _info(values: tuple[object, ...]) -> UnsolicitedInfo:
    return to_struct(UnsolicitedInfo, _COLUMNS, values)


def save(db: apsw.Connection, turn: UnsolicitedInfo) -> None:
    """Insert the turn, or write its current state."""
    db.execute(
        f"INSERT INTO unsolicited ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET status = excluded.status, text = excluded.text, "
        "error = excluded.error, finished_at = excluded.finished_at, cost_usd = excluded.cost_usd",
        (
            turn.id,
            stored_team(turn.from_team),
            turn.to_team,
            turn.session_id,
            turn.status,
            turn.text,
            turn.error,
            turn.started_at,
            turn.finished_at,
            turn.cost_usd,
        ),
    )


def append_message(db: apsw.Connection, turn_id: str, at: float, type_: str, raw: bytes) -> None:
    lines.append(db, lines.UNSOLICITED, turn_id, [(at, type_, raw)])


def get(db: apsw.Connection, turn_id: str) -> UnsolicitedInfo | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM unsolicited WHERE id = ?", (turn_id,)).fetchone()
    return _info(row) if row else None


def messages(db: apsw.Connection, turn_id: str) -> list[lines.Line]:
    return lines.every(db, lines.UNSOLICITED, turn_id)


def recent(db: apsw.Connection, limit: int) -> list[UnsolicitedInfo]:
    """The newest turns of every pair, newest first."""
    rows = db.execute(f"SELECT {_COLUMNS} FROM unsolicited ORDER BY started_at DESC LIMIT ?", (limit,))
    return [_info(row) for row in rows]


def interrupt_unfinished(db: apsw.Connection, now: float) -> int:
    """At start-up: a turn still running belonged to a daemon that died."""
    db.execute(
        "UPDATE unsolicited SET status = 'interrupted', finished_at = ?, "
        "error = 'irisd stopped before this turn ended' WHERE status = 'running'",
        (now,),
    )
    return db.changes()


def clear_finished(db: apsw.Connection, to_team: str, from_team: str | None) -> int:
    """Forget a pair's ended turns and their lines."""
    with db:
        db.execute(
            "DELETE FROM unsolicited WHERE to_team = ? AND from_team = ? AND status != 'running'",
            (to_team, stored_team(from_team)),
        )
    return db.changes()


def prune(db: apsw.Connection, finished_before: float, keep: int) -> int:
    """Retention: drop ended turns older than ``finished_before``, keeping the newest ``keep``."""
    with db:
        db.execute(
            "DELETE FROM unsolicited WHERE finished_at IS NOT NULL AND finished_at < ? AND id NOT IN ("
            "  SELECT id FROM unsolicited ORDER BY started_at DESC LIMIT ?)",
            (finished_before, keep),
        )
    return db.changes()
