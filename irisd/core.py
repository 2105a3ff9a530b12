"""The daemon's services, without the socket: event hub, pool, tells, notification
courier, questions, retention. ``Services`` builds them in one constructor; ``run_core``
starts them in one nursery and hands them back (the dispatcher, the config holder and
``reload`` are what the faces and the daemon use)."""

from __future__ import annotations

import logging
import time

import trio

from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths, existing, transcript_path
from irisd.a2a.teams import sync_a2a_teams
from irisd.agent.actions import AgentActions
from irisd.agent.runner import Agent
from irisd.agent.watcher import Watcher
from irisd.config_holder import ConfigHolder
from irisd.dispatch import Dispatcher
from irisd.events import EventHub
from irisd.health.monitor import HealthMonitor
from irisd.logs import recent_problems
from irisd.mesh import records as mesh_records
from irisd.mesh.service import MeshService
from irisd.notifications import Courier
from irisd.notify.service import Notifier
from irisd.pairs import Pairs
from irisd.pool.archiver import Archiver
from irisd.pool.pair import ChildFactory, claude_child
from irisd.pool.remote import RemoteTeams
from irisd.pool.supervisor import Supervisor
from irisd.proposals import ProposalTargets
from irisd.questions.answering import Answering
from irisd.questions.desk import QuestionDesk
from irisd.records import Records
from irisd.reload import check_claude, plan_reload, read_config
from irisd.status import Status
from irisd.store import approvals, ledger, notifications, sessions, tells, unsolicited
from irisd.store.db import StoreError
from irisd.store.facade import Store
from irisd.tell.service import TellService, end_previous_run
from irisd.tokens import Access
from protocol.errors import ConfigError
from protocol.pairs import pair_label

log = logging.getLogger("irisd")

RELOAD = "config.yaml reload"  # the standing problem of a refused reload (see RecentProblems)

RETENTION_EVERY_S = 3600.0


