"""Opening the database and migrating its schema.

The schema version is ``PRAGMA user_version``: migration N brings a database from
version N-1 to N inside one transaction, so a crash mid-migration leaves the old
version intact. WAL with synchronous=NORMAL: a commit survives a crash of irisd
(measured: SIGKILL lost nothing acknowledged); only power loss can take the last ones.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import apsw

from irisd.store import lines
from protocol.errors import IrisError


def _lines_in_rows(db: apsw.Connection) -> None:
    """14: a transcript's lines many to a row (irisd/store/lines.py), each as its
    TranscriptEntry's msgpack; every stored line moved over, in order, then the tables of
    a line per row dropped."""
    db.execute(
        """
        CREATE TABLE tell_lines (
            id       INTEGER PRIMARY KEY,
            tell_id  TEXT NOT NULL REFERENCES tells (id) ON DELETE CASCADE,
            lines    BLOB NOT NULL,      -- each line's msgpack, one after another
            count    INTEGER NOT NULL,   -- lines in it
            clean    INTEGER NOT NULL    -- 1: every line's raw is text (UTF-8)
        );
        CREATE INDEX tell_lines_by_tell ON tell_lines (tell_id, id);
        CREATE TABLE unsolicited_lines (
            id       INTEGER PRIMARY KEY,
            turn_id  TEXT NOT NULL REFERENCES unsolicited (id) ON DELETE CASCADE,
            lines    BLOB NOT NULL,
            count    INTEGER NOT NULL,
            clean    INTEGER NOT NULL
        );
        CREATE INDEX unsolicited_lines_by_turn ON unsolicited_lines (turn_id, id);
        """
    )
    for old, table in (("tell_messages", lines.TELLS), ("unsolicited_messages", lines.UNSOLICITED)):
        key = table[1]
        owner: str | None = None
        batch: list[lines.Line] = []
        for row_owner, at, type_, raw in db.execute(f"SELECT {key}, at, type, raw FROM {old} ORDER BY {key}, id"):
            if row_owner != owner or len(batch) >= lines.CHUNK_LINES:
                if batch:
                    lines.append(db, table, owner or "", batch)
                owner, batch = row_owner, []
            batch.append((float(at), str(type_), raw if isinstance(raw, bytes) else str(raw).encode()))
        if batch:
            lines.append(db, table, owner or "", batch)
        db.execute(f"DROP TABLE {old}")


MIGRATIONS: list[str | Callable[[apsw.Connection], None]] = [
    # 1: sessions per (from_team, to_team) pair and tells with their transcript.
    """
    CREATE TABLE sessions (
        from_team        TEXT NOT NULL,      -- '' is the external caller (no team)
        to_team          TEXT NOT NULL,
        session_id       TEXT NOT NULL UNIQUE,
        created_at       REAL NOT NULL,
        last_used_at     REAL NOT NULL,
        message_count    INTEGER NOT NULL DEFAULT 0,
        status           TEXT NOT NULL DEFAULT 'active',
        process_state    TEXT NOT NULL DEFAULT 'stopped',
        last_response_at REAL,
        launch_command   TEXT,               -- JSON argv of the last spawn
        team_snapshot    TEXT,               -- JSON of the team config used
        PRIMARY KEY (from_team, to_team)
    ) WITHOUT ROWID;

    CREATE TABLE tells (
        id           TEXT PRIMARY KEY,
        from_team    TEXT NOT NULL,
        to_team      TEXT NOT NULL,
        session_id   TEXT NOT NULL DEFAULT '',
        message      TEXT NOT NULL,
        status       TEXT NOT NULL,
        text         TEXT NOT NULL DEFAULT '',
        error        TEXT NOT NULL DEFAULT '',
        created_at   REAL NOT NULL,
        started_at   REAL,
        finished_at  REAL,
        cost_usd     REAL,
        usage        TEXT,
        new_session  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX tells_by_pair ON tells (to_team, from_team, created_at);
    CREATE INDEX tells_by_status ON tells (status) WHERE status IN ('queued', 'running');

    CREATE TABLE tell_messages (
        id       INTEGER PRIMARY KEY,
        tell_id  TEXT NOT NULL REFERENCES tells (id) ON DELETE CASCADE,
        at       REAL NOT NULL,
        type     TEXT NOT NULL,
        raw      BLOB NOT NULL
    );
    CREATE INDEX tell_messages_by_tell ON tell_messages (tell_id, id);
    """,
    # 2: notifications (persisted fire-and-forget tells) and the chain of nested tells.
    """
    CREATE TABLE notifications (
        id          TEXT PRIMARY KEY,
        from_team   TEXT NOT NULL,
        to_team     TEXT NOT NULL,
        message     TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'pending',  -- pending, delivering, delivered, expired
        created_at  REAL NOT NULL,
        expires_at  REAL NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        tell_id     TEXT NOT NULL DEFAULT '',
        error       TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX notifications_pending ON notifications (status, created_at);
    ALTER TABLE tells ADD COLUMN chain_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE tells ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tells ADD COLUMN kind TEXT NOT NULL DEFAULT 'tell';
    """,
    # 3: permission approvals, and the rules remembered from them per pair.
    """
    CREATE TABLE approvals (
        id           TEXT PRIMARY KEY,
        from_team    TEXT NOT NULL,
        to_team      TEXT NOT NULL,
        tell_id      TEXT NOT NULL,
        request_id   TEXT NOT NULL,
        tool_name    TEXT NOT NULL,
        input        TEXT NOT NULL,                   -- JSON
        suggestions  TEXT NOT NULL DEFAULT '[]',      -- JSON
        status       TEXT NOT NULL DEFAULT 'pending', -- pending, allowed, denied, expired
        created_at   REAL NOT NULL,
        expires_at   REAL NOT NULL,
        decided_at   REAL,
        decided_by   TEXT NOT NULL DEFAULT '',
        reason       TEXT NOT NULL DEFAULT '',
        remembered   INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX approvals_pending ON approvals (status, created_at);

    CREATE TABLE pair_rules (
        from_team   TEXT NOT NULL,
        to_team     TEXT NOT NULL,
        tool_name   TEXT NOT NULL,
        input       TEXT NOT NULL,                    -- canonical JSON of the allowed input
        created_at  REAL NOT NULL,
        approval_id TEXT NOT NULL,
        PRIMARY KEY (from_team, to_team, tool_name, input)
    );
    """,
    # 4: the cost ledger (a tell's figures from claude's result line), and pending
    # questions (answers that asked their caller something while nobody waited).
    """
    ALTER TABLE tells ADD COLUMN input_tokens INTEGER;
    ALTER TABLE tells ADD COLUMN output_tokens INTEGER;
    ALTER TABLE tells ADD COLUMN cache_read_tokens INTEGER;
    ALTER TABLE tells ADD COLUMN cache_creation_tokens INTEGER;
    ALTER TABLE tells ADD COLUMN num_turns INTEGER;
    ALTER TABLE tells ADD COLUMN duration_ms INTEGER;
    ALTER TABLE tells ADD COLUMN max_budget_usd REAL;

    -- One row per tell claude reported figures for; kept when the tell is cleared or
    -- pruned, so budgets and 'iris costs' do not forget what was spent.
    CREATE TABLE ledger (
        tell_id                TEXT PRIMARY KEY,
        from_team              TEXT NOT NULL,
        to_team                TEXT NOT NULL,
        chain_id               TEXT NOT NULL,
        finished_at            REAL NOT NULL,
        cost_usd               REAL NOT NULL,
        input_tokens           INTEGER NOT NULL DEFAULT 0,
        output_tokens          INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens      INTEGER NOT NULL DEFAULT 0,
        cache_creation_tokens  INTEGER NOT NULL DEFAULT 0,
        num_turns              INTEGER NOT NULL DEFAULT 0,
        duration_ms            INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX ledger_by_time ON ledger (finished_at);
    CREATE INDEX ledger_by_chain ON ledger (chain_id);

    CREATE TABLE questions (
        id              TEXT PRIMARY KEY,
        from_team       TEXT NOT NULL,                  -- '' is the external caller
        to_team         TEXT NOT NULL,
        session_id      TEXT NOT NULL DEFAULT '',
        tell_id         TEXT NOT NULL,
        question        TEXT NOT NULL,
        context         TEXT NOT NULL,
        confidence      REAL NOT NULL,
        pattern         TEXT NOT NULL DEFAULT '',
        status          TEXT NOT NULL DEFAULT 'pending', -- pending, answered, expired, dismissed
        created_at      REAL NOT NULL,
        expires_at      REAL NOT NULL,
        closed_at       REAL,
        closed_by       TEXT NOT NULL DEFAULT '',
        answer          TEXT NOT NULL DEFAULT '',
        answer_tell_id  TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX questions_by_status ON questions (status, created_at);
    """,
    # 5: turns a pair's claude took while no tell was running, with the lines it printed.
    """
    CREATE TABLE unsolicited (
        id           TEXT PRIMARY KEY,
        from_team    TEXT NOT NULL,
        to_team      TEXT NOT NULL,
        session_id   TEXT NOT NULL DEFAULT '',
        status       TEXT NOT NULL,
        text         TEXT NOT NULL DEFAULT '',
        error        TEXT NOT NULL DEFAULT '',
        started_at   REAL NOT NULL,
        finished_at  REAL,
        cost_usd     REAL
    );
    CREATE INDEX unsolicited_by_time ON unsolicited (started_at);

    CREATE TABLE unsolicited_messages (
        id       INTEGER PRIMARY KEY,
        turn_id  TEXT NOT NULL REFERENCES unsolicited (id) ON DELETE CASCADE,
        at       REAL NOT NULL,
        type     TEXT NOT NULL,
        raw      BLOB NOT NULL
    );
    CREATE INDEX unsolicited_messages_by_turn ON unsolicited_messages (turn_id, id);
    """,
    # 6: each pair's spending, read when its actor starts and for 'iris sessions'
    # (measured: summing every pair took 54 ms over 100,000 ledger rows without this
    # covering index, 7 ms with it).
    """
    CREATE INDEX ledger_by_pair ON ledger (from_team, to_team, cost_usd);
    """,
    # 7: what an 'iris ask' cost (iris-agent's turn) is a row of its own kind, so budgets count it.
    """
    ALTER TABLE ledger ADD COLUMN kind TEXT NOT NULL DEFAULT 'tell';
    """,
    # 8: each pair's conversation with an A2A agent (its contextId), and the task a reply
    # continues when the agent asked for input, so both outlive an irisd restart.
    """
    CREATE TABLE a2a_contexts (
        from_team   TEXT NOT NULL,
        to_team     TEXT NOT NULL,
        agent_url   TEXT NOT NULL,
        context_id  TEXT NOT NULL DEFAULT '',
        open_task   TEXT NOT NULL DEFAULT '',
        updated_at  REAL NOT NULL,
        PRIMARY KEY (from_team, to_team)
    );
    """,
    # 9: the chain a notification was sent in (its sender's chain id and hop, and the teams
    # waiting, as JSON), so its delivery continues the chain: the hop limit, the loop guard
    # and the chain's budget hold for stored tells too. '' / 0 / '[]': sent outside any
    # chain (every row stored before this), delivered as the start of a chain of its own.
    """
    ALTER TABLE notifications ADD COLUMN chain_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE notifications ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE notifications ADD COLUMN path TEXT NOT NULL DEFAULT '[]';
    """,
    # 10: how full each pair's conversation is (the tokens of its last answer, against the
    # model's context window), and its compactions (irisd/pool/compaction.py): how many,
    # the last one's time, trigger ('iris', 'manual', 'auto'), tokens and message count;
    # and the archive (irisd/pool/archive.py).
    """
    ALTER TABLE sessions ADD COLUMN context_tokens INTEGER;
    ALTER TABLE sessions ADD COLUMN context_window INTEGER;
    ALTER TABLE sessions ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN last_compacted_at REAL;
    ALTER TABLE sessions ADD COLUMN compact_trigger TEXT NOT NULL DEFAULT '';
    ALTER TABLE sessions ADD COLUMN compact_tokens_before INTEGER;
    ALTER TABLE sessions ADD COLUMN compact_tokens_after INTEGER;
    ALTER TABLE sessions ADD COLUMN compact_messages_before INTEGER;
    -- archived conversations (status 'archived'): since when, and when their files went
    ALTER TABLE sessions ADD COLUMN archived_at REAL;
    ALTER TABLE sessions ADD COLUMN files_deleted_at REAL;
    """,
    # 11: iris-agent's actions as approvals of their own kind (kind 'agent': what it proposes,
    # said in summary), and its watcher's own conversation per pair (agent_sessions) with its
    # messages (agent_messages): what it was shown, what it classified, with what confidence.
    """
    ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'tool';
    ALTER TABLE approvals ADD COLUMN summary TEXT NOT NULL DEFAULT '';

    CREATE TABLE agent_sessions (
        from_team   TEXT NOT NULL,                  -- '' is the external caller
        to_team     TEXT NOT NULL,
        session_id  TEXT NOT NULL,                  -- iris-agent's claude session for this pair
        created_at  REAL NOT NULL,
        updated_at  REAL NOT NULL,
        turns       INTEGER NOT NULL DEFAULT 0,
        cost_usd    REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (from_team, to_team)
    );

    CREATE TABLE agent_messages (
        id              INTEGER PRIMARY KEY,
        from_team       TEXT NOT NULL,
        to_team         TEXT NOT NULL,
        question_id     TEXT NOT NULL DEFAULT '',
        at              REAL NOT NULL,
        role            TEXT NOT NULL,              -- 'iris' (what it was shown), 'agent' (its answer)
        text            TEXT NOT NULL,
        classification  TEXT NOT NULL DEFAULT '',   -- person, team, none ('' for what it was shown)
        confidence      REAL,
        suggestion      TEXT NOT NULL DEFAULT '',   -- the answer it suggests the asked caller give
        verdict         TEXT NOT NULL DEFAULT '',   -- the AgentVerdict shown with the question (JSON)
        cost_usd        REAL
    );
    CREATE INDEX agent_messages_by_pair ON agent_messages (from_team, to_team, id);
    CREATE INDEX agent_messages_by_question ON agent_messages (question_id);
    """,
    # 12: threads, several conversations per pair: a session, a tell, a ledger row and an A2A
    # context belong to (from_team, to_team, thread). '' is the default thread: every row
    # stored before keeps being the pair's one conversation, as it was.
    """
    CREATE TABLE sessions_by_thread (
        from_team        TEXT NOT NULL,
        to_team          TEXT NOT NULL,
        thread           TEXT NOT NULL DEFAULT '',
        session_id       TEXT NOT NULL UNIQUE,
        created_at       REAL NOT NULL,
        last_used_at     REAL NOT NULL,
        message_count    INTEGER NOT NULL DEFAULT 0,
        status           TEXT NOT NULL DEFAULT 'active',
        process_state    TEXT NOT NULL DEFAULT 'stopped',
        last_response_at REAL,
        launch_command   TEXT,
        team_snapshot    TEXT,
        context_tokens INTEGER,
        context_window INTEGER,
        compactions INTEGER NOT NULL DEFAULT 0,
        last_compacted_at REAL,
        compact_trigger TEXT NOT NULL DEFAULT '',
        compact_tokens_before INTEGER,
        compact_tokens_after INTEGER,
        compact_messages_before INTEGER,
        archived_at REAL,
        files_deleted_at REAL,
        PRIMARY KEY (from_team, to_team, thread)
    ) WITHOUT ROWID;
    INSERT INTO sessions_by_thread (
        from_team, to_team, session_id, created_at, last_used_at, message_count, status, process_state,
        last_response_at, launch_command, team_snapshot, context_tokens, context_window, compactions,
        last_compacted_at, compact_trigger, compact_tokens_before, compact_tokens_after,
        compact_messages_before, archived_at, files_deleted_at)
    SELECT
        from_team, to_team, session_id, created_at, last_used_at, message_count, status, process_state,
        last_response_at, launch_command, team_snapshot, context_tokens, context_window, compactions,
        last_compacted_at, compact_trigger, compact_tokens_before, compact_tokens_after,
        compact_messages_before, archived_at, files_deleted_at
    FROM sessions;
    DROP TABLE sessions;
    ALTER TABLE sessions_by_thread RENAME TO sessions;

    ALTER TABLE tells ADD COLUMN thread TEXT NOT NULL DEFAULT '';
    ALTER TABLE ledger ADD COLUMN thread TEXT NOT NULL DEFAULT '';
    DROP INDEX ledger_by_pair;
    CREATE INDEX ledger_by_pair ON ledger (from_team, to_team, thread, cost_usd);

    CREATE TABLE a2a_contexts_by_thread (
        from_team   TEXT NOT NULL,
        to_team     TEXT NOT NULL,
        thread      TEXT NOT NULL DEFAULT '',
        agent_url   TEXT NOT NULL,
        context_id  TEXT NOT NULL DEFAULT '',
        open_task   TEXT NOT NULL DEFAULT '',
        updated_at  REAL NOT NULL,
        PRIMARY KEY (from_team, to_team, thread)
    );
    INSERT INTO a2a_contexts_by_thread (from_team, to_team, agent_url, context_id, open_task, updated_at)
    SELECT from_team, to_team, agent_url, context_id, open_task, updated_at FROM a2a_contexts;
    DROP TABLE a2a_contexts;
    ALTER TABLE a2a_contexts_by_thread RENAME TO a2a_contexts;
    """,
    # 13: an approval of kind 'input' (the kind column is 11's) is a form one of the team's
    # MCP servers asks its person to fill in
    """
    ALTER TABLE approvals ADD COLUMN message TEXT NOT NULL DEFAULT '';
    ALTER TABLE approvals ADD COLUMN schema TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE approvals ADD COLUMN content TEXT NOT NULL DEFAULT '{}';
    """,
    # 14: a transcript's lines many to a row (irisd/store/lines.py): reading 10,000 lines was
    # stepping through 10,000 rows and making an object of each, most of irisd's time on it.
    _lines_in_rows,
]


class StoreError(IrisError):
    code = "store"


_UNWRITABLE_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}


def store_error(
    exc: BaseException, path: Path | str, *, fix: str = "then try again", what: str = "the database at"
) -> StoreError:
    """The one translation of a storage failure (apsw or OS) into what a person can do.

    ``fix`` ends the advice: "then try again" for a request, "then start irisd again" at
    start-up."""
    code = exc.errno if isinstance(exc, OSError) else None
    if isinstance(exc, apsw.FullError) or code == errno.ENOSPC:
        problem, advice = "the disk is full", f"free space on that disk, {fix}"
    elif code == errno.EDQUOT:
        problem, advice = "your disk quota is used up", f"free space, {fix}"
    elif isinstance(exc, apsw.ReadOnlyError) or code in _UNWRITABLE_ERRNOS:
        problem = "it is read-only (or not yours to write)"
        advice = f"make it and its folder writable for uid {os.getuid()}, or set IRIS_HOME to a folder of yours, {fix}"
    elif isinstance(exc, apsw.IOError) or code == errno.EIO:
        problem, advice = f"the disk reports an I/O error ({exc})", f"check the disk (dmesg), {fix}"
    elif isinstance(exc, apsw.CantOpenError):
        problem = "it cannot be opened"
        advice = f"check that its folder exists and is writable for uid {os.getuid()}, {fix}"
    elif isinstance(exc, apsw.BusyError | apsw.LockedError):
        problem, advice = "another program holds a lock on it", f"close that program (an sqlite3 shell?), {fix}"
    elif isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        problem, advice = f"it is damaged ({exc})", "move it aside and irisd will start with a new one"
    else:
        problem, advice = str(exc), "see irisd's log"
    return StoreError(f"{what} {path} cannot be written: {problem}; {advice}")


def open_database(path: Path) -> apsw.Connection:
    """Open (creating if needed) and migrate the database at ``path``; StoreError (with
    the fix) if it cannot be opened or written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        connection = apsw.Connection(str(path))
        connection.setbusytimeout(5000)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        migrate(connection)
        os.chmod(path, 0o600)
    except (apsw.Error, OSError) as exc:
        raise store_error(exc, path, fix="then start irisd again") from None
    return connection


def open_reader(path: Path) -> apsw.Connection:
    """A second connection to the (already opened and migrated) database, for the large
    reads and the WAL checkpoints that run in the worker thread (irisd/store/facade.py)."""
    try:
        connection = apsw.Connection(str(path))
        connection.setbusytimeout(5000)
        connection.execute("PRAGMA synchronous = NORMAL")
    except apsw.Error as exc:
        raise store_error(exc, path, fix="then start irisd again") from None
    return connection


def migrate(connection: apsw.Connection) -> None:
    version = _user_version(connection)
    if version > len(MIGRATIONS):
        raise StoreError(
            f"the database is at schema version {version}, newer than this irisd knows "
            f"({len(MIGRATIONS)}); upgrade Iris"
        )
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        with connection:
            if isinstance(script, str):
                connection.execute(script)
            else:
                script(connection)
            connection.execute(f"PRAGMA user_version = {number}")


def _user_version(connection: apsw.Connection) -> int:
    row = connection.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0
