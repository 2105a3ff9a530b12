"""Live events for watchers (``iris watch``, MCP progress): publish never blocks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NoReturn

import trio

from protocol.errors import BusyError, ShuttingDownError
from protocol.messages import Event, SessionChange, SessionEvent, SessionInfo, Watching

# Whether a watcher gets an event of (from_team, to_team, chain_id): irisd/policy.py's.
Wanted = Callable[[str | None, str, str], bool]

WATCHER_BUFFER = 1000


@dataclass(eq=False)
class _Watcher:
    team: str | None
    send: trio.MemorySendChannel[Event]
    wanted: Wanted | None = None


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

    def subscribe(self, team: str | None = None, wanted: Wanted | None = None) -> trio.MemoryReceiveChannel[Event]:
        """Events of tells to or from ``team`` (all tells if None) that ``wanted`` lets
        through (what the caller may see: irisd/policy.py); at most
        ``WATCHER_BUFFER`` wait for the subscriber, which is dropped (its channel ends)
        beyond that."""
        send, receive = trio.open_memory_channel[Event](WATCHER_BUFFER)
        if self.closed:
            send.close()
        else:
            self._watchers.add(_Watcher(team, send, wanted))
        return receive

    def publish(self, event: Event, from_team: str | None, to_team: str, chain_id: str = "") -> None:
        """Best effort: a watcher that cannot keep up is disconnected, never waited for."""
        for watcher in list(self._watchers):
            if watcher.team is not None and watcher.team not in (from_team, to_team):
                continue
            if watcher.wanted is not None and not watcher.wanted(from_team, to_team, chain_id):
                continue
            try:
                watcher.send.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                watcher.send.close()
                self._watchers.discard(watcher)


async def serve_watch(
    hub: EventHub, team: str | None, send_event: Callable[[Event], Awaitable[None]], wanted: Wanted | None = None
) -> NoReturn:
    """``Watch``: a ``Watching`` event once subscribed, then every event of ``team`` until
    irisd stops (ShuttingDownError) or the watcher falls behind and is dropped (BusyError).
    Every front end gets its events here: the socket, the WebSocket, the MCP tools."""
    async with hub.subscribe(team, wanted) as events:
        await send_event(Watching(team=team))
        async for event in events:
            await send_event(event)
    if hub.closed:
        raise ShuttingDownError("irisd is stopping; watch again once it is back")
    raise BusyError("this watcher could not keep up with the events and was disconnected; watch again")


def publish_change(hub: EventHub | None, session: SessionInfo, change: SessionChange, detail: str) -> None:
    """Tell the pair's watchers that its conversation was archived, restored or its files deleted."""
    if hub is not None:
        hub.publish(SessionEvent(session=session, change=change, detail=detail), session.from_team, session.to_team)
