"""The storage queries on a real SQLite file: sessions, retention, notifications, approvals."""

from __future__ import annotations

from pathlib import Path

import apsw
import msgspec
import pytest

from irisd.pool.approvals import new_approval_id
from irisd.store import a2a_contexts, approvals, ledger, lines, notifications, sessions, tells, unsolicited
from irisd.store.db import MIGRATIONS, StoreError, migrate, open_database
from irisd.tell.answer import answer_so_far
from protocol.messages import ApprovalInfo, ChainRef, TellInfo


@pytest.fixture
def db(tmp_path: Path) -> apsw.Connection:
    return open_database(tmp_path / "iris.db")


def tell(tell_id: str, *, from_team: str | None = None, created: float, finished: float | None) -> TellInfo:
    status = "completed" if finished is not None else "running"
    return TellInfo(id=tell_id, from_team=from_team, to_team="b", message="m", status=status,  # type: ignore[arg-type]
                    created_at=created, finished_at=finished)


def test_the_external_caller_has_exactly_one_session_per_team(db: apsw.Connection) -> None:
    first = sessions.get_or_create(db, None, "b", now=1.0)
    again = sessions.get_or_create(db, None, "b", now=2.0)
    other = sessions.get_or_create(db, "a", "b", now=3.0)
    assert first.session_id == again.session_id != other.session_id
    assert first.from_team is None and other.from_team == "a"
    assert len(sessions.list_all(db)) == 2


def test_migrations_bring_a_new_database_to_the_latest_version(db: apsw.Connection, tmp_path: Path) -> None:
    assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this irisd knows"):
        open_database(tmp_path / "iris.db")


def test_retention_drops_old_finished_tells_but_keeps_the_newest_and_the_unfinished(db: apsw.Connection) -> None:
    for n in range(5):
        tells.insert(db, tell(f"old{n}", created=n, finished=n + 0.5))
        tells.append_message(db, f"old{n}", n, "result", b"{}")
    tells.insert(db, tell("running", created=0.1, finished=None))
    tells.insert(db, tell("recent", created=100, finished=101))
    assert tells.prune(db, finished_before=50, keep_per_pair=2) == 4  # old0..old3 go
    left = {t.id for t in tells.recent(db, "b", None, all_callers=True, limit=10)}
    assert left == {"old4", "running", "recent"}
    assert tells.messages(db, "old0") == []  # their transcripts went with them


def test_retention_prunes_the_mesh_records_of_tells_that_are_gone_and_keeps_the_rest(db: apsw.Connection) -> None:
    from irisd.mesh import records

    records.ensure(db)
    tells.insert(db, tell("kept", created=100, finished=101))
    records.sending(db, "kept", "home-a")  # the caller's side
    records.sending(db, "gone", "home-a")
    for remote_id, local_id, received, replied in [
        ("r-kept", "kept", 1.0, True),  # its tell is still here
        ("r-gone", "gone", 1.0, True),  # its tell was pruned: goes
        ("r-none", None, 1.0, True),  # never made into a tell, replied: goes
        ("r-unreplied", "gone", 1.0, False),  # its result still to send: stays
        ("r-young", "gone", 90.0, True),  # received after the cutoff: stays
    ]:
        records.receive(db, remote_id, "caller", received)
        if local_id is not None:
            records.submitted(db, remote_id, local_id)
        if replied:
            records.replied(db, {remote_id: received + 1})
    assert records.prune(db, received_before=50.0) == 3
    assert records.home_of(db, "kept") == "home-a" and records.home_of(db, "gone") is None
    left = {r: records.get(db, r) is not None for r in ("r-kept", "r-gone", "r-none", "r-unreplied", "r-young")}
    assert left == {"r-kept": True, "r-gone": False, "r-none": False, "r-unreplied": True, "r-young": True}


