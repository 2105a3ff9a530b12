"""A remote team's result that comes after the caller's irisd restarted (the tell was
recorded ``interrupted`` meanwhile) ends the tell where every tell ends
(irisd/tell/active.py): saved, its state announced to watchers, its end hook called, so
an answer that asks something becomes a pending question."""

from __future__ import annotations

from pathlib import Path

import trio

from fakes.core import NoTellEnds, teams_config
from irisd.caller import Caller
from irisd.events import EventHub, SendEvent
from irisd.mesh import records
from irisd.mesh.service import MeshService
from irisd.mesh.wire import FinalMsg
from irisd.pool.remote import RemoteTeams
from irisd.questions.desk import QuestionDesk
from irisd.store import questions, tells
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.messages import Event, Reply, Request, TellInfo, TellState

HOME = "ws-2"


async def _no_dispatch(request: Request, caller: Caller, send_event: SendEvent) -> Reply:
    raise AssertionError("a late result dispatches nothing")


async def test_a_late_result_replaces_interrupted_and_is_announced_and_may_ask(tmp_path: Path) -> None:
    config = teams_config(tmp_path)
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    hub = EventHub()
    desk = QuestionDesk(config=config, store=store, hub=hub)
    mesh = MeshService(config=config, store=store, remote_teams=RemoteTeams(), dispatch=_no_dispatch,
                       ends=NoTellEnds("no tell runs on this side"), hub=hub, on_end=desk.on_tell_end)
    await store.call(records.ensure)
    told = TellInfo(id="t-far", from_team="alpha", to_team="far", message="which port?", status="interrupted",
                    created_at=1.0, started_at=2.0, finished_at=3.0, error="irisd restarted", chain_id="t-far")
    await store.call(tells.insert, told)
    await store.call(tells.update, told)
    await store.call(records.sending, told.id, HOME)
    with trio.fail_after(10), hub.subscribe() as watcher:
        await mesh._take_final(FinalMsg(id=told.id, status="completed", text="8080, or shall I use 9090?",
                                        cost_usd=0.25), HOME)
        seen: list[Event] = watcher.take_nowait()
    saved = await store.call(tells.get, told.id)
    assert saved is not None
    assert (saved.status, saved.text, saved.error, saved.cost_usd) == ("completed", "8080, or shall I use 9090?",
                                                                        "", 0.25)
    assert (saved.from_team, saved.to_team, saved.message, saved.created_at, saved.started_at) == (
        "alpha", "far", "which port?", 1.0, 2.0)
    states = [e for e in seen if isinstance(e, TellState)]
    assert [(s.tell_id, s.status) for s in states] == [(told.id, "completed")]
    (asked,) = await store.call(questions.listing, None, False)
    assert (asked.tell_id, asked.from_team, asked.to_team) == (told.id, "alpha", "far")
    store.close()


async def test_a_late_result_for_a_tell_that_ended_here_changes_nothing(tmp_path: Path) -> None:
    config = teams_config(tmp_path)
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    hub = EventHub()
    mesh = MeshService(config=config, store=store, remote_teams=RemoteTeams(), dispatch=_no_dispatch,
                       ends=NoTellEnds("no tell runs on this side"), hub=hub)
    await store.call(records.ensure)
    told = TellInfo(id="t-done", from_team="alpha", to_team="far", message="hi", status="completed", text="hello",
                    created_at=1.0, finished_at=3.0)
    await store.call(tells.insert, told)
    await store.call(tells.update, told)
    await store.call(records.sending, told.id, HOME)
    with trio.fail_after(10), hub.subscribe() as watcher:
        await mesh._take_final(FinalMsg(id=told.id, status="failed", error="late"), HOME)
        assert watcher.take_nowait() == []
    saved = await store.call(tells.get, told.id)
    assert saved is not None and (saved.status, saved.text) == ("completed", "hello")
    store.close()
