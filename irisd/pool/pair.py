"""One (from_team, to_team) pair: its queue of tells and its claude child.

How it works
------------
``Pair.run`` is an actor: a single task owns every piece of the pair's state and
handles one event at a time from its inbox (a submitted tell, a cancel, a line or the
exit of the child, the end of a spawn). Tells are served one at a time in arrival
order. One timer is armed at the earliest deadline of any tell of the pair (response
timeouts, callers' waits); when it fires, every tell's machine gets ``handle_timer``.

The child runs in the pair's own nursery, so it can never outlive the pair. Spawning
happens in a task of that nursery too: the actor keeps answering cancels and caller
deadlines while claude starts. A new conversation is started with ``--session-id``;
once claude has written the session's transcript, later children ``--resume`` it.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from dataclasses import dataclass

import msgspec
import trio

from irisd.claude.command import child_environment, claude_argv
from irisd.claude.process import ChildEvent, ChildExited, ChildLine, ClaudeProcess
from irisd.claude.wire import GarbageLine, ResultLine, UnknownLine, interrupt_request, user_turn
from irisd.config import IrisConfig, Team
from irisd.paths import IrisPaths, session_file
from irisd.pool.active_tell import ActiveTell
from irisd.store import sessions, tells
from irisd.store.facade import Store
from irisd.tell.machine import Action, ReplyToCaller, SendInterrupt, StopChild
from protocol.errors import BusyError, ClaudeError, NotFoundError
from protocol.messages import ProcessInfo, ProcessState

log = logging.getLogger("irisd.pair")


@dataclass(frozen=True)
class Submitted:
    tell: ActiveTell


@dataclass(frozen=True)
class CancelTell:
    tell_id: str


@dataclass(frozen=True)
class Spawned:
    process: ClaudeProcess
    session_id: str
    new_session: bool


@dataclass(frozen=True)
class SpawnFailed:
    reason: str


PairEvent = Submitted | CancelTell | Spawned | SpawnFailed | ChildEvent

PairKey = tuple[str | None, str]


class Pair:
    def __init__(
        self,
        *,
        from_team: str | None,
        team: Team,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
    ) -> None:
        self.from_team = from_team
        self.team = team
        self.config = config
        self.paths = paths
        self.store = store
        self.state: ProcessState = "stopped"
        self.reason = ""
        self.session_id = ""
        self.last_used_at: float | None = None
        self.process: ClaudeProcess | None = None
        self.current: ActiveTell | None = None
        self.queue: collections.deque[ActiveTell] = collections.deque()
        self.tells: dict[str, ActiveTell] = {}  # every unfinished tell of the pair
        self._inbox_send, self._inbox = trio.open_memory_channel[PairEvent](256)
        self._nursery: trio.Nursery | None = None
        self._new_session = False  # the child just started a new conversation

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

    # --- called from other tasks (non-blocking) ------------------------------------

    def submit(self, tell: ActiveTell) -> None:
        """Queue ``tell``; raises BusyError when the pair's queue is full."""
        limit = self.config.settings.queue_limit
        if len(self.queue) >= limit:
            raise BusyError(
                f"the queue of {self.label} is full ({limit} tells waiting); wait for some "
                "to finish, or raise settings.queueLimit"
            )
        self.tells[tell.id] = tell
        self.queue.append(tell)  # counted at once, so the limit holds between events
        self._post(Submitted(tell))

    def cancel(self, tell_id: str) -> None:
        if tell_id not in self.tells:
            raise NotFoundError(f"tell {tell_id} is not running or queued on {self.label}")
        self._post(CancelTell(tell_id))

    def _post(self, event: PairEvent) -> None:
        try:
            self._inbox_send.send_nowait(event)
        except trio.WouldBlock:
            raise BusyError(f"{self.label} is overloaded; try again in a moment") from None

    # --- the actor -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the pair until cancelled; cancellation stops the child and interrupts
        every unfinished tell (recorded as interrupted)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._serve()
        finally:
            with trio.CancelScope(shield=True):
                await self._interrupt_all("irisd stopped before this tell finished")

    async def _serve(self) -> None:
        while True:
            await self._advance()
            with trio.move_on_at(self._next_deadline()):
                event = await self._inbox.receive()
                await self._handle(event)
                continue
            await self._on_timer()

    def _next_deadline(self) -> float:
        return min((tell.deadline for tell in self.tells.values()), default=math.inf)

    async def _handle(self, event: PairEvent) -> None:
        now = trio.current_time()
        match event:
            case Submitted(tell):
                await self._apply(tell, tell.machine.caller_attached(now))
            case CancelTell(tell_id):
                cancelled = self.tells.get(tell_id)
                if cancelled is not None:
                    if cancelled in self.queue:
                        self.queue.remove(cancelled)
                    await self._apply(cancelled, cancelled.machine.cancel(now))
            case Spawned(process, session_id, new_session):
                self.session_id = session_id
                if self.state == "spawning":
                    self.process = process
                    self._new_session = new_session
                    await self._set_state("idle")
                else:  # nothing wants it any more
                    process.stop()
            case SpawnFailed(reason):
                self.reason = reason
                await self._set_state("stopped")
                for tell in list(self.queue):
                    self.queue.remove(tell)
                    await self._apply(tell, tell.machine.fail(now, reason))
            case ChildLine(process, line, raw) if process is self.process:
                await self._on_child_line(line, raw, now)
            case ChildExited(process) if process is self.process:
                await self._on_child_exit(event, now)
            case ChildLine() | ChildExited():
                pass  # from a child we already replaced

    async def _advance(self) -> None:
        """Start the next queued tell if the child is free, spawning it if needed."""
        if self.current is not None or not self.queue:
            return
        if self.process is None:
            if self.state != "spawning":
                await self._set_state("spawning")
                assert self._nursery is not None
                self._nursery.start_soon(self._spawn)
            return
        if self.state != "idle":
            return
        tell = self.queue.popleft()
        self.current = tell
        tell.session_id = self.session_id
        tell.new_session, self._new_session = self._new_session, False
        await self._apply(tell, tell.machine.start(trio.current_time()))
        await self._set_state("processing")
        try:
            await self.process.send(user_turn(tell.message))
        except ClaudeError:
            pass  # the ChildExited event that follows ends the tell

    async def _spawn(self) -> None:
        """Start a child for this pair; posts Spawned or SpawnFailed."""
        now = trio.current_time()
        try:
            row = await self.store.call(sessions.get_or_create, self.from_team, self.team.name, _wall())
            transcript = session_file(self.paths.claude_config_dir, self.team.path, row.session_id)
            resume = await trio.to_thread.run_sync(transcript.exists)
            argv = claude_argv(
                self.config.settings.claude_path,
                session_id=row.session_id,
                resume=resume,
                skip_permissions=self.team.skip_permissions,
            )
            await self.store.call(
                sessions.record_spawn,
                self.from_team,
                self.team.name,
                argv,
                msgspec.json.encode(self.team),
            )
            process = ClaudeProcess(
                argv, cwd=self.team.path, env=child_environment(), events=self._inbox_send.clone()
            )
            assert self._nursery is not None
            await self._nursery.start(process.run)
        except ClaudeError as exc:
            self._post_quietly(SpawnFailed(exc.message))
            return
        log.info(
            "spawned claude",
            extra={"pair": self.label, "pid": process.pid, "resume": resume,
                   "session_id": row.session_id, "spawn_s": trio.current_time() - now},
        )
        self._post_quietly(Spawned(process, row.session_id, new_session=not resume))

    def _post_quietly(self, event: PairEvent) -> None:
        try:
            self._inbox_send.send_nowait(event)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            if isinstance(event, Spawned):
                event.process.stop()

    async def _on_child_line(self, line: object, raw: bytes, now: float) -> None:
        tell = self.current
        if tell is None:
            if isinstance(line, GarbageLine | UnknownLine):
                log.warning("unexpected output from an idle claude", extra={"pair": self.label})
            return
        before = tell.machine.text
        actions = tell.machine.child_line(line, now)  # type: ignore[arg-type]
        type_ = getattr(line, "type", None) or type(line).__name__
        await self.store.call(tells.append_message, tell.id, _wall(), str(type_), raw)
        tell.publish_text(before)
        if isinstance(line, ResultLine) and tell.machine.is_final:
            await self.store.call(sessions.record_turn, self.from_team, self.team.name, _wall())
        await self._apply(tell, actions)

    async def _on_child_exit(self, exit: ChildExited, now: float) -> None:
        self.process = None
        tell = self.current
        detail = exit.describe()
        if self.state != "terminating":
            log.warning("claude exited", extra={"pair": self.label, "detail": detail})
            self.reason = detail if exit.returncode else ""
        await self._set_state("stopped")
        if tell is not None and not tell.machine.is_final:
            silent = not tell.machine.text and tell.machine.result is None
            if exit.returncode and silent:
                await self._apply(tell, tell.machine.fail(now, detail))
            else:
                await self._apply(tell, tell.machine.child_exited(now, detail))

    async def _on_timer(self) -> None:
        now = trio.current_time()
        for tell in list(self.tells.values()):
            await self._apply(tell, tell.machine.handle_timer(now))

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
        changed = tell.note_status()
        if changed or tell.machine.is_final:
            usage = None
            if tell.machine.result is not None and tell.machine.result.usage is not None:
                usage = msgspec.json.encode(tell.machine.result.usage)
            await self.store.call(tells.update, tell.info(), usage)
        if tell.machine.is_final:
            self.tells.pop(tell.id, None)
            if tell is self.current:
                self.current = None
                if self.state == "processing":
                    await self._set_state("idle")
                    self.last_used_at = _wall()
            tell.replied.set()
            tell.finished.set()

    def _stop_child(self, reason: str) -> None:
        if self.process is not None:
            log.info("stopping claude", extra={"pair": self.label, "reason": reason})
            self.process.stop()
            self.state = "terminating"

    async def _set_state(self, state: ProcessState) -> None:
        if state == self.state:
            return
        self.state = state
        await self.store.call(sessions.set_process_state, self.from_team, self.team.name, state)

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
        self.tells.clear()
        self.queue.clear()
        self.current = None
        self.state = "stopped"


def _wall() -> float:
    return time.time()