def test_unfinished_tells_of_a_dead_daemon_become_interrupted(db: apsw.Connection) -> None:
    tells.insert(db, tell("t1", created=1, finished=None))
    tells.insert(db, tell("t2", created=2, finished=None))
    delta = (b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,'
             b'"delta":{"type":"text_delta","text":"%s"}}}')
    tells.append_message(db, "t2", 3.0, "stream_event", delta % b"half an ")
    tells.append_message(db, "t2", 3.1, "stream_event", delta % b"answer")
    assert tells.interrupt_unfinished(db, now=5.0, answer_of=answer_so_far) == 2
    first, second = tells.get(db, "t1"), tells.get(db, "t2")
    assert first is not None and first.status == "interrupted" and "irisd stopped" in first.error
    assert first.text == ""
    assert second is not None and second.status == "interrupted" and second.text == "half an answer"
    assert "its answer so far is kept" in second.error


def test_notifications_are_delivered_in_order_and_expire(db: apsw.Connection) -> None:
    first = notifications.create(db, "a", "b", "one", now=10.0, ttl_s=100.0)
    second = notifications.create(db, "a", "b", "two", now=11.0, ttl_s=1.0)
    assert [n.message for n in notifications.pending(db)] == ["one", "two"]
    notifications.mark(db, first.id, "delivering", tell_id="t1")
    assert notifications.reset_delivering(db) == 1  # a restart puts it back in line
    assert notifications.expire(db, now=12.0) == 1
    gone = notifications.get(db, second.id)
    assert gone is not None and gone.status == "expired"
    assert [n.id for n in notifications.pending(db)] == [first.id]
    assert notifications.get(db, first.id).attempts == 1  # type: ignore[union-attr]
    notifications.mark(db, first.id, "delivering", tell_id="t2")
    assert notifications.expire(db, now=500.0) == 0  # a delivery under way decides its own outcome
    notifications.mark(db, first.id, "delivered", tell_id="t2")
    assert notifications.get(db, first.id).status == "delivered"  # type: ignore[union-attr]


def test_approvals_have_unguessable_ids_and_remembered_rules_match_exactly(db: apsw.Connection) -> None:
    ids = {new_approval_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 34 for i in ids)  # "a-" + 128 random bits
    info = ApprovalInfo(id=new_approval_id(), from_team=None, to_team="b", tell_id="t", tool_name="Bash",
                        input={"command": "ls", "description": "x"}, status="pending", created_at=1, expires_at=2)
    approvals.insert(db, info, request_id="r1")
    assert [a.id for a in approvals.listing(db, "b", include_decided=False)] == [info.id]
    approvals.remember(db, None, "b", "Bash", {"description": "x", "command": "ls"}, info.id, now=3)
    assert approvals.remembered(db, None, "b", "Bash", {"command": "ls", "description": "x"})  # key order
    assert not approvals.remembered(db, None, "b", "Bash", {"command": "ls -la", "description": "x"})
    assert not approvals.remembered(db, "a", "b", "Bash", {"command": "ls", "description": "x"})  # other pair
    assert approvals.expire_pending(db, now=4.0, reason="restart") == 1
    assert approvals.get(db, info.id).status == "expired"  # type: ignore[union-attr]


def test_ids_are_found_by_prefix_and_a_wildcard_is_only_a_character(db: apsw.Connection) -> None:
    from irisd.store import id_prefixes

    tells.insert(db, tell("abcd1234", created=1, finished=2))
    tells.insert(db, tell("abcd5678", created=1, finished=2))
    assert id_prefixes.starting_with(db, "tell", "abcd") == ["abcd1234", "abcd5678"]
    assert id_prefixes.starting_with(db, "tell", "abcd5") == ["abcd5678"]
    assert id_prefixes.starting_with(db, "tell", "%") == [] and id_prefixes.starting_with(db, "tell", "abc_") == []


def test_an_id_longer_than_any_id_is_looked_up_whole_not_as_a_pattern(db: apsw.Connection) -> None:
    # SQLite refuses a LIKE pattern over 50,000 bytes ("pattern too complex"): a pasted
    # blob given as a task id (A2A GetTask, iris result) must be "no such id", not a
    # database error.
    from irisd.store import id_prefixes

    tells.insert(db, tell("abcd1234", created=1, finished=2))
    assert id_prefixes.starting_with(db, "tell", "a" * 100_000) == []
    assert id_prefixes.starting_with(db, "tell", "abcd1234") == ["abcd1234"]


