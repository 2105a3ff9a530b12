"""The Unix socket: listening safely, and one handler per client that contains its errors.

A connection starts with ``Hello`` (protocol version check), then carries requests one
at a time; each gets exactly one reply, possibly preceded by pushed events. A client
that sends garbage or an oversized frame gets an ``ErrorReply`` and is disconnected;
nothing it does reaches another client or the daemon.

Only the user irisd runs as is served: the kernel names each connecting process's uid
(SO_PEERCRED), and any other user gets an ``ErrorReply`` saying so, then EOF. The
socket is 0600 in a 0700 folder already; this also holds for a socket systemd made.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
import struct
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import msgspec
import trio

from irisd.dispatch import Dispatcher
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_request, encode
from protocol.errors import IrisError, PermissionDeniedError, ProtocolError, ShuttingDownError
from protocol.framing import LengthPrefixedFramer
from protocol.messages import ErrorReply, Event, Hello, Request

log = logging.getLogger("irisd.server")

RECEIVE_CHUNK = 65536
REFUSE_LINGER_S = 2.0
SEND_TIMEOUT_S = 30.0  # a client that reads nothing for this long is hung up on


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
        """Send one frame. Shielded: a frame is never cut in half by a cancellation; but a
        client that stops reading is hung up on after SEND_TIMEOUT_S, so that it can hold
        up neither its handler nor the drain."""
        frame = encode(message)
        with trio.CancelScope(shield=True):
            async with self._send_lock:
                with trio.move_on_after(SEND_TIMEOUT_S) as sending:
                    await self.stream.send_all(frame)
                if sending.cancelled_caught:
                    await trio.aclose_forcefully(self.stream)
                    raise trio.BrokenResourceError(f"the client read nothing for {SEND_TIMEOUT_S:g} s")


class Server:
    """Accepts clients on ``listener`` and serves each in its own task.

    Draining (``stop_accepting``): the listener closes, requests already being served
    run on, new ones get ShuttingDownError, and ``wait_idle`` tells when no request is
    left in flight, so a waiting caller still gets its (interrupted) reply.
    """

    def __init__(
        self,
        listener: trio.SocketListener,
        dispatcher: Dispatcher,
        *,
        allowed_uid: int | None = None,
    ) -> None:
        self.listener = listener
        self.dispatcher = dispatcher
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self.draining = False
        self.in_flight = 0
        self._idle = trio.Event()
        self._idle.set()
        self._accept_scope = trio.CancelScope()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept clients until ``stop_accepting``; serve them until cancelled."""
        async with trio.open_nursery() as handlers:
            with self._accept_scope:
                await handlers.start(
                    partial(trio.serve_listeners, self.handle, [self.listener], handler_nursery=handlers)
                )
                task_status.started()
                await trio.sleep_forever()
            await trio.sleep_forever()  # the clients of a draining server, until cancelled

    def stop_accepting(self) -> None:
        """Close the listener; refuse new requests from connected clients."""
        self.draining = True
        self._accept_scope.cancel()

    async def wait_idle(self) -> None:
        """Until no request is being served."""
        while self.in_flight:
            await self._idle.wait()

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one client until it leaves. Never raises (except Cancelled)."""
        connection = Connection(stream)
        try:
            async with stream:
                peer_uid = peer_credentials(stream.socket).uid
                if not peer_allowed(peer_uid, self.allowed_uid):
                    await _refuse(connection, peer_uid, self.allowed_uid)
                    return
                await self._serve(connection)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away
        except ProtocolError as exc:
            log.warning("client broke the protocol", extra={"error": exc.message})
        except Exception:
            log.exception("unexpected error while serving a client")

    async def _serve(self, connection: Connection) -> None:
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
                await _check_hello(connection, request)
                greeted = True
            # (A watch too: the core ends every watch when it stops, before the drain
            # waits for the last replies, so that watchers hear why.)
            self._begin()
            try:
                await connection.send(await self._reply(request, connection))
            finally:
                self._end()

    async def _reply(self, request: Request, connection: Connection) -> msgspec.Struct:
        async def send_event(event: Event) -> None:
            await connection.send(event)

        try:
            if self.draining and not isinstance(request, Hello):
                raise ShuttingDownError("irisd is stopping; send this again once it is back")
            return await self.dispatcher.dispatch(request, send_event)
        except IrisError as exc:
            return ErrorReply(code=exc.code, message=exc.message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise  # the client left (a watcher's Ctrl-C): nothing failed
        except Exception as exc:
            log.exception("request failed", extra={"request": type(request).__name__})
            message = f"irisd failed on this request ({type(exc).__name__}: {exc}); see the irisd log"
            return ErrorReply(code="internal", message=message)

    def _begin(self) -> None:
        self.in_flight += 1
        self._idle = trio.Event()

    def _end(self) -> None:
        self.in_flight -= 1
        if not self.in_flight:
            self._idle.set()


async def _check_hello(connection: Connection, request: Request) -> None:
    if not isinstance(request, Hello):
        error = ProtocolError("the first message must be a hello; upgrade the client")
    elif request.protocol_version != PROTOCOL_VERSION:
        error = ProtocolError(
            f"client speaks protocol {request.protocol_version}, irisd speaks "
            f"{PROTOCOL_VERSION}; install the same Iris version for both"
        )
    else:
        return
    await connection.send(ErrorReply(code=error.code, message=error.message))
    raise error


async def _try_send(connection: Connection, message: msgspec.Struct) -> None:
    try:
        await connection.send(message)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


# --- who is on the other end -------------------------------------------------------


class PeerRefusedError(PermissionDeniedError):
    """A process of another user connected to the socket."""


@dataclass(frozen=True)
class PeerCredentials:
    pid: int
    uid: int
    gid: int


def peer_credentials(sock: trio.socket.SocketType) -> PeerCredentials:
    """The connecting process's pid, uid and gid, from the kernel (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return PeerCredentials(*_UCRED.unpack(raw))


def peer_allowed(peer_uid: int, allowed_uid: int) -> bool:
    """Only the user irisd runs as may use it: its agents act with that user's rights.
    (root is no exception: a root-owned client must not drive a user's agents.)"""
    return peer_uid == allowed_uid


async def _refuse(connection: Connection, peer_uid: int, allowed_uid: int) -> None:
    """Tell the intruder why, then hang up. The reply is followed by EOF, but the socket
    stays open briefly until the client closes it: a client still writing its hello
    would otherwise get EPIPE instead of the reason."""
    log.warning("refused a client of another user", extra={"peer_uid": peer_uid})
    error = PeerRefusedError(
        f"this irisd belongs to uid {allowed_uid} and serves only that user (you are uid "
        f"{peer_uid}); start an irisd of your own"
    )
    await connection.send(ErrorReply(code=error.code, message=error.message))
    await connection.stream.send_eof()
    with trio.move_on_after(REFUSE_LINGER_S):
        while await connection.stream.receive_some(RECEIVE_CHUNK):
            pass


_UCRED = struct.Struct("3i")  # struct ucred: pid_t pid; uid_t uid; gid_t gid


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
