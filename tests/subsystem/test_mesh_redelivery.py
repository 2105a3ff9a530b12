"""A home that died between recording a remote tell and recording the local tell it
submitted gets the tell again (NATS redelivers what was not acked): it finds the local
tell it had submitted, records it, and runs nothing again (irisd/mesh/home.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio

from fakes.core import NoTellEnds, teams_config
from irisd.caller import Caller
from irisd.events import SendEvent
from irisd.mesh import records
from irisd.mesh.home import Home
from irisd.mesh.wire import RemoteTellMsg
from irisd.store import tells
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.messages import Reply, Request, TellInfo

CALLER = "ws-1"


async def _no_dispatch(request: Request, caller: Caller, send_event: SendEvent) -> Reply:
    raise AssertionError(f"a redelivered tell runs nothing again: {request!r}")


async def test_a_redelivered_tell_adopts_the_local_tell_it_had_submitted(tmp_path: Path) -> None:
    config = teams_config(tmp_path)
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    await store.call(records.ensure)
    await store.call(records.receive, "r-1", CALLER, 100.0)  # recorded; then irisd died
    local = TellInfo(id="t-local", from_team=f"web@{CALLER}", to_team="alpha", message="hi", status="running",
                     created_at=100.2)
    await store.call(tells.insert, local)  # ... after submitting it, before recording that
    link: Any = SimpleNamespace(mesh=SimpleNamespace(name="ws-2"))
    lane: Any = SimpleNamespace()  # nothing is sent: the tell is adopted
    home = Home(link, lane, store, _no_dispatch, lambda: config,
                NoTellEnds("a redelivered tell sends no final result of a run"))
    home.following[local.id] = ("r-1", CALLER)  # already followed: no answer task to start here
    async with trio.open_nursery() as nursery:
        home._nursery = nursery
        with trio.fail_after(10):
            await home._tell(RemoteTellMsg(id="r-1", from_team="web", to_team="alpha", message="hi"), CALLER)
    known = await store.call(records.get, "r-1")
    assert known is not None and known.local_id == local.id  # adopted, and recorded as such
    store.close()
