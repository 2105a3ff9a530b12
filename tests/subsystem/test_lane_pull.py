"""The fast lane's pull of a durable consumer (irisd/mesh/lane.py ``serve_pull``) on trio's
autojump clock, with a lane that records what is asked of the server: one request at a
time, renewed when it is used up, expired, refused (after a pause) or gone with the
connection; a message being handled is never cut short by its request's end."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
import trio.testing

from irisd.mesh.lane import PULL_BATCH, PULL_EXPIRES_S, PULL_RETRY_S, REQUEST_TIMEOUT_S, LaneError, serve_pull
from irisd.mesh.nats_wire import Message

INBOX = "_INBOX.ws-1.x.p.home-ws-1"


class RecordingLane:
    """Connected; notes each pull request (at which virtual time); the test feeds what the
    server would send."""

    def __init__(self) -> None:
        self.requests: list[tuple[float, dict[str, Any]]] = []
        self.asked = trio.Event()
        self.send: trio.MemorySendChannel[Message | None] | None = None

    def inbox(self, name: str) -> str:
        return f"_INBOX.ws-1.x.{name}"

    def subscribe(self, subject: str, capacity: int) -> trio.MemoryReceiveChannel[Message | None]:
        assert subject == INBOX
        self.send, receive = trio.open_memory_channel[Message | None](capacity)
        return receive

    async def wait_connected(self) -> None:
        await trio.lowlevel.checkpoint()

    def publish_nowait(self, subject: str, payload: bytes, *, reply: str = "", **_: Any) -> None:
        assert (subject, reply) == ("$JS.API.CONSUMER.MSG.NEXT.IRIS_TELLS.home-ws-1", INBOX)
        self.requests.append((trio.current_time(), msgspec.json.decode(payload)))
        self.asked.set()

    async def next_request(self) -> float:
        await self.asked.wait()
        self.asked = trio.Event()
        return self.requests[-1][0]

    def deliver(self, data: bytes = b"{}", status: int = 0) -> None:
        assert self.send is not None
        self.send.send_nowait(Message(INBOX, 2, "$JS.ACK.x" if not status else "", data, status))


async def test_one_request_at_a_time_renewed_when_used_up_expired_refused_or_gone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lane = RecordingLane()
    handled: list[bytes] = []

    async def handle(message: Message) -> None:
        handled.append(message.data)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_pull, lane, "IRIS_TELLS", "home-ws-1", handle)  # type: ignore[arg-type]
        assert await lane.next_request() == 0
        assert lane.requests[0][1] == {"batch": PULL_BATCH, "expires": int(PULL_EXPIRES_S * 1e9)}
        for index in range(PULL_BATCH):  # used up: asked again at once
            lane.deliver(b"%d" % index)
        assert await lane.next_request() == 0
        assert len(handled) == PULL_BATCH
        await trio.sleep(PULL_EXPIRES_S)
        lane.deliver(status=408)  # expired: asked again at once
        assert await lane.next_request() == PULL_EXPIRES_S
        lane.deliver(status=409)  # refused (the consumer away, a leader elected): after a pause
        assert await lane.next_request() == PULL_EXPIRES_S + PULL_RETRY_S
        assert lane.send is not None
        lane.send.send_nowait(None)  # the connection broke: asked again on the next one
        assert await lane.next_request() == PULL_EXPIRES_S + PULL_RETRY_S
        # An expiry note that never comes: asked again once the request's life is surely over.
        assert await lane.next_request() == PULL_EXPIRES_S * 2 + PULL_RETRY_S + REQUEST_TIMEOUT_S
        nursery.cancel_scope.cancel()


async def test_a_message_being_handled_is_never_cut_short_by_its_requests_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lane = RecordingLane()
    finished: list[float] = []

    async def handle(message: Message) -> None:
        await trio.sleep(PULL_EXPIRES_S * 2)  # e.g. a result waiting for its tell to save it
        finished.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_pull, lane, "IRIS_TELLS", "home-ws-1", handle)  # type: ignore[arg-type]
        await lane.next_request()
        lane.deliver()
        assert await lane.next_request() == PULL_EXPIRES_S * 2  # handled to its end, then asked again
        assert finished == [PULL_EXPIRES_S * 2]
        nursery.cancel_scope.cancel()


async def test_a_lane_that_refuses_while_connected_is_asked_again_after_a_pause(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Falling behind (its writes not out yet) the lane refuses a publish while connected:
    the pull asks again after PULL_RETRY_S, not at once in a loop."""

    class Behind(RecordingLane):
        connected = True
        refusals = 0

        def publish_nowait(self, subject: str, payload: bytes, *, reply: str = "", **_: Any) -> None:
            if self.refusals < 3:
                self.refusals += 1
                self.requests.append((trio.current_time(), {}))
                raise LaneError("the fast lane to NATS is falling behind (8 MiB not written yet)")
            super().publish_nowait(subject, payload, reply=reply)

    lane = Behind()

    async def handle(message: Message) -> None:
        pass

    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        nursery.start_soon(serve_pull, lane, "IRIS_TELLS", "home-ws-1", handle)  # type: ignore[arg-type]
        await lane.next_request()
        assert [at - start for at, _ in lane.requests] == [0, PULL_RETRY_S, 2 * PULL_RETRY_S, 3 * PULL_RETRY_S]
        nursery.cancel_scope.cancel()
