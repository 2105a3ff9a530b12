"""Queries on ``approvals`` (a team's request to use a tool, and the decision) and
``pair_rules`` (allows remembered with --remember, per pair, matched exactly)."""

from __future__ import annotations

from typing import Any

import apsw
import msgspec

from irisd.store.rows import stored_team, to_struct
from protocol.messages import ApprovalInfo, RuleInfo

_COLUMNS = (
    "id, from_team, to_team, tell_id, tool_name, input, suggestions, status, created_at, expires_at, "
    "decided_at, decided_by, reason, remembered, kind, summary, message, schema, content"
)
_json = msgspec.json.Encoder(order="sorted")  # canonical: equal inputs give equal text


def canonical(value: Any) -> str:
    return _json.encode(value).decode()


def _info(values: tuple[object, ...]) -> ApprovalInfo:
    decode = msgspec.json.decode
    return to_struct(
        ApprovalInfo, _COLUMNS, values, input=decode, suggestions=decode, remembered=bool, schema=decode,
        content=decode,
    )


def insert(db: apsw.Connection, approval: ApprovalInfo, request_id: str) -> None:
    db.execute(
        "INSERT INTO approvals (id, from_team, to_team, tell_id, request_id, tool_name, input, "
        "suggestions, status, created_at, expires_at, kind, summary, message, schema, decided_at, decided_by, "
        "reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            approval.id,
            stored_team(approval.from_team),
            approval.to_team,
            approval.tell_id,
            request_id,
            approval.tool_name,
            canonical(approval.input),
            canonical(approval.suggestions),
            approval.status,
            approval.created_at,
            approval.expires_at,
            approval.kind,
            approval.summary,
            approval.message,
            canonical(approval.schema),
            approval.decided_at,
            approval.decided_by,
            approval.reason,
        ),
    )


def decide(db: apsw.Connection, approval: ApprovalInfo) -> None:
    db.execute(
        "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ?, remembered = ?, content = ? "
        "WHERE id = ?",
        (
            approval.status,
            approval.decided_at,
            approval.decided_by,
            approval.reason,
            int(approval.remembered),
            canonical(approval.content),
            approval.id,
        ),
    )


def get(db: apsw.Connection, approval_id: str) -> ApprovalInfo | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)).fetchone()
    return _info(row) if row else None


def listing(db: apsw.Connection, team: str | None, include_decided: bool) -> list[ApprovalInfo]:
    where = [] if include_decided else ["status = 'pending'"]
    params: list[object] = []
    if team is not None:
        where.append("(to_team = ? OR from_team = ?)")
        params += [team, team]
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = db.execute(f"SELECT {_COLUMNS} FROM approvals {clause} ORDER BY created_at DESC LIMIT 200", params)
    return [_info(row) for row in rows]


def expire_pending(db: apsw.Connection, now: float, reason: str) -> int:
    """At start-up: no claude waits for these any more."""
    db.execute(
        "UPDATE approvals SET status = 'expired', decided_at = ?, reason = ? WHERE status = 'pending'",
        (now, reason),
    )
    return db.changes()


def remember(
    db: apsw.Connection, from_team: str | None, to_team: str, tool_name: str, input: Any, approval_id: str,
    now: float,
) -> None:
    db.execute(
        "INSERT OR IGNORE INTO pair_rules (from_team, to_team, tool_name, input, created_at, approval_id) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (stored_team(from_team), to_team, tool_name, canonical(input), now, approval_id),
    )


def remembered(db: apsw.Connection, from_team: str | None, to_team: str, tool_name: str, input: Any) -> bool:
    row = db.execute(
        "SELECT 1 FROM pair_rules WHERE from_team = ? AND to_team = ? AND tool_name = ? AND input = ?",
        (stored_team(from_team), to_team, tool_name, canonical(input)),
    ).fetchone()
    return row is not None


_RULE_COLUMNS = "approval_id, from_team, to_team, tool_name, input, created_at"


def _rule(values: tuple[object, ...]) -> RuleInfo:
    fields = dict(zip(("id", "from_team", "to_team", "tool_name", "input", "created_at"), values, strict=True))
    fields["from_team"] = fields["from_team"] or None
    fields["input"] = msgspec.json.decode(str(fields["input"]))
    return msgspec.convert(fields, RuleInfo)


def rules(db: apsw.Connection, team: str | None) -> list[RuleInfo]:
    """The remembered rules, newest first (of pairs with ``team`` on either side)."""
    clause, params = ("WHERE to_team = ? OR from_team = ?", [team, team]) if team is not None else ("", [])
    rows = db.execute(f"SELECT {_RULE_COLUMNS} FROM pair_rules {clause} ORDER BY created_at DESC", params)
    return [_rule(row) for row in rows]


def forget(db: apsw.Connection, rule_id: str) -> RuleInfo | None:
    """Delete the rule made by approval ``rule_id``; the rule as it was, or None."""
    row = db.execute(f"SELECT {_RULE_COLUMNS} FROM pair_rules WHERE approval_id = ?", (rule_id,)).fetchone()
    if row is None:
        return None
    db.execute("DELETE FROM pair_rules WHERE approval_id = ?", (rule_id,))
    return _rule(row)


def next_agent_expiry(db: apsw.Connection) -> float | None:
    """When the first pending action of iris-agent expires (None: none pending)."""
    row = db.execute("SELECT min(expires_at) FROM approvals WHERE kind = 'agent' AND status = 'pending'").fetchone()
    return float(row[0]) if row is not None and row[0] is not None else None


def expire_agent(db: apsw.Connection, now: float, reason: str) -> list[ApprovalInfo]:
    """iris-agent's pending actions past their time, now expired (nothing was done)."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE kind = 'agent' AND status = 'pending' AND expires_at <= ?", (now,)
    ).fetchall()
    db.execute(
        "UPDATE approvals SET status = 'expired', decided_at = ?, reason = ? "
        "WHERE kind = 'agent' AND status = 'pending' AND expires_at <= ?",
        (now, reason, now),
    )
    return [
        msgspec.structs.replace(_info(row), status="expired", decided_at=now, reason=reason) for row in rows
    ]
