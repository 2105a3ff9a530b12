"""Queries on ``agent_sessions`` (iris-agent's watcher: its own claude session per pair)
and ``agent_messages`` (what it was shown about a question, and what it answered)."""

from __future__ import annotations

from collections.abc import Iterable

import apsw
import msgspec

from irisd.store.rows import stored_team
from protocol.messages import AgentVerdict, QuestionInfo


def _encode(verdict: AgentVerdict) -> str:
    return msgspec.json.encode(verdict).decode()


def session_of(db: apsw.Connection, from_team: str | None, to_team: str) -> str | None:
    row = db.execute(
        "SELECT session_id FROM agent_sessions WHERE from_team = ? AND to_team = ?", (stored_team(from_team), to_team)
    ).fetchone()
    return str(row[0]) if row else None


def record_turn(
    db: apsw.Connection,
    question: QuestionInfo,
    *,
    session_id: str,
    now: float,
    shown: str,
    said: str,
    verdict: AgentVerdict | None,
) -> None:
    """One turn of the watcher on ``question``'s pair: its session, what it was shown and
    what it said (with the verdict read from it, if any)."""
    pair = (stored_team(question.from_team), question.to_team)
    cost = verdict.cost_usd if verdict is not None else None
    db.execute(
        "INSERT INTO agent_sessions (from_team, to_team, session_id, created_at, updated_at, turns, cost_usd) "
        "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (from_team, to_team) DO UPDATE SET session_id = excluded.session_id, "
        "updated_at = excluded.updated_at, turns = turns + 1, cost_usd = cost_usd + excluded.cost_usd",
        (*pair, session_id, now, now, cost or 0.0),
    )
    db.execute(
        "INSERT INTO agent_messages (from_team, to_team, question_id, at, role, text) VALUES (?, ?, ?, ?, 'iris', ?)",
        (*pair, question.id, now, shown),
    )
    db.execute(
        "INSERT INTO agent_messages (from_team, to_team, question_id, at, role, text, classification, confidence, "
        "suggestion, verdict, cost_usd) VALUES (?, ?, ?, ?, 'agent', ?, ?, ?, ?, ?, ?)",
        (
            *pair, question.id, now, said,
            verdict.classification if verdict is not None else "",
            verdict.confidence if verdict is not None else None,
            verdict.suggestion if verdict is not None else "",
            _encode(verdict) if verdict is not None else "",
            cost,
        ),
    )


def looked_at(db: apsw.Connection, question_id: str) -> bool:
    """Whether the watcher has had its one turn on this question already."""
    row = db.execute("SELECT 1 FROM agent_messages WHERE question_id = ? LIMIT 1", (question_id,)).fetchone()
    return row is not None


def set_verdict(db: apsw.Connection, question_id: str, verdict: AgentVerdict) -> None:
    """The verdict as shown with the question (kept as JSON on its 'agent' message)."""
    db.execute(
        "UPDATE agent_messages SET verdict = ? WHERE question_id = ? AND role = 'agent'",
        (_encode(verdict), question_id),
    )


def verdicts(db: apsw.Connection, question_ids: Iterable[str]) -> dict[str, AgentVerdict]:
    ids = list(question_ids)
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = db.execute(
        f"SELECT question_id, verdict FROM agent_messages WHERE role = 'agent' AND verdict != '' "
        f"AND question_id IN ({marks})",
        ids,
    )
    return {str(qid): msgspec.json.decode(str(raw), type=AgentVerdict) for qid, raw in rows}


def with_verdicts(db: apsw.Connection, questions: list[QuestionInfo]) -> list[QuestionInfo]:
    """``questions``, each with what the watcher made of it (if it looked)."""
    found = verdicts(db, (q.id for q in questions))
    return [msgspec.structs.replace(q, agent=found[q.id]) if q.id in found else q for q in questions]


def messages(db: apsw.Connection, from_team: str | None, to_team: str, limit: int = 50) -> list[tuple[float, str, str]]:
    """The watcher's conversation about a pair, oldest first: (at, role, text)."""
    rows = db.execute(
        "SELECT at, role, text FROM (SELECT id, at, role, text FROM agent_messages WHERE from_team = ? AND to_team = ? "
        "ORDER BY id DESC LIMIT ?) ORDER BY id",
        (stored_team(from_team), to_team, limit),
    )
    return [(float(at), str(role), str(text)) for at, role, text in rows]


def spent_since(db: apsw.Connection, since: float) -> float:
    """What the watcher's turns cost since ``since`` (its own daily budget)."""
    row = db.execute("SELECT COALESCE(SUM(cost_usd), 0) FROM agent_messages WHERE at >= ?", (since,)).fetchone()
    return float(row[0]) if row is not None else 0.0
