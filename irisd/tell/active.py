"""A tell in flight: its state machine plus what the trio side needs to wait on it.

``save_tell`` is the one place a tell's change is saved and the one place a tell ends:
whatever ended it (its machine, on a line or a deadline; a refusal; its pair or irisd
stopping: ``end_tell``; a remote team's result that came after irisd restarted:
``end_late``), the end is saved and announced, whoever waits on it is woken and its end
hook (pending questions) is called, once. Readers register on the tell by calling its methods
(``wait_result``, ``caller_leaves``), never by editing its fields."""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable

import msgspec
import trio

from irisd.claude.spend import Spent
from irisd.events import EventHub
from irisd.store import tells
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell.machine import TellMachine
from irisd.tell.transcript import TurnLines
from protocol.messages import (
    UNFINISHED_TELL_STATUSES,
    Event,
    TellInfo,
    TellKind,
    TellPhase,
    TellPhaseEvent,
    TellState,
    TellStatus,
    TellText,
)
from protocol.phases import describe

LISTENER_BUFFER = 1000

log = logging.getLogger("irisd.tell")

OnEnd = Callable[["ActiveTell"], Awaitable[object]]


def new_tell_id() -> str:
    """Unguessable and short enough to type: 16 hex digits."""
    return secrets.token_hex(8)


