"""Teams that are not a local claude: an A2A agent, a team homed on another irisd.

A face that reaches such teams (``irisd.a2a``, ``irisd.mesh``) registers one
``RemoteExecutor`` per team in ``RemoteTeams``. The pool then runs that team's tells in
a ``RemotePair`` instead of a ``Pair``: no process and no slot under ``maxProcesses``;
each tell runs as one call of the executor's ``run`` in the pair's nursery, and its
lifecycle is kept by the same ``TellMachine`` as a local tell's (its remote events),
saved, announced, timed and ended the same way, so every front end shows it alike.

The executor's contract:

* ``run(tell, report)`` carries one tell to the far side and reports what happens
  there through ``report`` until the far side's final state (``report.finished``).
  ``report.accepted()`` (or ``started``) says the far side, or a durable queue on the
  way, holds the tell: no caller is answered before that (``HANDOFF_TIMEOUT_S``).
* It is cancelled (trio cancellation) when the caller cancels the tell, when the far
  side is silent for longer than the executor asked for, or when irisd stops. It then
  tells the far side (e.g. A2A ``CancelTask``) in a shielded, bounded block and returns.
* It raises ``IrisError`` with a message a user can act on when the far side cannot be
  reached or does not speak the protocol: the tell fails with that message.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Protocol

import msgspec
import trio

from iris_common.config import IrisConfig, Team
from irisd.claude.spend import Spent
from irisd.pool.pair import PairSnapshot, TellLink
from irisd.pool.policy import PairKey
from irisd.store.facade import Store
from irisd.tell import machine as tell_machine
from irisd.tell.active import ActiveTell, reply_first, save_tell
from protocol.errors import IrisError, NotFoundError, UnknownTeamError
from protocol.messages import ProcessInfo, TellPhase, TellStatus
from protocol.pairs import pair_label

log = logging.getLogger("irisd.remote")

# How long a remote tell may take to be held on the far side (an agent's task, a stored
# stream message) before it fails: until then its caller hears nothing, so that a tell
# it was told about is never one that exists only in this irisd's memory. The default of
# settings.handoffTimeout (each RemotePair is given the setting's value).
HANDOFF_TIMEOUT_S = 30.0


class RemoteTell(msgspec.Struct, frozen=True):
    """What an executor knows of a tell: a frozen copy (it never edits the tell itself)."""

    id: str
    from_team: str | None
    to_team: str
    message: str
    chain_id: str
    hops: int
    kind: str
    max_budget_usd: float | None
    created_at: float  # wall clock
    path: tuple[str, ...] = ()  # the teams waiting in its chain, its own last
    thread: str = ""  # the pair's conversation ("": the default thread)

    @classmethod
    def of(cls, tell: ActiveTell) -> RemoteTell:
        return cls(
            id=tell.id,
            from_team=tell.from_team,
            to_team=tell.to_team,
            message=tell.message,
            chain_id=tell.chain_id,
            hops=tell.hops,
            kind=tell.kind,
            max_budget_usd=tell.max_budget_usd,
            created_at=tell.created_wall,
            path=tell.path,
            thread=tell.thread,
        )


class RemoteExecutor(Protocol):
    """Runs the tells of one remote team (see the module docstring for the contract)."""

    @property
    def team(self) -> Team:
        """The team as admission and the front ends see it (name, description, budget)."""
        ...

    @property
    def kind(self) -> str:
        """"a2a" or "mesh": what shows beside the team's name."""
        ...

    @property
    def where(self) -> str:
        """Where the team lives, for people: an agent's URL, the home irisd's name."""
        ...

    async def run(self, tell: RemoteTell, report: TellReport) -> None: ...


class RemoteTeams:
    """The executors of the remote teams, by team name; the faces keep it current."""

    def __init__(self) -> None:
        self._executors: dict[str, RemoteExecutor] = {}

    def register(self, executor: RemoteExecutor) -> None:
        self._executors[executor.team.name] = executor

    def unregister(self, team: str) -> None:
        self._executors.pop(team, None)

    def get(self, team: str) -> RemoteExecutor | None:
        return self._executors.get(team)

    def all(self) -> list[RemoteExecutor]:
        return [self._executors[name] for name in sorted(self._executors)]

    def team(self, config: IrisConfig, name: str) -> Team:
        """The team ``name``: a remote one, or one of ``config``; else UnknownTeamError
        naming both kinds (a misspelt team of another irisd gets its "did you mean")."""
        remote = self._executors.get(name)
        if remote is not None:
            return remote.team
        if name in config.teams:
            return config.teams[name]
        raise UnknownTeamError.for_name(name, sorted({*config.teams, *self._executors}))


