"""The directory's watch on the real engine: what is a change of the directory. The
caller's side registers every remote team anew at each change, so a mesh of many irisds
must not make one of each heartbeat, nor of each claim read at the start."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec
import trio

from iris_common.mesh import HomeEntry, Mesh, TeamEntry, claim_key
from irisd.mesh.bridge import open_bridge
from irisd.mesh.directory import Directory
from irisd.mesh.engine import open_link
from mesh.nats import NatsServer

CLAIMS = 50


async def wait_until(done: Callable[[], bool]) -> None:
    while not done():
        await trio.sleep(0.01)


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
                    await wait_until(lambda: new.name in directory.teams)
                    assert len(changes) == 2 and changes[-1] == len(directory.teams)
                    assert directory.teams[new.name].home == other
                    nursery.cancel_scope.cancel()
        finally:
            await theirs.close()
            await mine.close()
