"""The tells of one pair: the unfinished ones in arrival order, and the async code that
drives their machines (``irisd/tell/machine.py``). Owned by the pair's actor, which
calls it from its one task.

How it works
------------
A tell is counted here from the moment it is submitted (before the actor has seen it),
so that the queue limit holds between events, and until it ends. The actor hands it
what concerns tells: a turn to start (the process machine's ``SendTurn``), a line of the
child routed to the running tell (a permission request goes to the approval desk, and
a person's decision comes back), a timer, a failure or an interruption. The
tell's machine decides; ``apply`` carries out its actions (reply to the caller, stop the
child, interrupt it) and saves the tell (``save_tell`` ends it once final); once it ended,
its approvals expire and the process machine hears of it (through the actor's ``run``),
which hands the child the next tell.

When a tell ends, its result says how full the conversation is (``compaction.py``):
that is recorded, and above the team's ``compactAt`` a compaction (a tell of kind
``compaction``, ``/compact``, made by the pair: ``NewCompaction``) goes first in the
queue, so the child compacts before the next tell, never during one.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from functools import partial

import msgspec
import trio

from irisd.claude.wire import AnyLine, ResultLine, SystemLine, interrupt_request, line_type, user_turn
from irisd.pool.approvals import ApprovalDesk
from irisd.pool.child_router import Routed, is_input_request, is_permission_request
from irisd.pool.compaction import Boundary, ContextSize, boundary, compaction_due, context_size
from irisd.pool.pair_events import AskBudgetRequest, DecideRequest
from irisd.pool.policy import PairKey
from irisd.pool.process_machine import Action, ProcessMachine, SendTurn
from irisd.store import sessions, tells
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell import machine as tell_machine
from irisd.tell.active import ActiveTell, end_tell, reply_first, save_tell
from irisd.tell.phase import IRIS_COMPACTS, after_line, before_start
from irisd.tell.transcript import Inits
from protocol.errors import BusyError, IrisError, NotFoundError
from protocol.messages import TellNotice, TellPhase

log = logging.getLogger("irisd.pair")

# How long a tell's end may wait to be written with the start of a tell sent right after
# its answer (a client's round trip is well under this); then it is written alone.
HOLD_END_S = 0.01

Run = Callable[[list[Action]], Awaitable[None]]  # carries out the process machine's actions
Send = Callable[[bytes], Awaitable[None]]  # writes to the child's stdin (if there is one)
NewCompaction = Callable[[], ActiveTell]  # a compaction tell for the pair (``/compact``, kind ``compaction``)


class Compacting(msgspec.Struct, frozen=True):
    """When the pair compacts: the team's threshold and the window (settings.sessions), and
    how it makes a compaction (None: never)."""

    compact_at: int = 0
    context_window: int | None = None
    new: NewCompaction | None = None


def waited_for(tell: ActiveTell) -> bool:
    """Whether somebody waits for the end of ``tell`` to be written: a reader of its result
    (``iris result --wait``, the A2A face, a cancel: ``TellService._read_end``), the courier
    or a mesh home (``end_awaited``): its end is written at once, not held for the pair's
    next tell."""
    return tell.end_awaited or tell.result_waiters > 0


class PairTells:
    def __init__(
        self,
        *,
        key: PairKey,
        label: str,
        store: Store,
        writes: PendingWrites,
        desk: ApprovalDesk,
        machine: ProcessMachine,
        run: Run,
        send: Send,
        compacting: Compacting | None = None,
    ) -> None:
        self.from_team, self.to_team, self.thread = key
        # The pair's session row is its thread's: every write of it names the thread.
        self._turn = partial(sessions.record_turn, thread=self.thread)
        self._compaction = partial(sessions.record_compaction, thread=self.thread)
        self._status = partial(sessions.set_status, thread=self.thread)
        self.label = label
        self.store, self.writes, self.desk, self.machine = store, writes, desk, machine
        self._run, self._send = run, send
        self.compacting = compacting or Compacting()
        self.by_id: dict[str, ActiveTell] = {}  # in arrival order
        self.ending: dict[str, ActiveTell] = {}  # ended, the end held to go with the next tell's start
        self.inits = Inits()  # the init lines of the pair's claude: only a new one is stored
        self.spent_usd = 0.0  # what the pair's tells have cost, all time (the actor reads the ledger)
        self.last_used_at: float | None = None  # wall clock, for people: when a tell last ended

    # --- the registry ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.by_id)

    def get(self, tell_id: str | None) -> ActiveTell | None:
        return self.by_id.get(tell_id or "")

    def find(self, tell_id: str) -> ActiveTell | None:
        """A tell of this pair that is not finished, or whose end is not written yet."""
        return self.by_id.get(tell_id) or self.ending.get(tell_id)

    def holds(self, tell_id: str) -> bool:
        """Whether the end of tell ``tell_id`` waits here to be written."""
        return tell_id in self.ending

    def queued(self) -> list[ActiveTell]:
        return [tell for tell in self.by_id.values() if tell.machine.status == "queued"]

    def check_room(self, limit: int) -> None:
        """Raises BusyError when ``limit`` tells wait already."""
        if len(self.queued()) >= limit:
            raise BusyError(
                f"the queue of {self.label} is full ({limit} tells waiting); wait for some "
                "to finish, cancel some ('iris cancel ID'), or raise settings.queueLimit"
            )

    def add(self, tell: ActiveTell) -> None:
        self.by_id[tell.id] = tell

    def next_deadline(self) -> float:
        return min((tell.deadline for tell in self.by_id.values()), default=math.inf)

    def refresh_phases(self, *, state: str, waiting_for_slot: int, own_turn: bool = False) -> None:
        """Tell the queued tells what they wait for (the running tell is ahead of them all;
        ``own_turn``: the child is taking a turn no tell asked for)."""
        head = self.by_id.get(self.machine.current) if self.machine.current is not None else None
        ahead = 1 if self.machine.current is not None else 0
        compacting = head is not None and head.kind == "compaction"
        for index, tell in enumerate(self.queued()):
            phase = before_start(index + ahead, state=state, waiting_for_slot=waiting_for_slot,
                                 head=head.phase if head is not None else None, head_id=head.id if head else "",
                                 own_turn=own_turn, compacting=compacting)
            if phase is not None:
                tell.set_phase(phase)

    # --- events ------------------------------------------------------------------------

    async def on_timer(self, now: float) -> None:
        for tell in list(self.by_id.values()):
            if not tell.machine.is_final:
                await self.apply(tell, tell.machine.handle_timer(now))

    async def fail(self, ids: tuple[str, ...], reason: str, *, interrupted: bool = False) -> None:
        """The process machine let these tells go: ``failed`` (or ``interrupted``)."""
        for tell in [tell for tell_id in ids if (tell := self.by_id.get(tell_id)) is not None]:
            if tell.machine.is_final:  # it ended, its end not carried out yet (irisd stopping): only that
                await self.apply(tell, [])
                continue
            end = tell.machine.interrupt if interrupted else tell.machine.fail
            await self.apply(tell, end(trio.current_time(), reason))

    async def start_turn(self, turn: SendTurn, now: float, *, session_id: str, startup_s: float) -> None:
        """Hand the tell to the child (again, to a new one, if ``turn.restarted``)."""
        tell = self.by_id[turn.tell_id]
        tell.session_id = session_id
        tell.new_session = tell.new_session or turn.new_session
        tell.output_wall = time.time()  # silence counts from the hand-over
        if turn.restarted or turn.fresh_child:
            self.inits.new_child()
        if turn.restarted:
            await self.apply(tell, tell.machine.child_restarted(now, startup_s=startup_s))
        else:
            await self.apply(tell, tell.machine.start(now, startup_s=startup_s))
        starting = turn.restarted or turn.fresh_child
        if tell.kind == "compaction":
            tell.set_phase(TellPhase(name="compacting", detail=IRIS_COMPACTS))
        else:
            tell.set_phase(TellPhase(name="starting_claude" if starting else "waiting_for_model"))
        if not tell.machine.is_final:  # if the child cannot read it, its exit ends or retries the tell
            await self._send(user_turn(tell.message))

    async def child_line(self, tell: ActiveTell, line: AnyLine, raw: bytes, now: float, routed: Routed) -> None:
        """A line the router gave the running tell: a result's cost share is the tell's; a
        permission request goes to the approval desk; any other line its machine reads,
        its transcript keeps (written with the tell's state: ``save_tell``), its listeners
        see (the text, the phase, claude's retries). The answer leaves on the result line:
        its caller is woken before anything is written (the end is durable before the tell
        counts as finished, for those that act on it: the courier, the mesh)."""
        tell.output_wall = time.time()
        if routed.spent is not None and isinstance(line, ResultLine):
            tell.book(routed.spent)
            self.spent_usd += routed.spent.cost_usd
            # The machine words a budget stop with the cost: the tell's, not the session's running total.
            line = msgspec.structs.replace(line, total_cost_usd=routed.spent.cost_usd)
        type_ = line_type(line)
        if is_permission_request(line):  # routed.to == "permission"
            tell.transcript.add(now, time.time(), type_, raw)
            await save_tell(self.store, tell, self.writes, flush=True)  # it may wait long for a person
            await self.desk.on_request(line, tell, self._send, self.apply)
            return
        if is_input_request(line):  # one of the team's MCP servers asks its person: kept like an approval
            tell.transcript.add(now, time.time(), type_, raw)
            await save_tell(self.store, tell, self.writes, flush=True)  # it may wait long for a person
            await self.desk.on_input(line, tell, self._send, self.apply)
            return
        before = tell.machine.text
        actions = tell.machine.child_line(line, now)
        init = isinstance(line, SystemLine) and line.subtype == "init"
        tell.transcript.add(now, time.time(), type_, raw, keep=not init or self.inits.is_new(raw))
        tell.publish_text(before)
        if (phase := after_line(line, tell.phase)) is not None and tell.kind != "compaction":
            tell.set_phase(phase)
        if isinstance(line, SystemLine) and (notice := line.retry_notice()):
            log.warning("claude retries the API", extra={"pair": self.label, "tell": tell.id, "notice": notice})
            tell.publish(TellNotice(tell_id=tell.id, text=notice))
        if isinstance(line, SystemLine) and (found := boundary(line.subtype, line.compact_metadata)) is not None:
            await self._compacted(tell, found)
        if isinstance(line, ResultLine) and tell.machine.is_final and tell.kind != "compaction":
            # The caller has (or is about to have) its answer: what follows is written
            # whatever happens, also if irisd stops meanwhile; the exchange, the transcript
            # and the end in one transaction (``save_tell`` writes them before the end
            # counts), then the pair's state with the next tell's start, if one waits,
            # after its turn went to claude.
            with trio.CancelScope(shield=True):
                await self._reply_now(tell, actions)
                async with self.writes.batch():
                    # One more exchange, and how full the conversation is now (a compaction is
                    # neither: its figures come with its boundary line).
                    size = context_size(line.usage, line.model_usage, override=self.compacting.context_window)
                    await self.writes.save(None, self._turn, self.from_team, self.to_team, time.time(),
                                           size.tokens if size else None, size.window if size else None)
                    await self._compact_if_due(tell, size)
                    await self.apply(tell, actions, hold_end_s=0.0 if waited_for(tell) else HOLD_END_S)
            return
        await self.apply(tell, actions)

    async def _reply_now(self, tell: ActiveTell, actions: list[tell_machine.Action]) -> None:
        """The caller's answer is due: it leaves before the writes of the end."""
        if any(isinstance(action, tell_machine.ReplyToCaller) for action in actions):
            await reply_first(tell)

    async def _compacted(self, tell: ActiveTell, found: Boundary) -> None:
        """claude compacted the conversation: Iris's compaction, a /compact, or its own
        near a full context in the middle of ``tell`` (said to those who watch it)."""
        trigger = "iris" if tell.kind == "compaction" else found.trigger
        await self.writes.save(None, self._compaction, self.from_team, self.to_team, time.time(),
                               trigger, found.pre_tokens, found.post_tokens)
        if trigger == "auto":
            log.info("claude compacted the conversation by itself", extra={"pair": self.label, "tell": tell.id})
            tokens = f": {found.pre_tokens} -> {found.post_tokens} tokens" if found.pre_tokens is not None else ""
            tell.publish(TellNotice(tell_id=tell.id, text=f"claude compacted the conversation by itself (its "
                                    f"context was nearly full){tokens}; this tell goes on"))

    async def _compact_if_due(self, tell: ActiveTell, size: ContextSize | None) -> None:
        """Above ``compactAt``, compact the conversation before the next tell (the machine
        puts the compaction first in the queue)."""
        new = self.compacting.new
        if size is None or new is None or not compaction_due(size, self.compacting.compact_at, kind=tell.kind):
            return
        if not self.machine.can_compact(tell.id):
            return  # its child stops after it (a budget of its own): the next one compacts
        compaction = new()
        try:
            await self.store.call(tells.insert, compaction.info())
        except IrisError as exc:
            log.warning("could not record a compaction; not compacting", extra={"pair": self.label,
                                                                                 "error": exc.message})
            return
        log.info("compacting the conversation before the next tell",
                 extra={"pair": self.label, "tokens": size.tokens, "window": size.window})
        self.add(compaction)
        compaction.announce()
        await self.writes.save(None, self._status, self.from_team, self.to_team, sessions.COMPACT_PENDING)
        await self._run(self.machine.compaction_queued(compaction.id, after=tell.id))

    async def ask_budget(self, request: AskBudgetRequest) -> None:
        """Ask the person whether the running tell's chain may spend beyond its budget."""
        tell = self.by_id.get(request.tell_id)
        if tell is None or tell.machine.is_final:
            request.finish(error=NotFoundError(f"tell {request.tell_id} no longer runs"))
            return
        request.asked = await self.desk.ask_budget(tell, request.question, request.details, self.apply)
        request.finish()

    async def decide(self, request: DecideRequest) -> None:
        """A person's decision on a tell's pending approval; answers ``request``."""
        try:
            request.approval = await self.desk.decide(
                request.approval_id, allow=request.allow, remember=request.remember, reason=request.reason,
                by=request.by, send=self._send, apply=self.apply, content=request.content,
            )
            request.finish()
        except IrisError as exc:
            request.finish(error=exc)

    # --- carrying out a tell machine's actions, and the end -----------------------------------

    async def apply(self, tell: ActiveTell, actions: list[tell_machine.Action], *, hold_end_s: float = 0.0) -> None:
        """Carry out a tell machine's actions, then save the tell (and end it, if final;
        ``hold_end_s``: its end held for the next tell's start, ``save_tell``)."""
        for action in actions:
            match action:
                case tell_machine.ReplyToCaller():
                    tell.reply_due()
                case tell_machine.StopChild(reason):
                    await self._run(self.machine.stop_child(reason))
                case tell_machine.SendInterrupt():
                    if tell.id == self.machine.current:
                        await self._send(interrupt_request(f"interrupt-{tell.id}"))
        await save_tell(self.store, tell, self.writes, hold_end_s=hold_end_s, ending=self.ending)  # where it ends
        if tell.machine.is_final and self.by_id.pop(tell.id, None) is not None:
            if tell.kind == "compaction":  # done (its boundary line recorded it), or given up
                await self.writes.save(None, self._status, self.from_team, self.to_team, sessions.ACTIVE)
            await self.desk.expire(f"the tell ended ({tell.machine.status}) before a decision", tell)
            if tell.id == self.machine.current:
                self.last_used_at = time.time()
            await self._run(self.machine.tell_ended(tell.id, trio.current_time()))

    async def abandon(self, reason: str) -> None:
        """irisd stops: those the process machine never saw end interrupted, saved directly."""
        for tell in list(self.by_id.values()):
            try:
                await end_tell(self.store, tell, reason, interrupted=True)
            except Exception:
                log.exception("could not record an interrupted tell")
        self.by_id.clear()
