"""A pair's inbox, and the requests its process machine parks.

Other tasks post to the inbox without blocking, or ask and wait for the actor's answer;
the process machine answers a request at once or parks it (``Parked``) until the child
is up or gone.
"""

from __future__ import annotations

import trio

from irisd.pool.pair_events import (
    AskBudgetRequest,
    DecideRequest,
    PairEvent,
    Reporting,
    Request,
    ResetRequest,
    SlotGranted,
    SlotPool,
    Spawned,
    StopRequest,
    WakeRequest,
    WriteHeldRequest,
)
from irisd.pool.policy import PairKey
from irisd.pool.process_machine import Answer, AwaitExit, AwaitStart, StoppersDone, WakersDone
from protocol.errors import BusyError, ClaudeError, IrisError


class Inbox:
    """The actor's inbox. Other tasks post without blocking (a full or closed inbox is a
    BusyError, never a hang) or ask and wait for the answer; what must not be lost (a
    spawn step's report, an eviction's stop) waits for room instead. What a gone actor
    never handled is undone: a started child is stopped, a granted slot returned."""

    def __init__(self, label: str, key: PairKey, slots: SlotPool | None, size: int = 1024) -> None:
        self.label, self.key, self.slots = label, key, slots
        self._send, self._receive = trio.open_memory_channel[PairEvent](size)

    def post(self, event: PairEvent) -> None:
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            raise BusyError(f"{self.label} is overloaded; try again in a moment") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise BusyError(f"{self.label} stopped while this was on its way; send it again") from None

    async def ask(
        self, request: WakeRequest | StopRequest | ResetRequest | DecideRequest | AskBudgetRequest | WriteHeldRequest
    ) -> str:
        """Post ``request`` and wait for the actor's answer (its error is raised)."""
        self.post(request)
        await request.done.wait()
        if request.error is not None:
            raise request.error
        return request.message

    async def send(self, event: PairEvent) -> None:
        """Wait for room: never dropped while the actor lives."""
        await self._send.send(event)

    async def report(self, event: Reporting) -> None:
        """A spawn step's outcome: the pair would stay 'spawning' for ever without it."""
        try:
            await self._send.send(event)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._drop(event)

    def sender(self) -> trio.MemorySendChannel[PairEvent]:
        """Where a child sends its lines and its exit."""
        return self._send.clone()

    async def receive(self) -> PairEvent:
        return await self._receive.receive()

    def close(self) -> None:
        """The actor is gone: answer what still waits (its tells were interrupted with the
        others), and make later posts fail at once, never hang."""
        while True:
            try:
                event = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if isinstance(event, Request):
                event.finish(error=BusyError(f"{self.label} stopped before handling this; send it again"))
            self._drop(event)
        self._receive.close()

    def _drop(self, event: PairEvent) -> None:
        if isinstance(event, Spawned):
            event.process.stop()
        elif isinstance(event, SlotGranted) and self.slots is not None:
            self.slots.release_slot(self.key)


class Parked:
    """The requests the process machine parked: wakes until the child is up, stops
    until it is gone. ``carry_out`` does the machine's request actions."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.wakers: list[Request] = []
        self.stoppers: list[Request] = []

    def carry_out(
        self,
        action: Answer | AwaitStart | AwaitExit | WakersDone | StoppersDone,
        request: Request | None,
        pid: int | None,
    ) -> None:
        """``request``: the one being handled; ``pid``: the child's, if it runs."""
        match action:
            case Answer(message, error):
                if request is not None:
                    request.finish(error=BusyError(message)) if error else request.finish(message)
            case AwaitStart():
                if request is not None:
                    self.wakers.append(request)
            case AwaitExit():
                if request is not None:
                    self.stoppers.append(request)
            case WakersDone(error):
                for waker in self.wakers:
                    if error:
                        waker.finish(error=ClaudeError(error))
                    else:
                        waker.finish(f"{self.label} is awake (pid {pid})")
                self.wakers.clear()
            case StoppersDone(error):
                for stopper in self.stoppers:
                    stopper.finish(error=IrisError(error)) if error else stopper.finish(f"{self.label} is asleep")
                self.stoppers.clear()

    def abandon(self) -> None:
        for request in (*self.wakers, *self.stoppers):
            request.finish(error=IrisError("irisd is stopping"))
