"""The caller's side of a remote tell (irisd/mesh/executor.py) in the daemon's services on
trio's autojump clock, with a mesh face that stands in for NATS: what the tell's phase
says while the home has not taken it, and the home's messages carried to its end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import apsw
import msgspec
import pytest
import trio
import trio.testing

from fakes.core import no_events, note_commits, running_core, teams_config
from iris_common.config import Team
from iris_common.mesh import HEARTBEAT_S
from irisd.dispatch import Dispatcher
from irisd.mesh.executor import Delivery, MeshExecutor, Route
from irisd.mesh.wire import CancelMsg, FinalMsg, LiveMsg, RemoteTellMsg
from irisd.pool.remote import RemoteTell, TellReport
from irisd.store import tells as stored_tells
from protocol.messages import Event, Tell, TellPhaseEvent, TellState


class FakeMesh:
    """The mesh face an executor sees: every publish stored at once; ``words`` is what
    ``unreachable_words`` says of the home."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.words = ""
        self.published: list[RemoteTellMsg | CancelMsg] = []
        self.ends: list[tuple[str, str]] = []

    def unreachable_words(self, home: str) -> str:
        return self.words

    def chain_path(self, tell: RemoteTell) -> list[str]:
        return []

    def ended(self, tell_id: str, home: str) -> None:
        self.ends.append((tell_id, home))

    async def publish_tell(self, home: str, message: RemoteTellMsg | CancelMsg, report: TellReport | None) -> None:
        self.published.append(message)


@pytest.fixture
async def mesh(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, FakeMesh]]:
    face = FakeMesh()
    team = Team(name="far", path="", idle_timeout_ms=1, response_timeout_ms=1)
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha")) as dispatcher:
        dispatcher.supervisor.remote_teams.register(MeshExecutor(team, "ws-2", face))
        yield dispatcher, face


async def deliver(face: FakeMesh, message: LiveMsg | FinalMsg) -> Delivery:
    """Hand ``message`` to its tell's executor and wait until it is handled."""
    delivery = Delivery(message, trio.Event())
    face.routes[message.id].send.send_nowait(delivery)
    await delivery.handled.wait()
    return delivery


async def test_the_phase_says_where_a_tell_waits_until_the_home_takes_it_then_its_end_is_the_homes(
    mesh: tuple[Dispatcher, FakeMesh], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, face = mesh
    phases: list[tuple[float, str, str]] = []
    start = trio.current_time()

    async def on_event(event: Event) -> None:
        if isinstance(event, TellPhaseEvent):
            phases.append((trio.current_time() - start, event.phase.name, event.phase.detail))

    async def home() -> None:
        await trio.testing.wait_all_tasks_blocked()
        (tell_id,) = face.routes
        await trio.sleep(1)
        face.words = "home irisd `ws-2` unreachable since 12:00"  # said at the next look: 2 s in
        await trio.sleep(HEARTBEAT_S + 1)
        await deliver(face, LiveMsg(id=tell_id, status="queued", detail="2 ahead"))
        await trio.sleep(1)
        await deliver(face, LiveMsg(id=tell_id, status="running"))
        face.words = "home irisd `ws-2` stopped since 12:01"  # taken: no longer the tell's phase
        await trio.sleep(3 * HEARTBEAT_S)
        await deliver(face, LiveMsg(id=tell_id, text="hel"))
        await deliver(face, FinalMsg(id=tell_id, status="completed", text="hello", cost_usd=0.5))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(home)
        reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="hi", stream=True),
                                            on_event)
    assert reply.status == "completed" and reply.tell.text == "hello" and reply.tell.cost_usd == 0.5
    assert trio.current_time() - start == 1 + HEARTBEAT_S + 1 + 1 + 3 * HEARTBEAT_S
    assert [p for p in phases if p[1] == "queued"] == [
        (0, "queued", "stored for home irisd `ws-2`"),
        (HEARTBEAT_S, "queued", "home irisd `ws-2` unreachable since 12:00"),
        (HEARTBEAT_S + 2, "queued", "queued on home irisd `ws-2`: 2 ahead"),
    ]
    assert [type(m) for m in face.published] == [RemoteTellMsg]
    assert not face.routes  # the route goes with the tell


