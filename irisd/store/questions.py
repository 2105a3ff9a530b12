"""Queries on ``questions``: pending questions, and how each was closed."""

from __future__ import annotations

import apsw

from irisd.store.agent import with_verdicts
from irisd.store.rows import stored_team, to_struct
from protocol.messages import QuestionInfo

_COLUMNS = (
    "id, from_team, to_team, session_id, tell_id, question, context, confidence, pattern, status, "
    "created_at, expires_at, closed_at, closed_by, answer, answer_tell_id"
)


def _info(values: tuple[object, ...]) -> QuestionInfo:
    return to_struct(QuestionInfo, _COLUMNS, values)


def insert(db: apsw.Connection, q: QuestionInfo) -> None:
    db.execute(
        "INSERT INTO questions (id, from_team, to_team, session_id, tell_id, question, context, confidence, "
        "pattern, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            q.id,
            stored_team(q.from_team),
            q.to_team,
            q.session_id,
            q.tell_id,
            q.question,
            q.context,
            q.confidence,
            q.pattern,
            q.status,
            q.created_at,
            q.expires_at,
        ),
    )


def get(db: apsw.Connection, question_id: str) -> QuestionInfo | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM questions WHERE id = ?", (question_id,)).fetchone()
    return with_verdicts(db, [_info(row)])[0] if row else None


def of_tell(db: apsw.Connection, tell_id: str) -> QuestionInfo | None:
    """The question a tell's answer asked, if one was recorded."""
    row = db.execute(f"SELECT {_COLUMNS} FROM questions WHERE tell_id = ? LIMIT 1", (tell_id,)).fetchone()
    return _info(row) if row is not None else None


def listing(
    db: apsw.Connection, team: str | None, include_closed: bool, for_team: str = ""
) -> list[QuestionInfo]:
    """Newest first. ``team``: asked by or of it; ``for_team``: asked of that caller
    ('external' for no team)."""
    where, args = ["1"], list[object]()
    if not include_closed:
        where.append("status = 'pending'")
    if team is not None:
        where.append("(to_team = ? OR from_team = ?)")
        args += [team, team]
    if for_team:
        where.append("from_team = ?")
        args.append(stored_team(None if for_team == "external" else for_team))
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM questions WHERE {' AND '.join(where)} ORDER BY created_at DESC LIMIT 500",
        args,
    )
    return with_verdicts(db, [_info(row) for row in rows])


def close(
    db: apsw.Connection,
    question_id: str,
    status: str,
    now: float,
    *,
    by: str = "",
    answer: str = "",
    answer_tell_id: str = "",
) -> QuestionInfo | None:
    """Close a PENDING question; None if it is not pending (someone else closed it)."""
    db.execute(
        "UPDATE questions SET status = ?, closed_at = ?, closed_by = ?, answer = ?, answer_tell_id = ? "
        "WHERE id = ? AND status = 'pending'",
        (status, now, by, answer, answer_tell_id, question_id),
    )
    return get(db, question_id) if db.changes() else None


def set_answer_tell(db: apsw.Connection, question_id: str, tell_id: str) -> QuestionInfo | None:
    db.execute("UPDATE questions SET answer_tell_id = ? WHERE id = ?", (tell_id, question_id))
    return get(db, question_id)


def reopen(db: apsw.Connection, question_id: str) -> None:
    """An answer that could not be sent: the question is pending again."""
    db.execute(
        "UPDATE questions SET status = 'pending', closed_at = NULL, closed_by = '', answer = '', "
        "answer_tell_id = '' WHERE id = ?",
        (question_id,),
    )


def expire(db: apsw.Connection, now: float) -> list[QuestionInfo]:
    """Pending questions past their TTL become expired; returns them."""
    with db:
        due = [
            _info(row)
            for row in db.execute(
                f"SELECT {_COLUMNS} FROM questions WHERE status = 'pending' AND expires_at <= ?", (now,)
            )
        ]
        db.execute(
            "UPDATE questions SET status = 'expired', closed_at = ? WHERE status = 'pending' AND expires_at <= ?",
            (now, now),
        )
    for q in due:
        q.status, q.closed_at = "expired", now
    return due


def next_expiry(db: apsw.Connection) -> float | None:
    row = db.execute("SELECT min(expires_at) FROM questions WHERE status = 'pending'").fetchone()
    return float(row[0]) if row and row[0] is not None else None
