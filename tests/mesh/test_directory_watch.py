"""The directory's watch on the real engine: what is a change of the directory. The
caller's side registers every remote team anew at each change, so a mesh of many irisds
must not make one of each heartbeat, nor of each claim read at the start."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec
import trio
from nats.js.kv import KeyValue

import harness
from iris_common.mesh import HomeEntry, Mesh, TeamEntry, claim_key
from irisd.mesh.bridge import open_bridge
from irisd.mesh.directory import Directory
from irisd.mesh.engine import open_link
from mesh.nats import NatsServer

CLAIMS = 50


async def _put_all(kv: KeyValue, entries: list[TeamEntry]) -> None:
    """(asyncio thread) every claim at once."""
    await asyncio.gather(*(kv.put(claim_key(e.home, e.name), msgspec.json.encode(e)) for e in entries))


async def wait_until(done: Callable[[], bool]) -> None:
    await harness.wait_until(done, every=0.01)


async def test_heartbeats_and_the_first_reading_are_not_changes_of_the_directory(nats_server: NatsServer) -> None:
    suffix = str(time.time_ns())[-6:]  # the module's server is shared: names of this test's own
    other, me = f"ws-o{suffix}", f"ws-m{suffix}"
    async with open_bridge() as bridge:
        theirs = await open_link(bridge, Mesh(servers=(nats_server.url,), name=other))
        mine = await open_link(bridge, Mesh(servers=(nats_server.url,), name=me))
        try:
            for n in range(CLAIMS):
                entry = TeamEntry(name=f"t{n}-{suffix}", home=other)
                await bridge.call(theirs.teams.put, claim_key(other, entry.name), msgspec.json.encode(entry))
            changes: list[int] = []
            directory = Directory(mine, version="test", on_change=lambda: changes.append(len(directory.teams)))
            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(directory.serve_watch)
                    await directory.loaded.wait()
                    ours = {name for name in directory.teams if name.endswith(f"-{suffix}")}
                    assert len(ours) == CLAIMS
                    assert changes == [len(directory.teams)]  # the whole first reading: one change

                    beat = HomeEntry(name=other, teams=sorted(ours), seen_at=time.time())
                    await bridge.call(theirs.homes.put, other, msgspec.json.encode(beat))
                    await wait_until(lambda: other in directory.homes)
                    assert len(changes) == 1  # a heartbeat moves no team

                    new = TeamEntry(name=f"new-{suffix}", home=other)
                    await bridge.call(theirs.teams.put, claim_key(other, new.name), msgspec.json.encode(new))
                    await wait_until(lambda: len(changes) == 2)
                    assert new.name in directory.teams and changes[-1] == len(directory.teams)
                    assert directory.teams[new.name].home == other

                    # An irisd's claims as it joins: one change, not one per claim.
                    joined = [TeamEntry(name=f"j{n}-{suffix}", home=other) for n in range(CLAIMS)]
                    await bridge.call(_put_all, theirs.teams, joined)
                    await wait_until(lambda: all(entry.name in directory.teams for entry in joined))
                    await wait_until(lambda: changes[-1] == len(directory.teams))
                    assert len(changes) - 2 < CLAIMS // 2, changes  # not one per claim
                    nursery.cancel_scope.cancel()
        finally:
            await theirs.close()
            await mine.close()
