"""Archiving pairs' conversations: the sweep irisd runs on its own schedule, and the
archive and restore a person asks for. The decisions are ``archive.py``'s (pure); this
is the async side: it stops the pair's claude, writes the store, deletes files when the
settings say so, and tells the watchers (``SessionEvent``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths, transcript_path
from irisd.events import EventHub, publish_change
from irisd.pool.archive import SWEEP_EVERY_S, Aging, Due, due, unused_for
from irisd.pool.pair import Pair
from irisd.pool.policy import PairKey
from irisd.store import sessions
from irisd.store.facade import Store
from irisd.store.sessions import SessionRow
from protocol.errors import BusyError, IrisError, NotFoundError
from protocol.messages import SessionChange, SessionInfo
from protocol.pairs import pair_label

log = logging.getLogger("irisd.archive")

Lookup = Callable[[PairKey], Pair | None]  # the pair's actor, if it runs


def label(key: PairKey) -> str:
    return pair_label(*key)


class Archiver:
    def __init__(
        self, *, config: Callable[[], IrisConfig], paths: IrisPaths, store: Store, pairs: Lookup,
        hub: EventHub | None = None, clock: Callable[[], float] = time.time,
    ) -> None:
        self._config, self.paths, self.store, self.pairs, self.hub = config, paths, store, pairs, hub
        self._clock = clock  # the wall clock (the dates in the store are wall-clock times)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep at start-up (started once that sweep is done, so what fell due while irisd
        was down is archived first) and every ``SWEEP_EVERY_S`` until cancelled. A sweep
        the store refuses is logged and tried again next time."""
        while True:
            try:
                await self.sweep(self._clock())
            except IrisError as exc:
                log.warning("could not sweep the sessions", extra={"error": exc.message})
            task_status.started()  # the first time; then a no-op
            task_status = trio.TASK_STATUS_IGNORED
            await trio.sleep(SWEEP_EVERY_S)

    async def sweep(self, now: float) -> Due:
        """Archive the conversations unused too long, delete the files of those archived
        too long (only with deleteArchivedAfterDays); returns what was due."""
        settings = self._config().settings.sessions
        rows = await self.store.call(sessions.list_all)
        busy = frozenset(r.key for r in (self.pairs(row.key) for row in rows)
                         if r is not None and r.machine.busy)
        todo = due(
            (Aging(r.key, r.status, r.last_used_at, r.archived_at, r.files_deleted_at is not None)
             for r in rows),
            now, archive_after_days=settings.archive_after_days,
            delete_after_days=settings.delete_archived_after_days, busy=busy,
        )
        for key in todo.archive:
            try:
                await self.archive(key, now, why=unused_for(settings.archive_after_days))
            except IrisError as exc:  # it got work meanwhile, or the store refused: next sweep
                log.info("not archived", extra={"pair": label(key), "error": exc.message})
        by_key = {r.key: r for r in rows}
        for key in todo.delete_files:
            await self._delete_files(by_key[key], now)
        return todo

    async def archive(self, key: PairKey, now: float, *, why: str) -> SessionInfo:
        """Stop the pair's claude and mark its conversation archived. BusyError while the
        pair has a tell running or queued; NotFoundError if it has no conversation."""
        pair = self.pairs(key)
        if pair is not None:
            if pair.machine.busy:
                raise BusyError(f"{pair.label} has tells running or queued; archive it when it is idle")
            await pair.sleep(reason=f"archived: {why}")
        row = await self.store.call(sessions.archive, key[0], key[1], now, thread=key[2])
        if row is None:
            found = await self.store.call(sessions.get, key[0], key[1], thread=key[2])
            if found is None:
                raise NotFoundError(f"{label(key)} has no conversation yet; 'iris sessions' lists them")
            return sessions.info(found)  # archived already
        log.info("archived a conversation", extra={"pair": label(key), "why": why})
        return self._publish(row, "archived", why)

    async def restore(self, key: PairKey, now: float, *, fresh: bool, why: str) -> SessionInfo | None:
        """Make an archived conversation active again (a new one if ``fresh``); None if it
        was not archived."""
        row = await self.store.call(sessions.restore, key[0], key[1], now, fresh=fresh, thread=key[2])
        if row is None:
            return None
        detail = f"{why}; a new conversation (settings.sessions.restore: fresh)" if fresh else why
        log.info("restored a conversation", extra={"pair": label(key), "why": detail})
        return self._publish(row, "restored", detail)

    async def _delete_files(self, row: SessionRow, now: float) -> None:
        path = transcript_path(self.paths, self._config().teams, row.to_team, row.session_id)
        if path is None:  # a team on another host, or no longer configured: nothing here to delete
            return
        try:
            await trio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))
        except OSError as exc:
            log.warning("could not delete an archived transcript", extra={"path": str(path), "error": str(exc)})
            return
        await self.store.call(sessions.files_deleted, row.from_team, row.to_team, now, thread=row.thread)
        found = await self.store.call(sessions.get, row.from_team, row.to_team, thread=row.thread)
        if found is not None:
            self._publish(found, "files_deleted", f"deleted {path} (settings.sessions.deleteArchivedAfterDays)")

    def _publish(self, row: SessionRow, change: SessionChange, detail: str) -> SessionInfo:
        shown = sessions.info(row)
        publish_change(self.hub, shown, change, detail)
        return shown
