"""The daemon's root: opens the store, reconciles it, starts the pool and the server."""

from __future__ import annotations

import logging

import trio

from irisd.config import IrisConfig
from irisd.core import run_core
from irisd.dispatch import Dispatcher
from irisd.paths import IrisPaths
from irisd.server import open_unix_listener, serve
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
            listener = await open_unix_listener(self.paths.socket)
            try:
                async with trio.open_nursery() as nursery:
                    self.dispatcher = await nursery.start(run_core, self.config, self.paths, store)
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
