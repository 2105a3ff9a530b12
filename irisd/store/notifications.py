"""Queries on ``notifications``: tells persisted before the sender is answered, delivered
later in order, retried when delivery is interrupted, expired after their TTL."""

from __future__ import annotations

import secrets

import apsw
import msgspec

from irisd.store.rows import stored_team, to_struct
from protocol.messages import ChainRef, NotificationInfo

_COLUMNS = "id, from_team, to_team, message, status, created_at, expires_at, attempts, tell_id, error, chain"
# The chain as one JSON object (NULL: sent outside any chain), read into a ChainRef.
_SELECT = _COLUMNS.replace(
    "chain",
    "CASE WHEN chain_id = '' THEN NULL "
    "ELSE json_object('chain_id', chain_id, 'hops', hops, 'path', json(path)) END",
)


def _info(values: tuple[object, ...]) -> NotificationInfo:
    return to_struct(NotificationInfo, _COLUMNS, values, chain=lambda text: msgspec.json.decode(text) if text else None)


def create(
    db: apsw.Connection,
    from_team: str | None,
    to_team: str,
    message: str,
    now: float,
    ttl_s: float,
    chain: ChainRef | None = None,
) -> NotificationInfo:
    """Store a notification durably (committed when this returns), with the chain it was
    sent in (None: outside any)."""
    notification_id = "n-" + secrets.token_hex(8)
    chain = chain or ChainRef(chain_id="")
    db.execute(
        "INSERT INTO notifications (id, from_team, to_team, message, created_at, expires_at, chain_id, hops, path) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (notification_id, stored_team(from_team), to_team, message, now, now + ttl_s, chain.chain_id, chain.hops,
         msgspec.json.encode(chain.path).decode()),
    )
    found = get(db, notification_id)
    assert found is not None
    return found


def get(db: apsw.Connection, notification_id: str) -> NotificationInfo | None:
    row = db.execute(f"SELECT {_SELECT} FROM notifications WHERE id = ?", (notification_id,)).fetchone()
    return _info(row) if row else None


def pending(db: apsw.Connection) -> list[NotificationInfo]:
    """Undelivered notifications, oldest first."""
    return [
        _info(row)
        for row in db.execute(
            f"SELECT {_SELECT} FROM notifications WHERE status IN ('pending', 'delivering') "
            "ORDER BY created_at, rowid"
        )
    ]


def listing(db: apsw.Connection, to_team: str | None, include_done: bool) -> list[NotificationInfo]:
    where = [] if include_done else ["status IN ('pending', 'delivering')"]
    params: list[object] = []
    if to_team is not None:
        where.append("to_team = ?")
        params.append(to_team)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    return [
        _info(row)
        for row in db.execute(f"SELECT {_SELECT} FROM notifications {clause} ORDER BY created_at", params)
    ]


def mark(
    db: apsw.Connection, notification_id: str, status: str, *, tell_id: str = "", error: str = ""
) -> None:
    attempts = 1 if status == "delivering" else 0
    db.execute(
        "UPDATE notifications SET status = ?, attempts = attempts + ?, "
        "tell_id = CASE WHEN ? = '' THEN tell_id ELSE ? END, error = ? WHERE id = ?",
        (status, attempts, tell_id, tell_id, error, notification_id),
    )


def expire(db: apsw.Connection, now: float) -> int:
    db.execute(
        "UPDATE notifications SET status = 'expired', error = 'not delivered before its TTL' "
        "WHERE status = 'pending' AND expires_at <= ?",
        (now,),
    )
    return db.changes()


def reset_delivering(db: apsw.Connection) -> int:
    """At start-up: a delivery that was in flight when irisd died is retried."""
    db.execute("UPDATE notifications SET status = 'pending' WHERE status = 'delivering'")
    return db.changes()
