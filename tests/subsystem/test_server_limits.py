"""The server's limits, on trio's virtual clock with in-process socket pairs: idle
connections closed, a cap on clients with a reserve for ``iris status``, a cap on the
memory of unfinished frames, hello rules, throttled log lines, EMFILE backoff."""

from __future__ import annotations

import errno
import logging
import os
import socket
import struct
from collections.abc import Iterator
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing

from irisd.dispatch import Dispatcher
from irisd.serving import Serving
from irisd.socket_server import ConnectionLimits, Server
from irisd.throttle import LogThrottle
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.messages import ErrorReply, GetStatus, Hello, ListTeams, StatusReply, TeamsReply, Welcome


class FakeDispatcher:
    """Answers hello, status and teams at once; ``ListTeams(... )`` blocks while ``hold`` is set."""

    def __init__(self) -> None:
        self.hold = False

    async def dispatch(self, request: Any, caller: Any, send_event: Any) -> Any:
        if isinstance(request, Hello):
            return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version="test", pid=os.getpid())
        if isinstance(request, GetStatus):
            return StatusReply(
                pid=os.getpid(), daemon_version="test", started_at=0.0, socket_path="", config_path="",
                teams=[], processes=[], max_processes=1,
            )
        if self.hold:
            await trio.sleep_forever()
        return TeamsReply(teams=[])


