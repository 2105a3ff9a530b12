"""A remote tell's final result comes to its caller twice: first on the live subject,
which the caller answers from at once (not after JetStream stored it and its pull
delivered it), then stored in ``IRIS_REPLIES``, the copy that counts; the stored copy
of a result the caller has saved already is acked at once, with no database read
(irisd/mesh/service.py, executor.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from fakes.core import no_events, running_core, teams_config
from harness import wait_until
from iris_common.config import Team
from irisd.dispatch import Dispatcher
from irisd.mesh import records
from irisd.mesh.executor import LIVE_BACKLOG, MeshExecutor
from irisd.mesh.lane import PubAck
from irisd.mesh.nats_wire import Message
from irisd.mesh.service import MeshService
from irisd.mesh.wire import ENCODER, FinalMsg, LiveMsg, live_subject
from irisd.store import tells
from protocol.messages import Tell

CALLER, HOME = "ws-1", "ws-2"


class FakeLane:
    """JetStream stores every publish at once; what comes on the live subject is fed by
    the test, to the handler the mesh face listens with."""

    connected = True

    def __init__(self) -> None:
        self.handle: Callable[[Message], None] | None = None

    def listen(self, subject: str, handle: Callable[[Message], None]) -> None:
        assert subject == f"iris.live.{CALLER}.*"
        self.handle = handle

    async def js_publish(self, subject: str, payload: bytes, *, headers: dict[str, str] | None = None) -> PubAck:
        return PubAck(stream="IRIS_TELLS", seq=1)

    def from_home(self, message: FinalMsg | LiveMsg) -> None:
        assert self.handle is not None
        self.handle(Message(subject=live_subject(CALLER, HOME), sid=2, reply="", data=ENCODER.encode(message)))


@contextlib.asynccontextmanager
async def caller_mesh(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, MeshService, FakeLane]]:
    """The mesh face under test, on the core of an irisd that has none of its own; team
    ``far`` is homed on ``HOME``."""
    config = teams_config(tmp_path, f"  mesh:\n    url: nats://127.0.0.1:4222\n    name: {CALLER}\n", teams="alpha")
    team = Team(name="far", path="", idle_timeout_ms=1, response_timeout_ms=60_000)
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha")) as dispatcher:
        await dispatcher.store.call(records.ensure)
        lane = FakeLane()
        mesh = MeshService(config=config, store=dispatcher.store, remote_teams=dispatcher.supervisor.remote_teams,
                           dispatch=dispatcher.dispatch, ends=dispatcher.tells)
        mesh.lane = lane  # type: ignore[assignment]
        lane.listen(f"iris.live.{CALLER}.*", mesh._on_live)  # as MeshService._serve does
        dispatcher.supervisor.remote_teams.register(MeshExecutor(team, HOME, mesh))
        yield dispatcher, mesh, lane


async def test_the_caller_answers_from_the_live_copy_and_acks_the_stored_one_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with caller_mesh(tmp_path) as (dispatcher, mesh, lane):
        store = dispatcher.store

        async def home() -> None:
            (tell_id,) = await wait_until(lambda: list(mesh.routes), every=0.001)
            lane.from_home(FinalMsg(id=tell_id, status="completed", text="hello", cost_usd=0.25))

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(home)
                reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="hi"), no_events)
                nursery.cancel_scope.cancel()
        assert (reply.status, reply.tell.text, reply.tell.cost_usd) == ("completed", "hello", 0.25)
        with trio.fail_after(10):  # its end is written after the answer left, then noted
            await wait_until(lambda: reply.tell.id in mesh._ended, every=0.001)
        saved = await store.call(tells.get, reply.tell.id)
        assert saved is not None and (saved.status, saved.text) == ("completed", "hello")

        def unread(*args: object) -> None:
            raise AssertionError("the stored copy of a result saved here reads nothing")

        monkeypatch.setattr(records, "home_of", unread)
        monkeypatch.setattr(tells, "get", unread)
        with trio.fail_after(1):
            await mesh._take_final(FinalMsg(id=reply.tell.id, status="completed", text="hello"), HOME)
        assert reply.tell.id not in mesh._ended  # once: a third copy would go the database's way


async def test_a_home_that_floods_a_tell_with_live_changes_holds_neither_the_lane_nor_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What waits for a remote tell's task is bounded: the changes past LIVE_BACKLOG are
    dropped as the lane reads them (it never waits), said once in the log, and the stored
    final result still ends the tell with the whole answer."""
    async with caller_mesh(tmp_path) as (dispatcher, mesh, lane):

        async def home() -> None:
            (tell_id,) = await wait_until(lambda: list(mesh.routes), every=0.001)
            route = mesh.routes[tell_id]
            lane.from_home(LiveMsg(id=tell_id, status="running"))
            for _ in range(10 * LIVE_BACKLOG):  # in one step: the tell's task reads none of them meanwhile
                lane.from_home(LiveMsg(id=tell_id, text="x"))
            assert route.send.statistics().current_buffer_used == LIVE_BACKLOG
            await mesh._take_final(FinalMsg(id=tell_id, status="completed", text="the whole answer"), HOME)

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(home)
                reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="hi"), no_events)
        assert (reply.status, reply.tell.text) == ("completed", "the whole answer")
        dropped = [r for r in caplog.records if "came faster than it read them" in r.getMessage()]
        assert len(dropped) == 1 and dropped[0].tell == reply.tell.id  # type: ignore[attr-defined]
