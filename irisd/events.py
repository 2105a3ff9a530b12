"""Live events for watchers (``iris watch``, the WebSocket, MCP progress): publishing
never waits for a watcher, and who watches never decides how fast a pair runs.

How it works. Every event goes once into the hub's ``EventLog`` (plain logic, no trio),
a bounded window of the latest events, each with a sequence number; publishing costs
the same whether 0 or 250 watch. Each watcher has a cursor into the log and reads, in
one batch, what was published since its last read (``EventLog.read``): only the events
it may see (its team, its ``accepts`` filter), with each tell's text joined into one
``TellText`` (many deltas, one frame) unless another event came in between (the order
of a tell's text and its state is kept). A watcher whose cursor fell out of the window
(it read nothing while ``LOG_EVENTS`` events, or ``LOG_TEXT`` characters of text, were
published) is dropped, with the reason it sees (``BusyError`` ends its watch: the
socket's error reply, the WebSocket's close reason).

``serve_watch`` sends a batch, then lets events gather before it reads again (``Pace``): at
once for its first ``FLUSH_BURST`` batches, so that a warm tell's few steps (queued,
running, its text, its end: 50 ms in all) each arrive when they happen, then one every
``FLUSH_INTERVAL_S``, longer when many watch, so that all of them together send about
``FRAMES_PER_S`` batches a second; a quiet spell gives the burst back. The burst shrinks
as more watch (to one batch from 50 watchers), within the same bound. So a watcher costs a
few frames a second whatever the rate of a tell's deltas, and all of them together a
bounded share of irisd's time.

irisd's own watchers of a few rare kinds (approvals, questions: the notifier, iris-agent's
watcher) subscribe to those kinds only (``subscribe_kinds``): the hub hands them those
events as they are published and never wakes them for a tell's steps and text. While no
one watches everything, publishing a tell's steps costs no more than that.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, NoReturn

import trio

from protocol.errors import BusyError, ShuttingDownError
from protocol.messages import Event, SessionChange, SessionEvent, SessionInfo, TellText, Watching

LOG_EVENTS = 4096  # events kept for watchers still to read them (up to twice this, briefly)
LOG_TEXT = 2 * 1024 * 1024  # characters of tell text kept likewise
FLUSH_INTERVAL_S = 0.25  # after a batch, events gather at least this long before the next
FRAMES_PER_S = 200  # batches a second of all watchers together, once more than 50 watch
FLUSH_BURST = 8  # batches a watcher sends at once before the interval applies (a warm tell's are fewer)

# Which events a subscriber may see, by whose they are (``from_team, to_team, chain_id``): a
# caller's view (irisd/policy.py's ``event_filter``).
EventFilter = Callable[["str | None", str, str], bool]

# How a request's events reach its caller (a frame on the socket, a WebSocket message, an
# SSE line, MCP progress): raises trio.BrokenResourceError once the caller is gone.
SendEvent = Callable[[Event], Awaitable[None]]


async def no_events(event: Event) -> None:
    """The ``SendEvent`` of a caller that takes no events (they are dropped)."""


class BatchSender(ABC):
    """A ``SendEvent`` that can write several events at once: the socket's, whose frames
    go out in one write, one wake-up of the client for all of them instead of one each
    (frames are length-prefixed: the client reads them as if each had come alone).
    ``send_events`` and ``send_with_reply`` use it where a face gives one; any other
    ``SendEvent`` gets the events one a call, as before."""

    async def __call__(self, event: Event) -> None:
        await self.send_many((event,))

    @abstractmethod
    async def send_many(self, events: Sequence[Event]) -> None:
        """Write ``events``, in order, at once; trio.BrokenResourceError once the caller is gone."""

    @abstractmethod
    def with_reply(self, events: Sequence[Event]) -> None:
        """Keep ``events`` to be written ahead of the next frame: the request's reply, in its
        write (it always comes: every request is answered)."""


async def send_events(send_event: SendEvent, events: Sequence[Event]) -> None:
    """``events`` in order: in one write where the face can (``BatchSender``), else one by one."""
    if isinstance(send_event, BatchSender):
        await send_event.send_many(events)
    else:
        for event in events:
            await send_event(event)


async def send_with_reply(send_event: SendEvent, events: Sequence[Event]) -> None:
    """The last ``events`` of a request, whose reply follows at once: in the reply's write
    where the face can (``BatchSender``), else sent now."""
    if isinstance(send_event, BatchSender):
        send_event.with_reply(events)
    else:
        await send_events(send_event, events)


async def receive_batch(channel: trio.MemoryReceiveChannel[Event]) -> tuple[list[Event], bool]:
    """Wait for the next event on ``channel``, then take whatever else waits there already
    (events published in one step of whoever publishes them): a batch to send at once, and
    whether the channel ended after it ([] and True: it had ended)."""
    try:
        batch = [await channel.receive()]
    except trio.EndOfChannel:
        return [], True
    while True:
        try:
            batch.append(channel.receive_nowait())
        except trio.WouldBlock:
            return batch, False
        except trio.EndOfChannel:
            return batch, True


class Pace:
    """When a watcher's next batch may go: at once while it sent fewer than ``burst`` lately,
    else one an interval (a token bucket: a batch takes a token, an interval gives one back,
    up to ``burst``). Pure: time is an argument."""

    def __init__(self, burst: int = FLUSH_BURST) -> None:
        self.burst = burst
        self.tokens = float(burst)
        self.last: float | None = None

    def sent(self, now: float, interval: float, burst: int | None = None) -> float:
        """A batch went out at ``now``: how long events gather before the next one.
        ``burst``: the hub's share for a watcher now (``EventHub.flush_burst``), at most
        this pace's own."""
        cap = float(self.burst if burst is None else min(burst, self.burst))
        if self.last is not None:
            self.tokens = self.tokens + (now - self.last) / interval
        self.tokens = min(cap, self.tokens)
        self.last = now
        self.tokens -= 1
        return max(0.0, (1 - self.tokens) * interval)