class TellReport:
    """An executor's handle on the tell it runs: each call is one event of the tell's
    machine, applied and saved at once (only from the executor's own task)."""

    def __init__(self, pair: RemotePair, tell: ActiveTell) -> None:
        self._pair = pair
        self._tell = tell

    @property
    def ended(self) -> bool:
        return self._tell.machine.is_final

    @property
    def cancelled(self) -> bool:
        """The caller cancelled the tell (as against irisd stopping, which also cancels
        the executor): a far side that runs on by itself is told to stop."""
        return self._tell.machine.cancelled

    async def accepted(self) -> None:
        """The far side, or a durable queue on the way to it, holds the tell now: its caller
        may be answered from here on (never before)."""
        await self._pair.apply(self._tell, self._tell.machine.remote_accepted(trio.current_time()))

    async def sent(self, unconfirmed: Callable[[], str]) -> None:
        """The tell left for the far side, not yet held there as far as this side knows
        (a publish that may or may not have been stored): from now on it may run there,
        so it is never failed "not sent"; at ``HANDOFF_TIMEOUT_S`` its caller hears it in
        progress, its phase the words ``unconfirmed()`` gives then (why it is unknown,
        what to do), and the far side's result settles it."""
        self._pair.unconfirmed[self._tell.id] = unconfirmed
        await self._pair.apply(self._tell, self._tell.machine.remote_sent(trio.current_time()))

    async def started(self, *, silence_s: float | None = None) -> None:
        """The far side took the tell (running). ``silence_s``: fail it ``timed_out`` if
        the far side then says nothing for that long; None when the far side keeps its
        own timeouts."""
        machine = self._tell.machine
        if machine.status == "queued":
            await self._pair.apply(self._tell, machine.remote_started(trio.current_time(), silence_s=silence_s))

    async def text(self, text: str) -> None:
        """The answer so far (the whole of it, not a delta)."""
        tell = self._tell
        if tell.machine.status not in ("running", "awaiting_approval"):
            return
        before = tell.machine.text
        actions = tell.machine.remote_progress(trio.current_time(), text)
        tell.publish_text(before)
        await self._pair.apply(tell, actions)

    def phase(self, detail: str, *, queued: bool = False) -> None:
        """What the far side does or waits for, in words ("home irisd ws-2 unreachable
        since 14:02"); ``queued`` while the far side has not taken the tell yet."""
        if not self._tell.machine.is_final:
            self._tell.set_phase(TellPhase(name="queued" if queued else "remote", detail=detail))

    async def awaiting_input(self, detail: str) -> None:
        """The far side waits for a person (an approval, a question): ``detail`` says what."""
        tell = self._tell
        if tell.machine.status == "running":
            await self._pair.apply(tell, tell.machine.approval_requested(trio.current_time()))
        tell.set_phase(TellPhase(name="awaiting_input", detail=detail))

    async def resumed(self) -> None:
        """The far side has its input and works on."""
        tell = self._tell
        if tell.machine.status == "awaiting_approval":
            await self._pair.apply(tell, tell.machine.approval_settled(trio.current_time()))

    async def finished(
        self, status: TellStatus, text: str = "", error: str = "", *, cost_usd: float | None = None,
        ran_s: float | None = None,
    ) -> None:
        """The far side's final state and whole answer (``cost_usd``: what it cost, if known;
        ``ran_s``: how long it ran there, if it did, for a tell this side never heard start)."""
        tell = self._tell
        if tell.machine.is_final:
            return
        if ran_s is not None and tell.machine.status == "queued":
            # Started and ended as this side hears it (a short tell's start comes with its
            # end): the start is written with the end, in one transaction after the answer
            # left, not in one of its own before it (0.2 ms on a remote tell's way).
            tell.machine.remote_started(trio.current_time())
            tell.note_status()  # its listeners and watchers see it running, as ever
            # Its start as the far side's own clock measured it (the end is now): else the
            # record says it waited in its queue until it ended.
            tell.started_wall = max(tell.created_wall, time.time() - max(ran_s, 0.0))
        if cost_usd is not None:
            tell.book(Spent(cost_usd=cost_usd))
        before = tell.machine.text
        actions = tell.machine.remote_finished(trio.current_time(), status, text, error)
        tell.publish_text(before)
        await self._pair.apply(tell, actions)


