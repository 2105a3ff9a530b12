"""The pool of pairs: creates each pair's actor on first use, inside the pool's nursery."""

from __future__ import annotations

import trio

from irisd.config import IrisConfig
from irisd.paths import IrisPaths
from irisd.pool.active_tell import ActiveTell
from irisd.pool.pair import Pair, PairKey
from irisd.store.facade import Store
from protocol.messages import ProcessInfo


class Supervisor:
    def __init__(self, *, config: IrisConfig, paths: IrisPaths, store: Store) -> None:
        self.config = config
        self.paths = paths
        self.store = store
        self.pairs: dict[PairKey, Pair] = {}
        self._nursery: trio.Nursery | None = None
        self._creating: dict[PairKey, trio.Event] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every pair until cancelled; cancelling stops every child."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def pair(self, from_team: str | None, to_team: str) -> Pair:
        """The pair's actor, started on first use (teams must be valid already)."""
        key: PairKey = (from_team, to_team)
        while key not in self.pairs:
            pending = self._creating.get(key)
            if pending is not None:
                await pending.wait()
                continue
            self._creating[key] = done = trio.Event()
            try:
                pair = Pair(
                    from_team=from_team,
                    team=self.config.team(to_team),
                    config=self.config,
                    paths=self.paths,
                    store=self.store,
                )
                assert self._nursery is not None
                await self._nursery.start(pair.run)
                self.pairs[key] = pair
            finally:
                del self._creating[key]
                done.set()
        return self.pairs[key]

    def find_tell(self, tell_id: str) -> ActiveTell | None:
        for pair in self.pairs.values():
            tell = pair.tells.get(tell_id)
            if tell is not None:
                return tell
        return None

    def statistics(self) -> list[ProcessInfo]:
        return [pair.statistics() for pair in self.pairs.values()]
