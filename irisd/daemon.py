"""The daemon's root: opens the store, reconciles it, starts the pool and the server."""

from __future__ import annotations

import logging
import time

import trio

from irisd.config import IrisConfig
from irisd.dispatch import Dispatcher
from irisd.paths import IrisPaths
from irisd.pool.supervisor import Supervisor
from irisd.server import open_unix_listener, serve
from irisd.store import sessions, tells
from irisd.store.facade import Store

log = logging.getLogger("irisd")


class Daemon:
    def __init__(self, config: IrisConfig, paths: IrisPaths) -> None:
        self.config = config
        self.paths = paths
        self.dispatcher: Dispatcher | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled. Cancellation stops every claude child and records every
        unfinished tell as interrupted before returning."""
        store = await Store.open(self.paths.database)
        try:
            await self._reconcile(store)
            listener = await open_unix_listener(self.paths.socket)
            try:
                async with trio.open_nursery() as nursery:
                    supervisor = Supervisor(config=self.config, paths=self.paths, store=store)
                    await nursery.start(supervisor.run)
                    self.dispatcher = Dispatcher(
                        config=self.config, paths=self.paths, store=store, supervisor=supervisor
                    )
                    await nursery.start(serve, listener, self.dispatcher)
                    log.info(
                        "irisd ready",
                        extra={"socket": str(self.paths.socket), "teams": sorted(self.config.teams)},
                    )
                    task_status.started()
            finally:
                self.paths.socket.unlink(missing_ok=True)
        finally:
            store.close()

    async def _reconcile(self, store: Store) -> None:
        """Nothing of a previous run is alive: reset process states, end its tells."""
        reset = await store.call(sessions.reset_process_states)
        interrupted = await store.call(tells.interrupt_unfinished, time.time())
        if reset or interrupted:
            log.info(
                "reconciled state of the previous run",
                extra={"process_states_reset": reset, "tells_interrupted": interrupted},
            )
