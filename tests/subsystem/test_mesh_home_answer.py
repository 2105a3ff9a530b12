"""A home irisd sends a remote tell's final result once it wrote the tell's end, which it
never holds for the pair's next tell (irisd/mesh/home.py): a restart of the home can
never contradict a result its caller has. First on the caller's live subject, then
stored; and the record says the tell was answered once that is stored (within
``REPLIED_NOTE_S``: the notes are written together)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import apsw
import msgspec
import trio
import trio.testing

from fakes.child import child_got_turn
from fakes.core import running_core, teams_config
from harness import wait_until
from irisd.mesh import records
from irisd.mesh.home import Home
from irisd.mesh.lane import PubAck
from irisd.mesh.wire import FINAL, FinalMsg, RemoteTellMsg, live_subject, read, reply_subject
from irisd.pool.pair_tells import HOLD_END_S
from irisd.store import tells
from irisd.store.db import open_database
from irisd.store.facade import Store

CALLER, HOME = "ws-1", "ws-2"


class RecordingLane:
    """Stores nothing: notes each final result, and the home's own row of the tell as the
    result left (read on the loop, in the step that sent it: the moment it left)."""

    def __init__(self, store: Store, db: apsw.Connection) -> None:
        self.store = store
        self.db = db
        self.finals: list[tuple[FinalMsg, str]] = []  # (the stored result, the row's status then)
        self.live_finals: list[tuple[FinalMsg, str]] = []  # (the live copy, the row's status then)
        self.sent = trio.Event()
        self.live: list[tuple[str, bytes]] = []
        self.live_before_stored: list[tuple[str, bytes]] = []  # what had left live when a result was stored
        self.on_final: Callable[[], None] = lambda: None  # called as a final result is stored

    def _status_of(self, final: FinalMsg) -> str:
        known = records.get(self.db, final.id)
        assert known is not None and known.local_id is not None
        row = tells.get(self.db, known.local_id)
        return row.status if row is not None else "not written"

    async def js_publish(self, subject: str, payload: bytes, *, headers: dict[str, str] | None = None) -> PubAck:
        final = msgspec.json.decode(payload, type=FinalMsg)
        self.finals.append((final, self._status_of(final)))
        self.on_final()
        self.live_before_stored = [(subject, payload), *self.live]
        self.sent.set()
        return PubAck(stream="IRIS_REPLIES", seq=len(self.finals))

    def publish_nowait(self, subject: str, payload: bytes, **_: Any) -> None:
        """A live message: best effort, noted here (a final result's copy with its row's status)."""
        self.live.append((subject, payload))
        if (final := read(FINAL, payload)) is not None and final.status != "running":
            self.live_finals.append((final, self._status_of(final)))


@contextlib.asynccontextmanager
async def serving_home(tmp_path: Path) -> AsyncIterator[tuple[Any, RecordingLane, Home]]:
    """A home irisd's core with team ``alpha`` (fake children) and a ``Home`` on a lane
    that records; the test starts the home's tasks it needs, in its own nursery."""
    config = teams_config(tmp_path, f"  mesh:\n    url: nats://127.0.0.1:4222\n    name: {HOME}\n", teams="alpha")
    db = open_database(tmp_path / "iris.db")
    async with running_core(tmp_path, config, connection=db) as dispatcher:
        await dispatcher.store.call(records.ensure)
        lane = RecordingLane(dispatcher.store, db)
        link: Any = SimpleNamespace(mesh=SimpleNamespace(name=HOME))
        home = Home(link, lane, dispatcher.store, dispatcher.dispatch, lambda: config,  # type: ignore[arg-type]
                    dispatcher.tells)
        yield dispatcher, lane, home


async def test_the_final_result_leaves_once_the_home_wrote_the_tells_end(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with serving_home(tmp_path) as (dispatcher, lane, home):
        store = dispatcher.store
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                home._nursery = nursery
                nursery.start_soon(home.replied.run)  # as Home.run starts it: notes what was stored
                await home._tell(RemoteTellMsg(id="r-1", from_team="web", to_team="alpha", message="hi"), CALLER)
                child = await child_got_turn()
                (local,) = home.following
                running = dispatcher.supervisor.find_tell(local)
                assert running is not None and running.end_awaited  # written as the answer leaves
                await child.text("he")
                answered = trio.current_time()
                await child.result("hello")
                await lane.sent.wait()
                # At once: a tell from another irisd is not held for the pair's next tell.
                assert trio.current_time() - answered < HOLD_END_S / 2
                known = await wait_until(lambda: replied(store), every=0.001)  # the record says it left
                nursery.cancel_scope.cancel()
        [(final, status_then)] = lane.live_finals
        assert (final.id, final.status, final.text) == ("r-1", "completed", "hello")
        assert status_then == "completed"  # its end written first, at once (not held for a next tell)
        assert [stored for stored, _ in lane.finals] == [final]  # then stored, the same result
        # Its first copy left on the caller's live subject, the same bytes, before it was stored.
        stored, *live = lane.live_before_stored
        assert (live_subject(CALLER, HOME), stored[1]) == live[-1]
        assert stored[0] == reply_subject(CALLER, HOME)
        row = await store.call(tells.get, known.local_id or "")
        assert row is not None and (row.status, row.text) == ("completed", "hello")


async def replied(store: Store) -> records.Inbound | None:
    known = await store.call(records.get, "r-1")
    return known if known is not None and known.replied else None


async def test_the_final_result_leaves_before_the_pair_goes_on_to_its_next_tell(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Those who act on a tell's end (here the home, sending its final result) take their
    step as soon as the end is written, before its pair's next tell goes to claude: the
    caller's answer is not behind the next tell's start."""
    async with serving_home(tmp_path) as (_, lane, home):
        turns_when_sent: list[int] = []
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                home._nursery = nursery
                await home._tell(RemoteTellMsg(id="r-1", from_team="web", to_team="alpha", message="one"), CALLER)
                child = await child_got_turn()
                await home._tell(RemoteTellMsg(id="r-2", from_team="web", to_team="alpha", message="two"), CALLER)

                def user_turns() -> list[object]:
                    return [m["message"] for m in child.sent if m.get("type") == "user"]

                lane.on_final = lambda: turns_when_sent.append(len(user_turns()))
                await child.result("first")
                await lane.sent.wait()
                await wait_until(lambda: len(user_turns()) == 2, every=0.001)  # then the next tell goes on
                nursery.cancel_scope.cancel()
        assert [final.id for final, _ in lane.finals] == ["r-1"]
        assert turns_when_sent == [1]  # it left while claude had only the first tell's turn
