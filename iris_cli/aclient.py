"""A trio client of irisd, for the MCP shim: kept connections, events as they arrive.

Why not the blocking ``Client`` in a worker thread: a streaming tell pushes ``TellText``
events that the shim forwards as MCP progress notifications while the call runs, and an
MCP cancellation must stop the wait at once. A thread blocked in ``recv()`` can be
neither interrupted nor cancelled (trio can only abandon it, socket still open); here a
cancellation simply closes the socket. The framing and codec are the shared ones in
``protocol/``, so this is only the I/O loop.

Failures are split by what the caller may do next:

* ``DaemonUnreachable``: nothing was sent (no socket, connection refused, the hello
  failed). Starting the daemon and trying again is always safe.
* ``ConnectionLost``: the request was sent, then the connection dropped before its
  reply. The daemon may have acted on it; only idempotent requests may be resent.

Both are ``DaemonNotRunningError`` (wire code ``daemon_not_running``) for anyone who
does not care about the difference.
"""

from __future__ import annotations

import os
import select
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import trio

from iris_cli.client import connect_error
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.errors import ConnectionLost as ConnectionLost
from protocol.errors import DaemonUnreachable, IrisError, ProtocolError
from protocol.framing import LengthPrefixedFramer
from protocol.messages import ErrorReply, Event, Hello, Reply, Request, Welcome, is_event

AsyncEventHandler = Callable[[Event], Awaitable[None]]

RECEIVE_CHUNK = 65536

class AsyncConnection:
    """One greeted connection to irisd; requests go one at a time."""

    def __init__(self, stream: trio.SocketStream, socket_path: Path) -> None:
        self._stream = stream
        self._socket_path = socket_path
        self._framer = LengthPrefixedFramer()
        self.welcome: Welcome | None = None

    async def hello(self, client: str) -> Welcome:
        """Greet the daemon. A failure here means nothing was sent: DaemonUnreachable."""
        try:
            reply = await self.request(Hello(protocol_version=PROTOCOL_VERSION, client=client))
        except ConnectionLost as exc:
            raise DaemonUnreachable(exc.message) from None
        if not isinstance(reply, Welcome):
            raise ProtocolError(f"irisd answered the hello with {type(reply).__name__}")
        self.welcome = reply
        return reply

    async def request(self, request: Request, on_event: AsyncEventHandler | None = None) -> Reply:
        """Send ``request``, hand pushed events to ``on_event``, return the reply.

        Raises the daemon's ``IrisError`` for an ``ErrorReply`` and ``ConnectionLost``
        when the connection breaks. Cancellation closes nothing by itself: the caller's
        ``open_connection`` block closes the socket on the way out, and the daemon sees
        a client that left (a tell runs on; cancel it with ``CancelTell``).
        """
        try:
            await self._stream.send_all(encode(request))
            while True:
                message = await self._receive()
                if is_event(message):
                    if on_event is not None:
                        await on_event(message)
                    continue
                if isinstance(message, ErrorReply):
                    raise IrisError.from_wire(message.code, message.message)
                return cast(Reply, message)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            raise self._lost() from None

    async def _receive(self) -> Reply | Event:
        while (body := self._framer.next_frame()) is None:
            data = await self._stream.receive_some(RECEIVE_CHUNK)
            if not data:
                raise self._lost()
            self._framer.receive_data(data)
        return decode_server_message(body)

    def _lost(self) -> ConnectionLost:
        return ConnectionLost(f"irisd closed the connection on {self._socket_path} (did it stop or restart?)")

    def still_open(self) -> bool:
        """Whether an idle connection can take a request: irisd closed it (it restarted, or it
        closes connections idle too long) if anything is readable on it."""
        poller = select.poll()
        poller.register(self._stream.socket.fileno(), select.POLLIN | select.POLLRDHUP)
        return not poller.poll(0)

    async def aclose(self) -> None:
        await self._stream.aclose()


class ConnectionPool:
    """Connections to irisd kept between calls, for a client that makes many (the MCP shim):
    a call takes an idle connection that is still open, or opens and greets a new one (about
    0.5 ms), and gives it back once its reply came. Calls at once use connections of their own.

    A kept connection is given up well before irisd would close it as idle (``MAX_IDLE_S``),
    and one irisd closed meanwhile (a restart) is seen before it is used, so a request is not
    sent into a connection the daemon already left. Errors as for ``AsyncConnection.request``;
    opening raises ``DaemonUnreachable``. A call that fails or is cancelled closes its connection.
    """

    MAX_IDLE_S = 30.0  # irisd closes a connection idle for 120 s (irisd/socket_server.py)

    def __init__(self, socket_path: Path, client: str, *, keep: int = 4) -> None:
        self.socket_path = socket_path
        self.client = client
        self.keep = keep
        self._idle: list[tuple[float, AsyncConnection]] = []

    async def request(self, request: Request, on_event: AsyncEventHandler | None = None) -> Reply:
        connection = await self._take()
        reusable = False
        try:
            reply = await connection.request(request, on_event)
            reusable = True
            return reply
        except ConnectionLost:
            raise
        except IrisError:  # an error reply: the connection is as good as before
            reusable = True
            raise
        finally:
            if reusable and len(self._idle) < self.keep:
                self._idle.append((trio.current_time(), connection))
            else:
                with trio.CancelScope(shield=True):
                    await connection.aclose()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, connection in idle:
            await connection.aclose()

    async def _take(self) -> AsyncConnection:
        now = trio.current_time()
        while self._idle:
            since, connection = self._idle.pop()
            if now - since < self.MAX_IDLE_S and connection.still_open():
                return connection
            await connection.aclose()
        stream = await _connect(self.socket_path)
        connection = AsyncConnection(stream, self.socket_path)
        try:
            await connection.hello(self.client)
        except BaseException:
            await stream.aclose()
            raise
        return connection


@asynccontextmanager
async def open_connection(socket_path: Path, client: str = "iris-mcp") -> AsyncIterator[AsyncConnection]:
    """Connect to irisd and say hello; the socket is closed when the block exits."""
    stream = await _connect(socket_path)
    async with stream:
        connection = AsyncConnection(stream, socket_path)
        await connection.hello(client)
        yield connection


async def _connect(socket_path: Path) -> trio.SocketStream:
    try:
        return await trio.open_unix_socket(os.fspath(socket_path))
    except OSError as exc:
        raise connect_error(exc, socket_path) from None