async def test_a_home_notes_its_stored_results_in_one_write_and_at_once_when_it_stops(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from irisd.mesh import records
    from irisd.mesh.home import REPLIED_NOTE_S, RepliedNotes
    from irisd.store.db import open_database
    from irisd.store.facade import Store

    db = open_database(tmp_path / "iris.db")
    records.ensure(db)
    for remote_id in ("r-1", "r-2", "r-3"):
        records.receive(db, remote_id, "ws-1", 100.0)
    writes: list[dict[str, float]] = []
    write = records.replied

    def counted(connection: apsw.Connection, stored: dict[str, float]) -> None:
        writes.append(dict(stored))
        write(connection, stored)

    monkeypatch.setattr(records, "replied", counted)
    notes = RepliedNotes(Store(db, inline=True))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(notes.run)
        notes.add("r-1", 101.0)
        await trio.sleep(REPLIED_NOTE_S / 2)
        notes.add("r-2", 102.0)
        assert writes == [] and len(records.unreplied(db)) == 3  # not one write per result
        await trio.sleep(REPLIED_NOTE_S / 2)
        await trio.testing.wait_all_tasks_blocked()
        assert writes == [{"r-1": 101.0, "r-2": 102.0}]  # both in one
        assert [known.remote_id for known in records.unreplied(db)] == ["r-3"]
        notes.add("r-3", 103.0)
        nursery.cancel_scope.cancel()  # the home stops: what waits is written now
    assert writes == [{"r-1": 101.0, "r-2": 102.0}, {"r-3": 103.0}]
    assert records.unreplied(db) == []


async def test_the_other_copy_of_a_final_result_is_handled_once_the_first_is_saved(
    mesh: tuple[Dispatcher, FakeMesh], autojump_clock: trio.testing.MockClock
) -> None:
    # The home sends a result twice (live, then stored): the second may come while the first
    # is being saved. Its reader acks it once handled; it must not wait for a reader gone.
    dispatcher, face = mesh
    copies = []

    async def home() -> None:
        await trio.testing.wait_all_tasks_blocked()
        (tell_id,) = face.routes
        for _ in range(2):
            copy = Delivery(FinalMsg(id=tell_id, status="completed", text="hello"), trio.Event())
            face.routes[tell_id].send.send_nowait(copy)
            copies.append(copy)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(home)
        reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="hi"), no_events)
    with trio.fail_after(1):
        for copy in copies:
            await copy.handled.wait()
    assert reply.status == "completed" and reply.tell.text == "hello"
    assert face.ends == [(reply.tell.id, "ws-2")] and not face.routes


@pytest.mark.parametrize("ran_s", [0.0, 3600.0])
async def test_a_tell_whose_end_came_before_its_start_is_dated_by_the_homes_run_time(
    mesh: tuple[Dispatcher, FakeMesh], autojump_clock: trio.testing.MockClock, ran_s: float
) -> None:
    # A short remote tell often ends before the home's "running" reaches the caller: it ran
    # there (ran_s), it did not wait in a queue all along ("45 ms queued" in `iris report`).
    dispatcher, face = mesh

    happened: list[str] = []
    statuses: list[str] = []

    async def home_answers() -> None:
        await trio.testing.wait_all_tasks_blocked()
        (tell_id,) = face.routes
        happened.append("final")
        note_commits(dispatcher, happened)
        await deliver(face, FinalMsg(id=tell_id, status="completed", text="hello", ran_s=ran_s))

    async def on_event(event: Event) -> None:
        if isinstance(event, TellState):
            statuses.append(event.status)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(home_answers)
        request = Tell(to_team="far", from_team="alpha", message="hi", stream=True)
        reply = await dispatcher.tells.tell(request, on_event)
        happened.append("reply")
    await trio.testing.wait_all_tasks_blocked()
    # Its start is written with its end, after the answer left (not in a commit of its own
    # before it), and is seen as ever.
    assert happened == ["final", "reply", "commit"]
    assert statuses == ["queued", "running", "completed"]
    tell = reply.tell
    assert reply.status == "completed" and tell.started_at is not None and tell.finished_at is not None
    if ran_s == 0.0:  # it ran no time there: started as it ended
        assert 0.0 <= tell.finished_at - tell.started_at < 0.5
    else:  # longer than it has existed here (another clock): never before it was made
        assert tell.started_at == tell.created_at
    stored = await dispatcher.tells.store.call(stored_tells.get, tell.id)
    assert stored is not None and stored.started_at == tell.started_at


async def test_a_tell_the_home_refused_unrun_stays_a_tell_that_never_started(
    mesh: tuple[Dispatcher, FakeMesh], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, face = mesh

    async def home() -> None:
        await trio.testing.wait_all_tasks_blocked()
        (tell_id,) = face.routes
        await deliver(face, FinalMsg(id=tell_id, status="failed", error="refused"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(home)
        reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="hi"), no_events)
    assert reply.status == "failed" and reply.tell.started_at is None


def test_the_homes_final_result_says_how_long_the_tell_ran_there() -> None:
    from irisd.mesh.home import final_of
    from protocol.messages import TellInfo

    ran = TellInfo(id="t", from_team="a@ws-1", to_team="b", message="m", status="completed", created_at=10.0,
                   started_at=12.0, finished_at=12.25)
    never = msgspec.structs.replace(ran, status="cancelled", started_at=None)
    assert final_of("r", ran).ran_s == 0.25 and final_of("r", never).ran_s is None
