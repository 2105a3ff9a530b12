"""The Unix socket: listening safely, and one handler per client that contains its errors.

A connection starts with ``Hello`` (protocol version check), then carries requests one
at a time; each gets exactly one reply, possibly preceded by pushed events. A client
that sends garbage or an oversized frame gets an ``ErrorReply`` and is disconnected;
nothing it does reaches another client or the daemon.

Only the user irisd runs as is served: the kernel names each connecting process's uid
(SO_PEERCRED), and any other user gets an ``ErrorReply`` saying so, then EOF. The
socket is 0600 in a 0700 folder already; this also holds for a socket systemd made.

Limits (``ConnectionLimits``), so that no number of clients locks the owner out:

* at most ``max_clients`` connections are served (fewer when the open-file limit is
  low). A new one beyond that closes the connection idle the longest (waiting for its
  next request; a watch or a tell being answered is not idle). When none is idle, up to
  ``reserve`` more are let in for ``GetStatus`` only, so ``iris status`` still works;
  past that a client is told irisd is full and hung up on;
* a connection that sends no complete request for ``idle_timeout_s`` is closed;
* all connections together may hold at most ``max_partial_bytes`` of unfinished
  frames; the client that goes over is refused;
* running out of file descriptors (EMFILE) closes an idle connection and backs off
  accepting, with one log line per minute at most; so are clients' protocol errors.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import socket
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio

from iris_common.paths import socket_dir_problem, socket_path_problem
from irisd.caller import OWNER
from irisd.events import BatchSender
from irisd.fds import CAPACITY_ERRNOS, FDS_FOR_THE_REST, open_file_limit, out_of_descriptors
from irisd.serving import Serving
from irisd.throttle import LogThrottle
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_request, encode, encode_many
from protocol.errors import (
    BusyError,
    InvalidRequestError,
    IrisError,
    PermissionDeniedError,
    ProtocolError,
)
from protocol.framing import LengthPrefixedFramer
from protocol.messages import ErrorReply, Event, GetStatus, Hello, Request

log = logging.getLogger("irisd.server")

RECEIVE_CHUNK = 65536
REFUSE_LINGER_S = 2.0
SEND_TIMEOUT_S = 30.0  # a client that reads nothing for this long is hung up on
TURN_AWAY_LINGER_S = 0.2  # read the hello of a client turned away, so it reads our reason
ACCEPT_BACKOFF_S = (0.05, 2.0)  # out of file descriptors: wait this long, doubling
LISTEN_BACKLOG = 1024  # the kernel caps it at net.core.somaxconn
# The send buffer of a client's socket (the kernel doubles it, and caps it at twice
# net.core.wmem_max): a page of a transcript (irisd/store/lines.py: 256 KiB and a row) goes
# out in one send while the client reads the one before, instead of a send, a wait for the
# client and another send each (measured: 1 to 2 ms less of irisd's CPU, and less time,
# for 10,000 lines). A client that reads nothing holds at most this much of the kernel's
# memory, until it is hung up on (SEND_TIMEOUT_S).
SEND_BUFFER = 512 * 1024


class SocketError(IrisError):
    code = "socket"


class ConnectionLimits(msgspec.Struct, frozen=True):
    max_clients: int = 256
    reserve: int = 4  # beyond max_clients, for GetStatus only
    idle_timeout_s: float = 120.0
    reserve_idle_timeout_s: float = 10.0
    max_partial_bytes: int = 64 * 1024 * 1024

    @classmethod
    def for_this_process(cls) -> ConnectionLimits:
        """The defaults, with fewer clients when the open-file limit would not hold them."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        defaults = cls()
        if soft == resource.RLIM_INFINITY:
            return defaults
        return cls(max_clients=max(8, min(defaults.max_clients, soft - FDS_FOR_THE_REST - defaults.reserve)))


