"""The cost ledger: what claude reported for each tell, summed for budgets and ``iris costs``.

A row is written when a tell ends with figures (``tells.update``), and stays when the
tell itself is cleared or pruned: a budget must not forget money already spent.
"""

from __future__ import annotations

from typing import Any

import apsw

from irisd.store.rows import stored_team
from protocol.messages import AskReply, CostGrouping, CostRow, TellInfo

KEEP_DAYS = 400  # ledger rows older than this are pruned (a year of daily figures, and some)

_FIGURES = (
    "count(*), coalesce(sum(cost_usd), 0), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), "
    "coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_creation_tokens), 0), "
    "coalesce(sum(num_turns), 0), coalesce(sum(duration_ms), 0), "
    "coalesce(sum(CASE kind WHEN 'maintenance' THEN cost_usd ELSE 0 END), 0)"
)
ASK = "iris ask"  # how asks of iris-agent show among teams and pairs: no team, no pair
_KEYS: dict[CostGrouping, str] = {
    "team": f"CASE kind WHEN 'ask' THEN '{ASK}' ELSE to_team END",
    "pair": f"CASE kind WHEN 'ask' THEN '{ASK}' "
    "ELSE (CASE from_team WHEN '' THEN 'external' ELSE from_team END) || '->' || to_team "
    "|| (CASE thread WHEN '' THEN '' ELSE '#' || thread END) END",
    "chain": "chain_id",
    "day": "date(finished_at, 'unixepoch', 'localtime')",
}


MAINTENANCE = "maintenance"  # the kind of a row Iris spent keeping a conversation useful (a compaction)


def record(db: apsw.Connection, tell: TellInfo) -> None:
    """A tell's figures, under its pair; a compaction Iris ran is marked ``maintenance``."""
    assert tell.cost_usd is not None and tell.finished_at is not None
    db.execute(
        "INSERT OR REPLACE INTO ledger (tell_id, from_team, to_team, chain_id, finished_at, cost_usd, "
        "input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, num_turns, duration_ms, kind, "
        "thread) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tell.id,
            stored_team(tell.from_team),
            tell.to_team,
            tell.chain_id or tell.id,
            tell.finished_at,
            tell.cost_usd,
            tell.input_tokens or 0,
            tell.output_tokens or 0,
            tell.cache_read_tokens or 0,
            tell.cache_creation_tokens or 0,
            tell.num_turns or 0,
            tell.duration_ms or 0,
            MAINTENANCE if tell.kind == "compaction" else "tell",
            tell.thread,
        ),
    )


def record_ask(db: apsw.Connection, ask_id: str, finished_at: float, answer: AskReply) -> None:
    """What one ``iris ask`` cost: a row of its own kind (no pair), counted by the daily budget,
    with its tokens, turns and time as a tell's."""
    assert answer.cost_usd is not None
    db.execute(
        "INSERT OR REPLACE INTO ledger (tell_id, from_team, to_team, chain_id, finished_at, cost_usd, "
        "input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, num_turns, duration_ms, kind) "
        "VALUES (?, '', 'iris-agent', ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ask')",
        (
            ask_id,
            ask_id,
            finished_at,
            answer.cost_usd,
            answer.input_tokens or 0,
            answer.output_tokens or 0,
            answer.cache_read_tokens or 0,
            answer.cache_creation_tokens or 0,
            answer.num_turns or 0,
            answer.duration_ms or 0,
        ),
    )


def spent_since(db: apsw.Connection, since: float, to_team: str | None = None) -> float:
    """USD spent on tells that finished at or after ``since`` (to ``to_team`` if given)."""
    if to_team is None:
        row = db.execute("SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE finished_at >= ?", (since,))
    else:
        row = db.execute(
            "SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE finished_at >= ? AND to_team = ?",
            (since, to_team),
        )
    return _number(row.fetchone())


def chain_spent(db: apsw.Connection, chain_id: str) -> float:
    row = db.execute("SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE chain_id = ?", (chain_id,))
    return _number(row.fetchone())


def _number(row: Any) -> float:
    return float(row[0]) if row else 0.0


def _row(key: str, values: tuple[Any, ...]) -> CostRow:
    tells, cost, inp, out, cread, ccreate, turns, duration, maintenance = values
    return CostRow(
        key=key,
        tells=int(tells),
        cost_usd=float(cost),
        input_tokens=int(inp),
        output_tokens=int(out),
        cache_read_tokens=int(cread),
        cache_creation_tokens=int(ccreate),
        num_turns=int(turns),
        duration_ms=int(duration),
        maintenance_usd=float(maintenance),
    )


def summary(
    db: apsw.Connection, by: CostGrouping, since: float, team: str | None = None
) -> tuple[list[CostRow], CostRow]:
    """Rows grouped ``by``, most expensive first (days: newest first), and the total."""
    where = "finished_at >= ?"
    args: list[Any] = [since]
    if team is not None:
        where += " AND (to_team = ? OR from_team = ?)"
        args += [team, team]
    key = _KEYS[by]
    order = "key DESC" if by == "day" else "3 DESC, key"  # column 3: the cost
    query = f"SELECT {key} AS key, {_FIGURES} FROM ledger WHERE {where} GROUP BY key ORDER BY {order}"
    rows = [_row(str(values[0]), values[1:]) for values in db.execute(query, args)]
    total = db.execute(f"SELECT {_FIGURES} FROM ledger WHERE {where}", args).fetchone()
    return rows, _row("total", tuple(total or (0,) * 9))


def pair_spent(db: apsw.Connection, from_team: str | None, to_team: str, *, thread: str = "") -> float:
    """USD spent on one thread's tells (the pair's default thread unless named), over the whole ledger."""
    row = db.execute(
        "SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE from_team = ? AND to_team = ? AND thread = ?",
        (stored_team(from_team), to_team, thread),
    ).fetchone()
    return float(row[0]) if row else 0.0


def by_pair(db: apsw.Connection) -> dict[tuple[str | None, str, str], float]:
    """USD spent per (from_team, to_team, thread), over the whole ledger."""
    rows = db.execute(
        "SELECT from_team, to_team, thread, sum(cost_usd) FROM ledger WHERE kind = 'tell' "
        "GROUP BY from_team, to_team, thread"
    )
    return {(str(f) or None, str(t), str(th)): float(c) for f, t, th, c in rows}


def prune(db: apsw.Connection, before: float) -> int:
    db.execute("DELETE FROM ledger WHERE finished_at < ?", (before,))
    return db.changes()