class Published(NamedTuple):
    event: Event
    from_team: str | None
    to_team: str
    chain_id: str = ""  # the chain of the tell it is about ("" for a pair's own events)


class FellBehindError(Exception):
    """A cursor points before the oldest event kept: what it missed is gone."""

    def __init__(self, missed: int) -> None:
        super().__init__(
            f"this watcher fell behind and was disconnected ({missed} events were published while it "
            "read none: it reads too slowly); events were lost, watch again"
        )


class EventLog:
    """The latest events, numbered from 0, for cursors to read from."""

    def __init__(self, max_events: int | None = None, max_text: int | None = None) -> None:
        self.max_events = LOG_EVENTS if max_events is None else max_events
        self.max_text = LOG_TEXT if max_text is None else max_text
        self._entries: list[Published] = []
        self.first = 0  # the number of _entries[0]
        self._text = 0  # characters of TellText in _entries

    @property
    def next(self) -> int:
        """The number the next event gets: a new cursor starts here."""
        return self.first + len(self._entries)

    def append(self, event: Event, from_team: str | None, to_team: str, chain_id: str = "") -> None:
        self._entries.append(Published(event, from_team, to_team, chain_id))
        if isinstance(event, TellText):
            self._text += len(event.text)
        if len(self._entries) >= 2 * self.max_events or self._text > 2 * self.max_text:
            self._forget()

    def _forget(self) -> None:
        """Keep the latest ``max_events`` (at most ``max_text`` characters of text): in
        batches, so that appending stays O(1) on average."""
        keep = min(len(self._entries), self.max_events)
        text = 0
        for index in range(len(self._entries) - 1, len(self._entries) - 1 - keep, -1):
            event = self._entries[index].event
            if isinstance(event, TellText):
                if text + len(event.text) > self.max_text and index < len(self._entries) - 1:
                    keep = len(self._entries) - 1 - index
                    break
                text += len(event.text)
        gone = len(self._entries) - keep
        del self._entries[:gone]
        self.first += gone
        self._text = text

    def read(self, cursor: int, wants: Callable[[Published], bool] = lambda _: True) -> list[Event]:
        """The events from number ``cursor`` on that ``wants``, oldest first, each tell's
        text coalesced (see the module's docstring). FellBehindError if some are gone."""
        if cursor < self.first:
            raise FellBehindError(self.next - cursor)
        batch: list[Event] = []
        runs: list[tuple[int, list[str]]] = []  # each text run: its place in batch, its texts
        open_runs: dict[str, tuple[int, list[str]]] = {}  # by tell: the runs text may still join
        for published in self._entries[cursor - self.first :]:
            if not wants(published):
                continue
            event = published.event
            if not isinstance(event, TellText):
                open_runs.clear()  # text after this event comes after it
                batch.append(event)
            elif (run := open_runs.get(event.tell_id)) is not None:
                run[1].append(event.text)
            else:
                run = open_runs[event.tell_id] = (len(batch), [event.text])
                runs.append(run)
                batch.append(event)
        for place, texts in runs:
            if len(texts) > 1:
                joined = batch[place]
                assert isinstance(joined, TellText)
                batch[place] = TellText(tell_id=joined.tell_id, text="".join(texts))
        return batch