class Client:
    """The client's end of a socket pair whose other end the server handles."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, message: Any) -> None:
        await self.stream.send_all(encode(message))

    async def receive(self) -> Any:
        """The next message, or None at EOF."""
        while len(self.buffer) < 4 or len(self.buffer) < 4 + int.from_bytes(self.buffer[:4], "big"):
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.buffer += data
        size = int.from_bytes(self.buffer[:4], "big")
        body, self.buffer = self.buffer[4 : 4 + size], self.buffer[4 + size :]
        return decode_server_message(body)

    async def ask(self, message: Any) -> Any:
        await self.send(message)
        return await self.receive()


_opened: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_client_sockets() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


async def connect(server: Server, nursery: trio.Nursery) -> Client:
    ours, theirs = socket.socketpair()
    _opened.extend([ours, theirs])  # closed after the test, also if it fails
    nursery.start_soon(server.handle, trio.SocketStream(trio.socket.from_stdlib_socket(theirs)))
    await trio.testing.wait_all_tasks_blocked()
    return Client(trio.SocketStream(trio.socket.from_stdlib_socket(ours)))


def make_server(limits: ConnectionLimits, dispatcher: FakeDispatcher | None = None) -> Server:
    listener = cast(trio.SocketListener, None)  # handle() is driven directly
    return Server(listener, Serving(cast(Dispatcher, dispatcher or FakeDispatcher())), limits=limits)


HELLO = Hello(protocol_version=PROTOCOL_VERSION)


async def test_an_idle_connection_is_closed_after_the_idle_timeout(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server(ConnectionLimits(idle_timeout_s=120.0))
    async with trio.open_nursery() as nursery:
        client = await connect(server, nursery)
        assert isinstance(await client.ask(HELLO), Welcome)
        started = trio.current_time()
        assert await client.receive() is None  # closed by irisd
        assert trio.current_time() - started == 120.0
        await trio.testing.wait_all_tasks_blocked()
        assert server.clients == 0


async def test_a_request_in_flight_is_not_idle(autojump_clock: trio.testing.MockClock) -> None:
    dispatcher = FakeDispatcher()
    dispatcher.hold = True
    server = make_server(ConnectionLimits(idle_timeout_s=10.0), dispatcher)
    async with trio.open_nursery() as nursery:
        client = await connect(server, nursery)
        assert isinstance(await client.ask(HELLO), Welcome)
        await client.send(ListTeams())
        with trio.move_on_after(1000.0):
            await client.receive()
            pytest.fail("a held request was answered or closed")
        assert server.clients == 1
        nursery.cancel_scope.cancel()


async def test_a_new_client_beyond_the_limit_closes_the_longest_idle_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server(ConnectionLimits(max_clients=2, reserve=1))
    async with trio.open_nursery() as nursery:
        first = await connect(server, nursery)
        await trio.sleep(1)
        second = await connect(server, nursery)
        third = await connect(server, nursery)
        assert await first.receive() is None  # the idlest made room
        for client in (second, third):
            assert isinstance(await client.ask(HELLO), Welcome)
        assert server.clients == 2
        nursery.cancel_scope.cancel()


async def test_when_every_client_is_busy_the_reserve_serves_status_only_then_clients_are_turned_away(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = FakeDispatcher()
    dispatcher.hold = True
    server = make_server(ConnectionLimits(max_clients=2, reserve=1), dispatcher)
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            busy = await connect(server, nursery)
            assert isinstance(await busy.ask(HELLO), Welcome)
            await busy.send(ListTeams())  # held: a busy connection
        await trio.testing.wait_all_tasks_blocked()

        owner = await connect(server, nursery)  # the reserve
        assert isinstance(await owner.ask(HELLO), Welcome)
        refused = await owner.ask(ListTeams())
        assert isinstance(refused, ErrorReply) and refused.code == "busy"
        assert "only 'iris status' gets in now" in refused.message
        assert isinstance(await owner.ask(GetStatus()), StatusReply)

        late = await connect(server, nursery)  # the owner's idle connection makes room
        assert await owner.receive() is None
        assert isinstance(await late.ask(HELLO), Welcome)
        nursery.cancel_scope.cancel()


async def test_past_the_reserve_a_client_is_told_irisd_is_full(autojump_clock: trio.testing.MockClock) -> None:
    dispatcher = FakeDispatcher()
    dispatcher.hold = True
    server = make_server(ConnectionLimits(max_clients=1, reserve=0), dispatcher)
    async with trio.open_nursery() as nursery:
        busy = await connect(server, nursery)
        await busy.ask(HELLO)
        await busy.send(ListTeams())
        await trio.testing.wait_all_tasks_blocked()
        late = await connect(server, nursery)
        await late.send(HELLO)
        turned = await late.receive()
        assert isinstance(turned, ErrorReply) and turned.code == "busy"
        assert "limit of 1 clients" in turned.message
        assert await late.receive() is None
        nursery.cancel_scope.cancel()


async def test_a_reserve_connection_has_a_short_idle_timeout(autojump_clock: trio.testing.MockClock) -> None:
    dispatcher = FakeDispatcher()
    dispatcher.hold = True
    server = make_server(ConnectionLimits(max_clients=1, reserve=1, reserve_idle_timeout_s=10.0), dispatcher)
    async with trio.open_nursery() as nursery:
        busy = await connect(server, nursery)
        await busy.ask(HELLO)
        await busy.send(ListTeams())
        await trio.testing.wait_all_tasks_blocked()
        owner = await connect(server, nursery)
        started = trio.current_time()
        assert await owner.receive() is None
        assert trio.current_time() - started == 10.0
        nursery.cancel_scope.cancel()


async def test_unfinished_frames_of_all_clients_share_one_memory_cap(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server(ConnectionLimits(max_partial_bytes=100_000))
    async with trio.open_nursery() as nursery:
        first, second = await connect(server, nursery), await connect(server, nursery)
        await first.ask(HELLO)
        await second.ask(HELLO)
        await first.stream.send_all(struct.pack(">I", 1_000_000) + b"x" * 60_000)  # unfinished
        await trio.testing.wait_all_tasks_blocked()
        await second.stream.send_all(struct.pack(">I", 1_000_000) + b"y" * 60_000)
        refused = await second.receive()
        assert isinstance(refused, ErrorReply) and refused.code == "busy"
        assert "unfinished messages" in refused.message
        assert await second.receive() is None
        await trio.testing.wait_all_tasks_blocked()
        assert server._budget.used == 60_004  # the second one's share was given back
        await first.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert server._budget.used == 0
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("second", [HELLO, Hello(protocol_version=PROTOCOL_VERSION + 1)])
async def test_a_second_hello_is_an_error(second: Hello) -> None:
    server = make_server(ConnectionLimits())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            client = await connect(server, nursery)
            assert isinstance(await client.ask(HELLO), Welcome)
            error = await client.ask(second)
            assert isinstance(error, ErrorReply) and error.code == "protocol"
            assert "a second hello" in error.message
            assert await client.receive() is None


async def test_malformed_clients_are_logged_ten_times_a_minute_at_most(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(ConnectionLimits())
    caplog.set_level(logging.WARNING, logger="irisd.server")
    async with trio.open_nursery() as nursery:
        for _ in range(50):
            client = await connect(server, nursery)
            await client.stream.send_all(b"\x00\x00\x00\x02\xc1\xc1")  # garbage
            assert isinstance(await client.receive(), ErrorReply)
        assert len(caplog.records) == 10
        await trio.sleep(61)
        client = await connect(server, nursery)
        await client.stream.send_all(b"\x00\x00\x00\x02\xc1\xc1")
        await client.receive()
    assert len(caplog.records) == 11
    assert caplog.records[-1].__dict__["similar_lines_suppressed"] == 40


@pytest.mark.parametrize(
    "bad", [b"\xff", b"\xed\xa0\x80"], ids=["not UTF-8", "a surrogate encoded"]
)
async def test_a_string_that_is_not_utf8_gets_an_error_reply_and_the_connection_goes_on(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture, bad: bytes
) -> None:
    """The frame is whole, one string in it is bad: an answer, not a closed connection (nor
    a traceback in the log)."""
    server = make_server(ConnectionLimits())
    body = msgspec.msgpack.encode({"type": "list_teams"})
    # A Tell whose message is a msgpack string (fixstr) holding ``bad``, written by hand.
    raw = b"\x83\xa4type\xa4tell\xa7to_team\xa5alpha\xa7message" + bytes([0xA0 | len(bad)]) + bad
    async with trio.open_nursery() as nursery:
        client = await connect(server, nursery)
        assert isinstance(await client.ask(HELLO), Welcome)
        await client.stream.send_all(len(raw).to_bytes(4, "big") + raw)
        error = await client.receive()
        assert isinstance(error, ErrorReply) and error.code == "invalid_request", error
        assert "not valid UTF-8" in error.message
        await client.stream.send_all(len(body).to_bytes(4, "big") + body)
        assert isinstance(await client.receive(), TeamsReply)  # the same connection
        nursery.cancel_scope.cancel()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_log_throttle() -> None:
    throttle = LogThrottle(burst=2, window_s=10.0)
    assert [throttle.allow(0.0), throttle.allow(1.0), throttle.allow(2.0), throttle.allow(3.0)] == [
        (True, 0), (True, 0), (False, 0), (False, 0),
    ]
    assert throttle.allow(10.0) == (True, 2)
    assert throttle.allow(11.0) == (True, 0)


class FlakyListener:
    """accept() fails with EMFILE ``failures`` times, then waits for ever."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[float] = []

    async def accept(self) -> trio.SocketStream:
        self.calls.append(trio.current_time())
        if len(self.calls) <= self.failures:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass

    async def __aenter__(self) -> FlakyListener:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass


async def test_out_of_file_descriptors_frees_an_idle_connection_and_backs_off_quietly(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    listener = FlakyListener(failures=30)
    server = Server(cast(trio.SocketListener, listener), Serving(cast(Dispatcher, FakeDispatcher())))
    caplog.set_level(logging.WARNING, logger="irisd.server")
    async with trio.open_nursery() as nursery:
        idle = await connect(server, nursery)
        await nursery.start(server.run)
        assert await idle.receive() is None  # closed to free a descriptor
        await trio.sleep(600)
        nursery.cancel_scope.cancel()
    gaps = [b - a for a, b in zip(listener.calls, listener.calls[1:], strict=False)]
    assert [round(gap, 6) for gap in gaps] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6] + [2.0] * 24
    assert len(listener.calls) == 31
    warnings = [r for r in caplog.records if "cannot accept" in r.getMessage()]
    assert 1 <= len(warnings) <= 10  # not one per attempt
