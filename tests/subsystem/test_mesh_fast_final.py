"""A remote tell's final result comes to its caller twice: first on the live subject,
which the caller answers from at once (not after JetStream stored it and its pull
delivered it), then stored in ``IRIS_REPLIES``, the copy that counts; the stored copy
of a result the caller has saved already is acked at once, with no database read
(irisd/mesh/service.py, executor.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from fakes.core import no_events, running_core, teams_config
from harness import wait_until
from iris_common.config import Team
from irisd.mesh import records
from irisd.mesh.executor import MeshExecutor
from irisd.mesh.lane import PubAck
from irisd.mesh.nats_wire import Message
from irisd.mesh.service import MeshService
from irisd.mesh.wire import ENCODER, FinalMsg, live_subject
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

    def from_home(self, message: FinalMsg) -> None:
        assert self.handle is not None
        self.handle(Message(subject=live_subject(CALLER, HOME), sid=2, reply="", data=ENCODER.encode(message)))


async def test_the_caller_answers_from_the_live_copy_and_acks_the_stored_one_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mesh face under test, on the core of an irisd that has none of its own.
    config = teams_config(tmp_path, f"  mesh:\n    url: nats://127.0.0.1:4222\n    name: {CALLER}\n", teams="alpha")
    team = Team(name="far", path="", idle_timeout_ms=1, response_timeout_ms=60_000)
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha")) as dispatcher:
        store = dispatcher.store
        await store.call(records.ensure)
        lane = FakeLane()
        mesh = MeshService(config=config, store=store, remote_teams=dispatcher.supervisor.remote_teams,
                           dispatch=dispatcher.dispatch, ends=dispatcher.tells)
        mesh.lane = lane  # type: ignore[assignment]
        lane.listen(f"iris.live.{CALLER}.*", mesh._on_live)  # as MeshService._serve does
        dispatcher.supervisor.remote_teams.register(MeshExecutor(team, HOME, mesh))

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
