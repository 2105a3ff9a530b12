"""The caller's side of a remote tell: a ``RemoteExecutor`` for a team homed on another
irisd of the mesh.

For each tell: publish it to the home's subject of ``IRIS_TELLS`` with its tell id as
the message id (a resend is stored once) and wait for JetStream's ack, trying again
while the mesh is unreachable (never handing the client a message while it is
disconnected: it would keep it and send it on reconnecting, after the tell failed "not
sent"; once a publish was made, the tell is never "not sent" but unknown until the home
answers, see ``TellReport.sent``); then follow what the home sends back (``LiveMsg`` as it
happens, ``FinalMsg`` durably) until the final result. While the home has not taken it,
the tell is ``queued`` and its phase says where it waits ("home irisd `ws-2` unreachable
since 14:02:11"). Cancelling the tell sends a ``CancelMsg`` the same way, shielded and
bounded; irisd stopping does not: the home runs the tell on and this irisd reads its
result from ``IRIS_REPLIES`` when it is back.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Protocol

import msgspec
import trio

from iris_common.config import Team
from iris_common.mesh import HEARTBEAT_S
from irisd.mesh.wire import CancelMsg, FinalMsg, LiveMsg, RemoteTellMsg
from irisd.pool.remote import RemoteTell, TellReport

log = logging.getLogger("irisd.mesh")

KIND = "mesh"
CANCEL_GRACE_S = 5.0
# What the home sent for one tell and its task has not read yet. Live changes past it are
# dropped (best effort, as on core NATS: the final result comes again from IRIS_REPLIES),
# so a home that floods one tell holds neither the lane nor this irisd's memory.
LIVE_BACKLOG = 256


class Route(msgspec.Struct):
    """Where the messages of one running remote tell go, and the one irisd that may send
    them: its home."""

    home: str
    send: trio.MemorySendChannel[Delivery]
    dropped: bool = False  # live changes were dropped (LIVE_BACKLOG): said once in the log


class Delivery(msgspec.Struct):
    """A message for a running remote tell; ``handled`` is set once it is saved (the
    reply consumer acks a final result only then)."""

    message: LiveMsg | FinalMsg
    handled: trio.Event


class Mesh(Protocol):
    """What an executor needs of the mesh face (irisd/mesh/service.py)."""

    routes: dict[str, Route]

    def unreachable_words(self, home: str) -> str: ...
    def chain_path(self, tell: RemoteTell) -> list[str]: ...
    def ended(self, tell_id: str, home: str) -> None: ...
    async def publish_tell(
        self, home: str, message: RemoteTellMsg | CancelMsg, report: TellReport | None
    ) -> None: ...


class MeshExecutor:
    """Runs the tells of one team homed on another irisd."""

    def __init__(self, team: Team, home: str, service: Mesh) -> None:
        self._team = team
        self.home = home
        self.service = service

    @property
    def team(self) -> Team:
        return self._team

    @property
    def kind(self) -> str:
        return KIND

    @property
    def where(self) -> str:
        words = self.service.unreachable_words(self.home)
        return f"irisd {self.home}" + (f" ({words})" if words else "")

    async def run(self, tell: RemoteTell, report: TellReport) -> None:
        send, receive = trio.open_memory_channel[Delivery](LIVE_BACKLOG)
        route = self.service.routes[tell.id] = Route(self.home, send)
        answered = False
        try:
            message = RemoteTellMsg(
                id=tell.id, from_team=tell.from_team, to_team=tell.to_team, message=tell.message, kind=tell.kind,
                chain_id=tell.chain_id, hops=tell.hops, max_budget_usd=tell.max_budget_usd, sent_at=time.time(),
                path=self.service.chain_path(tell), thread=tell.thread,
            )
            await self.service.publish_tell(self.home, message, report)
            await report.accepted()  # stored in JetStream: now its caller may hear of it
            answered = await self._follow(receive, report)
        finally:
            if self.service.routes.get(tell.id) is route:
                del self.service.routes[tell.id]
            if answered:  # its end is saved: the other copy of its result, here or to come, is done
                self.service.ended(tell.id, self.home)
                _settle(receive)
            if report.cancelled and not answered:  # cancelled here, not irisd stopping: tell the home
                with trio.move_on_after(CANCEL_GRACE_S) as scope:
                    scope.shield = True
                    await self.service.publish_tell(self.home, CancelMsg(id=tell.id), None)

    async def _follow(self, receive: trio.MemoryReceiveChannel[Delivery], report: TellReport) -> bool:
        """Report what the home sends until its final result (True). Until the home takes
        the tell, its phase says whether the home is reachable, looked at again whenever
        the home has said nothing for ``HEARTBEAT_S`` (in the tell's own task: no second
        task per tell to start and cancel)."""
        text = ""
        taken = False
        said = ""
        while True:
            if not taken:
                words = self.service.unreachable_words(self.home) or f"stored for home irisd `{self.home}`"
                if words != said:
                    report.phase(words, queued=True)
                    said = words
            try:
                delivery = await _next(receive, math.inf if taken else HEARTBEAT_S)
            except trio.EndOfChannel:
                return False
            if delivery is None:
                continue
            match delivery.message:
                case FinalMsg(status=status, text=final, error=error, cost_usd=cost, ran_s=ran_s):
                    await report.finished(status, final, error, cost_usd=cost, ran_s=ran_s)
                    delivery.handled.set()
                    return True
                case LiveMsg(status=status, text=delta, phase=phase, detail=detail):
                    if status in ("running", "awaiting_approval") and not taken:
                        taken = True
                        await report.started(silence_s=None)  # the home keeps the timeouts
                    if status == "awaiting_approval":
                        await report.awaiting_input(f"approval on home irisd `{self.home}`: {detail}".rstrip(": "))
                    elif status == "running":
                        await report.resumed()
                    elif status == "queued":
                        report.phase(f"queued on home irisd `{self.home}`" + (f": {detail}" if detail else ""),
                                     queued=True)
                    if delta:
                        text += delta
                        await report.text(text)
                    if phase == "awaiting_approval":
                        await report.awaiting_input(f"approval on home irisd `{self.home}`: {detail}".rstrip(": "))
                    elif phase and not status and taken:
                        words = phase.replace("_", " ") + (f": {detail}" if detail else "")
                        report.phase(f"on `{self.home}`: {words}")
            delivery.handled.set()


def _settle(receive: trio.MemoryReceiveChannel[Delivery]) -> None:
    """Mark handled what came for a tell after its final result (the result's other copy:
    its reader may ack it)."""
    while True:
        try:
            receive.receive_nowait().handled.set()
        except (trio.WouldBlock, trio.EndOfChannel):
            return


async def _next(receive: trio.MemoryReceiveChannel[Delivery], within_s: float) -> Delivery | None:
    """The next message for a tell, or None after ``within_s`` without one."""
    with trio.move_on_after(within_s):
        return await receive.receive()
    return None
