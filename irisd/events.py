"""Live events for watchers (``iris watch``, the WebSocket, MCP progress): publishing
never waits for a watcher, and who watches never decides how fast a pair runs.

How it works. Each subscriber has a ``WatchQueue`` (plain logic, no trio):

* ``push`` appends an event; a tell's text joins the text of the same tell already
  waiting (many deltas become one ``TellText``), unless another kind of event came in
  between (the order of a tell's text and its state is kept);
* ``take`` hands over everything waiting, as one batch;
* the queue is bounded (``WATCHER_BUFFER`` events, ``WATCHER_TEXT_LIMIT`` characters of
  text): a subscriber that falls that far behind is dropped, with the reason it sees
  (``BusyError`` ends its watch: the socket's error reply, the WebSocket's close reason).

``serve_watch`` sends a batch, then lets events gather for ``FLUSH_INTERVAL_S`` before it
takes the next: a watcher costs a handful of frames a second whatever the rate of a
tell's deltas, and publishing costs one append per subscriber.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NoReturn

import trio

from protocol.errors import BusyError, ShuttingDownError
from protocol.messages import Event, TellText, Watching

WATCHER_BUFFER = 1000  # events waiting for one watcher (a tell's text counts once)
WATCHER_TEXT_LIMIT = 1024 * 1024  # characters of text waiting for one watcher
FLUSH_INTERVAL_S = 0.1  # after a batch, events gather this long before the next

# Which events a subscriber may see (``event, from_team, to_team``): a caller's view.
EventFilter = Callable[[Event, "str | None", str], bool]


@dataclass(eq=False)
class _TextRun:
    """Text of one tell, waiting: its deltas, joined when taken."""

    tell_id: str
    parts: list[str] = field(default_factory=list)

    def event(self) -> TellText:
        return TellText(tell_id=self.tell_id, text="".join(self.parts))


class WatchQueue:
    """What waits for one watcher: events in order, a tell's text coalesced, bounded."""

    def __init__(self, max_events: int | None = None, max_text: int | None = None) -> None:
        self.max_events = WATCHER_BUFFER if max_events is None else max_events
        self.max_text = WATCHER_TEXT_LIMIT if max_text is None else max_text
        self._items: deque[Event | _TextRun] = deque()
        self._open: dict[str, _TextRun] = {}  # runs text may still join (no other event since)
        self._text = 0
        self.dropped = ""  # why the watcher was dropped ("" while it is not)

    def __len__(self) -> int:
        return len(self._items)

    def push(self, event: Event) -> bool:
        """Queue ``event``; False once the watcher is dropped (it fell too far behind)."""
        if self.dropped:
            return False
        if isinstance(event, TellText):
            run = self._open.get(event.tell_id)
            if run is None:
                run = self._open[event.tell_id] = _TextRun(event.tell_id)
                self._items.append(run)
            run.parts.append(event.text)
            self._text += len(event.text)
        else:
            self._open.clear()  # text after this event comes after it
            self._items.append(event)
        if len(self._items) > self.max_events:
            self.drop(f"{self.max_events} events waited for this watcher")
        elif self._text > self.max_text:
            self.drop(f"{self.max_text} characters of text waited for this watcher")
        return not self.dropped

    def drop(self, why: str) -> None:
        self.dropped = (
            f"this watcher fell behind and was disconnected ({why}: it reads too slowly); "
            "events were lost, watch again"
        )
        self._items.clear()
        self._open.clear()
        self._text = 0

    def take(self) -> list[Event]:
        """Everything waiting, oldest first (each tell's text as one event)."""
        batch = [item.event() if isinstance(item, _TextRun) else item for item in self._items]
        self._items.clear()
        self._open.clear()
        self._text = 0
        return batch


class Subscription:
    """One watcher of an ``EventHub``: a ``WatchQueue`` and the wake-up of its reader.
    A context manager: leaving it unsubscribes."""

    def __init__(self, hub: EventHub, team: str | None, accepts: EventFilter | None) -> None:
        self.hub = hub
        self.team = team
        self.accepts = accepts
        self.queue = WatchQueue()
        self.closed = False  # irisd is stopping
        self._wake = trio.Event()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.hub.unsubscribe(self)

    @property
    def ended(self) -> bool:
        return self.closed or bool(self.queue.dropped)

    def wants(self, from_team: str | None, to_team: str) -> bool:
        return self.team is None or self.team in (from_team, to_team)

    def push(self, event: Event) -> bool:
        """Queue ``event`` and wake the reader; False once dropped."""
        kept = self.queue.push(event)
        self._wake.set()
        return kept

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    def take_nowait(self) -> list[Event]:
        """What waits now (maybe nothing)."""
        return self.queue.take()

    async def wait_batch(self) -> list[Event]:
        """The events waiting, once there are some; [] once the subscription ended
        (irisd stopping: ``closed``; fallen behind: ``queue.dropped`` says why)."""
        while not len(self.queue) and not self.ended:
            self._wake = trio.Event()
            await self._wake.wait()
        return [] if self.ended else self.queue.take()


class EventHub:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self.closed = False

    def close(self) -> None:
        """irisd is stopping: end every watch."""
        self.closed = True
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()

    def subscribe(self, team: str | None = None, accepts: EventFilter | None = None) -> Subscription:
        """Events of tells to or from ``team`` (all if None) that ``accepts`` lets through
        (all if None); see the module's docstring for what waits and for how long."""
        subscription = Subscription(self, team, accepts)
        if self.closed:
            subscription.close()
        else:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def watchers(self) -> int:
        return len(self._subscriptions)

    def publish(self, event: Event, from_team: str | None, to_team: str) -> None:
        """Best effort, never waits: a watcher that fell too far behind is dropped."""
        dropped = []
        for subscription in self._subscriptions:
            if not subscription.wants(from_team, to_team):
                continue
            if subscription.accepts is not None and not subscription.accepts(event, from_team, to_team):
                continue
            if not subscription.push(event):
                dropped.append(subscription)
        for subscription in dropped:
            self._subscriptions.discard(subscription)


async def serve_watch(
    hub: EventHub,
    team: str | None,
    send_event: Callable[[Event], Awaitable[None]],
    accepts: EventFilter | None = None,
) -> NoReturn:
    """``Watch``: a ``Watching`` event once subscribed, then the events of ``team`` until
    irisd stops (ShuttingDownError) or the watcher falls behind and is dropped (BusyError,
    saying why). Events that came while the last batch was sent go out together, at most
    every ``FLUSH_INTERVAL_S``. Every front end gets its events here: the socket, the
    WebSocket, the MCP tools."""
    with hub.subscribe(team, accepts) as subscription:
        await send_event(Watching(team=team))
        while batch := await subscription.wait_batch():
            for event in batch:
                await send_event(event)
            await trio.sleep(FLUSH_INTERVAL_S)
    if subscription.closed:
        raise ShuttingDownError("irisd is stopping; watch again once it is back")
    raise BusyError(subscription.queue.dropped)