class Subscription:
    """One watcher of an ``EventHub``: its cursor into the hub's log and its filter. A
    context manager: leaving it unsubscribes."""

    def __init__(self, hub: EventHub, team: str | None, accepts: EventFilter | None) -> None:
        self.hub = hub
        self.team = team
        self.accepts = accepts
        self.cursor = hub.log.next
        self.closed = False  # irisd is stopping
        self.dropped = ""  # why it fell behind, once it did

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.hub.unsubscribe(self)

    @property
    def ended(self) -> bool:
        return self.closed or bool(self.dropped)

    def wants(self, published: Published) -> bool:
        if self.team is not None and self.team not in (published.from_team, published.to_team):
            return False
        return self.accepts is None or self.accepts(published.from_team, published.to_team, published.chain_id)

    def take_nowait(self) -> list[Event]:
        """What was published for this watcher since its last read (maybe nothing); []
        once it ended (``dropped`` says why, if it fell behind)."""
        if self.ended:
            return []
        log = self.hub.log
        try:
            batch = log.read(self.cursor, self.wants)
        except FellBehindError as exc:
            self.dropped = str(exc)
            self.hub.unsubscribe(self)
            return []
        self.cursor = log.next
        return batch

    async def wait_batch(self) -> list[Event]:
        """The events for this watcher, once there are some; [] once the subscription
        ended (irisd stopping: ``closed``; fallen behind: ``dropped`` says why)."""
        woken = False
        while not self.ended:
            if batch := self.take_nowait():
                return batch
            if woken:  # by events for others: look again once more have gathered, not at each
                woken = False
                await trio.sleep(self.hub.flush_interval())
                continue
            await self.hub.wait_published(self.cursor)
            woken = True
        return []


class KindSubscription:
    """One watcher of a few kinds of events only (``EventHub.subscribe_kinds``): the hub
    hands it each one as it is published. A context manager: leaving it unsubscribes."""

    def __init__(self, hub: EventHub, kinds: tuple[type[Event], ...]) -> None:
        self.hub = hub
        self.kinds = kinds
        self.closed = False  # irisd is stopping
        self.dropped = ""  # why it fell behind, once it did
        self._events: list[Event] = []
        self._arrived = trio.Event()

    def __enter__(self) -> KindSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.hub.unsubscribe_kinds(self)

    @property
    def ended(self) -> bool:
        return self.closed or bool(self.dropped)

    def offer(self, event: Event) -> None:
        """An event of its kinds was published; one that read none of the last
        ``LOG_EVENTS`` fell behind (``dropped``), as a watcher of everything does."""
        if len(self._events) >= LOG_EVENTS:
            self.dropped = str(FellBehindError(len(self._events) + 1))
            self.hub.unsubscribe_kinds(self)
        else:
            self._events.append(event)
        self._arrived.set()

    def end(self) -> None:
        self.closed = True
        self._arrived.set()

    async def wait_batch(self) -> list[Event]:
        """Its events published since its last read, once there are some; [] once the
        subscription ended (irisd stopping, or fallen behind: ``dropped`` says why)."""
        while not self.ended:
            if self._events:
                batch, self._events = self._events, []
                return batch
            self._arrived = trio.Event()
            await self._arrived.wait()
        return []


