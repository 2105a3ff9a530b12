"""Ids by prefix: people type the start of an id (``iris approve a-d72c``), never all
34 characters. One query per kind of id, answered from the database."""

from __future__ import annotations

import apsw

# kind -> (table, id column)
TABLES = {
    "tell": ("tells", "id"),
    "approval": ("approvals", "id"),
    "rule": ("pair_rules", "approval_id"),
    "question": ("questions", "id"),
    "turn": ("unsolicited", "id"),
    "notification": ("notifications", "id"),
}

# Longer than any id Iris makes; a longer "prefix" can only be the whole id, and SQLite
# refuses a LIKE pattern over 50,000 bytes ("pattern too complex").
LONGEST_ID = 200


def starting_with(db: apsw.Connection, kind: str, prefix: str, limit: int = 6) -> list[str]:
    """Ids of ``kind`` that are ``prefix`` or start with it (at most ``limit``)."""
    table, column = TABLES[kind]
    if len(prefix) > LONGEST_ID:
        return []
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = db.execute(
        f"SELECT {column} FROM {table} WHERE {column} = ? OR {column} LIKE ? ESCAPE '\\' ORDER BY {column} LIMIT ?",
        (prefix, escaped + "%", limit),
    )
    return [str(row[0]) for row in rows]
