"""Queries on ``a2a_contexts``: a pair's conversation (one per thread) with an A2A agent.

The row is the agent's: a team whose ``a2a`` URL changed starts a new conversation
(the old context id means nothing to another agent)."""

from __future__ import annotations

import apsw
import msgspec

from irisd.store.rows import stored_team


class A2AContext(msgspec.Struct, frozen=True, kw_only=True):
    context_id: str = ""  # the agent's contextId of this pair's conversation
    open_task: str = ""  # a task waiting for input: the pair's next tell replies to it


def get(db: apsw.Connection, from_team: str | None, to_team: str, agent_url: str, *, thread: str = "") -> A2AContext:
    row = db.execute(
        "SELECT context_id, open_task FROM a2a_contexts "
        "WHERE from_team = ? AND to_team = ? AND thread = ? AND agent_url = ?",
        (stored_team(from_team), to_team, thread, agent_url),
    ).fetchone()
    if row is None:
        return A2AContext()
    return A2AContext(context_id=str(row[0]), open_task=str(row[1]))


def put(
    db: apsw.Connection, from_team: str | None, to_team: str, agent_url: str, context: A2AContext, now: float,
    *, thread: str = "",
) -> None:
    db.execute(
        "INSERT INTO a2a_contexts (from_team, to_team, thread, agent_url, context_id, open_task, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (from_team, to_team, thread) DO UPDATE SET "
        "agent_url = excluded.agent_url, context_id = excluded.context_id, open_task = excluded.open_task, "
        "updated_at = excluded.updated_at",
        (stored_team(from_team), to_team, thread, agent_url, context.context_id, context.open_task, now),
    )
