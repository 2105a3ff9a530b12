"""The Unix socket: listening safely, and one handler per client that contains its errors.

A connection starts with ``Hello`` (protocol version check), then carries requests one
at a time; each gets exactly one reply, possibly preceded by pushed events. A client
that sends garbage or an oversized frame gets an ``ErrorReply`` and is disconnected;
nothing it does reaches another client or the daemon.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

import msgspec
import trio

from irisd.dispatch import Dispatcher
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_request, encode
from protocol.errors import IrisError, ProtocolError
from protocol.framing import LengthPrefixedFramer
from protocol.messages import ErrorReply, Event, Hello, Request

log = logging.getLogger("irisd.server")

RECEIVE_CHUNK = 65536


class SocketError(IrisError):
    code = "socket"


class Connection:
    """Frames over one client's stream."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._framer = LengthPrefixedFramer()
        self._send_lock = trio.Lock()

    async def receive(self) -> Request | None:
        """The next request, or None when the client closed the connection."""
        while True:
            body = self._framer.next_frame()
            if body is not None:
                return decode_request(body)
            data = await self.stream.receive_some(RECEIVE_CHUNK)
            if not data:
                if self._framer.pending:
                    raise ProtocolError("the connection closed in the middle of a message")
                return None
            self._framer.receive_data(data)

    async def send(self, message: msgspec.Struct) -> None:
        """Send one frame. Shielded: a frame is never cut in half by a cancellation."""
        frame = encode(message)
        with trio.CancelScope(shield=True):
            async with self._send_lock:
                await self.stream.send_all(frame)


async def handle_client(stream: trio.SocketStream, dispatcher: Dispatcher) -> None:
    """Serve one client until it leaves. Never raises (except Cancelled)."""
    connection = Connection(stream)
    try:
        async with stream:
            await _serve(connection, dispatcher)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the client went away
    except ProtocolError as exc:
        log.warning("client broke the protocol", extra={"error": exc.message})
    except Exception:
        log.exception("unexpected error while serving a client")


async def _serve(connection: Connection, dispatcher: Dispatcher) -> None:
    async def send_event(event: Event) -> None:
        await connection.send(event)

    greeted = False
    while True:
        try:
            request = await connection.receive()
        except ProtocolError as exc:
            await _try_send(connection, ErrorReply(code=exc.code, message=exc.message))
            raise
        if request is None:
            return
        if not greeted:
            if not isinstance(request, Hello):
                error = ProtocolError("the first message must be a hello; upgrade the client")
                await connection.send(ErrorReply(code=error.code, message=error.message))
                raise error
            if request.protocol_version != PROTOCOL_VERSION:
                error = ProtocolError(
                    f"client speaks protocol {request.protocol_version}, irisd speaks "
                    f"{PROTOCOL_VERSION}; install the same Iris version for both"
                )
                await connection.send(ErrorReply(code=error.code, message=error.message))
                raise error
            greeted = True
        try:
            reply = await dispatcher.dispatch(request, send_event)
        except IrisError as exc:
            await connection.send(ErrorReply(code=exc.code, message=exc.message))
            continue
        except Exception as exc:
            log.exception("request failed", extra={"request": type(request).__name__})
            message = f"irisd failed on this request ({type(exc).__name__}: {exc}); see the irisd log"
            await connection.send(ErrorReply(code="internal", message=message))
            continue
        await connection.send(reply)


async def _try_send(connection: Connection, message: msgspec.Struct) -> None:
    try:
        await connection.send(message)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def prepare_socket_dir(folder: Path) -> None:
    """Create the socket's folder 0700, or refuse one that others could tamper with."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise SocketError(
            f"socket folder {folder} belongs to uid {info.st_uid}, not you; "
            "set IRIS_SOCKET to a path in a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SocketError(
            f"socket folder {folder} is writable by other users (mode "
            f"{stat.S_IMODE(info.st_mode):o}); run 'chmod 700 {folder}' or choose another IRIS_SOCKET"
        )


async def open_unix_listener(path: Path) -> trio.SocketListener:
    """Bind the daemon's socket (0600), replacing a stale one; refuses if a daemon runs."""
    if len(os.fsencode(path)) > 107:
        raise SocketError(f"socket path {path} is too long for a Unix socket; set a shorter IRIS_SOCKET")
    prepare_socket_dir(path.parent)
    if os.path.lexists(path):  # noqa: ASYNC240 - start-up, nothing else runs yet
        if await _is_live(path):
            raise SocketError(f"irisd is already running on {path}; stop it first ('iris status' shows it)")
        os.unlink(path)  # a stale socket of a daemon that died
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where others can connect
        try:
            await sock.bind(str(path))
        finally:
            os.umask(old_umask)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot listen on {path}: {exc.strerror}") from None
    return trio.SocketListener(sock)


async def _is_live(path: Path) -> bool:
    try:
        stream = await trio.open_unix_socket(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            return False
        raise
    await stream.aclose()
    return True


async def serve(
    listener: trio.SocketListener,
    dispatcher: Dispatcher,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept clients until cancelled, each in its own task."""
    async with trio.open_nursery() as nursery:
        async def handler(stream: trio.SocketStream) -> None:
            await handle_client(stream, dispatcher)

        await nursery.start(trio.serve_listeners, handler, [listener])
        task_status.started()
