"""One (from_team, to_team) pair: its tells and its claude child, as an actor.

How it works
------------
``Pair.run`` is an actor: one task owns all of the pair's state and handles one event
at a time from its inbox (``pair_events.py``: a submitted tell, a cancel, wake / stop /
reset / decide requests, the steps of a spawn, a line or the exit of the child). It
decides nothing itself: the process lifecycle is ``ProcessMachine``
(``process_machine.py``), each tell's is its ``TellMachine`` (driven by ``pair_tells.py``),
where a child's line goes and its share of the cost is ``ChildLineRouter``
(``child_router.py``). The actor feeds them events and carries out what they return
(``_run``). One timer is armed at the earliest deadline of the pair: the tells', the
approval desk's, the unsolicited record's, the process machine's, the retried writes'.

The child runs in the pair's own nursery, so it never outlives the pair. The steps of
a spawn (a slot under maxProcesses, the session probe, claude's start with its token and
MCP config: ``launch.py``) run in tasks of that nursery and report back through the
inbox, so the actor keeps answering meanwhile. The pool is reached through a narrow
``SlotPool``; other actors read a pair only through the frozen ``snapshot()`` and
``statistics()``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from functools import partial
from typing import Any

import trio

from iris_common.config import IrisConfig, Team
from iris_common.paths import IrisPaths
from irisd.claude.launcher import Child, ChildFactory, Launcher, claude_child, launcher_for
from irisd.claude.process import ChildExited, ChildLine
from irisd.claude.wire import AnyLine
from irisd.events import EventHub
from irisd.pool import pair_events as ev
from irisd.pool import process_machine as pm
from irisd.pool.approvals import ApprovalDesk, Pending, declined_input
from irisd.pool.child_router import ChildLineRouter, is_input_request, is_permission_request
from irisd.pool.launch import SpareSource, Spawner
from irisd.pool.pair_events import PairSnapshot, SlotPool, TellLink
from irisd.pool.pair_inbox import Inbox, Parked
from irisd.pool.pair_tells import Compacting, PairTells
from irisd.pool.policy import PairKey, PairView
from irisd.pool.unsolicited_keeper import UnsolicitedKeeper
from irisd.store import ledger, sessions
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell import machine as tell_machine
from irisd.tell.active import ActiveTell
from irisd.tokens import Access
from protocol.errors import BusyError, ClaudeError, IrisError, NotFoundError
from protocol.messages import ApprovalInfo, ProcessEvent, ProcessInfo, TellPhase
from protocol.pairs import pair_label

__all__ = ["Child", "ChildFactory", "Pair", "PairSnapshot", "SlotPool", "TellLink", "claude_child"]

log = logging.getLogger("irisd.pair")


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
        thread: str = "",
        spares: SpareSource | None = None,
    ) -> None:
        self.from_team = from_team
        self.thread = thread  # which of the pair's conversations this actor serves ("": the default)
        self.team = team
        self.config = config
        self.paths = paths
        self.store = store
        self.slots = slots
        self.hub = hub
        self.launcher_child_factory = child_factory
        self.launcher: Launcher = launcher or launcher_for(team, config, paths.claude_config_dir, child_factory)
        self.session_id = ""
        self.process: Child | None = None
        self.router = ChildLineRouter()  # a new one for each child
        self.machine = pm.ProcessMachine(label=self.label, idle_timeout_s=team.idle_timeout_ms / 1000,
                                         now=trio.current_time())
        self.inbox = Inbox(self.label, self.key, slots)
        self.parked = Parked(self.label)  # requests the machine answers later
        # What the database refused (a full disk...): retried by the actor's timer.
        self.writes = PendingWrites(store, owner=self.label)
        # Whether the stored state says a claude runs (idle or processing; else "stopped"):
        # what a start after a crash resets (core.reconcile). Only its changes are written,
        # not each idle <-> processing of a turn: listings show the live state
        # (irisd/pairs.py), and a second commit at the end of every tell held up the next.
        self._stored_running = False
        self.desk = ApprovalDesk(
            from_team=from_team, to_team=team.name, mode=team.permissions, store=store, hub=hub,
            timeout_s=config.settings.approval_timeout / 1000, writes=self.writes,
        )
        self.tells = PairTells(
            key=self.key, label=self.label, store=store, writes=self.writes, desk=self.desk, machine=self.machine,
            run=self._run, send=self._send_to_child, compacting=self._compacting(),
        )
        self.unsolicited = UnsolicitedKeeper(
            from_team=from_team, to_team=team.name, label=self.label, store=store, writes=self.writes, hub=hub,
            thread=thread,
        )
        self.spawner = Spawner(self.key, self.label, store, self.writes, paths, self.inbox, slots, access, hub, spares)
        self._nursery: trio.Nursery | None = None

    def reconfigure(self, team: Team, config: IrisConfig) -> None:
        """A reloaded config.yaml: what the pair reads for its next child and its next tells.
        A child already running keeps the settings it was started with (the supervisor
        stops it once idle when its team changed)."""
        self.team = team
        self.config = config
        self.launcher = launcher_for(team, config, self.paths.claude_config_dir, self.launcher_child_factory)
        self.desk.mode = team.permissions
        self.desk.timeout_s = config.settings.approval_timeout / 1000
        self.tells.compacting = self._compacting()

    def _compacting(self) -> Compacting:
        return Compacting(self.team.compact_at, self.config.settings.sessions.context_window, self._new_compaction)

    def _new_compaction(self) -> ActiveTell:
        """A ``/compact`` of the pair's conversation that Iris runs between two tells."""
        machine = tell_machine.TellMachine(
            response_timeout_s=self.team.response_timeout_ms / 1000, caller_timeout_ms=-1, now=trio.current_time()
        )
        compaction = ActiveTell(from_team=self.from_team, to_team=self.team.name, message="/compact",
                                machine=machine, hub=self.hub, kind="compaction", thread=self.thread)
        compaction.session_id = self.session_id
        return compaction

    @property
    def key(self) -> PairKey:
        return (self.from_team, self.team.name, self.thread)

    @property
    def label(self) -> str:
        return pair_label(self.from_team, self.team.name, self.thread)

    @property
    def state(self) -> str:
        return self.machine.state

    @property
    def reason(self) -> str:
        return self.machine.reason

    # --- what other actors may see ---------------------------------------------------

    def statistics(self) -> ProcessInfo:
        return ProcessInfo(
            from_team=self.from_team,
            to_team=self.team.name,
            state=self.machine.state,
            session_id=self.session_id,
            pid=self.process.pid if self.process else None,
            queued=len(self.tells.queued()),
            current_tell=self.machine.current or "",
            unsolicited=self.unsolicited.holding_id,
            last_used_at=self.tells.last_used_at,
            reason=self.machine.reason,
            host=self.launcher.host,
            cost_usd=self.tells.spent_usd,
            thread=self.thread,
        )

    def snapshot(self) -> PairSnapshot:
        link = TellLink.of(current) if (current := self.tells.get(self.machine.current)) is not None else None
        return PairSnapshot(
            key=self.key, process=self.statistics(), current=link, pending_approvals=frozenset(self.desk.pending)
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
        """An unfinished tell of this pair, or one whose end is not written yet (its
        handle: wait on it, read its info)."""
        return self.tells.find(tell_id)

    def refresh_phases(self) -> None:
        """Tell the queued tells what they wait for. Called whenever that may change (after
        every event, and by the pool while it holds a spawn back for a slot)."""
        waiting = self.slots.waiting_for_slot(self.key) if self.slots is not None else 0
        self.tells.refresh_phases(state=self.machine.state, waiting_for_slot=waiting,
                                  own_turn=self.unsolicited.holding)

    # --- called from other tasks (non-blocking, or waiting for the actor) ----------------

    def submit(self, tell: ActiveTell) -> None:
        """Queue ``tell``; raises BusyError when the pair's queue is full."""
        self.tells.check_room(self.config.settings.queue_limit)
        self.inbox.post(ev.Submitted(tell))
        self.tells.add(tell)  # counted at once, so the limit holds between events
        tell.announce()  # "queued", before the actor can start it
        self.refresh_phases()

    def cancel(self, tell_id: str) -> None:
        if self.tells.get(tell_id) is None:
            raise NotFoundError(f"tell {tell_id} is not running or queued on {self.label}")
        self.inbox.post(ev.CancelTell(tell_id))

    async def wake(self) -> str:
        """Start the child if it is not running; returns what happened."""
        return await self.inbox.ask(ev.WakeRequest())

    async def sleep(self, *, force: bool = False, reason: str = "put to sleep") -> str:
        """Stop the child. Without ``force`` a busy child is left alone (says so)."""
        return await self.inbox.ask(ev.StopRequest(force=force, reason=reason))

    async def reset(self) -> str:
        """Start a new conversation for the pair (refused while it has work)."""
        return await self.inbox.ask(ev.ResetRequest())

    async def decide(
        self, approval_id: str, *, allow: bool, remember: bool, reason: str, by: str,
        content: dict[str, Any] | None = None,
    ) -> ApprovalInfo:
        """Answer a pending approval of this pair (NotFoundError if it is not pending);
        ``content``: the answer to an input request's form."""
        request = ev.DecideRequest(
            approval_id=approval_id, allow=allow, remember=remember, reason=reason, by=by, content=content or {}
        )
        await self.inbox.ask(request)
        assert request.approval is not None
        return request.approval

    async def ask_budget(self, tell_id: str, question: str, details: dict[str, Any]) -> Pending:
        """Ask the person whether the chain of this pair's running tell ``tell_id`` may spend
        beyond its budget; the record's ``done`` is set once decided (NotFoundError if the
        tell no longer runs here)."""
        request = ev.AskBudgetRequest(tell_id=tell_id, question=question, details=details)
        await self.inbox.ask(request)
        assert request.asked is not None
        return request.asked

    async def write_held(self) -> None:
        """Have the actor write what it holds (a tell's end held for a next tell's start),
        for a reader of the database; at once if it holds nothing."""
        if self.writes.holding:
            with contextlib.suppress(BusyError):  # stopping: it writes what it holds as it ends
                await self.inbox.ask(ev.WriteHeldRequest())

    async def request_stop(self, reason: str) -> None:
        """For eviction: ask the actor to stop the child if it is idle, without waiting for
        the answer (the pool watches the pair's state). Never dropped: it waits for room
        in a full inbox."""
        await self.inbox.send(ev.StopRequest(force=False, reason=reason))

    # --- the actor -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the pair until cancelled; cancellation stops the child and records every
        unfinished tell as interrupted."""
        row = await self.store.call(sessions.get, self.from_team, self.team.name, thread=self.thread)
        self.session_id = row.session_id if row else ""
        # What the pair has cost so far; its tells' shares are added as claude reports them.
        self.tells.spent_usd = await self.store.call(ledger.pair_spent, self.from_team, self.team.name,
                                                     thread=self.thread)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._serve()
        finally:
            if self.process is not None:  # a spare it took runs in the spares' nursery, not in its own
                self.process.stop()
            with trio.CancelScope(shield=True):
                await self._abandon("irisd stopped before this tell finished")
            self.inbox.close()

    async def _serve(self) -> None:
        while True:
            # Only the wait is under the deadline: a handler cut off halfway (between two
            # store calls) would leave a decision unsent or a caller waiting for ever. One
            # scope serves wait after wait (its deadline moved to the pair's next one, and
            # off while a handler runs) until the deadline comes: a new scope for each of a
            # turn's twenty events was a quarter of the actor's own time.
            event: ev.PairEvent | None = None
            with trio.CancelScope() as waiting:
                while True:
                    waiting.deadline = self._next_deadline()
                    event = await self.inbox.receive()
                    waiting.deadline = math.inf
                    if waiting.cancel_called:  # the deadline came with the event: handled out of the scope
                        break
                    await self._step(event)
                    event = None
            await self._step(event)  # the deadline came (None), or came as an event did

    def _next_deadline(self) -> float:
        return min(self.tells.next_deadline(), self.desk.next_deadline(), self.machine.next_deadline(),
                   self.writes.next_deadline(), self.unsolicited.next_deadline())

    async def _step(self, event: ev.PairEvent | None) -> None:
        """Handle ``event``, or the timer (None)."""
        try:
            if event is None:
                await self._on_timer(trio.current_time())
            else:
                await self._handle(event, trio.current_time())
        except IrisError as exc:  # a read the database refused: this event fails, the pair goes on
            log.warning("a pair's event failed", extra={"pair": self.label, "error": exc.message})
        self.refresh_phases()

    async def _handle(self, event: ev.PairEvent, now: float) -> None:
        match event:
            case ev.Submitted(tell):
                tell.session_id = self.session_id  # the session it will join (set again when it starts)
                # An idle child gets the turn first; the pair's state and the tell's are
                # written after, in one transaction.
                async with self.writes.batch():
                    await self.tells.apply(tell, tell.machine.caller_attached(now))
                    if not tell.machine.is_final:
                        await self._run(self.machine.tell_queued(tell.id, now, max_budget_usd=tell.max_budget_usd))
            case ev.CancelTell(tell_id):
                cancelled = self.tells.get(tell_id)
                if cancelled is not None and not cancelled.machine.is_final:
                    await self.tells.apply(cancelled, cancelled.machine.cancel(now))
            case ev.WakeRequest():
                await self._run(self.machine.wake_requested(now), event)
            case ev.StopRequest(force=force, reason=reason):
                await self._run(self.machine.stop_requested(now, force=force, reason=reason), event)
            case ev.ResetRequest():
                await self._run(self.machine.reset_requested(now), event)
            case ev.DecideRequest():
                await self.tells.decide(event)
            case ev.AskBudgetRequest():
                await self.tells.ask_budget(event)
            case ev.WriteHeldRequest():
                try:
                    await self.writes.flush()
                finally:  # the reader waits on it: answered whatever happens
                    event.finish()
            case ev.SlotGranted():
                await self._run(self.machine.slot_granted(now))
            case ev.SessionProbed(probe):
                await self._run(self.machine.session_probed(now, probe))
            case ev.Spawned(process, session_id, start):
                if start is None:  # not known (a remote claude): the last child's total, if it had this session
                    start = self.router.total if session_id == self.session_id else None
                self.process, self.session_id, self.router = process, session_id, ChildLineRouter(start)
                await self._run(self.machine.spawned(now, process.pid))
            case ev.SpawnFailed(reason):
                await self._run(self.machine.spawn_failed(now, reason))
            case ChildLine(process, line, raw) if process is self.process:
                await self._on_child_line(line, raw, now)
            case ChildExited(process, returncode, stderr_tail) if process is self.process:
                self.process = None
                detail = self.launcher.describe_exit(returncode, stderr_tail, event.describe())
                await self.unsolicited.child_exited(now, detail)
                lost = self.router.stderr_says_conversation_lost(stderr_tail)
                await self._run(self.machine.exited(now, returncode=returncode, detail=detail, conversation_lost=lost))
                if (resent := self.tells.get(self.machine.current)) is not None:  # it goes again to the next child
                    resent.set_phase(TellPhase(name="starting_claude"))
            case ChildLine() | ChildExited():
                pass  # from a child already replaced

    async def _on_timer(self, now: float) -> None:
        await self.writes.retry(now)
        await self.desk.on_timer(now, self._send_to_child, self.tells.apply)
        for action in self.unsolicited.on_timer(now):
            if isinstance(action, tell_machine.StopChild):
                await self._run(self.machine.stop_child(f"a turn no tell asked for went silent ({action.reason})"))
        if self.unsolicited.ended:
            await self.unsolicited.end()
            await self._run(self.machine.unsolicited_ended(trio.current_time()))  # the child is free again
        await self.tells.on_timer(now)
        await self._run(self.machine.handle_timer(now))

    async def _on_child_line(self, line: AnyLine, raw: bytes, now: float) -> None:
        """Where the line goes is the router's (child_router.py) to say."""
        self.machine.line_heard()
        if not self.machine.child_spoke:
            await self._run(self.machine.first_line(now, conversation_lost=self.router.says_conversation_lost(line)))
            if not self.machine.child_spoke:
                return  # claude said the resumed conversation is gone; the exit follows
        tell = self.tells.get(self.machine.current)
        running = tell is not None and not tell.machine.is_final
        stopping = self.machine.state == "terminating"
        routed = self.router.route(line, tell_running=running, record=self.unsolicited.record, stopping=stopping)
        if routed.to == "unsolicited":  # kept in the record; while it holds a turn, the next tell waits
            timeout_s = self.team.response_timeout_ms / 1000
            await self.unsolicited.line(line, raw, now, session_id=self.session_id, response_timeout_s=timeout_s,
                                        spent=routed.spent)
            if is_permission_request(line):  # denied: no tell asked for it
                await self.desk.on_request(line, None, self._send_to_child, self.tells.apply)
            elif is_input_request(line):
                await self._send_to_child(declined_input(line))
            holding = self.unsolicited.holding
            await self._run(self.machine.unsolicited_started(now) if holding else self.machine.unsolicited_ended(now))
        elif routed.to != "ignore" and tell is not None:
            await self.tells.child_line(tell, line, raw, now, routed)

    async def _send_to_child(self, data: bytes) -> None:
        if self.process is not None:
            with contextlib.suppress(ClaudeError):  # it is exiting; its ChildExited follows
                await self.process.send(data)

    # --- carrying out the process machine's actions ------------------------------------------

    async def _run(self, actions: list[pm.Action], request: ev.Request | None = None) -> None:
        """Carry out the process machine's actions, in order. ``request``: the one being
        handled (answered now, or parked until the machine says)."""
        for action in actions:
            match action:
                case pm.PersistState(state):
                    if self.slots is not None:
                        self.slots.pair_changed()
                    if self.hub is not None:
                        self.hub.publish(ProcessEvent(process=self.statistics()), self.from_team, self.team.name)
                    if (running := state in ("idle", "processing")) != self._stored_running:
                        self._stored_running = running
                        await self.writes.save("state", partial(sessions.set_process_state, thread=self.thread),
                                               self.from_team, self.team.name, state if running else "stopped")
                case pm.RequestSlot() | pm.ProbeSession() | pm.Spawn():
                    assert self._nursery is not None
                    self.spawner.start(action, self._nursery, lambda: (self.team, self.launcher))
                case pm.ReleaseSlot():
                    if self.slots is not None:
                        self.slots.release_slot(self.key)
                case pm.SendTurn(fresh_child=fresh):
                    startup_s = self.config.settings.session_init_timeout / 1000 if fresh else 0.0
                    await self.tells.start_turn(action, trio.current_time(), session_id=self.session_id,
                                                startup_s=startup_s)
                case pm.StopChild(reason):
                    if self.process is not None:
                        log.info("stopping claude", extra={"pair": self.label, "reason": reason})
                        self.process.stop()
                case pm.FailTells(ids, reason):
                    await self.tells.fail(ids, reason)
                case pm.InterruptTells(ids, reason):
                    await self.tells.fail(ids, reason, interrupted=True)
                case pm.ExpireApprovals(reason):
                    await self.desk.expire(reason)
                case pm.RenewSession():
                    try:
                        self.session_id = await self.spawner.renew_session(self.team.name)
                    except IrisError as exc:
                        if request is not None:
                            request.finish(error=exc)
                        continue
                    if request is not None:
                        request.finish(f"{self.label} starts a new conversation (session {self.session_id})")
                case pm.Answer() | pm.AwaitStart() | pm.AwaitExit() | pm.WakersDone() | pm.StoppersDone():
                    self.parked.carry_out(action, request, self.process.pid if self.process is not None else None)
                case pm.Note(message):
                    log.warning(message, extra={"pair": self.label})

    async def _abandon(self, reason: str) -> None:
        """The actor ends: every unfinished tell is recorded as interrupted, every waiting
        request answered (the child is stopped by the nursery's cancellation)."""
        now = trio.current_time()
        await self.writes.retry(math.inf)  # a last try for what waits, before the final states
        await self.unsolicited.abandon(now, reason)
        try:
            await self._run(self.machine.abandon(reason))
        except Exception:
            log.exception("could not record the end of the pair's tells", extra={"pair": self.label})
        await self.tells.abandon(reason)  # submitted, not yet seen by the machine
        self.parked.abandon()
