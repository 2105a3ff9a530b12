"""Storage faults at every write site, on trio's autojump clock with fake children: a
write that fails fails only its own operation, with a clear message; the daemon's core
stays up, and the stored state converges once writes succeed again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import apsw
import trio
import trio.testing

from fakes.child import FakeChild
from fakes.core import no_events, running_core, teams_config
from fakes.faults import WriteFaults
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.store import notifications, tells
from irisd.store.db import StoreError, open_database, store_error
from protocol.messages import GetStatus, StatusReply, Tell, TellReply


@asynccontextmanager
async def core_with_faults(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, WriteFaults]]:
    connection = open_database(tmp_path / "iris.db")
    faults = WriteFaults().install(connection)
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha"), connection=connection) as dispatcher:
        faults.writes = 0  # count from here: start-up is another test
        yield dispatcher, faults


async def answer_every_turn(stop: trio.Event) -> None:
    """Play claude: every user turn written to any fake child gets a result."""
    answered: dict[int, int] = {}
    while not stop.is_set():
        for child in list(FakeChild.instances):
            done = answered.get(id(child), 0)
            if len(child.sent) > done and child.returncode is None:
                answered[id(child)] = len(child.sent)
                await child.text("ok")
                await child.result("ok")
        await trio.sleep(0.5)


async def persisted_tell(core: Dispatcher, text: str) -> str:
    """Store a notification; a refused write is a clear error and the sender tries again."""
    while True:
        try:
            reply = await core.dispatch(Tell(to_team="alpha", message=text, persist=True), OWNER, no_events)
        except StoreError as exc:
            assert "cannot be written: the disk is full; free space on that disk" in exc.message
            continue
        return reply.notification.id  # type: ignore[union-attr]


async def tell_until_answered(core: Dispatcher) -> object:
    """A plain tell; when the Nth write is one of its own, it fails with the reason (its
    row refused: an error; its spawn refused: a failed tell), and the sender sends it again."""
    for _ in range(2):
        try:
            reply = await core.dispatch(Tell(to_team="alpha", message="still there?"), OWNER, no_events)
        except StoreError as exc:
            assert "the disk is full" in exc.message
            continue
        if isinstance(reply, TellReply) and reply.status == "failed":
            assert "the disk is full" in reply.tell.error
            continue
        return reply
    raise AssertionError("a single failed write failed a tell twice")


async def converged(core: Dispatcher, notification_id: str) -> None:
    while True:
        row = await core.store.call(notifications.get, notification_id)
        assert row is not None
        stored = await core.store.call(tells.get, row.tell_id) if row.tell_id else None
        pairs = list(core.supervisor.pairs.values())
        if (
            row.status == "delivered"
            and stored is not None
            and stored.status == "completed"
            and all(len(pair.writes) == 0 for pair in pairs)
        ):
            return
        await trio.sleep(1)


async def scenario(tmp_path: Path, fail_nth: int) -> int:
    """A persisted tell, delivered; then a plain tell. Returns how many writes it made."""
    async with core_with_faults(tmp_path) as (core, faults):
        faults.fail_nth = fail_nth
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_every_turn, stop)
            with trio.fail_after(600):
                notification_id = await persisted_tell(core, "remember this")
                await converged(core, notification_id)
                reply = await tell_until_answered(core)
                assert isinstance(reply, TellReply) and reply.status == "completed", reply
                status = await core.dispatch(GetStatus(), OWNER, no_events)
                assert isinstance(status, StatusReply)
            stop.set()
        # The nth write failed, once: unless this run made fewer writes (how often a running
        # tell's lines are written depends on how the turn's lines fall on its 0.5 s timer).
        assert faults.failed == (1 if 0 < fail_nth <= faults.writes else 0)
        return faults.writes


async def test_a_failing_write_at_any_site_fails_only_its_operation_and_the_state_converges(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    total = await scenario(tmp_path / "clean", 0)
    assert total >= 10  # notification, tells, transcript lines, process states, sessions...
    for n in range(1, total + 1):
        await scenario(tmp_path / f"fail-{n}", n)


async def test_while_the_disk_is_full_the_courier_and_pairs_wait_then_converge(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with core_with_faults(tmp_path) as (core, faults):
        notification_id = await persisted_tell(core, "deliver me")
        faults.failing = True  # from now on every write fails, for a while
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_every_turn, stop)
            await trio.sleep(120)
            status = await core.dispatch(GetStatus(), OWNER, no_events)  # still serving
            assert isinstance(status, StatusReply)
            row = await core.store.call(notifications.get, notification_id)
            assert row is not None and row.status == "pending"
            faults.failing = False
            freed_at = trio.current_time()
            with trio.fail_after(120):
                await converged(core, notification_id)
            assert trio.current_time() - freed_at <= 31  # the backoff is capped at 30 s
            stop.set()
        assert faults.failed > 0


def test_storage_errors_say_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "iris.db"
    full = store_error(apsw.FullError("database or disk is full"), path)
    assert full.message == (
        f"the database at {path} cannot be written: the disk is full; free space on that disk, then try again"
    )
    read_only = store_error(PermissionError(13, "Permission denied"), path, fix="then start irisd again")
    assert "it is read-only (or not yours to write); make it and its folder writable" in read_only.message
    assert read_only.message.endswith("then start irisd again")
    assert "I/O error" in store_error(apsw.IOError("disk I/O error"), path).message
    assert "move it aside" in store_error(apsw.NotADBError("file is not a database"), path).message
