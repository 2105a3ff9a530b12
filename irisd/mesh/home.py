"""The home's side of remote tells: take them from ``IRIS_TELLS``, run them like local
tells through the dispatcher, send what happens back to the caller's irisd.

A message is acked only once it is recorded (``records``), so killing irisd at any
moment loses no tell, and a redelivered one is answered from its record, never run
again. The tell goes through ``Dispatcher.dispatch`` as a ``Caller.remote`` (the caller
irisd named by the message's subject, i.e. by its NATS credentials), exactly like a
local tell: same admission (budgets, rate limit), same pair ``team@irisd->team``, same
approvals, decided here by this irisd's owner. Its events go to the caller as
``LiveMsg``; its final result as a ``FinalMsg`` stored in ``IRIS_REPLIES`` (and sent again
after a restart until JetStream has stored it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

import msgspec
import trio

from iris_common.config import IrisConfig
from irisd.caller import OWNER, Caller, Dispatch
from irisd.events import no_events
from irisd.mesh import records
from irisd.mesh.engine import TELLS, Link, durable_consumer, ensure_consumer
from irisd.mesh.lane import Lane, LaneError, ack, serve_pull
from irisd.mesh.nats_wire import Message
from irisd.mesh.wire import (
    ENCODER,
    INBOUND,
    CancelMsg,
    FinalMsg,
    LiveMsg,
    RemoteTellMsg,
    chain_in,
    invalid_tell,
    live_subject,
    read,
    reply_subject,
    speaker,
)
from irisd.store.facade import Store
from protocol.errors import IrisError
from protocol.messages import (
    UNFINISHED_TELL_STATUSES,
    CancelTell,
    ChainRef,
    Event,
    GetTell,
    Tell,
    TellInfo,
    TellPhaseEvent,
    TellReply,
    TellState,
    TellStatus,
    TellText,
    Watch,
)

log = logging.getLogger("irisd.mesh")

FOLLOW_WAIT_MS = 600_000
RETRY_S = 1.0
REPLIED_NOTE_S = 0.5  # the stored final results are noted in one write per this long


class TellEnds(Protocol):
    """The tell service's part in a home's final result (``irisd.tell.service.TellService``)."""

    def end_awaited(self, tell_id: str) -> None: ...
    async def end_written(self, tell_id: str) -> None: ...


class Home:
    """Serves this irisd's offered teams to the mesh until cancelled."""

    def __init__(self, link: Link, lane: Lane, store: Store, dispatch: Dispatch,
                 config: Callable[[], IrisConfig], ends: TellEnds) -> None:
        self.link = link
        self.lane = lane
        self.name = link.mesh.name
        self.store = store
        self.dispatch = dispatch
        self.config = config
        self.ends = ends
        self.following: dict[str, tuple[str, str]] = {}  # local tell id -> (remote id, caller)
        self.replied = RepliedNotes(store)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take the tells of ``IRIS_TELLS`` for this irisd through the fast lane, until
        cancelled (the consumer made through nats-py first)."""
        await self.store.call(records.ensure)
        consumer = durable_consumer(f"home-{self.name}", f"iris.tell.{self.name}.>")
        name = await ensure_consumer(self.link, TELLS, consumer)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self.replied.run)
            await nursery.start(self._forward_events)
            await self._resume(nursery)
            task_status.started()
            await serve_pull(self.lane, TELLS, name, self._take)

    async def _take(self, message: Message) -> None:
        caller = speaker(message.subject)
        inbound = read(INBOUND, message.data)
        if inbound is None:
            if refused := invalid_tell(message.data):  # its caller waits for an answer: it gets one
                remote_id, why = refused
                log.warning("mesh: refused a tell out of range", extra={"from": caller, "error": why})
                await self._send_final(caller, FinalMsg(id=remote_id, status="failed",
                                                        error=f"irisd `{self.name}` refuses this tell: {why}"))
            else:
                log.warning("mesh: dropped a message that is not an Iris tell", extra={"from": caller})
            ack(self.lane, message, b"+TERM")
            return
        match inbound:
            case RemoteTellMsg():
                await self._tell(inbound, caller)  # its status, if taken, goes in one write with the ack
            case CancelMsg(id=remote_id):
                await self._cancel(remote_id, caller)
        ack(self.lane, message)  # once recorded; a lost ack is a redelivery the record answers

    async def _tell(self, tell: RemoteTellMsg, caller: str) -> None:
        known = await self.store.call(records.receive, tell.id, caller, time.time())
        if known is not None and known.caller != caller:  # another irisd's tell id: not this caller's to resend
            log.warning("mesh: dropped a tell whose id another irisd's tell has",
                        extra={"from": caller, "remote_tell": tell.id, "sender": known.caller})
            return
        if known is not None and known.local_id is None and not known.replied:
            # irisd died between recording it and recording its local tell: was it submitted?
            sender = f"{tell.from_team or 'external'}@{caller}"
            found = await self.store.call(
                records.find_submitted, sender, tell.to_team, tell.message, known.received_at
            )
            if found is None:  # it was not: it runs now, once
                if refusal := self._refusal(tell, caller):
                    await self._send_final(caller, FinalMsg(id=tell.id, status="failed", error=refusal))
                else:
                    await self._submit(tell, caller)
                return
            await self.store.call(records.submitted, tell.id, found)
            known = msgspec.structs.replace(known, local_id=found)
        if known is not None:  # redelivered: answered from the record, never run again
            if not known.replied and known.local_id not in self.following:
                self._nursery.start_soon(self._answer, known)
            return
        refusal = self._refusal(tell, caller)
        if refusal:
            await self._send_final(caller, FinalMsg(id=tell.id, status="failed", error=refusal))
            return
        await self._submit(tell, caller)

    async def _submit(self, tell: RemoteTellMsg, caller: str) -> None:
        """Hand the tell to the dispatcher, as from ``team@caller``, record its local
        tell, and follow it (``_serve``)."""
        taken = Taken()  # (a task started with start_soon and this: not Nursery.start's nursery per tell)
        self._nursery.start_soon(self._serve, tell, caller, taken)
        await taken.done.wait()
        # The pair's task, woken in the same step as this one, hands the tell to claude
        # before the record and the caller's news below (they are not on its way).
        await trio.lowlevel.checkpoint()
        if taken.refused:  # refused (admission, a budget, the rate limit...)
            await self._send_final(caller, FinalMsg(id=tell.id, status="failed", error=taken.refused))
            return
        if not taken.local:  # its task failed first (that error ends the home): not acked, it comes again
            raise RuntimeError(f"remote tell {tell.id}: its task ended before the dispatcher answered")
        await self.store.call(records.submitted, tell.id, taken.local)
        self._live(caller, LiveMsg(id=tell.id, status=taken.status), flush=False)  # with the ack, just after

    async def _serve(self, tell: RemoteTellMsg, caller: str, taken: Taken) -> None:
        """Run the tell as a caller that waits for its end, then send its final result.
        ``taken`` is done once the dispatcher took it (its local id and status) or
        refused it (why), or this ended before either.

        Waiting as its caller, not as a reader of its result after it was submitted:
        a caller's answer leaves on the result line, before the writes of the end (the
        reply is read from the tell in memory), a reader's once they are written."""
        # The chain goes on here, one hop further (as across A2A): admission checks its hop
        # limit and loop guard, and the tells this team's claude sends while answering count
        # on from it, so the hop limit and the chain's budget hold for the whole chain, not
        # per irisd.
        request = Tell(to_team=tell.to_team, message=tell.message, timeout_ms=0, announce=True,
                       max_budget_usd=tell.max_budget_usd, across=chain_in(tell, self.name), thread=tell.thread)
        local = ""

        async def accepted(event: Event) -> None:  # the one event ``announce`` sends: it names the tell
            nonlocal local
            if isinstance(event, TellState) and not local:
                local = event.tell_id
                self.following[local] = (tell.id, caller)  # before any await: its first events are near
                self.ends.end_awaited(local)  # its end is written as the answer leaves (below)
                taken.local, taken.status = local, event.status
                taken.done.set()

        try:
            try:
                reply = await self.dispatch(request, Caller.remote(caller, tell.from_team), accepted)
            except IrisError as exc:
                if not local:
                    taken.refused = exc.message  # _submit answers
                    return
                error = f"home irisd `{self.name}`: {exc.message}"
                await self._send_final(caller, FinalMsg(id=tell.id, status="failed", error=error))
                return
            assert isinstance(reply, TellReply)
            if reply.tell.status in UNFINISHED_TELL_STATUSES:  # answered before its end (it should not be)
                await self._follow(local, tell.id, caller)
                return
            # Its end written first (awaited, so never held for the pair's next tell), so a
            # restart of this irisd can never contradict the result its caller has: killed
            # before, it records the tell interrupted and sends that instead.
            await self.ends.end_written(local)
            await self._send_final(caller, final_of(tell.id, reply.tell))
        finally:
            self.following.pop(local, None)
            taken.done.set()

    def _refusal(self, tell: RemoteTellMsg, caller: str) -> str:
        config = self.config()
        mesh = config.mesh
        if mesh is None or not mesh.allows(caller):
            return f"irisd `{self.name}` does not take tells from irisd `{caller}` (its settings.mesh.allow)"
        if tell.to_team not in config.teams or not mesh.offers(tell.to_team):
            return f"irisd `{self.name}` does not offer team {tell.to_team!r} to the mesh"
        return ""  # the chain (hop limit, loop) is admission's, as for every tell

    async def _cancel(self, remote_id: str, caller: str) -> None:
        """Cancel a remote tell, for the irisd that sent it only (``caller``: the one whose
        subject, so whose credentials, the cancel came on)."""
        known = await self.store.call(records.get, remote_id)
        if known is None or known.local_id is None:
            return
        if known.caller != caller:
            log.warning("mesh: dropped a cancel from an irisd that did not send the tell",
                        extra={"from": caller, "remote_tell": remote_id, "sender": known.caller})
            return
        try:
            await self.dispatch(CancelTell(tell_id=known.local_id), Caller.remote(known.caller, None), no_events)
        except IrisError as exc:
            log.info("mesh: cancel of a remote tell", extra={"tell": known.local_id, "error": exc.message})

    async def _resume(self, nursery: trio.Nursery) -> None:
        """After a restart: every remote tell whose caller has no final result yet (one
        with no local tell recorded was never acked: its message comes again)."""
        for known in await self.store.call(records.unreplied):
            if known.local_id is not None:
                nursery.start_soon(self._answer, known)

    async def _answer(self, known: records.Inbound) -> None:
        local = known.local_id
        if local is None:
            return
        reply = await self.dispatch(GetTell(tell_id=local), OWNER, no_events)
        assert isinstance(reply, TellReply)
        if reply.tell.status == "interrupted" and reply.tell.started_at is None:
            # It waited in its pair's queue when irisd stopped: it never ran, so it runs now.
            again = await self._resubmit(known, reply.tell)
            if again is None:
                return
            local = again
        self.following[local] = (known.remote_id, known.caller)
        await self._follow(local, known.remote_id, known.caller)

    async def _resubmit(self, known: records.Inbound, info: TellInfo) -> str | None:
        team, _, _ = (info.from_team or "").rpartition("@")
        across = ChainRef(chain_id=info.chain_id, hops=max(info.hops - 1, 0)) if info.chain_id else None
        request = Tell(to_team=info.to_team, message=info.message, timeout_ms=-1, max_budget_usd=info.max_budget_usd,
                       across=across, thread=info.thread)
        try:
            reply = await self.dispatch(request, Caller.remote(known.caller, team or None), no_events)
        except IrisError as exc:
            await self._send_final(known.caller, FinalMsg(id=known.remote_id, status="failed", error=exc.message))
            return None
        assert isinstance(reply, TellReply)
        await self.store.call(records.submitted, known.remote_id, reply.tell.id)
        return reply.tell.id

    async def _follow(self, local: str, remote_id: str, caller: str) -> None:
        """Wait for the local tell's end, then send its final result durably."""
        try:
            while True:
                try:
                    reply = await self.dispatch(GetTell(tell_id=local, wait_ms=FOLLOW_WAIT_MS), OWNER, no_events)
                except IrisError as exc:  # e.g. the tell was pruned: the caller still gets an end
                    final = FinalMsg(id=remote_id, status="failed", error=f"home irisd `{self.name}`: {exc.message}")
                    await self._send_final(caller, final)
                    return
                assert isinstance(reply, TellReply)
                if reply.tell.status not in UNFINISHED_TELL_STATUSES:
                    break
            await self._send_final(caller, final_of(remote_id, reply.tell))
        finally:
            self.following.pop(local, None)

    async def _send_final(self, caller: str, final: FinalMsg) -> None:
        """Send the final result on the caller's live subject (its caller answers from
        that copy at once, not after JetStream stored it and its pull delivered it: about
        half a millisecond each way), and store it in IRIS_REPLIES (trying until it is),
        then note it (``RepliedNotes``: soon, with the others of that moment). The stored
        copy is the one that counts: a caller that lost the first one (not connected,
        its live view full, or down) reads it there. No message id: one that another
        irisd knew could be stored first under it, and this result dropped as its
        duplicate; a second copy of a result changes nothing."""
        payload = ENCODER.encode(final)
        self._live(caller, payload, flush=False)  # the same bytes, in the same write as the publish below
        while True:
            try:
                await self.lane.js_publish(reply_subject(caller, self.name), payload)
                break
            except LaneError as exc:
                log.warning("mesh: final result not stored yet", extra={"error": str(exc)})
                await trio.sleep(RETRY_S)
        self.replied.add(final.id, time.time())

    async def _forward_events(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The live view: events of followed tells, to their callers (best effort)."""
        started = False

        async def forward(event: Event) -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()
            match event:
                case TellText(tell_id=local, text=delta) if local in self.following:
                    remote_id, caller = self.following[local]
                    self._live(caller, LiveMsg(id=remote_id, text=delta))
                case TellState(tell_id=local, status=status) if local in self.following:
                    remote_id, caller = self.following[local]
                    if status in UNFINISHED_TELL_STATUSES:
                        self._live(caller, LiveMsg(id=remote_id, status=status))
                case TellPhaseEvent(tell_id=local, phase=phase) if local in self.following:
                    remote_id, caller = self.following[local]
                    words = phase_words(phase.detail, phase.tool)
                    self._live(caller, LiveMsg(id=remote_id, phase=phase.name, detail=words))

        while True:
            try:
                await self.dispatch(Watch(team=None), OWNER, forward)
            except IrisError as exc:  # dropped for falling behind: the live view resumes; finals are durable
                log.warning("mesh: the live view of remote tells watches again", extra={"error": exc.message})
                await trio.sleep(RETRY_S)

    def _live(self, caller: str, live: LiveMsg | bytes, *, flush: bool = True) -> None:
        """Sent without waiting: the live view is best effort (a lane that is down loses
        it); the final result is durable. ``flush=False``: it leaves with the publish the
        caller makes next, in the same step (``Lane.publish_nowait``)."""
        payload = live if isinstance(live, bytes) else ENCODER.encode(live)
        try:
            self.lane.publish_nowait(live_subject(caller, self.name), payload, flush=flush)
        except LaneError:
            pass


class Taken(msgspec.Struct):
    """A remote tell handed to the dispatcher: ``done`` once it took it (``local``,
    ``status``) or refused it (``refused``: why)."""

    done: trio.Event = msgspec.field(default_factory=trio.Event)
    local: str = ""
    status: TellStatus = "queued"
    refused: str = ""


class RepliedNotes:
    """Which remote tells' final results JetStream has stored, noted in the database in one
    transaction per ``REPLIED_NOTE_S`` (not one per tell, after its result left), and at
    once when the home stops. Only the next start reads the notes (``records.unreplied``:
    the results to send again), so irisd killed in between sends those few results again,
    which their callers drop as known (the at-least-once promise, as for a lost ack)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.waiting: dict[str, float] = {}  # remote tell id -> when its result was stored
        self._due = trio.Event()

    def add(self, remote_id: str, at: float) -> None:
        self.waiting[remote_id] = at
        self._due.set()

    async def run(self) -> None:
        """Note them until cancelled; what waits then is noted before it returns."""
        try:
            while True:
                await self._due.wait()
                await trio.sleep(REPLIED_NOTE_S)
                self._due = trio.Event()
                await self._write()
        finally:
            with trio.CancelScope(shield=True):
                await self._write()

    async def _write(self) -> None:
        waiting, self.waiting = self.waiting, {}
        if waiting:
            await self.store.call(records.replied, waiting)


def phase_words(detail: str, tool: str) -> str:
    parts = []
    if tool:
        parts.append(tool)
    if detail:
        parts.append(detail)
    return ": ".join(parts)


def final_of(remote_id: str, info: TellInfo) -> FinalMsg:
    status = info.status
    assert status not in UNFINISHED_TELL_STATUSES
    ran_s = info.finished_at - info.started_at if info.finished_at and info.started_at else None
    return FinalMsg(id=remote_id, status=status, text=info.text, error=info.error, cost_usd=info.cost_usd,
                    ran_s=ran_s)
