"""Queries on ``agent_sessions`` (iris-agent's watcher: its own claude session per pair)
and ``agent_messages`` (what it was shown about a question, and what it answered)."""

from __future__ import annotations

from collections.abc import Iterable

import apsw
import msgspec

from iris_common.config import AGENT_NAME
from irisd.store.rows import stored_team
from protocol.messages import ActionRow, AgentStatsReply, AgentVerdict, ClassifiedRow, QuestionInfo

ALLOWED_BY = "settings.agent.allow"  # who decided an action iris-agent was allowed to take at once


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


def stats(db: apsw.Connection, since: float) -> AgentStatsReply:
    """iris-agent's work since ``since``: see ``AgentStats``."""
    completed = db.execute(
        "SELECT count(*) FROM tells WHERE status = 'completed' AND created_at >= ?", (since,)
    ).fetchone()
    by_status = {
        str(status): int(count)
        for status, count in db.execute(
            "SELECT status, count(*) FROM questions WHERE created_at >= ? GROUP BY status", (since,)
        )
    }
    classified = [
        ClassifiedRow(
            classification=str(kind), count=int(count), confidence=float(confidence or 0.0), answered=int(answered),
            dismissed=int(dismissed), expired=int(expired), pending=int(pending),
        )
        for kind, count, confidence, answered, dismissed, expired, pending in db.execute(
            "SELECT m.classification, count(*), avg(m.confidence), "
            "sum(q.status = 'answered'), sum(q.status = 'dismissed'), sum(q.status = 'expired'), "
            "sum(q.status = 'pending') "
            "FROM agent_messages m JOIN questions q ON q.id = m.question_id "
            "WHERE m.role = 'agent' AND m.at >= ? GROUP BY m.classification ORDER BY m.classification",
            (since,),
        )
    ]
    actions = [
        ActionRow(
            tool=str(tool), proposed=int(proposed), allowed=int(allowed), denied=int(denied), expired=int(expired),
            pending=int(pending), automatic=int(automatic),
        )
        for tool, proposed, allowed, denied, expired, pending, automatic in db.execute(
            "SELECT tool_name, sum(decided_by != ?), sum(status = 'allowed' AND decided_by != ?), "
            "sum(status = 'denied'), sum(status = 'expired'), sum(status = 'pending'), sum(decided_by = ?) "
            "FROM approvals WHERE kind = 'agent' AND created_at >= ? GROUP BY tool_name ORDER BY tool_name",
            (ALLOWED_BY, ALLOWED_BY, ALLOWED_BY, since),
        )
    ]
    asks, ask_usd, watch_usd = db.execute(
        "SELECT sum(tell_id LIKE 'ask-%'), coalesce(sum(CASE WHEN tell_id LIKE 'ask-%' THEN cost_usd END), 0), "
        "coalesce(sum(CASE WHEN tell_id LIKE 'watch-%' THEN cost_usd END), 0) "
        "FROM ledger WHERE kind = 'ask' AND finished_at >= ?",
        (since,),
    ).fetchone() or (0, 0.0, 0.0)
    tells = db.execute(
        "SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE kind = 'tell' AND from_team = ? AND finished_at >= ?",
        (AGENT_NAME, since),
    ).fetchone()
    return AgentStatsReply(
        since=since,
        tells_completed=int(completed[0]) if completed else 0,
        questions=sum(by_status.values()),
        questions_by_status=by_status,
        looked=sum(row.count for row in classified),
        classified=classified,
        actions=actions,
        asks=int(asks or 0),
        ask_usd=float(ask_usd),
        watch_usd=float(watch_usd),
        tells_usd=float(tells[0]) if tells else 0.0,
    )
