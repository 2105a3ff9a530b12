"""A streamed tell (``Tell(stream=True)``: what ``iris tell`` asks for, and ``iris mcp`` for a
Claude Code call, which always gives a progress token) through the real socket server and
core, its claude a fake child: every event, in order, up to the tell's final state; the
events published in one step of the pair in one write; the last ones in the reply's."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import msgspec
import trio

from fakes.child import child_got_turn as child
from fakes.core import running_core, teams_config
from harness import wait_until
from irisd.dispatch import Dispatcher
from irisd.serving import Serving
from irisd.socket_server import Server
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.framing import LengthPrefixedFramer
from protocol.messages import (
    Hello,
    Request,
    ServerMessage,
    Tell,
    TellPhaseEvent,
    TellReply,
    TellState,
    TellText,
    Welcome,
)


def frames(data: bytes) -> list[ServerMessage]:
    framer = LengthPrefixedFramer()
    framer.receive_data(data)
    found = []
    while (frame := framer.next_frame()) is not None:
        found.append(decode_server_message(frame))
    assert not framer.pending, "a write ends with a whole frame"
    return found


def short(message: msgspec.Struct) -> str:
    """A message in a few words: its kind and what it says of the tell."""
    match message:
        case TellState(status=status):
            return f"state {status}"
        case TellPhaseEvent(phase=phase):
            return f"phase {phase.name}"
        case TellText(text=text):
            return f"text {text}"
        case TellReply(status=status, tell=tell):
            return f"reply {status} {tell.text}"
    return type(message).__name__


class Client:
    """The client end of a socketpair that irisd's socket server serves."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.framer = LengthPrefixedFramer()

    async def send(self, message: Request) -> None:
        await self.stream.send_all(encode(message))

    async def receive(self) -> ServerMessage:
        while (frame := self.framer.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            assert data, "irisd closed the connection"
            self.framer.receive_data(data)
        return decode_server_message(frame)

    async def until_reply(self) -> list[ServerMessage]:
        """The events of a request (those not received yet) and its reply."""
        messages = [await self.receive()]
        while not isinstance(messages[-1], TellReply):
            messages.append(await self.receive())
        return messages


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[Client, list[bytes]]]:
    """A greeted client of the core's socket server, and what irisd wrote to it since the
    greeting, write by write."""
    async with served_by_core(tmp_path) as (_, client, writes):
        yield client, writes


@asynccontextmanager
async def served_by_core(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, Client, list[bytes]]]:
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        ours, theirs = socket.socketpair()
        irisd_end = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))
        writes: list[bytes] = []
        send_all = irisd_end.send_all

        async def recorded(data: bytes | bytearray | memoryview) -> None:
            writes.append(bytes(data))
            await send_all(data)

        irisd_end.send_all = recorded  # type: ignore[method-assign]
        server = Server(cast(trio.SocketListener, None), Serving(core))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.handle, irisd_end)
            client = Client(trio.SocketStream(trio.socket.from_stdlib_socket(ours)))
            await client.send(Hello(protocol_version=PROTOCOL_VERSION))
            assert isinstance(await client.receive(), Welcome)
            writes.clear()
            yield core, client, writes
            nursery.cancel_scope.cancel()
        ours.close()


async def test_a_streamed_tell_sends_its_events_in_order_to_its_end_in_few_writes_the_last_with_the_reply(
    tmp_path: Path,
) -> None:
    with trio.fail_after(20):
        async with served(tmp_path) as (client, writes):
            await client.send(Tell(to_team="alpha", message="hi", stream=True))
            claude = await child(0)
            await claude.emit({"type": "system", "subtype": "init", "session_id": "s"})
            await claude.text("Hel")
            received = [await client.receive()]
            while short(received[-1]) != "phase answering":
                received.append(await client.receive())
            await claude.result("Hello")  # the result adds to the text streamed: "lo"
            received += await client.until_reply()
    assert [short(message) for message in received] == [
        "state queued",
        "phase starting_claude",
        "state running",
        "phase waiting_for_model",
        "text Hel",
        "phase answering",
        "text lo",
        "state completed",  # the final state too (it was lost when the result added text)
        "reply completed Hello",
    ]
    written = [[short(message) for message in frames(data)] for data in writes]
    assert [frame for data in written for frame in data] == [short(message) for message in received]  # all, once
    assert any({"text Hel", "phase answering"} <= set(data) for data in written)  # published in one step: one write
    assert written[-1] == ["text lo", "state completed", "reply completed Hello"]
    assert len(written) < len(received)


async def test_a_streaming_caller_that_hangs_up_leaves_the_tell_running_its_answer_unread(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with served_by_core(tmp_path) as (core, client, _):
            await client.send(Tell(to_team="alpha", message="hi", stream=True))
            first = await client.receive()
            assert isinstance(first, TellState) and first.status == "queued"
            claude = await child(0)
            tell = core.tells.pool.find_tell(first.tell_id)
            assert tell is not None and not tell.caller_left
            await client.stream.aclose()  # the client is gone (a Ctrl-C, a cancelled MCP call)
            await claude.text("Hel")  # the next write finds it gone
            await wait_until(lambda: tell.caller_left, every=0.01)  # nobody reads the answer now
            await claude.result("Hello")
            await tell.finished.wait()
            assert tell.machine.status == "completed" and tell.machine.text == "Hello"  # it ran on