class RemotePair:
    """The (from_team, remote team) pair: its tells run side by side, each as one call of
    the executor (the far side orders them, as a home irisd's pair or an A2A agent does)."""

    def __init__(
        self,
        *,
        from_team: str | None,
        executor: RemoteExecutor,
        store: Store,
        on_change: Callable[[], None] | None = None,
        thread: str = "",
        handoff_timeout_s: float = HANDOFF_TIMEOUT_S,
    ) -> None:
        self.from_team = from_team
        self.thread = thread
        self.handoff_timeout_s = handoff_timeout_s
        self.executor = executor
        self.store = store
        self.on_change = on_change
        self.tells: dict[str, ActiveTell] = {}
        self.last_used_at: float | None = None
        self._runs: dict[str, trio.CancelScope] = {}
        # Each tell's timer task waits on its event until the deadline it names (the
        # earliest of the machine's): woken only when a change brings a deadline nearer.
        self._changed: dict[str, tuple[trio.Event, float]] = {}
        # A sent tell's words for when its handoff time passes unconfirmed (TellReport.sent).
        self.unconfirmed: dict[str, Callable[[], str]] = {}
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._done = trio.Event()  # closed, and its last tell ended

    @property
    def key(self) -> PairKey:
        return (self.from_team, self.executor.team.name, self.thread)

    @property
    def label(self) -> str:
        return pair_label(self.from_team, self.executor.team.name, self.thread)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the pair's running tells until cancelled (irisd stopping, the team removed)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await self._done.wait()

    # --- what other actors may see -------------------------------------------------------

    def statistics(self) -> ProcessInfo:
        running = [t for t in self.tells.values() if t.machine.status != "queued"]
        return ProcessInfo(
            from_team=self.from_team,
            to_team=self.executor.team.name,
            state="processing" if self.tells else "idle",
            queued=sum(1 for t in self.tells.values() if t.machine.status == "queued"),
            current_tell=running[0].id if running else "",
            last_used_at=self.last_used_at,
            host=self.executor.where,
            kind=self.executor.kind,
            thread=self.thread,
        )

    def snapshot(self) -> PairSnapshot:
        current = next(iter(self.tells.values()), None)
        link = TellLink.of(current) if current is not None else None
        return PairSnapshot(key=self.key, process=self.statistics(), current=link, pending_approvals=frozenset())

    def find(self, tell_id: str) -> ActiveTell | None:
        return self.tells.get(tell_id)

    @property
    def idle(self) -> bool:
        return not self.tells

    # --- called from other tasks ---------------------------------------------------------

    def submit(self, tell: ActiveTell) -> None:
        if self._nursery is None or self._closed:
            raise IrisError(f"{self.label} is stopping; send the tell again")
        self.tells[tell.id] = tell
        tell.announce()
        tell.set_phase(TellPhase(name="remote", detail=f"sending to {self.executor.where}"))
        self._nursery.start_soon(self._run_tell, tell)
        self._changes()

    def cancel(self, tell_id: str) -> None:
        tell = self.tells.get(tell_id)
        if tell is None:
            raise NotFoundError(f"tell {tell_id} is not running or queued on {self.label}")
        self._post(tell, tell.machine.cancel(trio.current_time()))

    def close(self) -> None:
        """Take no more tells (the team left the config); running ones finish, then the
        pair ends."""
        self._closed = True
        if not self.tells:
            self._done.set()

    # --- one tell --------------------------------------------------------------------------

    async def _run_tell(self, tell: ActiveTell) -> None:
        run_scope = trio.CancelScope()
        self._runs[tell.id] = run_scope
        report = TellReport(self, tell)
        try:
            async with trio.open_nursery() as nursery:
                tell.machine.await_handoff(trio.current_time(), self.handoff_timeout_s)
                nursery.start_soon(self._keep_time, tell)
                await self.apply(tell, tell.machine.caller_attached(trio.current_time()))
                with run_scope:
                    try:
                        await self.executor.run(RemoteTell.of(tell), report)
                    except IrisError as exc:
                        await report.finished("failed", error=exc.message)
                    except Exception as exc:  # a bug in a face must fail its tell, not irisd
                        log.exception("remote executor failed", extra={"pair": self.label, "tell": tell.id})
                        await report.finished("failed", error=f"{self.executor.kind} team failed: {exc}")
                actions: list[tell_machine.Action] = []
                if not tell.machine.is_final:
                    why = "interrupted by request" if run_scope.cancel_called else "the remote team sent no result"
                    status: TellStatus = "interrupted" if run_scope.cancel_called else "failed"
                    actions = tell.machine.remote_finished(trio.current_time(), status, "", why)
                if tell.id in self.tells:  # not saved as ended yet (e.g. cancelled while queued)
                    await self.apply(tell, actions)
                nursery.cancel_scope.cancel()
        finally:
            if not tell.machine.is_final:  # irisd is stopping
                with trio.CancelScope(shield=True):
                    reason = "irisd stopped before the remote team answered"
                    await self.apply(tell, tell.machine.interrupt(trio.current_time(), reason))
            self._runs.pop(tell.id, None)
            self._changed.pop(tell.id, None)
            self.unconfirmed.pop(tell.id, None)

    async def _keep_time(self, tell: ActiveTell) -> None:
        """The tell's deadlines (the caller's patience; the far side's silence)."""
        while not tell.machine.is_final:
            deadline = tell.machine.next_deadline()
            changed = trio.Event()
            self._changed[tell.id] = (changed, deadline)
            with trio.move_on_at(deadline if math.isfinite(deadline) else math.inf):
                await changed.wait()
            now = trio.current_time()
            if now >= tell.machine.next_deadline() and not tell.machine.is_final:
                actions = tell.machine.handle_timer(now)
                if tell.machine.handoff_unconfirmed and (words := self.unconfirmed.get(tell.id)) is not None:
                    # Before the reply: a caller answered now reads why its tell is in
                    # progress, whichever of the executor's own timers runs first.
                    tell.set_phase(TellPhase(name="queued", detail=words()))
                await self.apply(tell, actions)

    def _post(self, tell: ActiveTell, actions: list[tell_machine.Action]) -> None:
        """Apply actions from another task: the saving happens in the tell's own task,
        which a tell that ended here (cancelled before the far side took it) stops."""
        for action in actions:
            self._act(tell, action)
        if tell.machine.is_final and (scope := self._runs.get(tell.id)) is not None:
            scope.cancel()
        self._wake(tell)

    async def apply(self, tell: ActiveTell, actions: list[tell_machine.Action]) -> None:
        """Carry out the machine's actions, save the tell (where a final tell ends), and
        let it go if final."""
        answer = tell.machine.is_final and any(isinstance(action, tell_machine.ReplyToCaller) for action in actions)
        for action in actions:
            if not (answer and isinstance(action, tell_machine.ReplyToCaller)):
                self._act(tell, action)
        if answer:
            with trio.CancelScope(shield=True):  # the answer leaves first; its end is written whatever happens
                await reply_first(tell)
                await save_tell(self.store, tell)
        else:
            await save_tell(self.store, tell)
        self._wake(tell)
        if tell.machine.is_final and self.tells.pop(tell.id, None) is not None:
            self.last_used_at = time.time()
            self._changes()
            if self._closed and not self.tells:
                self._done.set()

    def _act(self, tell: ActiveTell, action: tell_machine.Action) -> None:
        match action:
            case tell_machine.ReplyToCaller():
                tell.reply_due()
            case tell_machine.StopChild() | tell_machine.SendInterrupt():
                scope = self._runs.get(tell.id)
                if scope is not None:
                    scope.cancel()  # the executor tells the far side as it unwinds

    def _wake(self, tell: ActiveTell) -> None:
        """Wake the tell's timer task if a deadline came nearer than the one it waits for
        (a later one it finds when it wakes; an ended tell's task is cancelled with its run)."""
        waiting = self._changed.get(tell.id)
        if waiting is not None and tell.machine.next_deadline() < waiting[1]:
            del self._changed[tell.id]
            waiting[0].set()

    def _changes(self) -> None:
        if self.on_change is not None:
            self.on_change()