class ActiveTell:
    def __init__(
        self,
        *,
        from_team: str | None,
        to_team: str,
        message: str,
        machine: TellMachine,
        hub: EventHub | None = None,
        kind: TellKind = "tell",
        chain_id: str = "",
        hops: int = 0,
        path: tuple[str, ...] = (),
        max_budget_usd: float | None = None,
        on_end: OnEnd | None = None,
        parent: ActiveTell | None = None,
        thread: str = "",
    ) -> None:
        self.id = new_tell_id()
        self.thread = thread  # the pair's conversation it goes to ("": the default thread)
        # Somebody acts on its end once written, after its answer: the courier (the pair's
        # next notification; not a reader of its answer: a question in it is for a person),
        # a mesh home (its final result): so its end is written at once, never held for the
        # pair's next tell (readers: ``result_waiters``). Set by ``TellService.end_awaited``.
        self.end_awaited = False
        # The tell whose claude sent this one (a nested tell), if it runs here: an approval
        # this one waits for shows on it too (``nested_phase``).
        self.parent = parent
        self._own_phase: TellPhase | None = None  # this tell's phase while a nested approval shows
        self.on_end = on_end  # called once when the tell ends (pending questions)
        self.kind = kind
        self.chain_id = chain_id or self.id
        self.hops = hops
        self.path = path or (from_team or "external", to_team)  # the teams waiting in its chain, its own last
        self.hub = hub
        self.from_team = from_team
        self.to_team = to_team
        self.message = message
        self.machine = machine
        self.transcript = TurnLines()  # its lines not written yet (saved with its state: save_tell)
        self.session_id = ""
        self.approval_id = ""  # while awaiting_approval
        self.new_session = False
        self.max_budget_usd = max_budget_usd
        # What this tell's turns cost (claude's figures are running totals of the session:
        # the pair's router gives each result its share, irisd/claude/spend.py).
        self.spent: Spent | None = None
        # Who waits for the final answer (see irisd.questions.nobody_waiting): the
        # submitter left before it came, and how many 'result --wait' callers wait now.
        self._caller_left = False
        self._result_waiters = 0
        self._ended = False
        self.created_wall = time.time()
        self.started_wall: float | None = None
        self.output_wall = self.created_wall  # its last line from claude (or its start): the health monitor's
        self.finished_wall: float | None = None
        self.phase = TellPhase(name="queued", since=self.created_wall, text="queued")  # what it waits for
        self.replied = trio.Event()  # the submitting caller gets its answer now
        self.finished = trio.Event()
        self._last_status: TellStatus = machine.status
        self._listeners: set[trio.MemorySendChannel[Event]] = set()
        self._end_announced = False  # its final state was published: listeners have had all
        self.listener: trio.MemoryReceiveChannel[Event] | None = None  # the submitter's, if streaming
        self._caller_channel: trio.MemorySendChannel[Event] | None = None  # its sending side

    # --- who reads the answer ---------------------------------------------------------

    @property
    def caller_left(self) -> bool:
        """The submitting caller stopped waiting before its answer came."""
        return self._caller_left

    @property
    def result_waiters(self) -> int:
        """How many readers wait for the end now (``wait_result``)."""
        return self._result_waiters

    def caller_leaves(self) -> None:
        """The submitting caller hung up or its connection broke: nobody reads its
        reply, so the answer may become a pending question."""
        self._caller_left = True

    async def wait_result(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the end, counted meanwhile as a reader of the
        answer (so it does not become a pending question). Cancellation just stops
        waiting."""
        self._result_waiters += 1
        try:
            with trio.move_on_after(timeout_s):
                await self.finished.wait()
        finally:
            self._result_waiters -= 1

    @property
    def cost_usd(self) -> float | None:
        return self.spent.cost_usd if self.spent is not None else None

    def book(self, share: Spent) -> None:
        """A result of the tell's came: what its turn cost is added to the tell's (a tell
        that went to a second claude, after the first one exited, has two)."""
        self.spent = share if self.spent is None else self.spent.plus(share)

    def info(self) -> TellInfo:
        m = self.machine
        spent = self.spent if m.result is not None else None  # tokens: known of claude's turns, not a remote team's
        return TellInfo(
            id=self.id,
            from_team=self.from_team,
            to_team=self.to_team,
            message=self.message,
            status=m.status,
            text=m.text,
            session_id=self.session_id,
            created_at=self.created_wall,
            started_at=self.started_wall,
            finished_at=self.finished_wall,
            error=m.error,
            cost_usd=self.cost_usd,
            new_session=self.new_session,
            chain_id=self.chain_id,
            hops=self.hops,
            kind=self.kind,
            approval_id=self.approval_id if m.status == "awaiting_approval" else "",
            phase=None if m.is_final else self.phase,
            input_tokens=spent.input_tokens if spent is not None else None,
            output_tokens=spent.output_tokens if spent is not None else None,
            cache_read_tokens=spent.cache_read_tokens if spent is not None else None,
            cache_creation_tokens=spent.cache_creation_tokens if spent is not None else None,
            num_turns=m.result.num_turns if m.result is not None else None,
            duration_ms=m.result.duration_ms if m.result is not None else None,
            max_budget_usd=self.max_budget_usd,
            thread=self.thread,
        )

    def set_phase(self, phase: TellPhase) -> None:
        """Record what the tell waits for now (stamped with the time) and announce it, if
        it changed; a finished tell has no phase."""
        if self.machine.is_final:
            return
        old = self.phase
        phase = msgspec.structs.replace(phase, since=0.0, text=describe(phase))
        if msgspec.structs.replace(old, since=0.0) == phase:
            return
        # Queued behind the same tells, it waits as long as it did, whatever the one ahead does now.
        same_wait = old.name == phase.name == "queued" and (old.ahead, old.head_id) == (phase.ahead, phase.head_id)
        self.phase = msgspec.structs.replace(phase, since=old.since if same_wait else time.time())
        self.publish(TellPhaseEvent(tell_id=self.id, phase=self.phase))
        if self.parent is not None:
            self.parent.nested_phase(self.phase)

    def nested_phase(self, phase: TellPhase) -> None:
        """A tell this one waits for (its claude asked another team) changed phase. An
        approval anywhere down the chain shows here too, so whoever follows this tell (the
        session that asked) sees it and can decide it; once it is settled (or that tell
        ended), this tell's own phase is back."""
        if phase.name == "awaiting_approval":
            if self._own_phase is None:
                self._own_phase = self.phase
            self.set_phase(phase)
        elif self._own_phase is not None:
            own, self._own_phase = self._own_phase, None
            self.set_phase(own)

    def note_status(self) -> bool:
        """Record wall times of a status change; True if the status changed."""
        status = self.machine.status
        if status == self._last_status:
            return False
        self._last_status = status
        if status == "running" and self.started_wall is None:  # not again after an approval
            self.started_wall = time.time()
        if self.machine.is_final:
            self.finished_wall = time.time()
            if self.parent is not None:  # an approval it showed up the chain is gone with it
                self.parent.nested_phase(TellPhase(name="answering"))
        self.announce()
        return True

    def announce(self) -> None:
        """Tell listeners and watchers the tell's current state."""
        status = self.machine.status
        self.publish(
            TellState(
                tell_id=self.id,
                status=status,
                from_team=self.from_team,
                to_team=self.to_team,
                message=self.message if status in UNFINISHED_TELL_STATUSES else "",
                error=self.machine.error,
            )
        )

    # --- live listeners (streaming callers, watchers) --------------------------------

    def listen(self) -> trio.MemoryReceiveChannel[Event]:
        """The tell's events from now on, up to its final state (then the channel ends); a
        tell whose end was announced already has none (an ended channel)."""
        return self._listen(ended=self._end_announced)[1]

    def listen_as_caller(self) -> None:
        """The submitter streams: ``listener`` gets the tell's events until the caller's
        reply is due (``reply_due`` ends it there, after what came before)."""
        self._caller_channel, self.listener = self._listen(ended=self._end_announced or self.replied.is_set())

    def _listen(self, *, ended: bool) -> tuple[trio.MemorySendChannel[Event], trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](LISTENER_BUFFER)
        if ended:
            send.close()
        else:
            self._listeners.add(send)
        return send, receive

    @property
    def end_announced(self) -> bool:
        """Its final state was published: its listeners have had all its events."""
        return self._end_announced

    def reply_due(self) -> None:
        """The submitting caller gets its answer now: wake it, and end its listener after
        the events published so far (its reply follows them)."""
        self.replied.set()
        if self._caller_channel is not None:
            self._caller_channel.close()
            self._listeners.discard(self._caller_channel)
            self._caller_channel = None

    def publish(self, event: Event) -> None:
        """Best effort: a listener that cannot keep up is dropped, never waited for. The
        tell's final state is the last event its listeners get (their channels end)."""
        if self.hub is not None:
            self.hub.publish(event, self.from_team, self.to_team, self.chain_id)
        for listener in list(self._listeners):
            try:
                listener.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                listener.close()
                self._listeners.discard(listener)
        if isinstance(event, TellState) and event.status not in UNFINISHED_TELL_STATUSES:
            self._end_announced = True
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()
            self._caller_channel = None

    def publish_text(self, before: str) -> None:
        """Publish what the answer grew by since ``before`` (if it only grew)."""
        after = self.machine.text
        if len(after) > len(before) and after.startswith(before):
            self.publish(TellText(tell_id=self.id, text=after[len(before) :]))

    @property
    def deadline(self) -> float:
        """Its machine's next deadline, or when its unsaved lines are due to be written."""
        if self.machine.is_final:
            return math.inf
        return min(self.machine.next_deadline(), self.transcript.next_deadline())


async def save_tell(
    store: Store, tell: ActiveTell, writes: PendingWrites | None = None, *, flush: bool = False,
    hold_end_s: float = 0.0, ending: dict[str, ActiveTell] | None = None,
) -> None:
    """The one place a tell's change is saved: when its status changed, it ended, its
    unsaved lines are due (``TurnLines``) or ``flush`` says so, its transcript lines are
    written in one go, then its state (with the usage, once it ended). Through ``writes``
    if given: a refused write waits there and never raises; inside its ``batch()`` a
    change without lines waits for the batch's end, but lines and an end are written
    (with what the batch held) before this returns. The first time it is saved ended, it
    ends: whoever waits on it is woken and its end hook is called (before they run: the
    hook sees who waited), once the end is written.

    ``hold_end_s`` (inside a batch of ``writes``): its end is held, to be written with the
    next batch of the pair (a tell sent at once goes to claude first) or that much later
    (``PendingWrites.hold``); meanwhile it is found in ``ending`` (its lines a reader adds,
    its state for ``iris result``), and it ends once the end is written."""
    changed = tell.note_status()
    holding = False
    taken = 0
    if changed or flush or tell.machine.is_final or tell.transcript.due(trio.current_time()):
        lines = tell.transcript.take()
        taken = len(lines)
        usage = None
        if tell.machine.result is not None and tell.machine.result.usage is not None:
            usage = msgspec.json.encode(tell.machine.result.usage)
        try:
            if writes is not None:
                if lines:
                    await writes.save(None, tells.append_messages, tell.id, lines)
                await writes.save(f"tell:{tell.id}", tells.update, tell.info(), usage)
                holding = bool(hold_end_s) and tell.machine.is_final and not tell._ended and writes.batching
                if not holding and (lines or tell.machine.is_final):
                    await writes.flush()  # readers and those who act on the end find them stored
            else:
                if lines:
                    await store.call(tells.append_messages, tell.id, lines)
                await store.call(tells.update, tell.info(), usage)
        finally:
            if not holding:
                tell.transcript.written(taken)
    if not tell.machine.is_final or tell._ended:
        return
    tell._ended = True
    if holding and writes is not None:
        if ending is not None:
            ending[tell.id] = tell

        async def written() -> None:
            tell.transcript.written(taken)
            if ending is not None:
                ending.pop(tell.id, None)
            await _ended(tell)

        writes.hold(hold_end_s, written)
        return
    await _ended(tell)


async def _ended(tell: ActiveTell) -> None:
    """Its end is written: whoever waits on it is woken, its end hook called."""
    tell.reply_due()
    tell.finished.set()
    if tell.on_end is not None:
        try:
            await tell.on_end(tell)
        except Exception:  # a bug there must not break the actor that ended the tell
            log.exception("handling the end of a tell failed", extra={"tell": tell.id})
    if tell.end_awaited:  # who acts on the end takes its step first (as in ``reply_first``)
        await trio.lowlevel.cancel_shielded_checkpoint()
        await trio.lowlevel.cancel_shielded_checkpoint()


async def reply_first(tell: ActiveTell) -> None:
    """The caller's answer is due: wake it and let its task take its step (write its reply,
    built from the tell in memory) before the writes that follow. Two checkpoints: in
    whichever order trio runs the next batch, the caller's task has run by then (none for
    a tell whose end is awaited: its caller waits for the writes anyway). Never raises
    Cancelled (what follows must be written)."""
    if tell.replied.is_set():
        return
    tell.note_status()  # the end's wall time and state first: the reply is built from them
    tell.reply_due()
    if tell.end_awaited:  # its caller acts only once the end is written: no step to give it first
        return
    await trio.lowlevel.cancel_shielded_checkpoint()
    await trio.lowlevel.cancel_shielded_checkpoint()


async def end_tell(
    store: Store,
    tell: ActiveTell,
    reason: str,
    *,
    interrupted: bool = False,
    writes: PendingWrites | None = None,
) -> None:
    """End ``tell`` from outside its machine (refused, its pair or irisd stopping):
    ``failed`` (or ``interrupted``) with ``reason``, then saved and ended by
    ``save_tell``. A tell that already ended is only saved."""
    if not tell.machine.is_final:
        now = trio.current_time()
        tell.machine.interrupt(now, reason) if interrupted else tell.machine.fail(now, reason)
    await save_tell(store, tell, writes)


async def end_late(
    store: Store,
    info: TellInfo,
    status: TellStatus,
    text: str,
    error: str = "",
    cost_usd: float | None = None,
    *,
    hub: EventHub | None = None,
    on_end: OnEnd | None = None,
) -> None:
    """A remote team's final result for a tell no actor runs any more (irisd restarted in
    between, so ``info``, its row, says ``interrupted``; or its executor stopped
    following it): the result replaces what was recorded, and the tell ends as every
    tell does, through ``save_tell`` (saved, its state announced, its end hook called)."""
    now = trio.current_time()
    machine = TellMachine(response_timeout_s=math.inf, caller_timeout_ms=0, now=now)
    machine.remote_started(now)
    tell = ActiveTell(
        from_team=info.from_team, to_team=info.to_team, message=info.message, machine=machine, hub=hub,
        kind=info.kind, chain_id=info.chain_id, hops=info.hops, max_budget_usd=info.max_budget_usd, on_end=on_end,
    )
    tell.id, tell.session_id, tell.new_session = info.id, info.session_id, info.new_session
    tell.created_wall, tell.started_wall = info.created_at, info.started_at
    tell.caller_leaves()  # who sent it waited on an irisd that is gone: nobody reads this answer
    if cost_usd is not None:
        tell.spent = Spent(cost_usd=cost_usd)
    machine.remote_finished(now, status, text, error)
    await save_tell(store, tell)