async def run_core(
    config: IrisConfig,
    paths: IrisPaths,
    store: Store,
    *,
    child_factory: ChildFactory = claude_child,
    access: Access | None = None,
    task_status: trio.TaskStatus[Services] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Reconcile the store with a fresh start, then run every service until cancelled
    (ready: handing back the ``Services``). Cancellation stops every claude child and
    records unfinished tells as interrupted."""
    claude = await trio.to_thread.run_sync(check_claude, config)
    await reconcile(store)
    await report_lost_sessions(config, paths, store)
    hub = EventHub()
    try:
        services = Services(
            config, paths, store, hub, child_factory=child_factory, access=access, claude_version=claude
        )
        await services.run(task_status=task_status)
    finally:
        hub.close()


class Services:
    """Every service of the daemon, built once, each given what it uses when it is made
    (nothing is wired in afterwards): the question desk (told when a tell ends), the pool
    of pairs, the tell service, the courier (it delivers through the tell service),
    iris-agent, and the dispatcher that serves requests with them.

    It owns the config: ``current`` (one holder, read by the request handlers and the
    faces) and ``reload``, which applies a new config.yaml to every service."""

    def __init__(
        self,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        hub: EventHub,
        *,
        child_factory: ChildFactory = claude_child,
        access: Access | None = None,
        claude_version: str = "",
    ) -> None:
        self.paths = paths
        self.store = store
        self._reloading = trio.Lock()
        # Teams that are not a local claude (A2A agents, other irisds' teams): one registry,
        # filled from config.yaml (A2A) and by the mesh, read by the pool and the tell service.
        self.remote_teams = RemoteTeams()
        self.current = ConfigHolder(config, self.remote_teams, claude_version=claude_version)
        self.questions = QuestionDesk(config=config, store=store, hub=hub)
        sync_a2a_teams(self.remote_teams, config, store)
        self.supervisor = Supervisor(
            config=config, paths=paths, store=store, hub=hub, child_factory=child_factory, access=access,
            remote_teams=self.remote_teams,
        )
        self.tells = TellService(
            config=config, paths=paths, store=store, pool=self.supervisor, remote_teams=self.remote_teams, hub=hub,
            on_end=self.questions.on_tell_end,
        )
        self.courier = Courier(store=store, tells=self.tells)
        # The mesh's home side runs remote tells through the dispatcher (not the serve path:
        # irisd/serving.py says why); a late result ends its tell like any tell's end.
        self.mesh = MeshService(
            config=config, store=store, remote_teams=self.remote_teams, hub=hub, on_end=self.questions.on_tell_end,
            dispatch=lambda request, caller, send_event: self.dispatcher.dispatch(request, caller, send_event),
            ends=self.tells,
        )
        # Approvals, questions and health warnings reach a person who is not looking.
        self.notifier = Notifier(settings=lambda: self.current.config.settings.notify, hub=hub)
        self.health = HealthMonitor(
            config=config, store=store, supervisor=self.supervisor, tells=self.tells, remote_teams=self.remote_teams,
            hub=hub, mesh=self.mesh, claude_version=lambda: self.current.claude_version,
            on_findings=self.notifier.on_findings,
        )
        # Conversations unused too long are archived on irisd's own schedule (and by hand).
        self.archiver = Archiver(
            config=lambda: self.current.config, paths=paths, store=store, pairs=self.supervisor.pair_nowait, hub=hub
        )
        self.agent = Agent(config=config, paths=paths, access=access)
        answering = Answering(store=store, tells=self.tells, desk=self.questions)
        # What iris-agent proposes: an approval for the person, served once allowed.
        self.agent_actions = AgentActions(
            config=lambda: self.current.config, store=store, hub=hub, perform=lambda r: self.dispatcher.perform(r),
            target=ProposalTargets(current=self.current, tells=self.tells, answering=answering).target,
        )
        self.dispatcher = Dispatcher(
            current=self.current,
            store=store,
            supervisor=self.supervisor,
            tells=self.tells,
            records=Records(current=self.current, store=store, tells=self.tells),
            status=Status(
                current=self.current, paths=paths, store=store, supervisor=self.supervisor, health=self.health,
                http_url=lambda: access.url if access is not None else "",
            ),
            pairs=Pairs(current=self.current, paths=paths, store=store, supervisor=self.supervisor,
                        archiver=self.archiver),
            answering=answering,
            reload=self.reload,
            agent=self.agent,
            agent_actions=self.agent_actions,
            on_notification=self.courier.wake_up,
            http=access,
        )
        # iris-agent's watcher: a pending question nobody answers in time is classified (settings.agent.watch).
        self.watcher = Watcher(
            config=lambda: self.current.config, store=store, hub=hub, look=self.agent.look,
            actions=self.agent_actions, dismiss=answering.dismiss_as,
        )

    async def run(self, *, task_status: trio.TaskStatus[Services] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every service until cancelled (which stops every claude child); ready once
        each has started."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.supervisor.run)
            await nursery.start(self.courier.run)
            await nursery.start(self.questions.run)
            await nursery.start(self.mesh.run)
            await nursery.start(self.notifier.run)
            await nursery.start(self.health.run)
            await nursery.start(self.archiver.run)
            await nursery.start(self.watcher.run)
            await nursery.start(self.agent_actions.run)
            nursery.start_soon(_retention, self.current, self.store)
            nursery.start_soon(self.store.serve_checkpoints)
            task_status.started(self)

    async def reload(self) -> list[str]:
        """Read config.yaml (and irisd.env) again and apply the difference (irisd/reload.py)
        to every service; returns what changed, in words. Invalid: ConfigError with the
        reason, and irisd keeps the config it had (``iris status`` says so until a reload
        works)."""
        async with self._reloading:  # one at a time: SIGHUP, the CLI and the dashboard may race
            try:
                new, _ = await trio.to_thread.run_sync(read_config, self.paths)
                claude = await trio.to_thread.run_sync(check_claude, new)
            except ConfigError as exc:
                self.current.problem = f"{exc.message} (irisd goes on with the config it had)"
                # With its reason, in status and Health while it stands (a good reload settles it).
                log.error(f"config.yaml not reloaded: {exc.message}", extra={"error": exc.message, "stands": RELOAD})
                raise ConfigError(self.current.problem) from None
            plan = plan_reload(self.current.config, new)
            self.current.config, self.current.claude_version, self.current.problem = new, claude, ""
            recent_problems.settled(RELOAD)
            self.tells.reconfigure(new)
            sync_a2a_teams(self.remote_teams, new, self.store)
            self.mesh.reconfigure(new)
            self.supervisor.reconfigure(new, retire=set(plan.removed), restart=set(plan.restart))
            self.questions.reconfigure(new)
            self.agent.reconfigure(new)
            self.health.reconfigure(new)
            changes = plan.summary()
            log.info("config.yaml reloaded", extra={"changes": changes})
            return changes


async def reconcile(store: Store) -> None:
    """Nothing of a previous run is alive: reset process states, end its tells, and put
    notifications that were being delivered back in line."""
    reset = await store.call(sessions.reset_process_states)
    interrupted = await end_previous_run(store)
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
                extra={"pair": pair_label(*row.key), "session_id": row.session_id,
                       "expected": str(transcript)},
            )


async def _retention(current: ConfigHolder, store: Store) -> None:
    """Keep the database bounded: prune old finished tells now and then."""
    while True:
        config = current.config
        cutoff = time.time() - config.settings.retention_days * 86400
        try:
            pruned = await store.call(tells.prune, cutoff, config.settings.retention_keep)
            pruned += await store.call(unsolicited.prune, cutoff, config.settings.retention_keep)
            await store.call(mesh_records.prune, cutoff)  # the mesh's records of tells now gone
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