class EventHub:
    def __init__(self) -> None:
        self.log = EventLog()
        self._subscriptions: set[Subscription] = set()
        self._kind_subscriptions: set[KindSubscription] = set()
        self._published: trio.Event | None = None  # set at the next publish, for those waiting
        self.closed = False

    def close(self) -> None:
        """irisd is stopping: end every watch."""
        self.closed = True
        for subscription in self._subscriptions:
            subscription.closed = True
        self._subscriptions.clear()
        for kind_subscription in self._kind_subscriptions:
            kind_subscription.end()
        self._kind_subscriptions.clear()
        self._wake()

    def subscribe(self, team: str | None = None, accepts: EventFilter | None = None) -> Subscription:
        """Events of tells to or from ``team`` (all if None) that ``accepts`` lets through
        (all if None), from now on; see the module's docstring for how long they wait."""
        subscription = Subscription(self, team, accepts)
        if self.closed:
            subscription.closed = True
        else:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def subscribe_kinds(self, *kinds: type[Event]) -> KindSubscription:
        """Events of these kinds only (of every team), from now on, each handed over as it
        is published: for irisd's own watchers of rare events (approvals, questions)."""
        subscription = KindSubscription(self, kinds)
        if self.closed:
            subscription.end()
        else:
            self._kind_subscriptions.add(subscription)
        return subscription

    def unsubscribe_kinds(self, subscription: KindSubscription) -> None:
        self._kind_subscriptions.discard(subscription)

    @property
    def watchers(self) -> int:
        """Watchers of everything (those that set the pace: ``flush_interval``)."""
        return len(self._subscriptions)

    @property
    def kind_watchers(self) -> int:
        """Watchers of a few kinds (``subscribe_kinds``)."""
        return len(self._kind_subscriptions)

    def flush_interval(self) -> float:
        """How long a watcher lets events gather after a batch (see the module's docstring)."""
        return max(FLUSH_INTERVAL_S, self.watchers / FRAMES_PER_S)

    def flush_burst(self) -> int:
        """How many batches a watcher may send at once: ``FLUSH_BURST`` while few watch, fewer
        as more do, so that all their bursts together stay within ``FRAMES_PER_S`` (a
        hundred watchers bursting 8 batches each put 1.4x the CPU into a streaming tell)."""
        return max(1, min(FLUSH_BURST, int(FRAMES_PER_S * FLUSH_INTERVAL_S) // max(1, self.watchers)))

    def publish(self, event: Event, from_team: str | None, to_team: str, chain_id: str = "") -> None:
        """Never waits, and costs the same however many watch everything."""
        if self.closed:
            return
        for kind_subscription in list(self._kind_subscriptions):
            if isinstance(event, kind_subscription.kinds):
                kind_subscription.offer(event)
        if not self._subscriptions:  # nobody reads the log: a later watcher starts after this anyway
            return
        self.log.append(event, from_team, to_team, chain_id)
        self._wake()

    async def wait_published(self, cursor: int) -> None:
        """Until an event numbered ``cursor`` or later is published, or the hub closes."""
        while self.log.next <= cursor and not self.closed:
            if self._published is None:
                self._published = trio.Event()
            await self._published.wait()

    def _wake(self) -> None:
        if self._published is not None:
            self._published.set()
            self._published = None


async def serve_watch(
    hub: EventHub,
    team: str | None,
    send_event: SendEvent,
    accepts: EventFilter | None = None,
) -> NoReturn:
    """``Watch``: a ``Watching`` event once subscribed, then the events of ``team`` until
    irisd stops (ShuttingDownError) or the watcher falls behind and is dropped (BusyError,
    saying why). Events that came while the last batch was sent go out together, at most
    every ``EventHub.flush_interval()`` after a burst of ``FLUSH_BURST`` (``Pace``). Every front
    end gets its events here: the socket, the WebSocket, the MCP tools, the A2A face and the
    mesh's live view (which follow a tell to its end through it)."""
    pace = Pace()
    with hub.subscribe(team, accepts) as subscription:
        await send_event(Watching(team=team))
        while batch := await subscription.wait_batch():
            await send_events(send_event, batch)
            await trio.sleep(pace.sent(trio.current_time(), hub.flush_interval(), hub.flush_burst()))
    if subscription.closed:
        raise ShuttingDownError("irisd is stopping; watch again once it is back")
    raise BusyError(subscription.dropped)


def publish_change(hub: EventHub | None, session: SessionInfo, change: SessionChange, detail: str) -> None:
    """Tell the pair's watchers that its conversation was archived, restored or its files deleted."""
    if hub is not None:
        hub.publish(SessionEvent(session=session, change=change, detail=detail), session.from_team, session.to_team)
