"""The health monitor's trio side: every ``healthCheckInterval`` it gathers the facts
(``gather``), asks the rules (``irisd/health/rules.py``) what is wrong, keeps the
findings for ``iris status`` / ``GET /api/health``, carries out the rules' recovery
actions when ``settings.health.recover`` is on (recorded: a log line, an event, the
``recoveries`` of the status), and hands each check's findings to ``on_findings``
(the notifier).

Cancellation stops the loop; an action under way (a wake, a cancel) is cancelled with
it. A fact that cannot be read (the database refuses) leaves that part out: the
database's own refusal is a finding of its own.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import trio

from iris_common.config import IrisConfig
from iris_common.locate import CLAUDE_VERSION
from iris_common.money import day_start
from irisd.health import rss_bytes
from irisd.health.rules import (
    Action,
    CancelTell,
    Facts,
    HealthRules,
    Limits,
    PairFacts,
    RestartPair,
    RunningTell,
    Spent,
    Waiting,
)
from irisd.store import approvals, ledger, questions
from irisd.store.db import StoreError
from irisd.store.facade import Store
from protocol.errors import IrisError
from protocol.health import Finding, Recovery
from protocol.messages import HealthEvent

if TYPE_CHECKING:
    from irisd.events import EventHub
    from irisd.mesh.service import MeshService
    from irisd.pool.remote import RemoteTeams
    from irisd.pool.supervisor import Supervisor
    from irisd.tell.service import TellService

log = logging.getLogger("irisd.health")

KEEP_RECOVERIES = 20


class HealthMonitor:
    """Checks irisd's health now and then; ``findings`` is the last check's answer."""

    def __init__(
        self,
        *,
        config: IrisConfig,
        store: Store,
        supervisor: Supervisor,
        tells: TellService,
        remote_teams: RemoteTeams,
        hub: EventHub,
        mesh: MeshService | None = None,
        claude_version: Callable[[], str] = lambda: CLAUDE_VERSION,
        on_findings: Callable[[list[Finding]], None] = lambda found: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self.supervisor = supervisor
        self.tells = tells
        self.remote_teams = remote_teams
        self.hub = hub
        self.mesh = mesh
        self.claude_version = claude_version
        self.on_findings = on_findings
        self.clock = clock  # wall clock: the facts' times are wall times
        self.rules = HealthRules(Limits.of(config.settings.health))
        self.findings: list[Finding] = []
        self.checked_at = 0.0
        self.recoveries: collections.deque[Recovery] = collections.deque(maxlen=KEEP_RECOVERIES)
        self._check_now = trio.Event()
        self._refusals_seen = 0
        self._refused_at: float | None = None

    def reconfigure(self, config: IrisConfig) -> None:
        """A reload: new limits from the next check on (what was seen is kept)."""
        self.config = config
        self.rules.limits = Limits.of(config.settings.health)

    def check_soon(self) -> None:
        """Check now rather than at the next interval."""
        self._check_now.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Check every healthCheckInterval (or when asked) until cancelled."""
        async with trio.open_nursery() as nursery:  # recovery actions run beside the checks
            task_status.started()
            while True:
                self._check_now = trio.Event()
                try:
                    await self.check(nursery)
                except Exception:  # a bug in a rule must not stop irisd: logged, tried next time
                    log.exception("the health check failed")
                with trio.move_on_after(self.config.settings.health_check_interval / 1000):
                    await self._check_now.wait()

    async def check(self, nursery: trio.Nursery | None = None) -> list[Finding]:
        """One check: the findings now (kept in ``findings``). Recovery actions start in
        ``nursery`` (a wake waits for claude to start), or are awaited without one."""
        facts = await self.gather()
        now = self.clock()
        found, actions = self.rules.check(facts, now)
        self.findings, self.checked_at = found, now
        self.on_findings(found)
        for action in actions:
            if nursery is not None:
                nursery.start_soon(self.act, action)
            else:
                await self.act(action)
        return found

    async def look(self) -> list[Finding]:
        """The findings now, for a person who asks (``iris status``): nothing is done about
        them and nobody is notified; the periodic check does that."""
        facts = await self.gather()
        found, _ = self.rules.check(facts, self.clock(), act=False)
        return found

    async def act(self, action: Action) -> Recovery:
        """Carry out one recovery action and record what came of it."""
        try:
            match action:
                case RestartPair():
                    pair = await self.supervisor.pair(action.from_team, action.to_team, action.thread)
                    await pair.wake()
                    outcome = "restarted"
                case CancelTell():
                    reply = await self.tells.cancel(action.tell_id)
                    outcome = "cancelled" if reply.cancelled else f"already {reply.tell.status}"
        except IrisError as exc:
            outcome = f"could not: {exc.message}"
        recovery = Recovery(
            at=self.clock(), action="restart_pair" if isinstance(action, RestartPair) else "cancel_tell",
            subject=action.subject, reason=action.reason, outcome=outcome,
        )
        self.recoveries.appendleft(recovery)
        log.warning("health: irisd acted on its own (settings.health.recover)",
                    extra={"action": recovery.action, "subject": recovery.subject, "outcome": outcome,
                           "reason": recovery.reason})
        team = action.to_team if isinstance(action, RestartPair) else ""
        self.hub.publish(HealthEvent(recovery=recovery), None, team)
        return recovery

    # --- facts ---------------------------------------------------------------------------

    async def gather(self) -> Facts:
        """What irisd knows now, as plain values."""
        snapshots = self.supervisor.snapshots()
        running = []
        for snap in snapshots:
            if snap.current is None or (tell := self.supervisor.find_tell(snap.current.id)) is None:
                continue
            status = tell.machine.status
            if status in ("running", "awaiting_approval"):
                running.append(RunningTell(
                    id=tell.id, from_team=tell.from_team, to_team=tell.to_team,
                    quiet_since=max(tell.output_wall, tell.phase.since),
                    # A person decides (an approval, a remote team's question): silence is not stuck.
                    awaiting_approval=status == "awaiting_approval"
                    or tell.phase.name in ("awaiting_approval", "awaiting_input"),
                ))
        pairs = [
            PairFacts(from_team=p.from_team, to_team=p.to_team, state=p.state, reason=p.reason, thread=p.thread,
                      rss=rss_bytes(p.pid) if p.pid is not None and not p.host else 0)
            for p in (snap.process for snap in snapshots)
        ]
        waiting: list[Waiting] = []
        spent: list[Spent] = []
        try:
            waiting += [
                Waiting(kind="approval", id=a.id, from_team=a.from_team, to_team=a.to_team, since=a.created_at,
                        what=a.tool_name)
                for a in await self.store.call(approvals.listing, None, False)
            ]
            waiting += [
                Waiting(kind="question", id=q.id, from_team=q.from_team, to_team=q.to_team, since=q.created_at,
                        what=q.question[:120])
                for q in await self.store.call(questions.listing, None, False)
            ]
            spent = await self._spent()
        except StoreError:
            pass  # the refusal is a finding of its own (store_problem)
        return Facts(
            tells=tuple(running),
            waiting=tuple(waiting),
            pairs=tuple(pairs),
            spent=tuple(spent),
            claude_version=self.claude_version(),
            claude_tested=CLAUDE_VERSION,
            unreachable=tuple(self._unreachable()),
            store_problem=self._store_problem(),
        )

    async def _spent(self) -> list[Spent]:
        since = day_start(self.clock())
        spent = []
        if (limit := self.config.settings.budget.daily_usd) is not None:
            spent.append(Spent(team="", spent=await self.store.call(ledger.spent_since, since), limit=limit,
                               key="settings.budget.dailyUsd"))
        for team in self.config.teams.values():
            if team.daily_usd is not None:
                spent.append(Spent(team=team.name, spent=await self.store.call(ledger.spent_since, since, team.name),
                                   limit=team.daily_usd, key=f"teams.{team.name}.budget.dailyUsd"))
        return spent

    def _unreachable(self) -> Iterable[tuple[str, str]]:
        """Mesh teams whose home irisd is unreachable; A2A agents the last tell could not reach."""
        for executor in self.remote_teams.all():
            if executor.kind == "a2a" and (why := getattr(executor, "unreachable", "")):
                yield executor.team.name, why
            home = getattr(executor, "home", None)
            if (executor.kind == "mesh" and self.mesh is not None and isinstance(home, str)
                    and (words := self.mesh.unreachable_words(home))):
                yield executor.team.name, words

    def _store_problem(self) -> str:
        """The writer's last refusal, if one came within the last two intervals (noticed
        by the count growing, on this monitor's clock)."""
        if self.store.refusals != self._refusals_seen:
            self._refusals_seen, self._refused_at = self.store.refusals, self.clock()
        if self._refused_at is None:
            return ""
        recent = self.clock() - self._refused_at <= 2 * self.config.settings.health_check_interval / 1000
        return self.store.last_refusal if recent else ""
