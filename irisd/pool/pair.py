"""One (from_team, to_team) pair: its queue of tells and its claude child.

How it works
------------
``Pair.run`` is an actor: one task owns all of the pair's state and handles one event
at a time from its inbox (a submitted tell, a cancel, wake / stop / reset requests, a
line or the exit of the child, the outcome of a spawn). Tells are served one at a
time, in arrival order. One timer is armed at the earliest deadline of the pair: the
tells' deadlines (response timeouts, callers' waits) and the idle child's reaping time.

Process states::

    stopped ─> spawning ─> idle <─> processing
                  ^          │           │ (response timeout, sleep --force, evict)
                  │          └─────> terminating ─> stopped
                  └── retry (backoff) <── crashed on start ──> failed (after retries)

The child runs in the pair's own nursery, so it never outlives the pair. Spawning
runs in a task of that nursery too (it may wait for a free slot under maxProcesses),
so the actor keeps answering cancels and deadlines while claude starts. A new
conversation starts with ``--session-id``; once claude has its transcript on disk,
later children ``--resume`` it. If a resume finds no conversation, the pair starts a
new one, once, and says so on the tell (``new_session``).
"""

from __future__ import annotations

import collections
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import msgspec
import trio

from irisd.claude.command import child_environment, claude_argv, iris_mcp_config, root_skip_problem
from irisd.claude.locate import find_claude
from irisd.claude.process import ChildEvent, ChildExited, ChildLine, ClaudeProcess
from irisd.claude.wire import (
    AnyLine,
    ControlRequestLine,
    GarbageLine,
    ResultLine,
    SystemLine,
    UnknownLine,
    interrupt_request,
    line_type,
    user_turn,
)
from irisd.config import IrisConfig, Team
from irisd.http.tokens import ChildGrant
from irisd.paths import IrisPaths, session_file
from irisd.pool.active_tell import ActiveTell
from irisd.pool.approvals import ApprovalDesk
from irisd.pool.policy import (
    ChildExit,
    Died,
    Expected,
    GiveUp,
    NewConversation,
    PairKey,
    PairView,
    RetryStart,
    classify_exit,
    idle_deadline,
)
from irisd.store import sessions, tells
from irisd.store.facade import Store
from irisd.tell.machine import Action, ReplyToCaller, SendInterrupt, StopChild
from irisd.tell.phase import after_line
from protocol.errors import BusyError, ClaudeError, IrisError, NotFoundError
from protocol.messages import ApprovalInfo, ProcessEvent, ProcessInfo, ProcessState, TellNotice, TellPhase

if TYPE_CHECKING:
    from irisd.pool.supervisor import Supervisor

log = logging.getLogger("irisd.pair")

FAILED_COOLDOWN_S = 30.0  # a failed pair refuses tells this long, then tries again
NO_CONVERSATION = "No conversation found"


class Child(Protocol):
    """What a pair needs of its child (a ClaudeProcess, or a fake in tests)."""

    pid: int | None

    async def run(self, *, task_status: trio.TaskStatus[Child] = ...) -> None: ...
    def stop(self) -> None: ...
    async def send(self, data: bytes) -> None: ...


ChildFactory = Callable[[list[str], str, dict[str, str], trio.MemorySendChannel[ChildEvent]], Child]


def claude_child(
    argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]
) -> Child:
    return ClaudeProcess(argv, cwd=cwd, env=env, events=events)


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
class Spawned:
    process: Child
    session_id: str
    new_session: bool
    resumed: bool


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
    | Spawned
    | SpawnFailed
    | ChildEvent
)


