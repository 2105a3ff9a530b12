"""The shim's trio client against a scripted peer on a real Unix socket: events, errors,
and the difference between "nothing was sent" and "cut off after sending"."""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
import trio

from iris_cli.aclient import ConnectionLost, ConnectionPool, open_connection
from iris_cli.client import DaemonUnreachable
from protocol.codec import decode_request, encode
from protocol.errors import UnknownTeamError
from protocol.framing import LengthPrefixedFramer
from protocol.messages import (
    ErrorReply,
    Event,
    GetStatus,
    Hello,
    ListTeams,
    Request,
    TeamsReply,
    Tell,
    TellInfo,
    TellReply,
    TellState,
    TellText,
    Welcome,
)

Script = Callable[[trio.SocketStream, Request], Awaitable[bool]]  # False: hang up


def short_socket_path() -> Path:
    return Path(tempfile.mkdtemp(prefix="iris-ac-", dir="/tmp")) / "s.sock"


async def serve(
    path: Path, script: Script, hellos: list[int] | None = None, *, task_status: trio.TaskStatus[None]
) -> None:
    """A fake irisd: says welcome, then lets ``script`` answer each request (``hellos``
    counts the connections greeted)."""
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(str(path))
    sock.listen()
    listener = trio.SocketListener(sock)

    async def handle(stream: trio.SocketStream) -> None:
        framer = LengthPrefixedFramer()
        async with stream:
            while data := await stream.receive_some(65536):
                framer.receive_data(data)
                while (body := framer.next_frame()) is not None:
                    request = decode_request(body)
                    if isinstance(request, Hello):
                        if hellos is not None:
                            hellos.append(1)
                        await stream.send_all(encode(Welcome(protocol_version=1, daemon_version="t", pid=1)))
                    elif not await script(stream, request):
                        return

    task_status.started()
    await trio.serve_listeners(handle, [listener])


async def send(stream: trio.SocketStream, message: msgspec.Struct) -> None:
    await stream.send_all(encode(message))


async def test_events_reach_the_handler_before_the_reply(nursery: trio.Nursery) -> None:
    info = TellInfo(id="t1", from_team=None, to_team="beta", message="hi", status="completed", text="ab")

    async def script(stream: trio.SocketStream, request: Request) -> bool:
        await send(stream, TellState(tell_id="t1", status="running"))
        await send(stream, TellText(tell_id="t1", text="a"))
        await send(stream, TellText(tell_id="t1", text="b"))
        await send(stream, TellReply(status="completed", tell=info))
        return True

    path = short_socket_path()
    await nursery.start(serve, path, script)
    seen: list[Event] = []

    async def on_event(event: Event) -> None:
        seen.append(event)

    async with open_connection(path) as connection:
        assert connection.welcome is not None
        reply = await connection.request(Tell(to_team="beta", message="hi", stream=True), on_event)
    assert isinstance(reply, TellReply) and reply.tell.text == "ab"
    assert [type(e).__name__ for e in seen] == ["TellState", "TellText", "TellText"]


async def test_error_replies_come_back_as_the_daemons_errors(nursery: trio.Nursery) -> None:
    async def script(stream: trio.SocketStream, request: Request) -> bool:
        if isinstance(request, ListTeams):
            await send(stream, TeamsReply(teams=[]))
        else:
            await send(stream, ErrorReply(code="unknown_team", message="team 'x' is not configured"))
        return True

    path = short_socket_path()
    await nursery.start(serve, path, script)
    async with open_connection(path) as connection:
        with pytest.raises(UnknownTeamError, match="team 'x' is not configured"):
            await connection.request(GetStatus())
        assert await connection.request(ListTeams()) == TeamsReply(teams=[])  # still usable


async def test_nothing_sent_and_cut_off_after_sending_are_told_apart(nursery: trio.Nursery) -> None:
    path = short_socket_path()
    with pytest.raises(DaemonUnreachable, match="irisd is not running"):
        async with open_connection(path):
            pass

    async def hang_up(stream: trio.SocketStream, request: Request) -> bool:
        return False

    await nursery.start(serve, path, hang_up)
    async with open_connection(path) as connection:
        with pytest.raises(ConnectionLost, match="closed the connection"):
            await connection.request(Tell(to_team="beta", message="hi"))


async def test_the_pool_keeps_a_connection_between_calls_and_opens_more_for_calls_at_once(
    nursery: trio.Nursery,
) -> None:
    release = trio.Event()

    async def script(stream: trio.SocketStream, request: Request) -> bool:
        if isinstance(request, Tell):
            await release.wait()
        await send(stream, TeamsReply(teams=[]))
        return True

    path, hellos = short_socket_path(), list[int]()
    await nursery.start(serve, path, script, hellos)
    pool = ConnectionPool(path, "test")
    for _ in range(3):
        assert await pool.request(ListTeams()) == TeamsReply(teams=[])
    assert len(hellos) == 1  # one connection, greeted once

    async def tell() -> None:
        await pool.request(Tell(to_team="beta", message="hi"))

    async with trio.open_nursery() as calls:
        calls.start_soon(tell)
        calls.start_soon(tell)
        await trio.testing.wait_all_tasks_blocked()
        assert len(hellos) == 2  # the kept one, and one more for the second call at once
        release.set()
    await pool.aclose()


async def test_the_pool_does_not_send_into_a_connection_irisd_closed(nursery: trio.Nursery) -> None:
    async def once_then_hang_up(stream: trio.SocketStream, request: Request) -> bool:
        await send(stream, TeamsReply(teams=[]))
        return False  # as irisd does with a connection idle too long, or when it restarts

    path, hellos = short_socket_path(), list[int]()
    await nursery.start(serve, path, once_then_hang_up, hellos)
    pool = ConnectionPool(path, "test")
    assert await pool.request(ListTeams()) == TeamsReply(teams=[])
    await trio.testing.wait_all_tasks_blocked()  # the fake irisd has hung up
    # A tell is not resent after a lost connection: it must not go into the closed one.
    assert await pool.request(Tell(to_team="beta", message="hi")) == TeamsReply(teams=[])
    assert len(hellos) == 2
    await pool.aclose()


async def test_a_cancelled_call_closes_its_connection(nursery: trio.Nursery) -> None:
    async def never(stream: trio.SocketStream, request: Request) -> bool:
        await trio.sleep_forever()
        return True

    path, hellos = short_socket_path(), list[int]()
    await nursery.start(serve, path, never, hellos)
    pool = ConnectionPool(path, "test")
    with trio.move_on_after(1):
        await pool.request(Tell(to_team="beta", message="hi"))
    assert pool._idle == []  # half a conversation is never reused
