"""The home irisd's record of the remote tells it took (SQL next to its one user).

A row is written before the message is acked, and before the tell is handed to the
dispatcher, so a redelivered message is recognised whatever moment irisd died at:

* no row: never seen; take it;
* a row with no local tell: irisd died between writing it and recording its local tell
  (so the message was never acked, and comes again): the tell is looked for among the
  tells from that caller made since (``find_submitted``): adopted if it is there,
  submitted now if not;
* a row with its local tell: answered from that tell (its final result is sent again
  if the caller never got it).

The caller's side keeps which home each of its remote tells was sent to
(``mesh_outbox``): a result is taken only from that home (the subject it comes on names
the irisd whose credentials published it), also after a restart.

The tables are the mesh's own (``CREATE TABLE IF NOT EXISTS``), in irisd's database. Their
rows live as long as the tells they speak of: irisd's retention prunes them with the tells.
"""

from __future__ import annotations

import apsw
import msgspec

SCHEMA = """
CREATE TABLE IF NOT EXISTS mesh_inbox (
    remote_id    TEXT PRIMARY KEY,   -- the caller's tell id (the JetStream message id)
    caller       TEXT NOT NULL,      -- the caller's irisd
    local_id     TEXT,               -- this irisd's tell, once submitted
    received_at  REAL NOT NULL,
    replied_at   REAL                -- the final result was stored in JetStream
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mesh_outbox (
    tell_id      TEXT PRIMARY KEY,   -- this irisd's tell to a remote team
    home         TEXT NOT NULL       -- the irisd it was sent to: the one that may answer it
) WITHOUT ROWID;
"""


class Inbound(msgspec.Struct, frozen=True):
    remote_id: str
    caller: str
    local_id: str | None
    replied: bool
    received_at: float = 0.0


def ensure(db: apsw.Connection) -> None:
    db.execute(SCHEMA)


def sending(db: apsw.Connection, tell_id: str, home: str) -> None:
    """(the caller's side) ``tell_id`` goes to ``home``: only its result counts."""
    db.execute("INSERT OR REPLACE INTO mesh_outbox (tell_id, home) VALUES (?, ?)", (tell_id, home))


def home_of(db: apsw.Connection, tell_id: str) -> str | None:
    row = db.execute("SELECT home FROM mesh_outbox WHERE tell_id = ?", (tell_id,)).fetchone()
    return str(row[0]) if row else None


def get(db: apsw.Connection, remote_id: str) -> Inbound | None:
    row = db.execute(
        "SELECT remote_id, caller, local_id, replied_at, received_at FROM mesh_inbox WHERE remote_id = ?",
        (remote_id,),
    ).fetchone()
    return _inbound(row) if row else None


def receive(db: apsw.Connection, remote_id: str, caller: str, now: float) -> Inbound | None:
    """Record a remote tell as received; its earlier record instead, if it has one (one
    trip to the database thread for both: this is on every remote tell's way)."""
    known = get(db, remote_id)
    if known is None:
        db.execute(
            "INSERT INTO mesh_inbox (remote_id, caller, received_at) VALUES (?, ?, ?)", (remote_id, caller, now)
        )
    return known


def submitted(db: apsw.Connection, remote_id: str, local_id: str) -> None:
    db.execute("UPDATE mesh_inbox SET local_id = ? WHERE remote_id = ?", (local_id, remote_id))


def replied(db: apsw.Connection, stored: dict[str, float]) -> None:
    """The final results of these remote tells (id -> when) are stored in JetStream: one
    transaction for all of them."""
    with db:
        db.executemany("UPDATE mesh_inbox SET replied_at = ? WHERE remote_id = ?",
                       [(at, remote_id) for remote_id, at in stored.items()])


def unreplied(db: apsw.Connection) -> list[Inbound]:
    rows = db.execute(
        "SELECT remote_id, caller, local_id FROM mesh_inbox WHERE replied_at IS NULL ORDER BY received_at"
    ).fetchall()
    return [Inbound(str(r[0]), str(r[1]), str(r[2]) if r[2] is not None else None, False) for r in rows]


def by_local(db: apsw.Connection, local_id: str) -> Inbound | None:
    row = db.execute(
        "SELECT remote_id, caller, local_id, replied_at, received_at FROM mesh_inbox WHERE local_id = ?",
        (local_id,),
    ).fetchone()
    return _inbound(row) if row else None


def _inbound(row: tuple[object, ...]) -> Inbound:
    received = row[4]
    return Inbound(
        str(row[0]), str(row[1]), str(row[2]) if row[2] is not None else None, row[3] is not None,
        float(received) if isinstance(received, int | float) else 0.0,
    )


def prune(db: apsw.Connection, received_before: float) -> int:
    """Retention: the records of tells that are gone. A caller's record goes with its tell;
    a home's once its tell is gone (or never was made), its result was stored, and it was
    received before ``received_before`` (a message JetStream could still redeliver is far
    younger). An unreplied one stays: its result is still to be sent."""
    with db:
        db.execute("DELETE FROM mesh_outbox WHERE tell_id NOT IN (SELECT id FROM tells)")
        pruned = db.changes()
        db.execute(
            "DELETE FROM mesh_inbox WHERE replied_at IS NOT NULL AND received_at < ? "
            "AND (local_id IS NULL OR local_id NOT IN (SELECT id FROM tells))",
            (received_before,),
        )
        pruned += db.changes()
    return pruned


def find_submitted(db: apsw.Connection, from_team: str, to_team: str, message: str, since: float) -> str | None:
    """The local tell made for a remote tell whose record has none yet (irisd died in
    between): the first of that sender, team and message made since it was received."""
    row = db.execute(
        "SELECT id FROM tells WHERE from_team = ? AND to_team = ? AND message = ? AND created_at >= ? "
        "AND id NOT IN (SELECT local_id FROM mesh_inbox WHERE local_id IS NOT NULL) "
        "ORDER BY created_at LIMIT 1",
        (from_team, to_team, message, since - 1.0),
    ).fetchone()
    return str(row[0]) if row else None
