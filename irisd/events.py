"""Live events for watchers (``iris watch``, MCP progress): publish never blocks."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from protocol.messages import Event

WATCHER_BUFFER = 1000


@dataclass(eq=False)
class _Watcher:
    team: str | None
    send: trio.MemorySendChannel[Event]


class EventHub:
    def __init__(self) -> None:
        self._watchers: set[_Watcher] = set()
        self.closed = False

    def close(self) -> None:
        """irisd is stopping: end every watch (their iteration stops)."""
        self.closed = True
        for watcher in self._watchers:
            watcher.send.close()
        self._watchers.clear()

    def subscribe(self, team: str | None = None, buffer: int = WATCHER_BUFFER) -> trio.MemoryReceiveChannel[Event]:
        """Events of tells to or from ``team`` (all tells if None); at most ``buffer``
        wait for the subscriber, which is dropped (its channel ends) beyond that."""
        send, receive = trio.open_memory_channel[Event](buffer)
        if self.closed:
            send.close()
        else:
            self._watchers.add(_Watcher(team, send))
        return receive

    def publish(self, event: Event, from_team: str | None, to_team: str) -> None:
        """Best effort: a watcher that cannot keep up is disconnected, never waited for."""
        for watcher in list(self._watchers):
            if watcher.team is not None and watcher.team not in (from_team, to_team):
                continue
            try:
                watcher.send.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                watcher.send.close()
                self._watchers.discard(watcher)
