"""One (from_team, to_team) pair: its tells and its claude child, as an actor.

How it works
------------
``Pair.run`` is an actor: one task owns all of the pair's state and handles one event
at a time from its inbox (a submitted tell, a cancel, wake / stop / reset / decide
requests, the steps of a spawn, a line or the exit of the child). The decisions are
not made here: the process lifecycle is ``ProcessMachine`` (``process_machine.py``) and
each tell's is its ``TellMachine``; the actor feeds them events and carries out the
actions they return (``_run`` and ``_tell_actions``). One timer is armed at the earliest
deadline of the pair: the tells', the approval desk's and the process machine's.

The child runs in the pair's own nursery, so it never outlives the pair. The steps of
a spawn (waiting for a slot under maxProcesses, probing the session, starting claude)
run in tasks of that nursery and report back through the inbox, so the actor keeps
answering cancels and deadlines meanwhile. Where and how claude runs (here, or on
another host over ssh) is the ``Launcher``'s business. The pool is reached through a
narrow ``SlotPool``; other actors read a pair only through ``snapshot()`` and
``statistics()``, which are frozen.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import msgspec
import trio

from iris_common.config import IrisConfig, Team
from iris_common.paths import IrisPaths
from irisd.claude.command import child_system_prompt, iris_mcp_config
from irisd.claude.launcher import (
    Child,
    ChildFactory,
    IrisEndpoint,
    Launcher,
    LaunchSpec,
    claude_child,
    launcher_for,
)
from irisd.claude.process import ChildEvent, ChildExited, ChildLine
from irisd.claude.wire import (
    AnyLine,
    ControlRequestLine,
    ControlResponseLine,
    ResultLine,
    SystemLine,
    interrupt_request,
    line_type,
    user_turn,
)
from irisd.events import EventHub
from irisd.pool.approvals import ApprovalDesk
from irisd.pool.policy import PairKey, PairView
from irisd.pool.process_machine import (
    NO_CONVERSATION,
    Action,
    Answer,
    AwaitExit,
    AwaitStart,
    ExpireApprovals,
    FailTells,
    InterruptTells,
    Note,
    PersistState,
    ProbeSession,
    ProcessMachine,
    ReleaseSlot,
    RenewSession,
    RequestSlot,
    SendTurn,
    SessionProbe,
    Spawn,
    StopChild,
    StoppersDone,
    WakersDone,
)
from irisd.pool.unsolicited import UnsolicitedTurn, route
from irisd.store import ledger, sessions, tells, unsolicited
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell import machine as tell_machine
from irisd.tell.active import ActiveTell, end_tell, save_tell
from irisd.tell.phase import after_line
from irisd.tokens import Access, ChildGrant
from protocol.errors import BusyError, ClaudeError, IrisError, NotFoundError
from protocol.messages import (
    ApprovalInfo,
    ProcessEvent,
    ProcessInfo,
    TellNotice,
    TellPhase,
    UnsolicitedEvent,
    UnsolicitedInfo,
)

__all__ = ["Child", "ChildFactory", "Pair", "PairSnapshot", "SlotPool", "TellLink", "claude_child"]

log = logging.getLogger("irisd.pair")


class SlotPool(Protocol):
    """What a pair needs of the pool: slots under maxProcesses, and a word when its
    state changed (so that whoever waits for a slot looks again)."""

    async def acquire_slot(self, key: PairKey) -> None:
        """Wait for a slot; it counts as held from the moment this returns."""
        ...

    def release_slot(self, key: PairKey) -> None: ...
    def waiting_for_slot(self, key: PairKey) -> int:
        """How many busy processes fill the pool while this pair waits (0: it does not)."""
        ...

    def pair_changed(self) -> None: ...


@dataclass(frozen=True)
class TellLink:
    """Where a running tell sits in a chain of nested tells."""

    id: str
    from_team: str | None
    to_team: str
    chain_id: str
    hops: int


@dataclass(frozen=True)
class PairSnapshot:
    """A pair as other actors may see it: frozen, taken in one go."""

    key: PairKey
    process: ProcessInfo
    current: TellLink | None
    pending_approvals: frozenset[str]


@dataclass(eq=False)
class _Request:
    """A request from another task; ``done`` is set once the actor has handled it."""

    done: trio.Event = field(default_factory=trio.Event)
    message: str = ""
    error: IrisError | None = None

    def finish(self, message: str = "", error: IrisError | None = None) -> None:
        self.message, self.error = message, error
        self.done.set()


@dataclass(eq=False)
class WakeRequest(_Request):
    pass


@dataclass(eq=False)
class StopRequest(_Request):
    force: bool = False
    reason: str = ""


@dataclass(eq=False)
class ResetRequest(_Request):
    pass


@dataclass(eq=False)
class DecideRequest(_Request):
    approval_id: str = ""
    allow: bool = False
    remember: bool = False
    reason: str = ""
    by: str = ""
    approval: ApprovalInfo | None = None


@dataclass(frozen=True)
class Submitted:
    tell: ActiveTell


@dataclass(frozen=True)
class CancelTell:
    tell_id: str


@dataclass(frozen=True)
class SlotGranted:
    pass


@dataclass(frozen=True)
class SessionProbed:
    probe: SessionProbe


@dataclass(frozen=True)
class Spawned:
    process: Child
    session_id: str


@dataclass(frozen=True)
class SpawnFailed:
    reason: str


PairEvent = (
    Submitted
    | CancelTell
    | WakeRequest
    | StopRequest
    | ResetRequest
    | DecideRequest
    | SlotGranted
    | SessionProbed
    | Spawned
    | SpawnFailed
    | ChildEvent
)
_Reporting = SlotGranted | SessionProbed | Spawned | SpawnFailed


class Pair:
    def __init__(
        self,
        *,
        from_team: str | None,
        team: Team,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        slots: SlotPool | None = None,
        hub: EventHub | None = None,
        launcher: Launcher | None = None,
        child_factory: ChildFactory = claude_child,
        access: Access | None = None,
    ) -> None:
        self.from_team = from_team
        self._child_cost = 0.0  # the child's running total_cost_usd, as its last result said
        self.team = team
        self.config = config
        self.paths = paths
        self.store = store
        self.slots = slots
        self.hub = hub
        self.access = access  # the HTTP face's tokens: each child gets its own
        self.launcher_child_factory = child_factory
        self.launcher: Launcher = launcher or launcher_for(team, config, paths.claude_config_dir, child_factory)
        self.session_id = ""
        self.spent_usd = 0.0  # what the pair's tells have cost, all time (read from the ledger in run)
        self.last_used_at: float | None = None  # wall clock, for people
        self.process: Child | None = None
        self.tells: dict[str, ActiveTell] = {}  # every unfinished tell of the pair
        self.machine = ProcessMachine(
            label=self.label, idle_timeout_s=team.idle_timeout_ms / 1000, now=trio.current_time()
        )
        # What the database refused (a full disk...): retried by the actor's timer.
        self.writes = PendingWrites(store, owner=f"{from_team or 'external'}->{team.name}")
        self.desk = ApprovalDesk(
            from_team=from_team,
            to_team=team.name,
            mode=team.permissions,
            timeout_s=config.settings.approval_timeout / 1000,
            store=store,
            hub=hub,
            writes=self.writes,
        )
        self._inbox_send, self._inbox = trio.open_memory_channel[PairEvent](1024)
        self._nursery: trio.Nursery | None = None
        self._wakers: list[_Request] = []
        self._stoppers: list[_Request] = []
        self._unsolicited: UnsolicitedTurn | None = None  # output no tell asked for, being recorded

    def reconfigure(self, team: Team, config: IrisConfig) -> None:
        """A reloaded config.yaml: what the pair reads for its next child and its next tells.
        A child already running keeps the settings it was started with (the supervisor
        stops it once idle when its team changed)."""
        self.team = team
        self.config = config
        self.launcher = launcher_for(team, config, self.paths.claude_config_dir, self.launcher_child_factory)
        self.desk.mode = team.permissions
        self.desk.timeout_s = config.settings.approval_timeout / 1000

    @property
    def key(self) -> PairKey:
        return (self.from_team, self.team.name)

    @property
    def label(self) -> str:
        return f"{self.from_team or 'external'}->{self.team.name}"

    @property
    def state(self) -> str:
        return self.machine.state

    @property
    def reason(self) -> str:
        return self.machine.reason

    # --- what other actors may see ---------------------------------------------------

    def statistics(self) -> ProcessInfo:
        current = self.machine.current
        return ProcessInfo(
            from_team=self.from_team,
            to_team=self.team.name,
            state=self.machine.state,
            session_id=self.session_id,
            pid=self.process.pid if self.process else None,
            queued=self._queued(),
            current_tell=current or "",
            unsolicited=self._unsolicited.id if self._unsolicited and self._unsolicited.holding else "",
            last_used_at=self.last_used_at,
            reason=self.machine.reason,
            host=self.launcher.host,
            cost_usd=self.spent_usd,
        )

    def snapshot(self) -> PairSnapshot:
        current = self.tells.get(self.machine.current or "")
        link = None
        if current is not None:
            link = TellLink(current.id, current.from_team, current.to_team, current.chain_id, current.hops)
        return PairSnapshot(
            key=self.key,
            process=self.statistics(),
            current=link,
            pending_approvals=frozenset(self.desk.pending),
        )

    def view(self, holds_slot: bool) -> PairView:
        """What the pool's policy needs to know of the pair."""
        return PairView(
            key=self.key,
            state=self.machine.state,
            last_used_at=self.machine.last_active,
            queued=len(self.tells),  # also those submitted that the actor has not seen yet
            holds_slot=holds_slot,
        )

    def find(self, tell_id: str) -> ActiveTell | None:
        """An unfinished tell of this pair (its handle: wait on it, read its info)."""
        return self.tells.get(tell_id)

    def _queued(self) -> int:
        return sum(1 for tell in self.tells.values() if tell.machine.status == "queued")

    def refresh_phases(self) -> None:
        """Tell the queued tells what they wait for: the tells ahead of them, or, for the
        first, a process slot or claude's start. Called whenever those facts may change
        (after every event, and by the pool while it holds a spawn back for a slot)."""
        ahead = 1 if self.machine.current is not None else 0
        waiting = self.slots.waiting_for_slot(self.key) if self.slots is not None else 0
        state = self.machine.state
        queued = [tell for tell in self.tells.values() if tell.machine.status == "queued"]  # in arrival order
        for index, tell in enumerate(queued):
            if index + ahead > 0:
                tell.set_phase(TellPhase(name="queued", ahead=index + ahead))
            elif state == "spawning" and waiting > 0:
                tell.set_phase(TellPhase(name="waiting_for_slot", ahead=waiting))
            elif state in ("spawning", "stopped", "terminating"):  # a (re)start is due
                tell.set_phase(TellPhase(name="starting_claude"))

    # --- called from other tasks (non-blocking, or waiting for the actor) ----------------

    def submit(self, tell: ActiveTell) -> None:
        """Queue ``tell``; raises BusyError when the pair's queue is full."""
        limit = self.config.settings.queue_limit
        if self._queued() >= limit:
            raise BusyError(
                f"the queue of {self.label} is full ({limit} tells waiting); wait for some "
                "to finish, cancel some ('iris cancel ID'), or raise settings.queueLimit"
            )
        self._post(Submitted(tell))
        self.tells[tell.id] = tell  # counted at once, so the limit holds between events
        tell.announce()  # "queued", before the actor can start it
        self.refresh_phases()

    def cancel(self, tell_id: str) -> None:
        if tell_id not in self.tells:
            raise NotFoundError(f"tell {tell_id} is not running or queued on {self.label}")
        self._post(CancelTell(tell_id))

    async def wake(self) -> str:
        """Start the child if it is not running; returns what happened."""
        return await self._ask(WakeRequest())

    async def sleep(self, *, force: bool = False, reason: str = "put to sleep") -> str:
        """Stop the child. Without ``force`` a busy child is left alone (says so)."""
        return await self._ask(StopRequest(force=force, reason=reason))

    async def reset(self) -> str:
        """Start a new conversation for the pair (refused while it has work)."""
        return await self._ask(ResetRequest())

    async def decide(self, approval_id: str, *, allow: bool, remember: bool, reason: str, by: str) -> ApprovalInfo:
        """Answer a pending approval of this pair (NotFoundError if it is not pending)."""
        request = DecideRequest(approval_id=approval_id, allow=allow, remember=remember, reason=reason, by=by)
        await self._ask(request)
        assert request.approval is not None
        return request.approval

    async def request_stop(self, reason: str) -> None:
        """For eviction: ask the actor to stop the child if it is idle, without waiting for
        the answer (the pool watches the pair's state). Never dropped: it waits for room
        in a full inbox."""
        await self._inbox_send.send(StopRequest(force=False, reason=reason))

    async def _ask(self, request: WakeRequest | StopRequest | ResetRequest | DecideRequest) -> str:
        self._post(request)
        await request.done.wait()
        if request.error is not None:
            raise request.error
        return request.message

    def _post(self, event: PairEvent) -> None:
        try:
            self._inbox_send.send_nowait(event)
        except trio.WouldBlock:
            raise BusyError(f"{self.label} is overloaded; try again in a moment") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise BusyError(f"{self.label} stopped while this was on its way; send it again") from None

    async def _report(self, event: _Reporting) -> None:
        """Hand a spawn step's outcome to the actor. It must not be lost (the pair would
        stay 'spawning' for ever), so this waits for room in a full inbox."""
        try:
            await self._inbox_send.send(event)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            if isinstance(event, Spawned):
                event.process.stop()
            elif isinstance(event, SlotGranted) and self.slots is not None:
                self.slots.release_slot(self.key)

    # --- the actor -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the pair until cancelled; cancellation stops the child and records every
        unfinished tell as interrupted."""
        row = await self.store.call(sessions.get, self.from_team, self.team.name)
        self.session_id = row.session_id if row else ""
        # What the pair has cost so far; its tells' shares are added as claude reports them.
        self.spent_usd = await self.store.call(ledger.pair_spent, self.from_team, self.team.name)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._serve()
        finally:
            with trio.CancelScope(shield=True):
                await self._abandon("irisd stopped before this tell finished")
            self._close_inbox()

    async def _serve(self) -> None:
        while True:
            # Only the wait is under the deadline: a handler cut off halfway (between two
            # store calls) would leave a decision unsent or a caller waiting for ever.
            event: PairEvent | None = None
            with trio.move_on_at(self._next_deadline()):
                event = await self._inbox.receive()
            try:
                if event is None:
                    await self._on_timer(trio.current_time())
                else:
                    await self._handle(event, trio.current_time())
            except IrisError as exc:  # a read the database refused: this event fails, the pair goes on
                log.warning("a pair's event failed", extra={"pair": self.label, "error": exc.message})
            self.refresh_phases()

    def _next_deadline(self) -> float:
        deadlines = [tell.deadline for tell in self.tells.values()]
        deadlines += [self.desk.next_deadline(), self.machine.next_deadline(), self.writes.next_deadline()]
        if self._unsolicited is not None:
            deadlines.append(self._unsolicited.next_deadline())
        return min(deadlines, default=math.inf)

    async def _handle(self, event: PairEvent, now: float) -> None:
        match event:
            case Submitted(tell):
                tell.session_id = self.session_id  # the session it will join (set again when it starts)
                await self._tell_actions(tell, tell.machine.caller_attached(now))
                if not tell.machine.is_final:
                    await self._run(self.machine.tell_queued(tell.id, now, max_budget_usd=tell.max_budget_usd))
            case CancelTell(tell_id):
                cancelled = self.tells.get(tell_id)
                if cancelled is not None and not cancelled.machine.is_final:
                    await self._tell_actions(cancelled, cancelled.machine.cancel(now))
            case WakeRequest():
                await self._run(self.machine.wake_requested(now), event)
            case StopRequest(force=force, reason=reason):
                await self._run(self.machine.stop_requested(now, force=force, reason=reason), event)
            case ResetRequest():
                await self._run(self.machine.reset_requested(now), event)
            case DecideRequest():
                try:
                    event.approval = await self.desk.decide(
                        event.approval_id,
                        allow=event.allow,
                        remember=event.remember,
                        reason=event.reason,
                        by=event.by,
                        send=self._send_to_child,
                        apply=self._tell_actions,
                    )
                    event.finish()
                except IrisError as exc:
                    event.finish(error=exc)
            case SlotGranted():
                await self._run(self.machine.slot_granted(now))
            case SessionProbed(probe):
                await self._run(self.machine.session_probed(now, probe))
            case Spawned(process, session_id):
                self.process = process
                self.session_id = session_id
                await self._run(self.machine.spawned(now, process.pid))
            case SpawnFailed(reason):
                await self._run(self.machine.spawn_failed(now, reason))
            case ChildLine(process, line, raw) if process is self.process:
                await self._on_child_line(line, raw, now)
            case ChildExited(process, returncode, stderr_tail) if process is self.process:
                self.process = None
                detail = self.launcher.describe_exit(returncode, stderr_tail, event.describe())
                if self._unsolicited is not None:
                    self._unsolicited.end(now, time.time(), f"claude exited before the turn's end: {detail}")
                    await self._end_unsolicited(self._unsolicited, child_free=False)
                lost = NO_CONVERSATION in stderr_tail
                await self._run(self.machine.exited(now, returncode=returncode, detail=detail,
                                                    conversation_lost=lost))
                resent = self.tells.get(self.machine.current or "")
                if resent is not None:  # it goes again to the next child
                    resent.set_phase(TellPhase(name="starting_claude"))
            case ChildLine() | ChildExited():
                pass  # from a child already replaced

    async def _on_timer(self, now: float) -> None:
        await self.writes.retry(now)
        await self.desk.on_timer(now, self._send_to_child, self._tell_actions)
        if (record := self._unsolicited) is not None:
            for action in record.handle_timer(now, time.time()):
                if isinstance(action, tell_machine.StopChild):
                    await self._run(self.machine.stop_child(f"a turn no tell asked for went silent ({action.reason})"))
            if record.ended:
                await self._end_unsolicited(record)
        for tell in list(self.tells.values()):
            if not tell.machine.is_final:
                await self._tell_actions(tell, tell.machine.handle_timer(now))
        await self._run(self.machine.handle_timer(now))

    # --- the child's output -------------------------------------------------------------

    async def _on_child_line(self, line: AnyLine, raw: bytes, now: float) -> None:
        if not self.machine.child_spoke:
            lost = isinstance(line, ResultLine) and any(NO_CONVERSATION in e for e in line.errors)
            await self._run(self.machine.first_line(now, conversation_lost=lost))
            if not self.machine.child_spoke:
                return  # claude said the resumed conversation is gone; the exit follows
        tell = self.tells.get(self.machine.current or "")
        share = self._cost_share(line)  # every result moves the process's running total
        running = tell is not None and not tell.machine.is_final
        if tell is None or route(line, tell_running=running, record=self._unsolicited) != "tell":
            await self._on_unsolicited_line(line, raw, now)
            return
        if share is not None:
            tell.cost_usd = share
            self.spent_usd += share
        if isinstance(line, ControlRequestLine) and line.request.subtype == "can_use_tool":
            await self.writes.save(None, tells.append_message, tell.id, time.time(), line_type(line), raw)
            await self.desk.on_request(line, tell, self._send_to_child, self._tell_actions)
            return
        before = tell.machine.text
        actions = tell.machine.child_line(line, now)
        await self.writes.save(None, tells.append_message, tell.id, time.time(), line_type(line), raw)
        tell.publish_text(before)
        if (phase := after_line(line, tell.phase)) is not None:
            tell.set_phase(phase)
        if isinstance(line, SystemLine) and (notice := line.retry_notice()):
            log.warning("claude retries the API", extra={"pair": self.label, "tell": tell.id, "notice": notice})
            tell.publish(TellNotice(tell_id=tell.id, text=notice))
        if isinstance(line, ResultLine) and tell.machine.is_final:
            await self.writes.save(None, sessions.record_turn, self.from_team, self.team.name, time.time())
        await self._tell_actions(tell, actions)

    # --- output no tell asked for (pool/unsolicited.py) ----------------------------------

    async def _on_unsolicited_line(self, line: AnyLine, raw: bytes, now: float) -> None:
        """A line no tell asked for: kept in the unsolicited record, never dropped, never
        given to a tell; while it holds a turn, the next tell waits for the turn's end."""
        if isinstance(line, ControlResponseLine) or self.machine.state == "terminating":
            return  # an answer to Iris's own request; the last words of a child being stopped
        wall = time.time()
        record = self._unsolicited
        if record is None:
            record = self._unsolicited = UnsolicitedTurn(
                from_team=self.from_team,
                to_team=self.team.name,
                session_id=self.session_id,
                response_timeout_s=self.team.response_timeout_ms / 1000,
                now=now,
                wall=wall,
            )
            log.warning("claude printed what no tell asked for", extra={"pair": self.label, "turn": record.id})
            await self.writes.save(None, unsolicited.save, record.info())
            self._announce_unsolicited(record.info())
        await self.writes.save(None, unsolicited.append_message, record.id, wall, line_type(line), raw)
        record.child_line(line, raw, now)
        if isinstance(line, ControlRequestLine) and line.request.subtype == "can_use_tool":
            await self.desk.on_request(line, None, self._send_to_child, self._tell_actions)  # denied: no tell asked
        if record.holding:
            await self._run(self.machine.unsolicited_started(now))  # the next tell waits for the turn's end
        else:
            await self._run(self.machine.unsolicited_ended(now))

    async def _end_unsolicited(self, record: UnsolicitedTurn, *, child_free: bool = True) -> None:
        """Save and announce the record; ``child_free``: the child lives on and may take the next tell."""
        if not record.ended:
            record.close(time.time())
        self._unsolicited = None
        info = record.info()
        log.warning(
            "claude ended what no tell asked for",
            extra={"pair": self.label, "turn": record.id, "status": info.status, "said": info.text[:200]},
        )
        await self.writes.save(None, unsolicited.save, info)
        if record.turns:
            await self.writes.save(None, sessions.record_turn, self.from_team, self.team.name, time.time())
        self._announce_unsolicited(info)
        if child_free:
            await self._run(self.machine.unsolicited_ended(trio.current_time()))

    def _announce_unsolicited(self, info: UnsolicitedInfo) -> None:
        if self.hub is not None:
            self.hub.publish(UnsolicitedEvent(turn=info), self.from_team, self.team.name)

    # --- carrying out the machines' actions -------------------------------------------------

    async def _run(self, actions: list[Action], request: _Request | None = None) -> None:
        """Carry out the process machine's actions, in order. ``request``: the one being
        handled (answered now, or parked until the machine says)."""
        for action in actions:
            match action:
                case PersistState(state):
                    if self.slots is not None:
                        self.slots.pair_changed()
                    if self.hub is not None:
                        self.hub.publish(ProcessEvent(process=self.statistics()), self.from_team, self.team.name)
                    await self.writes.save("state", sessions.set_process_state, self.from_team, self.team.name, state)
                case RequestSlot():
                    self._start(self._acquire_slot)
                case ProbeSession():
                    self._start(self._probe_session)
                case Spawn(resume, renew, max_budget_usd):
                    self._start(self._launch, resume, renew, max_budget_usd)
                case ReleaseSlot():
                    if self.slots is not None:
                        self.slots.release_slot(self.key)
                case SendTurn():
                    await self._send_turn(action)
                case StopChild(reason):
                    if self.process is not None:
                        log.info("stopping claude", extra={"pair": self.label, "reason": reason})
                        self.process.stop()
                case FailTells(ids, reason):
                    for tell in self._known(ids):
                        await self._tell_actions(tell, tell.machine.fail(trio.current_time(), reason))
                case InterruptTells(ids, reason):
                    for tell in self._known(ids):
                        await self._tell_actions(tell, tell.machine.interrupt(trio.current_time(), reason))
                case ExpireApprovals(reason):
                    await self.desk.expire(reason)
                case RenewSession():
                    try:
                        await self.store.call(sessions.get_or_create, self.from_team, self.team.name, time.time())
                        row = await self.store.call(
                            sessions.replace_session_id, self.from_team, self.team.name, time.time()
                        )
                    except IrisError as exc:
                        if request is not None:
                            request.finish(error=exc)
                        continue
                    self.session_id = row.session_id
                    if request is not None:
                        request.finish(f"{self.label} starts a new conversation (session {row.session_id})")
                case Answer(message, error):
                    if request is not None:
                        request.finish(error=BusyError(message)) if error else request.finish(message)
                case AwaitStart():
                    if request is not None:
                        self._wakers.append(request)
                case AwaitExit():
                    if request is not None:
                        self._stoppers.append(request)
                case WakersDone(error):
                    for waker in self._wakers:
                        if error:
                            waker.finish(error=ClaudeError(error))
                        else:
                            pid = self.process.pid if self.process is not None else None
                            waker.finish(f"{self.label} is awake (pid {pid})")
                    self._wakers.clear()
                case StoppersDone(error):
                    for stopper in self._stoppers:
                        stopper.finish(error=IrisError(error)) if error else stopper.finish(f"{self.label} is asleep")
                    self._stoppers.clear()
                case Note(message):
                    log.warning(message, extra={"pair": self.label})

    async def _tell_actions(self, tell: ActiveTell, actions: list[tell_machine.Action]) -> None:
        """Carry out a tell machine's actions, then save the tell (and end it, if final)."""
        for action in actions:
            match action:
                case tell_machine.ReplyToCaller():
                    tell.replied.set()
                case tell_machine.StopChild(reason):
                    await self._run(self.machine.stop_child(reason))
                case tell_machine.SendInterrupt():
                    if self.process is not None and tell.id == self.machine.current:
                        try:
                            await self.process.send(interrupt_request(f"interrupt-{tell.id}"))
                        except ClaudeError:
                            pass
        await save_tell(self.store, tell, self.writes)  # where a final tell ends
        if tell.machine.is_final and self.tells.pop(tell.id, None) is not None:
            await self.desk.expire(f"the tell ended ({tell.machine.status}) before a decision", tell)
            if tell.id == self.machine.current:
                self.last_used_at = time.time()
            await self._run(self.machine.tell_ended(tell.id, trio.current_time()))

    def _cost_share(self, line: AnyLine) -> float | None:
        """A result's cost for its turn: claude reports the running total of its process."""
        if not isinstance(line, ResultLine) or line.total_cost_usd is None:
            return None
        share = max(line.total_cost_usd - self._child_cost, 0.0)
        self._child_cost = line.total_cost_usd
        return share

    def _known(self, ids: tuple[str, ...]) -> list[ActiveTell]:
        return [tell for tell_id in ids if (tell := self.tells.get(tell_id)) is not None]

    async def _send_turn(self, turn: SendTurn) -> None:
        tell = self.tells[turn.tell_id]
        now = trio.current_time()
        startup_s = self.config.settings.session_init_timeout / 1000 if turn.fresh_child else 0.0
        tell.session_id = self.session_id
        tell.new_session = tell.new_session or turn.new_session
        if turn.restarted:
            await self._tell_actions(tell, tell.machine.child_restarted(now, startup_s=startup_s))
        else:
            await self._tell_actions(tell, tell.machine.start(now, startup_s=startup_s))
        starting = turn.restarted or turn.fresh_child
        tell.set_phase(TellPhase(name="starting_claude" if starting else "waiting_for_model"))
        if self.process is not None and not tell.machine.is_final:
            try:
                await self.process.send(user_turn(tell.message))
            except ClaudeError:
                pass  # the ChildExited that follows ends or retries the tell

    async def _send_to_child(self, data: bytes) -> None:
        if self.process is not None:
            try:
                await self.process.send(data)
            except ClaudeError:
                pass  # it is exiting; its ChildExited follows

    # --- the steps of a spawn (tasks of the pair's nursery) ---------------------------------

    def _start(self, step: Callable[..., object], *args: object) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(step, *args)  # type: ignore[arg-type]

    async def _acquire_slot(self) -> None:
        if self.slots is not None:
            await self.slots.acquire_slot(self.key)
        await self._report(SlotGranted())

    async def _probe_session(self) -> None:
        try:
            row = await self.store.call(sessions.get_or_create, self.from_team, self.team.name, time.time())
            resumable = await self.launcher.can_resume(row.session_id)
        except IrisError as exc:  # claude cannot be checked, or the database refused
            await self._report(SpawnFailed(exc.message))
            return
        except Exception as exc:  # a bug or a broken database must not take other pairs down
            log.exception("session check failed", extra={"pair": self.label})
            await self._report(SpawnFailed(f"irisd could not check the session: {exc}"))
            return
        await self._report(SessionProbed(SessionProbe(resumable=resumable, used=row.message_count > 0)))

    async def _launch(self, resume: bool, renew: bool, max_budget_usd: float | None) -> None:
        started = trio.current_time()
        grant: ChildGrant | None = None
        try:
            if renew:
                row = await self.store.call(
                    sessions.replace_session_id, self.from_team, self.team.name, time.time()
                )
            else:
                row = await self.store.call(sessions.get_or_create, self.from_team, self.team.name, time.time())
            grant = self._grant()
            remote = bool(self.launcher.host)
            spec = LaunchSpec(
                session_id=row.session_id,
                resume=resume,
                permissions=self.team.permissions,
                allowed_tools=self.team.allowed_tools,
                disallowed_tools=self.team.disallowed_tools,
                mcp_config="" if remote else self._mcp_config(grant),
                endpoint=self._endpoint(grant) if remote else None,
                system_prompt=child_system_prompt(self.team.name),
                max_budget_usd=max_budget_usd,
            )
            command = self.launcher.command(spec)
            # What was launched, for people: it need not hold up a start on a full disk.
            await self.writes.save(
                None, sessions.record_spawn, self.from_team, self.team.name, command.argv,
                msgspec.json.encode(self.team),
            )
            process = self.launcher.child(command, self._inbox_send.clone())
            self._child_cost = 0.0  # a new process: claude's running total starts again
            assert self._nursery is not None
            await self._nursery.start(self._run_child, process, grant)
            if command.preamble:  # what must not be in a command line (a remote child's env and token)
                await process.send(command.preamble)
        except IrisError as exc:  # claude cannot start, or the database refused the spawn's writes
            if grant is not None:
                grant.revoke()
            await self._report(SpawnFailed(exc.message))
            return
        except Exception as exc:  # a bug or a broken database must not take other pairs down
            if grant is not None:
                grant.revoke()
            log.exception("spawn failed", extra={"pair": self.label})
            await self._report(SpawnFailed(f"irisd could not start claude: {exc}"))
            return
        log.info(
            "spawned claude",
            extra={"pair": self.label, "pid": process.pid, "resume": resume, "host": self.launcher.host,
                   "session_id": row.session_id, "spawn_s": round(trio.current_time() - started, 3)},
        )
        await self._report(Spawned(process, row.session_id))

    def _grant(self) -> ChildGrant | None:
        """A token for the child about to start (None while irisd has no HTTP face)."""
        return self.access.grant_child(self.team.name, self.label) if self.access is not None else None

    def _endpoint(self, grant: ChildGrant | None) -> IrisEndpoint | None:
        """Where a remote child reaches Iris (through its ssh connection's forward)."""
        if grant is None or self.access is None:
            return None  # no HTTP face: a remote child cannot run the stdio shim, so no Iris tools
        return IrisEndpoint(url=f"{self.access.child_url}/mcp", token=grant.token)

    def _mcp_config(self, grant: ChildGrant | None) -> str:
        """How the child gets Iris's tools: over HTTP with its own token (the file holds
        it, never argv), else through the stdio shim on irisd's socket."""
        if grant is not None:
            return str(grant.path)
        return iris_mcp_config(team=self.team.name, parent_pair=self.label, socket=str(self.paths.socket))

    @staticmethod
    async def _run_child(
        process: Child, grant: ChildGrant | None, *, task_status: trio.TaskStatus[Child] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The child's lifetime is its token's: revoked the moment it exits or is stopped."""
        try:
            await process.run(task_status=task_status)
        finally:
            if grant is not None:
                grant.revoke()

    # --- the end ---------------------------------------------------------------------------

    async def _abandon(self, reason: str) -> None:
        """The actor ends: every unfinished tell is recorded as interrupted, every waiting
        request answered (the child is stopped by the nursery's cancellation)."""
        now = trio.current_time()
        await self.writes.retry(math.inf)  # a last try for what waits, before the final states
        if (record := self._unsolicited) is not None:
            self._unsolicited = None
            record.end(now, time.time(), reason)
            try:
                await self.store.call(unsolicited.save, record.info())
            except Exception:
                log.exception("could not record an interrupted unsolicited turn", extra={"pair": self.label})
        try:
            await self._run(self.machine.abandon(reason))
        except Exception:
            log.exception("could not record the end of the pair's tells", extra={"pair": self.label})
        for tell in list(self.tells.values()):  # submitted, not yet seen by the machine
            try:
                await end_tell(self.store, tell, reason, interrupted=True)
            except Exception:
                log.exception("could not record an interrupted tell")
        self.tells.clear()
        for request in (*self._wakers, *self._stoppers):
            request.finish(error=IrisError("irisd is stopping"))

    def _close_inbox(self) -> None:
        """The actor is gone: answer what still waits in its inbox (its tells were
        interrupted with the others), and make later posts fail at once, never hang."""
        while True:
            try:
                event = self._inbox.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if isinstance(event, _Request):
                event.finish(error=BusyError(f"{self.label} stopped before handling this; send it again"))
            elif isinstance(event, Spawned):
                event.process.stop()
            elif isinstance(event, SlotGranted) and self.slots is not None:
                self.slots.release_slot(self.key)
        self._inbox.close()