def test_a_transcript_is_read_as_text_and_a_line_that_is_not_utf8_is_kept(db: apsw.Connection) -> None:
    tells.insert(db, tell("t1", created=1, finished=2))
    tells.append_message(db, "t1", 3.0, "assistant", '{"text":"héllo"}'.encode())
    page = lines.page(db, lines.TELLS, "t1")
    assert [(e.at, e.type, e.raw) for e in page.entries()] == [(3.0, "assistant", '{"text":"héllo"}')]
    assert page.packed == msgspec.msgpack.encode(page.entries())  # as stored: no decoding on the way out
    tells.append_message(db, "t1", 4.0, "other", b'{"text":"\xff"}')  # not UTF-8: read the slow way
    page = lines.page(db, lines.TELLS, "t1")
    assert [e.raw for e in page.entries()] == ['{"text":"héllo"}', '{"text":"\ufffd"}']
    assert tells.messages(db, "t1")[1] == (4.0, "other", b'{"text":"\xff"}')  # its bytes kept


def test_lines_fill_a_row_whatever_the_writes_and_a_larger_line_is_a_row_of_its_own(
    db: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", 1000)
    tells.insert(db, tell("t1", created=1, finished=2))
    written = [(float(n), "assistant", b"x" * 100) for n in range(20)]
    for n in range(0, 12, 3):  # writes of three lines: rows of up to 1,000 bytes
        tells.append_messages(db, "t1", written[n:n + 3])
    tells.append_messages(db, "t1", written[12:])  # one write, the rest of a row and another
    big = (20.0, "result", b"y" * 3000)
    tells.append_messages(db, "t1", [big, (21.0, "result", b"{}")])
    counts = [count for (count,) in db.execute("SELECT count FROM tell_lines WHERE tell_id = 't1' ORDER BY id")]
    assert counts == [7, 7, 6, 1, 1] and sum(counts) == 22
    assert tells.messages(db, "t1") == [*written, big, (21.0, "result", b"{}")]


def test_a_transcript_page_ends_at_the_row_that_takes_it_to_its_line_or_byte_limit(
    db: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK_LINES", 2)  # rows of two lines
    tells.insert(db, tell("t1", created=1, finished=2))
    tells.append_messages(db, "t1", [(float(n), "assistant", b"x" * 100) for n in range(10)])

    def at(page: lines.Page) -> list[float]:
        return [e.at for e in page.entries()]

    by_lines = lines.page(db, lines.TELLS, "t1", max_lines=3, max_bytes=10_000)
    assert at(by_lines) == [0.0, 1.0, 2.0, 3.0] and by_lines.full and by_lines.line_count == 4  # row 2 reached 3
    by_bytes = lines.page(db, lines.TELLS, "t1", by_lines.cursor, max_bytes=300)  # rows of about 260 bytes
    assert at(by_bytes) == [4.0, 5.0, 6.0, 7.0] and by_bytes.full
    one = lines.page(db, lines.TELLS, "t1", by_bytes.cursor, max_bytes=1)
    assert at(one) == [8.0, 9.0] and one.full  # a row larger than the page is a page
    after = lines.page(db, lines.TELLS, "t1", one.cursor)
    assert at(after) == [] and after.line_count == 0 and not after.full and after.cursor == one.cursor
    tells.append_message(db, "t1", 10.0, "other", b'{"text":"\xff"}')  # a new row, not UTF-8: this page the slow way
    slow = lines.page(db, lines.TELLS, "t1", one.cursor)
    assert [e.raw for e in slow.entries()] == ['{"text":"\ufffd"}'] and not slow.full


def test_a_page_after_a_row_that_grew_reads_only_its_new_lines(db: apsw.Connection) -> None:
    tells.insert(db, tell("t1", created=1, finished=2))
    tells.append_messages(db, "t1", [(0.0, "assistant", b"{}"), (1.0, "assistant", b"{}")])
    first = lines.page(db, lines.TELLS, "t1")
    tells.append_messages(db, "t1", [(2.0, "user", b"[]")])  # into the same row
    assert db.execute("SELECT count(*) FROM tell_lines").fetchone() == (1,)
    then = lines.page(db, lines.TELLS, "t1", first.cursor)
    assert [e.at for e in first.entries()] == [0.0, 1.0] and [e.at for e in then.entries()] == [2.0]
    assert lines.page(db, lines.TELLS, "t1", then.cursor).line_count == 0


def test_a_schema_13_database_keeps_every_line_of_its_transcripts_in_order(tmp_path: Path) -> None:
    """Migration 14 moves the lines a row each into rows of many: every line (one not UTF-8
    too) as it was, in order, each tell's and each unsolicited turn's."""
    old = apsw.Connection(str(tmp_path / "old.db"))
    for number, script in enumerate(MIGRATIONS[:13], start=1):
        assert isinstance(script, str)
        old.execute(script)
        old.execute(f"PRAGMA user_version = {number}")
    init = b'{"type":"system","subtype":"init","slash_commands":["review"]}'
    written: dict[str, list[tuple[float, str, bytes]]] = {"t1": [], "t2": []}
    for tell_id in written:
        old.execute("INSERT INTO tells (id, from_team, to_team, message, status, created_at) "
                    "VALUES (?, '', 'beta', 'm', 'completed', 1.0)", (tell_id,))
    for n in range(1200):  # the two tells' lines interleaved, as two pairs wrote them
        tell_id = "t1" if n % 3 else "t2"
        line = (float(n), "system", init) if n == 7 else (float(n), "assistant", b'{"n":%d}' % n)
        written[tell_id].append(line)
        old.execute("INSERT INTO tell_messages (tell_id, at, type, raw) VALUES (?, ?, ?, ?)", (tell_id, *line))
    written["t2"].append((2000.0, "other", b'{"text":"\xff"}'))
    old.execute("INSERT INTO tell_messages (tell_id, at, type, raw) VALUES ('t2', 2000.0, 'other', ?)",
                (b'{"text":"\xff"}',))
    old.execute("INSERT INTO unsolicited (id, from_team, to_team, status, started_at) "
                "VALUES ('u-1', '', 'beta', 'completed', 1.0)")
    old.execute("INSERT INTO unsolicited_messages (turn_id, at, type, raw) VALUES ('u-1', 5.0, 'result', '{}')")
    migrate(old)
    assert old.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    assert tells.messages(old, "t1") == written["t1"] and tells.messages(old, "t2") == written["t2"]
    assert unsolicited.messages(old, "u-1") == [(5.0, "result", b"{}")]
    assert old.execute("SELECT count(*) FROM tell_lines WHERE tell_id = 't1'").fetchone() == (2,)  # 800 lines
    assert tells.latest_init_line(old, "beta") == init
    tables = {name for (name,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "tell_messages" not in tables and "unsolicited_messages" not in tables


def test_notifications_stored_before_chains_were_kept_are_delivered_as_the_start_of_one(tmp_path: Path) -> None:
    old = apsw.Connection(str(tmp_path / "old.db"))
    for number, script in enumerate(MIGRATIONS[:8], start=1):  # a database of schema 8
        assert isinstance(script, str)
        old.execute(script)
        old.execute(f"PRAGMA user_version = {number}")
    old.execute("INSERT INTO notifications (id, from_team, to_team, message, created_at, expires_at) "
                "VALUES ('n-old', 'alpha', 'beta', 'from before', 1.0, 100.0)")
    migrate(old)
    (kept,) = notifications.pending(old)
    assert (kept.id, kept.message, kept.chain) == ("n-old", "from before", None)
    chain = ChainRef(chain_id="c1", hops=2, path=["alpha"])
    assert notifications.create(old, "alpha", "beta", "in a chain", 2.0, 100.0, chain).chain == chain
    assert [n.chain for n in notifications.listing(old, "beta", True)] == [None, chain]


def test_many_tells_read_at_once_are_the_tells_read_one_by_one(db: apsw.Connection) -> None:
    """A Report reads its tells as one JSON array SQLite writes: every field as stored,
    the external caller as None, newest first."""
    odd = TellInfo(id="t1", from_team="a", to_team="b", message='qu"o\\te\n ünï 🦀', status="completed",
                   text="answer", created_at=2.5, finished_at=3.25, cost_usd=0.0123, new_session=True,
                   chain_id="c", hops=2, kind="notification", max_budget_usd=1.5)
    tells.insert(db, odd)
    tells.update(db, odd)
    tells.insert(db, tell("t2", created=4.0, finished=None))
    tells.insert(db, tell("t0", created=1.0, finished=1.5))
    newest = tells.recent_all(db, None, None, None, 10)
    assert [t.id for t in newest] == ["t2", "t1", "t0"]
    assert newest == [tells.get(db, t.id) for t in newest]
    assert newest[0].from_team is None and newest[1].new_session is True
    assert tells.recent(db, "b", "a", all_callers=False, limit=5) == [newest[1]]
    assert tells.recent(db, "b", None, all_callers=True, limit=2) == newest[:2]
    assert tells.recent_all(db, "nobody", None, None, 5) == []


def test_a_thread_has_a_session_of_its_own_beside_the_pairs_default_one(db: apsw.Connection) -> None:
    default = sessions.get_or_create(db, "a", "b", now=1.0)
    auth = sessions.get_or_create(db, "a", "b", now=2.0, thread="auth-refactor")
    again = sessions.get_or_create(db, "a", "b", now=3.0, thread="auth-refactor")
    assert default.session_id != auth.session_id == again.session_id
    assert (default.thread, auth.thread) == ("", "auth-refactor")
    sessions.record_turn(db, "a", "b", 4.0, thread="auth-refactor")
    assert sessions.get(db, "a", "b", thread="auth-refactor").message_count == 1  # type: ignore[union-attr]
    assert sessions.get(db, "a", "b").message_count == 0  # type: ignore[union-attr]
    assert [r.key for r in sessions.list_all(db)] == [("a", "b", ""), ("a", "b", "auth-refactor")]


@pytest.mark.parametrize("schema", [10, 11])  # before agent's migration (11), and after it
def test_a_schema_10_or_11_database_keeps_each_pairs_conversation_as_its_default_thread(
    tmp_path: Path, schema: int
) -> None:
    old = apsw.Connection(str(tmp_path / "old.db"))
    for number, script in enumerate(MIGRATIONS[:schema], start=1):  # a database from before threads (12)
        assert isinstance(script, str)
        old.execute(script)
        old.execute(f"PRAGMA user_version = {number}")
    old.execute("INSERT INTO sessions (from_team, to_team, session_id, created_at, last_used_at, message_count, "
                "context_tokens, compactions) VALUES ('alpha', 'beta', 's-old', 1.0, 2.0, 7, 1234, 2)")
    old.execute("INSERT INTO tells (id, from_team, to_team, message, status, created_at) "
                "VALUES ('t-old', 'alpha', 'beta', 'before threads', 'completed', 1.0)")
    old.execute("INSERT INTO ledger (tell_id, from_team, to_team, chain_id, finished_at, cost_usd) "
                "VALUES ('t-old', 'alpha', 'beta', 't-old', 2.0, 0.5)")
    old.execute("INSERT INTO a2a_contexts (from_team, to_team, agent_url, context_id, updated_at) "
                "VALUES ('alpha', 'web', 'http://agent', 'ctx-1', 2.0)")
    migrate(old)
    assert old.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    kept = sessions.get(old, "alpha", "beta")  # the default thread: no thread named
    assert kept is not None
    assert (kept.session_id, kept.message_count, kept.context_tokens, kept.compactions) == ("s-old", 7, 1234, 2)
    assert sessions.get_or_create(old, "alpha", "beta", now=3.0).session_id == "s-old"  # continued, not new
    assert sessions.get_or_create(old, "alpha", "beta", now=3.0, thread="t2").session_id != "s-old"
    stored = tells.get(old, "t-old")
    assert stored is not None and stored.thread == ""
    assert ledger.pair_spent(old, "alpha", "beta") == 0.5
    assert ledger.pair_spent(old, "alpha", "beta", thread="t2") == 0.0
    assert a2a_contexts.get(old, "alpha", "web", "http://agent").context_id == "ctx-1"
    assert a2a_contexts.get(old, "alpha", "web", "http://agent", thread="t2").context_id == ""