class FrameBudget:
    """Bytes of unfinished frames held for all connections together."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


class Connection:
    """Frames over one client's stream."""

    def __init__(self, stream: trio.SocketStream, budget: FrameBudget | None = None) -> None:
        self.stream = stream
        self._framer = LengthPrefixedFramer()
        self._send_lock = trio.Lock()
        self._budget = budget or FrameBudget(limit=2**62)
        self._held = 0  # of the budget
        self.scope = trio.CancelScope()  # cancelled to close the connection (evicted)
        self.idle_since: float | None = None  # waiting for a request since then
        self.reserve = False  # let in beyond max_clients: GetStatus only
        self.evicted = False
        self._held_frames = bytearray()  # frames written ahead of the next one (a reply's last events)
        self.events = ConnectionEvents(self)  # the SendEvent of its requests

    async def receive(self) -> Request | None:
        """The next request, or None when the client closed the connection."""
        while True:
            body = self._framer.next_frame()
            if body is not None:
                self._account()
                return decode_request(body)
            data = await self.stream.receive_some(RECEIVE_CHUNK)
            if not data:
                if self._framer.pending:
                    raise ProtocolError("the connection closed in the middle of a message")
                return None
            self._framer.receive_data(data)
            self._account()

    def _account(self) -> None:
        pending = self._framer.pending
        self._budget.used += pending - self._held
        self._held = pending
        if pending and self._budget.used > self._budget.limit:
            raise BusyError(
                f"irisd holds {self._budget.limit // (1024 * 1024)} MiB of unfinished messages from its "
                "clients, its limit; send this again in a moment"
            )

    def release(self) -> None:
        """Give back what this connection held of the budget (it is closed)."""
        self._budget.used -= self._held
        self._held = 0

    def evict(self) -> None:
        self.evicted = True
        self.scope.cancel()

    async def send(self, message: msgspec.Struct) -> None:
        """Send one frame (after those held, ``hold``). Shielded: a frame is never cut in
        half by a cancellation; but a client that stops reading is hung up on after
        SEND_TIMEOUT_S, so that it can hold up neither its handler nor the drain."""
        await self._write(encode(message))

    async def send_many(self, messages: Sequence[msgspec.Struct]) -> None:
        """Send several frames in one write, as ``send`` sends one."""
        await self._write(encode_many(messages))

    def hold(self, messages: Sequence[msgspec.Struct]) -> None:
        """Keep these frames to go out in the next write, ahead of its own frames."""
        self._held_frames += encode_many(messages)

    async def _write(self, frames: bytearray) -> None:
        # One scope for both: shielded from cancellations outside, cancelled by its own deadline.
        with trio.CancelScope(shield=True, deadline=trio.current_time() + SEND_TIMEOUT_S) as sending:
            async with self._send_lock:
                if self._held_frames:
                    frames[:0] = self._held_frames
                    self._held_frames = bytearray()
                await self.stream.send_all(frames)
        if sending.cancelled_caught:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            raise trio.BrokenResourceError(f"the client read nothing for {SEND_TIMEOUT_S:g} s")


