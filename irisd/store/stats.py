"""Session analytics: each pair's figures over its life, from the cost ledger and ``sessions``.

The ledger has one row per tell (and per compaction Iris ran, kind ``maintenance``) with
what claude reported; ``iris ask`` rows have no pair and are left out. A pair's key is
``_KEY``: when a pair has several threads, the thread column joins it and every figure
is per thread with no other change.

The 95th percentile is the nearest rank (the smallest time that 95 % of the tells took
at most), computed in SQL with window functions: no row leaves the database.
"""

from __future__ import annotations

from typing import Any

import apsw
import msgspec

from irisd.store import sessions
from protocol.messages import PairDay, PairStats

_KEY = "from_team, to_team"  # what one row of the stats is: a pair (a thread joins it here)
_PAIRS_ONLY = "kind != 'ask'"  # iris-agent's answers have no pair


def _where(since: float, team: str | None) -> tuple[str, list[Any]]:
    where = f"{_PAIRS_ONLY} AND finished_at >= ?"
    args: list[Any] = [since]
    if team is not None:
        where += " AND (to_team = ? OR from_team = ?)"
        args += [team, team]
    return where, args


def pair_stats(db: apsw.Connection, since: float = 0.0, team: str | None = None) -> list[PairStats]:
    """Every pair with ledger rows since ``since`` (and, for all time, every pair with a
    conversation), the most active first: most tells, then most cost."""
    where, args = _where(since, team)
    figures: list[tuple[Any, ...]] = db.execute(
        f"SELECT {_KEY}, sum(kind = 'tell'), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
        "sum(cache_creation_tokens), sum(cost_usd), sum(CASE kind WHEN 'maintenance' THEN cost_usd ELSE 0 END), "
        "min(finished_at - duration_ms / 1000.0), max(finished_at), "
        "coalesce(avg(CASE kind WHEN 'tell' THEN duration_ms END), 0) "
        f"FROM ledger WHERE {where} GROUP BY {_KEY}",
        args,
    ).fetchall()
    p95 = dict(
        ((f, t), int(ms))
        for f, t, ms in db.execute(
            f"WITH timed AS (SELECT {_KEY}, duration_ms, "
            f"row_number() OVER (PARTITION BY {_KEY} ORDER BY duration_ms) AS rank, "
            f"count(*) OVER (PARTITION BY {_KEY}) AS n FROM ledger WHERE kind = 'tell' AND {where}) "
            f"SELECT {_KEY}, duration_ms FROM timed WHERE rank = (95 * n + 99) / 100",
            args,
        )
    )
    stored = {(r.from_team, r.to_team): r for r in sessions.list_all(db)}
    found: dict[tuple[str | None, str], PairStats] = {}
    for f, t, tells, inp, out, cread, ccreate, cost, maintenance, first, last, mean in figures:
        pair = (str(f) or None, str(t))
        found[pair] = PairStats(
            from_team=pair[0], to_team=pair[1], tells=int(tells), input_tokens=int(inp), output_tokens=int(out),
            cache_read_tokens=int(cread), cache_creation_tokens=int(ccreate), cost_usd=float(cost),
            maintenance_usd=float(maintenance), first_used_at=float(first), last_used_at=float(last),
            lifetime_s=max(0.0, float(last) - float(first)), mean_tell_ms=float(mean),
            p95_tell_ms=p95.get((f, t), 0),
        )
    if since <= 0:  # a conversation with no figures yet (its first tell failed, or still runs)
        for pair, row in stored.items():
            if pair not in found and team in (None, row.from_team, row.to_team):
                found[pair] = PairStats(from_team=pair[0], to_team=pair[1])
    result = [_with_session(stats, stored.get(pair)) for pair, stats in found.items()]
    result.sort(key=lambda s: (-s.tells, -s.cost_usd, s.to_team, s.from_team or ""))
    return result


def _with_session(stats: PairStats, row: sessions.SessionRow | None) -> PairStats:
    """What the store alone knows of the pair's conversation: its exchanges, compactions, status."""
    if row is None:  # reset away, or a pair whose conversation is elsewhere
        return stats
    return msgspec.structs.replace(stats, messages=row.message_count, compactions=row.compactions, status=row.status)


def daily(db: apsw.Connection, since: float = 0.0, team: str | None = None) -> list[PairDay]:
    """Each pair's tells and cost per day (local time, as ``iris costs --by day``), oldest first."""
    where, args = _where(since, team)
    rows = db.execute(
        f"SELECT {_KEY}, date(finished_at, 'unixepoch', 'localtime') AS day, sum(kind = 'tell'), sum(cost_usd) "
        f"FROM ledger WHERE {where} GROUP BY {_KEY}, day ORDER BY day, {_KEY}",
        args,
    )
    return [
        PairDay(from_team=str(f) or None, to_team=str(t), day=str(day), tells=int(tells), cost_usd=float(cost))
        for f, t, day, tells, cost in rows
    ]


def report(db: apsw.Connection, since: float = 0.0, team: str | None = None) -> tuple[list[PairStats], list[PairDay]]:
    """Both, from one snapshot of the database (one transaction)."""
    with db:
        found = pair_stats(db, since, team), daily(db, since, team)
    return found
