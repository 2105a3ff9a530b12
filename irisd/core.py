"""The daemon's services, without the socket: event hub, pool, notification courier,
retention. ``run_core`` starts them in one nursery and hands back the Dispatcher."""

from __future__ import annotations

import logging
import time

import trio

from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths, existing, transcript_path
from irisd.a2a.teams import sync_a2a_teams
from irisd.agent.runner import Agent
from irisd.dispatch import Dispatcher
from irisd.events import EventHub
from irisd.notifications import Courier
from irisd.pool.pair import ChildFactory, claude_child
from irisd.pool.supervisor import Supervisor
from irisd.questions.desk import QuestionDesk
from irisd.reload import check_claude
from irisd.store import approvals, ledger, notifications, sessions, tells, unsolicited
from irisd.store.db import StoreError
from irisd.store.facade import Store
from irisd.tell.answer import answer_so_far
from irisd.tokens import Access

log = logging.getLogger("irisd")

RETENTION_EVERY_S = 3600.0


async def run_core(
    config: IrisConfig,
    paths: IrisPaths,
    store: Store,
    *,
    child_factory: ChildFactory = claude_child,
    access: Access | None = None,
    task_status: trio.TaskStatus[Dispatcher] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Reconcile the store with a fresh start, then run every service until cancelled.
    Cancellation stops every claude child and records unfinished tells as interrupted."""
    claude = await trio.to_thread.run_sync(check_claude, config)
    await reconcile(store)
    await report_lost_sessions(config, paths, store)
    hub = EventHub()
    try:
        await _run_services(config, paths, store, hub, child_factory, access, claude, task_status)
    finally:
        hub.close()


async def _run_services(
    config: IrisConfig,
    paths: IrisPaths,
    store: Store,
    hub: EventHub,
    child_factory: ChildFactory,
    access: Access | None,
    claude: str,
    task_status: trio.TaskStatus[Dispatcher],
) -> None:
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor(
            config=config, paths=paths, store=store, hub=hub, child_factory=child_factory, access=access
        )
        sync_a2a_teams(supervisor.remote_teams, config, store)
        await nursery.start(supervisor.run)
        courier = Courier(store=store)
        dispatcher = Dispatcher(
            config=config,
            paths=paths,
            store=store,
            supervisor=supervisor,
            on_notification=courier.wake_up,
            http=access,
            claude_version=claude,
        )
        courier.dispatcher = dispatcher
        await nursery.start(courier.run)
        desk = QuestionDesk(config=config, store=store, hub=hub)
        supervisor.on_tell_end = desk.on_tell_end
        dispatcher.questions = desk
        dispatcher.agent = Agent(config=config, paths=paths, access=access)
        await nursery.start(desk.run)
        nursery.start_soon(_retention, config, store)
        task_status.started(dispatcher)


async def reconcile(store: Store) -> None:
    """Nothing of a previous run is alive: reset process states, end its tells, and put
    notifications that were being delivered back in line."""
    reset = await store.call(sessions.reset_process_states)
    interrupted = await store.call(tells.interrupt_unfinished, time.time(), answer_so_far)
    await store.call(unsolicited.interrupt_unfinished, time.time())
    requeued = await store.call(notifications.reset_delivering)
    await store.call(approvals.expire_pending, time.time(), "irisd restarted; the claude that asked is gone")
    if reset or interrupted or requeued:
        log.info(
            "reconciled the state of the previous run",
            extra={
                "process_states_reset": reset,
                "tells_interrupted": interrupted,
                "notifications_requeued": requeued,
            },
        )


async def report_lost_sessions(config: IrisConfig, paths: IrisPaths, store: Store) -> None:
    """Sessions whose transcript claude no longer has: reported now, re-created on next use."""
    rows = [row for row in await store.call(sessions.list_all) if row.message_count > 0]
    files = [transcript_path(paths, config.teams, row.to_team, row.session_id) for row in rows]
    found = await trio.to_thread.run_sync(existing, files)
    for row, transcript, exists in zip(rows, files, found, strict=True):
        if transcript is not None and not exists:
            log.warning(
                "session transcript is gone; the next tell starts a new conversation",
                extra={"pair": f"{row.from_team or 'external'}->{row.to_team}", "session_id": row.session_id,
                       "expected": str(transcript)},
            )


async def _retention(config: IrisConfig, store: Store) -> None:
    """Keep the database bounded: prune old finished tells now and then."""
    while True:
        cutoff = time.time() - config.settings.retention_days * 86400
        try:
            pruned = await store.call(tells.prune, cutoff, config.settings.retention_keep)
            pruned += await store.call(unsolicited.prune, cutoff, config.settings.retention_keep)
        except StoreError as exc:  # tried again next time
            log.warning("could not prune old tells", extra={"error": exc.message})
            pruned = 0
        if pruned:
            log.info("pruned old tells", extra={"count": pruned})
        try:
            await store.call(ledger.prune, time.time() - ledger.KEEP_DAYS * 86400)
        except StoreError as exc:
            log.warning("could not prune the cost ledger", extra={"error": exc.message})
        await trio.sleep(RETENTION_EVERY_S)

