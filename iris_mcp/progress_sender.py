"""The progress notifications of one MCP tool call, sent through a ``Coalescer``.

The trio side of ``iris_mcp.progress``: one task per call sends a held message when it
is due, and a lock keeps the notifications in the order of their numbers (MCP wants the
progress value strictly increasing). Without a progress token in the call (``report``
None) nothing is sent and ``wanted`` is False: the tools then do not ask irisd to
stream at all.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from iris_mcp.progress import Coalescer, Said

# How a tool call reports progress to its client; None: the call carried no progress token.
ReportProgress = Callable[[float, str], Awaitable[None]] | None


class Progress:
    """Says progress for one call; ``say`` never waits for the interval."""

    def __init__(self, report: ReportProgress, nursery: trio.Nursery | None, coalescer: Coalescer) -> None:
        self.wanted = report is not None
        self._report = report
        self._nursery = nursery
        self._coalescer = coalescer
        self._lock = trio.Lock()
        self._flushing = False
        self.sent = 0  # the last progress value sent

    async def say(self, said: Said) -> None:
        """Send ``said`` now, or hold it until it is due (a later one replaces it)."""
        if self._report is None:
            return
        message = self._coalescer.offer(said, trio.current_time())
        if message is not None:
            await self._send(message)
        elif not self._flushing and self._nursery is not None:
            self._flushing = True
            self._nursery.start_soon(self._flush)

    async def _flush(self) -> None:
        """Send what is held when it is due, as long as something is held."""
        try:
            while (deadline := self._coalescer.next_deadline()) < math.inf:
                await trio.sleep_until(deadline)
                message = self._coalescer.take_due(trio.current_time())
                if message is not None:
                    await self._send(message)
        finally:
            self._flushing = False

    async def _send(self, message: str) -> None:
        assert self._report is not None
        async with self._lock:
            self.sent += 1
            await self._report(float(self.sent), message)


@asynccontextmanager
async def open_progress(report: ReportProgress, coalescer: Coalescer | None = None) -> AsyncIterator[Progress]:
    """A ``Progress`` for the duration of one tool call. Its first interval runs from now
    (a call answered within it sends nothing but its result). On exit a message still held
    is dropped: the call's result follows, and says more. Exceptions of the body come out
    as they were raised (not in an ExceptionGroup)."""
    coalescer = coalescer or Coalescer(start=trio.current_time())
    if report is None:
        yield Progress(None, None, coalescer)
        return
    try:
        async with trio.open_nursery() as nursery:
            yield Progress(report, nursery, coalescer)
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The flush task raises nothing of its own: what came is the call's, as if no
        # nursery were here (a tool's IrisError stays an IrisError for its caller).
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