class ConnectionEvents(BatchSender):
    """The events of a connection's requests: frames, several in one write when they come
    together (``irisd.events.send_events``), the last ones of a tell in its reply's."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def __call__(self, event: Event) -> None:
        await self.connection.send(event)

    async def send_many(self, events: Sequence[Event]) -> None:
        await self.connection.send_many(events)

    def with_reply(self, events: Sequence[Event]) -> None:
        self.connection.hold(events)


class Server:
    """Accepts clients on ``listener`` and serves each in its own task.

    Requests go through ``serving`` (irisd/serving.py), shared with the HTTP face: it
    refuses new ones while draining, counts each one until its reply is sent, and turns a
    bug into an ``internal`` error. ``stop_accepting`` closes the listener; the daemon's
    drain then waits on ``serving.wait_idle``, so a waiting caller still gets its
    (interrupted) reply.
    """

    def __init__(
        self,
        listener: trio.SocketListener,
        serving: Serving,
        *,
        allowed_uid: int | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.listener = listener
        self.serving = serving
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self.limits = limits or ConnectionLimits.for_this_process()
        self._accept_scope = trio.CancelScope()
        self._connections: set[Connection] = set()
        self._budget = FrameBudget(self.limits.max_partial_bytes)
        self._log_budget = LogThrottle(burst=10, window_s=60.0)  # lines caused by clients

    @property
    def clients(self) -> int:
        return len(self._connections)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept clients until ``stop_accepting``; serve them until cancelled."""
        async with trio.open_nursery() as handlers:
            with self._accept_scope:
                task_status.started()
                await self._accept(handlers)
            await trio.sleep_forever()  # the clients of a draining server, until cancelled

    async def _accept(self, handlers: trio.Nursery) -> None:
        """Accept until cancelled (the listener is closed then). Out of file descriptors,
        it frees an idle connection's and waits, doubling the wait, logging rarely."""
        backoff = ACCEPT_BACKOFF_S[0]
        async with self.listener:
            while True:
                try:
                    stream = await self.listener.accept()
                except OSError as exc:
                    if exc.errno not in CAPACITY_ERRNOS:
                        raise
                    why = out_of_descriptors(exc.errno, open_file_limit()) or os.strerror(exc.errno or 0)
                    self._warn("cannot accept clients: " + why, retry_in_s=backoff)
                    self._evict_idlest()
                    await trio.sleep(backoff)
                    backoff = min(backoff * 2, ACCEPT_BACKOFF_S[1])
                    continue
                backoff = ACCEPT_BACKOFF_S[0]
                handlers.start_soon(self.handle, stream)

    def stop_accepting(self) -> None:
        """Close the listener; refuse new requests from connected clients."""
        self.serving.stop_accepting()
        self._accept_scope.cancel()

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one client until it leaves. Never raises (except Cancelled)."""
        connection = Connection(stream, self._budget)
        try:
            async with stream:
                stream.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
                peer_uid = peer_credentials(stream.socket).uid
                if not peer_allowed(peer_uid, self.allowed_uid):
                    self._warn("refused a client of another user", peer_uid=peer_uid)
                    await _refuse(connection, peer_uid, self.allowed_uid)
                    return
                if not self._admit(connection):
                    self._warn("turned a client away: every connection is busy", clients=self.clients)
                    await _turn_away(connection, self.limits.max_clients)
                    return
                with connection.scope:
                    await self._serve(connection)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away
        except (ProtocolError, BusyError) as exc:
            self._warn("client broke the protocol", error=exc.message)
        except Exception:
            log.exception("unexpected error while serving a client")
        finally:
            self._connections.discard(connection)
            connection.release()

    def _admit(self, connection: Connection) -> bool:
        """Make room for ``connection`` (see the module's docstring); False: turn it away."""
        live = sum(1 for c in self._connections if not c.evicted)
        if live >= self.limits.max_clients and not self._evict_idlest():
            if live >= self.limits.max_clients + self.limits.reserve:
                return False
            connection.reserve = True
        self._connections.add(connection)
        return True

    def _evict_idlest(self) -> bool:
        """Close the connection that has waited for a request the longest, if any."""
        idle = [c for c in self._connections if c.idle_since is not None and not c.evicted]
        if not idle:
            return False
        min(idle, key=lambda c: c.idle_since or 0.0).evict()
        return True

    def _warn(self, message: str, **extra: Any) -> None:
        """A warning a client can cause: at most 10 a minute, then one saying how many were not logged."""
        allowed, suppressed = self._log_budget.allow(trio.current_time())
        if allowed:
            if suppressed:
                extra["similar_lines_suppressed"] = suppressed
            log.warning(message, extra=extra)

    async def _serve(self, connection: Connection) -> None:
        greeted = False
        while True:
            timeout = self.limits.reserve_idle_timeout_s if connection.reserve else self.limits.idle_timeout_s
            connection.idle_since = trio.current_time()
            request: Request | None = None
            with trio.move_on_after(timeout) as waiting:
                try:
                    request = await connection.receive()
                except InvalidRequestError as exc:  # a whole frame with a value out of range: answer it
                    await connection.send(ErrorReply(code=exc.code, message=exc.message))
                    continue
                except (ProtocolError, BusyError) as exc:
                    await _try_send(connection, ErrorReply(code=exc.code, message=exc.message))
                    raise
            connection.idle_since = None
            if waiting.cancelled_caught:
                return  # idle too long: close it (a client reconnects for its next request)
            if request is None:
                return
            await _check_hello(connection, request, greeted)
            greeted = True
            if connection.reserve and not isinstance(request, Hello | GetStatus):
                full = BusyError(
                    f"irisd serves its limit of {self.limits.max_clients} clients, all busy; only "
                    "'iris status' gets in now; try again when some have finished"
                )
                await connection.send(ErrorReply(code=full.code, message=full.message))
                continue
            # (A watch too: the core ends every watch when it stops, before the drain
            # waits for the last replies, so that watchers hear why.)
            with self.serving.counted():
                await connection.send(await self._reply(request, connection))

    async def _reply(self, request: Request, connection: Connection) -> msgspec.Struct:
        """The reply, or the error as an ErrorReply. A client that left (a watcher's
        Ctrl-C) raises out: nothing failed."""
        try:
            return await self.serving.dispatch(request, OWNER, connection.events)
        except IrisError as exc:
            return ErrorReply(code=exc.code, message=exc.message)


async def _check_hello(connection: Connection, request: Request, greeted: bool) -> None:
    """The first message is a hello of our protocol version; no other message is one."""
    if greeted:
        if not isinstance(request, Hello):
            return
        error = ProtocolError("a second hello on one connection; a client says hello once, first")
    elif not isinstance(request, Hello):
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


async def _turn_away(connection: Connection, max_clients: int) -> None:
    """Say irisd is full, then hang up. Reads the client's hello first (briefly), so that
    closing with it unread does not reset the connection before the client reads why."""
    full = BusyError(
        f"irisd serves its limit of {max_clients} clients and all of them are busy; try again "
        "in a moment ('iris status' shows what runs)"
    )
    await connection.send(ErrorReply(code=full.code, message=full.message))
    with trio.move_on_after(TURN_AWAY_LINGER_S):
        await connection.stream.receive_some(RECEIVE_CHUNK)


async def _try_send(connection: Connection, message: msgspec.Struct) -> None:
    try:
        await connection.send(message)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


# --- who is on the other end -------------------------------------------------------


class PeerRefusedError(PermissionDeniedError):
    """A process of another user connected to the socket."""


class PeerCredentials(msgspec.Struct, frozen=True):
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
    if (problem := socket_dir_problem(folder)) is not None:
        raise SocketError(problem)


async def open_unix_listener(path: Path) -> trio.SocketListener:
    """Bind the daemon's socket (0600), replacing a stale one; refuses if a daemon runs."""
    if (too_long := socket_path_problem(path)) is not None:
        raise SocketError(too_long)
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
        sock.listen(LISTEN_BACKLOG)
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