class Pair:
    def __init__(
        self,
        *,
        from_team: str | None,
        team: Team,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        supervisor: Supervisor | None = None,
        child_factory: ChildFactory = claude_child,
    ) -> None:
        self.from_team = from_team
        self.team = team
        self.config = config
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.child_factory = child_factory
        self.state: ProcessState = "stopped"
        self.reason = ""
        self.session_id = ""
        self.last_used_at: float | None = None  # wall clock, for people
        self.last_active = trio.current_time()  # monotonic, for LRU and idle reaping
        self.holds_slot = False  # counted against maxProcesses
        self.waiting_for_slot = 0  # while > 0: that many busy processes fill the pool
        self.process: Child | None = None
        self.current: ActiveTell | None = None
        self.queue: collections.deque[ActiveTell] = collections.deque()
        self.tells: dict[str, ActiveTell] = {}  # every unfinished tell of the pair
        self._inbox_send, self._inbox = trio.open_memory_channel[PairEvent](1024)
        self._nursery: trio.Nursery | None = None
        self._resumed = False  # the child was started with --resume
        self._child_spoke = False  # the child printed at least one line
        self._new_session = False  # the child started a new conversation
        self._resend = False  # the current tell must be written to the next child
        self._start_failures = 0  # consecutive crashes on start
        self._retry_at = -math.inf
        self._failed_until = -math.inf
        self._force_new_session = False
        self._conversation_lost = False  # claude said it has no such conversation
        self.desk = ApprovalDesk(
            from_team=from_team,
            to_team=team.name,
            mode=team.permissions,
            timeout_s=config.settings.approval_timeout / 1000,
            store=store,
            hub=supervisor.hub if supervisor is not None else None,
        )
        self._wakers: list[WakeRequest] = []
        self._stoppers: list[StopRequest] = []

    @property
    def key(self) -> PairKey:
        return (self.from_team, self.team.name)

    @property
    def label(self) -> str:
        return f"{self.from_team or 'external'}->{self.team.name}"

    def statistics(self) -> ProcessInfo:
        return ProcessInfo(
            from_team=self.from_team,
            to_team=self.team.name,
            state=self.state,
            session_id=self.session_id,
            pid=self.process.pid if self.process else None,
            queued=len(self.queue),
            current_tell=self.current.id if self.current else "",
            last_used_at=self.last_used_at,
            reason=self.reason,
        )

    def view(self) -> PairView:
        return PairView(
            key=self.key,
            state=self.state,
            last_used_at=self.last_active,
            queued=len(self.queue) + (1 if self.current else 0),
            holds_slot=self.holds_slot,
        )

    # --- called from other tasks (non-blocking, or waiting for the actor) ----------------

    def submit(self, tell: ActiveTell) -> None:
        """Queue ``tell``; raises BusyError when the pair's queue is full."""
        limit = self.config.settings.queue_limit
        if len(self.queue) >= limit:
            raise BusyError(
                f"the queue of {self.label} is full ({limit} tells waiting); wait for some "
                "to finish, cancel some ('iris cancel ID'), or raise settings.queueLimit"
            )
        self._post(Submitted(tell))
        self.tells[tell.id] = tell
        self.queue.append(tell)  # counted at once, so the limit holds between events
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
        the answer (the supervisor watches the pair's state). Never dropped: it waits for
        room in a full inbox."""
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

    async def _report_spawn(self, event: Spawned | SpawnFailed) -> None:
        """Hand a spawn's outcome to the actor. It must not be lost (the pair would stay
        'spawning' for ever), so this waits for room in a full inbox."""
        try:
            await self._inbox_send.send(event)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            if isinstance(event, Spawned):
                event.process.stop()

    # --- the actor -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the pair until cancelled; cancellation stops the child and records every
        unfinished tell as interrupted."""
        row = await self.store.call(sessions.get, self.from_team, self.team.name)
        self.session_id = row.session_id if row else ""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._serve()
        finally:
            with trio.CancelScope(shield=True):
                await self._interrupt_all("irisd stopped before this tell finished")
            self._close_inbox()

    async def _serve(self) -> None:
        while True:
            await self._advance()
            # Only the wait is under the deadline: a handler cut off halfway (between two
            # store calls) would leave a decision unsent or a caller waiting for ever.
            event: PairEvent | None = None
            with trio.move_on_at(self._next_deadline()):
                event = await self._inbox.receive()
            if event is None:
                await self._on_timer(trio.current_time())
            else:
                await self._handle(event, trio.current_time())

    def _next_deadline(self) -> float:
        deadlines = [tell.deadline for tell in self.tells.values()]
        deadlines.append(self.desk.next_deadline())
        reap = idle_deadline(self.state, self.last_active, self.team.idle_timeout_ms / 1000)
        if reap is not None and not self.queue:
            deadlines.append(reap)
        return min(deadlines, default=math.inf)

    async def _handle(self, event: PairEvent, now: float) -> None:
        match event:
            case Submitted(tell):
                await self._apply(tell, tell.machine.caller_attached(now))
            case CancelTell(tell_id):
                cancelled = self.tells.get(tell_id)
                if cancelled is not None:
                    if cancelled in self.queue:
                        self.queue.remove(cancelled)
                    await self._apply(cancelled, cancelled.machine.cancel(now))
            case WakeRequest():
                await self._on_wake(event, now)
            case StopRequest():
                await self._on_stop(event, now)
            case ResetRequest():
                await self._on_reset(event)
            case DecideRequest():
                try:
                    event.approval = await self.desk.decide(
                        event.approval_id,
                        allow=event.allow,
                        remember=event.remember,
                        reason=event.reason,
                        by=event.by,
                        send=self._send_to_child,
                        apply=self._apply,
                    )
                    event.finish()
                except IrisError as exc:
                    event.finish(error=exc)
            case Spawned():
                await self._on_spawned(event)
            case SpawnFailed(reason):
                self._release_slot()
                # No claude ran (a missing folder or executable): cheap to check again, so
                # the next tell tries at once; the status shows the reason until then.
                await self._enter_failed(reason, now, cooldown_s=0.0)
            case ChildLine(process, line, raw) if process is self.process:
                await self._on_child_line(line, raw, now)
            case ChildExited(process) if process is self.process:
                await self._on_child_exit(event, now)
            case ChildLine() | ChildExited():
                pass  # from a child already replaced

    def refresh_phases(self) -> None:
        """Tell the queued tells what they wait for: the tells ahead of them, or, for the
        first, a process slot or claude's start. Called whenever those facts may change
        (here, and by the supervisor while it holds a spawn back for a slot)."""
        ahead = 1 if self.current is not None else 0
        for index, tell in enumerate(self.queue):
            if index + ahead > 0:
                tell.set_phase(TellPhase(name="queued", ahead=index + ahead))
            elif self.state == "spawning" and self.waiting_for_slot > 0:
                tell.set_phase(TellPhase(name="waiting_for_slot", ahead=self.waiting_for_slot))
            elif self.state in ("spawning", "stopped", "terminating"):  # a (re)start is due
                tell.set_phase(TellPhase(name="starting_claude"))

    async def _advance(self) -> None:
        """Start the next queued tell if the child is free; start a child if work waits."""
        try:
            await self._advance_queue()
        finally:
            self.refresh_phases()

    async def _advance_queue(self) -> None:
        now = trio.current_time()
        if self.state == "failed":
            if now < self._failed_until:
                for tell in list(self.queue):
                    self.queue.remove(tell)
                    await self._apply(tell, tell.machine.fail(now, self.reason))
                return
            if not self.queue and not self._wakers:
                return
            await self._clear_failure()
        wanted = bool(self.queue or self.current or self._wakers)
        if self.process is None:
            if wanted and self.state in ("stopped",):
                await self._set_state("spawning")
                assert self._nursery is not None
                self._nursery.start_soon(self._spawn, self._retry_at)
            return
        if self.current is not None or not self.queue or self.state != "idle":
            return
        tell = self.queue.popleft()
        self.current = tell
        tell.session_id = self.session_id
        tell.new_session, self._new_session = self._new_session, False
        await self._apply(tell, tell.machine.start(now, startup_s=self._startup_grace()))
        tell.set_phase(TellPhase(name="waiting_for_model" if self._child_spoke else "starting_claude"))
        await self._send_current()

    async def _send_current(self) -> None:
        assert self.current is not None and self.process is not None
        await self._set_state("processing")
        try:
            await self.process.send(user_turn(self.current.message))
        except ClaudeError:
            pass  # the ChildExited that follows ends or retries the tell

    # --- spawning ------------------------------------------------------------------

    async def _spawn(self, not_before: float) -> None:
        """Start a child for this pair; posts Spawned or SpawnFailed."""
        await trio.sleep_until(not_before)
        if self.supervisor is not None:
            await self.supervisor.reserve_slot(self)
        self.holds_slot = True  # no await since the grant: no other reservation saw us without it
        started = trio.current_time()
        grant: ChildGrant | None = None
        try:
            if problem := root_skip_problem(self.team.name, self.team.permissions, env=child_environment()):
                raise ClaudeError(problem)
            row = await self.store.call(sessions.get_or_create, self.from_team, self.team.name, time.time())
            transcript = session_file(self.paths.claude_config_dir, self.team.path, row.session_id)
            # A stat, inline: a worker thread would let trio's autojump clock (tests) skip ahead.
            resume = os.path.exists(transcript)  # noqa: ASYNC240
            if self._force_new_session or (not resume and row.message_count > 0):
                # The conversation is gone (or could not be resumed): start a new one.
                log.warning(
                    "conversation lost; starting a new one",
                    extra={"pair": self.label, "old_session_id": row.session_id},
                )
                row = await self.store.call(
                    sessions.replace_session_id, self.from_team, self.team.name, time.time()
                )
                resume = False
            self._force_new_session = False
            configured = self.config.settings.claude_path
            access = self.supervisor.access if self.supervisor is not None else None
            if access is not None:
                # Iris over HTTP, with a token for this child only: the file holds it, never argv.
                grant = access.grant_child(self.team.name, self.label)
                mcp_config = str(grant.path)
            else:
                mcp_config = iris_mcp_config(team=self.team.name, parent_pair=self.label, socket=str(self.paths.socket))
            argv = claude_argv(
                find_claude(configured) or configured,
                session_id=row.session_id,
                resume=resume,
                permissions=self.team.permissions,
                allowed_tools=self.team.allowed_tools,
                disallowed_tools=self.team.disallowed_tools,
                mcp_config=mcp_config,
            )
            await self.store.call(
                sessions.record_spawn, self.from_team, self.team.name, argv, msgspec.json.encode(self.team)
            )
            process = self.child_factory(argv, self.team.path, child_environment(), self._inbox_send.clone())
            assert self._nursery is not None
            await self._nursery.start(self._run_child, process, grant)
        except ClaudeError as exc:
            if grant is not None:
                grant.revoke()
            await self._report_spawn(SpawnFailed(exc.message))
            return
        except Exception as exc:  # a bug or a broken database must not take other pairs down
            if grant is not None:
                grant.revoke()
            log.exception("spawn failed", extra={"pair": self.label})
            await self._report_spawn(SpawnFailed(f"irisd could not start claude: {exc}"))
            return
        log.info(
            "spawned claude",
            extra={"pair": self.label, "pid": process.pid, "resume": resume,
                   "session_id": row.session_id, "spawn_s": round(trio.current_time() - started, 3)},
        )
        await self._report_spawn(Spawned(process, row.session_id, new_session=not resume, resumed=resume))

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

    async def _on_spawned(self, event: Spawned) -> None:
        if self.state != "spawning":
            event.process.stop()  # nothing wants it any more; its exit is ignored (not ours)
            if self.process is None:
                self._release_slot()  # the slot was reserved for it
            return
        self.process = event.process
        self.session_id = event.session_id
        self._resumed = event.resumed
        self._child_spoke = False
        self._conversation_lost = False
        self._new_session = self._new_session or event.new_session
        self.last_active = trio.current_time()
        for waker in self._wakers:
            waker.finish(f"{self.label} is awake (pid {event.process.pid})")
        self._wakers.clear()
        if self.current is not None and not self.current.machine.is_final and self._resend:
            self._resend = False
            self.current.session_id = self.session_id
            self.current.new_session = self.current.new_session or self._new_session
            self._new_session = False
            now = trio.current_time()
            restarted = self.current.machine.child_restarted(now, startup_s=self._startup_grace())
            await self._apply(self.current, restarted)
            self.current.set_phase(TellPhase(name="starting_claude"))
            await self._send_current()
        else:
            await self._set_state("idle")

    def _startup_grace(self) -> float:
        """How long a child that has not printed anything yet may take for its first line."""
        return 0.0 if self._child_spoke else self.config.settings.session_init_timeout / 1000

    # --- the child's output and exit -------------------------------------------------

    async def _on_child_line(self, line: AnyLine, raw: bytes, now: float) -> None:
        if isinstance(line, ControlRequestLine) and line.request.subtype == "can_use_tool":
            self._child_spoke = True
            if self.current is not None and not self.current.machine.is_final:
                await self.store.call(tells.append_message, self.current.id, time.time(), line_type(line), raw)
            await self.desk.on_request(line, self.current, self._send_to_child, self._apply)
            return
        first = self._resumed and not self._child_spoke
        if first and isinstance(line, ResultLine) and any(NO_CONVERSATION in e for e in line.errors):
            self._conversation_lost = True  # the exit follows; handled there
            return
        self._child_spoke = True
        self._start_failures = 0
        tell = self.current
        if tell is None or tell.machine.is_final:
            if isinstance(line, GarbageLine | UnknownLine):
                log.warning("unexpected output from an idle claude", extra={"pair": self.label})
            return
        before = tell.machine.text
        actions = tell.machine.child_line(line, now)
        await self.store.call(tells.append_message, tell.id, time.time(), line_type(line), raw)
        tell.publish_text(before)
        if (phase := after_line(line, tell.phase)) is not None:
            tell.set_phase(phase)
        if isinstance(line, SystemLine) and (notice := line.retry_notice()):
            log.warning("claude retries the API", extra={"pair": self.label, "tell": tell.id, "notice": notice})
            tell.publish(TellNotice(tell_id=tell.id, text=notice))
        if isinstance(line, ResultLine) and tell.machine.is_final:
            await self.store.call(sessions.record_turn, self.from_team, self.team.name, time.time())
        await self._apply(tell, actions)

    async def _on_child_exit(self, exit: ChildExited, now: float) -> None:
        self.process = None
        await self.desk.expire("claude exited before a decision")
        self._release_slot()
        stopped_by_us = self.state == "terminating"
        detail = exit.describe()
        for stopper in self._stoppers:
            stopper.finish(f"{self.label} is asleep")
        self._stoppers.clear()
        tell = self.current
        running = tell is not None and not tell.machine.is_final
        lost = self._conversation_lost or (self._resumed and NO_CONVERSATION in exit.stderr_tail)
        self._conversation_lost = False
        verdict = classify_exit(
            ChildExit(
                stopped_by_us=stopped_by_us,
                spoke=self._child_spoke,
                returncode=exit.returncode,
                conversation_lost=lost,
                renewed_already=self._force_new_session,
            ),
            self._start_failures,
        )
        match verdict:
            case NewConversation():
                await self._retry_with_new_session(detail)
            case RetryStart(delay, failures):
                log.warning("claude crashed on start", extra={"pair": self.label, "detail": detail,
                                                              "failures": failures})
                self._start_failures = failures
                self._retry_at = now + delay
                self._resend = running
                if tell is not None and running:
                    tell.set_phase(TellPhase(name="starting_claude"))
                await self._set_state("stopped")
            case GiveUp(failures):
                self._start_failures = failures
                await self._enter_failed(f"claude keeps crashing on start ({failures} times): {detail}", now)
            case Expected() | Died():
                if isinstance(verdict, Died):
                    log.warning("claude exited", extra={"pair": self.label, "detail": detail})
                self.reason = "" if stopped_by_us or not exit.returncode else detail
                await self._set_state("stopped")
                if tell is not None and running:
                    await self._apply(tell, tell.machine.child_exited(now, detail))

    async def _retry_with_new_session(self, detail: str) -> None:
        log.warning("resume failed; starting a new conversation", extra={"pair": self.label, "why": detail})
        self._force_new_session = True
        self._resend = self.current is not None and not self.current.machine.is_final
        if self.current is not None:
            self.current.new_session = True
        await self._set_state("stopped")

    async def _enter_failed(self, reason: str, now: float, cooldown_s: float = FAILED_COOLDOWN_S) -> None:
        self.reason = reason
        self._failed_until = now + cooldown_s
        self._resend = False
        await self._set_state("failed")
        for waker in self._wakers:
            waker.finish(error=ClaudeError(f"{self.label} cannot start: {reason}"))
        self._wakers.clear()
        for tell in [t for t in (self.current, *self.queue) if t is not None and not t.machine.is_final]:
            if tell in self.queue:
                self.queue.remove(tell)
            await self._apply(tell, tell.machine.fail(now, reason))

    async def _clear_failure(self) -> None:
        self._start_failures = 0
        self._retry_at = -math.inf
        self._failed_until = -math.inf
        self.reason = ""
        await self._set_state("stopped")

    # --- requests ---------------------------------------------------------------------

    async def _on_wake(self, request: WakeRequest, now: float) -> None:
        if self.state == "failed":
            await self._clear_failure()
        if self.process is not None and self.state in ("idle", "processing"):
            request.finish(f"{self.label} is already awake (pid {self.process.pid})")
            return
        self._wakers.append(request)  # answered when the child is up (or failed)

    async def _on_stop(self, request: StopRequest, now: float) -> None:
        if self.state == "terminating":
            self._stoppers.append(request)  # answered once the child is gone
            return
        if self.process is None:
            request.finish(f"{self.label} is not running")
            return
        busy = self.state == "processing" or bool(self.queue)
        if busy and not request.force:
            request.finish(f"{self.label} is busy with a tell; not stopped (use --force to stop it anyway)")
            return
        if self.current is not None and not self.current.machine.is_final:
            await self._apply(self.current, self.current.machine.interrupt(now, f"stopped: {request.reason}"))
        self._stoppers.append(request)
        self._stop_child(request.reason)

    async def _on_reset(self, request: ResetRequest) -> None:
        if self.current is not None or self.queue or self.state == "spawning":
            # (A child being started may already have read the old session id.)
            busy = BusyError(f"{self.label} has tells running or queued, or is starting; reset it when it is idle")
            request.finish(error=busy)
            return
        if self.process is not None:
            self._stop_child("session reset")
        await self.store.call(sessions.get_or_create, self.from_team, self.team.name, time.time())  # the row
        row = await self.store.call(sessions.replace_session_id, self.from_team, self.team.name, time.time())
        self.session_id = row.session_id
        self._new_session = True
        request.finish(f"{self.label} starts a new conversation (session {row.session_id})")

    # --- timers and actions -------------------------------------------------------------

    async def _send_to_child(self, data: bytes) -> None:
        if self.process is not None:
            try:
                await self.process.send(data)
            except ClaudeError:
                pass  # it is exiting; its ChildExited follows

    async def _on_timer(self, now: float) -> None:
        await self.desk.on_timer(now, self._send_to_child, self._apply)
        for tell in list(self.tells.values()):
            await self._apply(tell, tell.machine.handle_timer(now))
        reap = idle_deadline(self.state, self.last_active, self.team.idle_timeout_ms / 1000)
        if reap is not None and now >= reap and not self.queue and self.process is not None:
            self._stop_child(f"idle for {self.team.idle_timeout_ms / 1000:g} s (idleTimeout)")

    async def _apply(self, tell: ActiveTell, actions: list[Action]) -> None:
        """Carry out a machine's actions and persist what changed."""
        for action in actions:
            match action:
                case ReplyToCaller():
                    tell.replied.set()
                case StopChild(reason):
                    self._stop_child(reason)
                case SendInterrupt():
                    if self.process is not None and tell is self.current:
                        try:
                            await self.process.send(interrupt_request(f"interrupt-{tell.id}"))
                        except ClaudeError:
                            pass
        if tell.note_status() or tell.machine.is_final:
            usage = None
            if tell.machine.result is not None and tell.machine.result.usage is not None:
                usage = msgspec.json.encode(tell.machine.result.usage)
            await self.store.call(tells.update, tell.info(), usage)
        if tell.machine.is_final:
            await self.desk.expire(f"the tell ended ({tell.machine.status}) before a decision", tell)
            self.tells.pop(tell.id, None)
            if tell is self.current:
                self.current = None
                self._resend = False
                self.last_active = trio.current_time()
                self.last_used_at = time.time()
                if self.state == "processing":
                    await self._set_state("idle")
            tell.replied.set()
            tell.finished.set()

    def _stop_child(self, reason: str) -> None:
        if self.process is not None and self.state != "terminating":
            log.info("stopping claude", extra={"pair": self.label, "reason": reason})
            self.process.stop()
            self.state = "terminating"
            self._notify_supervisor()

    def _release_slot(self) -> None:
        self.holds_slot = False
        self._notify_supervisor()

    def _notify_supervisor(self) -> None:
        if self.supervisor is not None:
            self.supervisor.pair_changed()

    async def _set_state(self, state: ProcessState) -> None:
        if state == self.state:
            return
        self.state = state
        self._notify_supervisor()
        if self.supervisor is not None:
            self.supervisor.hub.publish(ProcessEvent(process=self.statistics()), self.from_team, self.team.name)
        await self.store.call(sessions.set_process_state, self.from_team, self.team.name, state)

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
        self._inbox.close()

    async def _interrupt_all(self, reason: str) -> None:
        now = trio.current_time()
        for tell in list(self.tells.values()):
            if not tell.machine.is_final:
                tell.machine.interrupt(now, reason)
                tell.note_status()
                try:
                    await self.store.call(tells.update, tell.info(), None)
                except Exception:
                    log.exception("could not record an interrupted tell")
            tell.replied.set()
            tell.finished.set()
        for request in (*self._wakers, *self._stoppers):
            request.finish(error=IrisError("irisd is stopping"))
        self.tells.clear()
        self.queue.clear()
        self.current = None
        self.holds_slot = False
        self.state = "stopped"
