"""irisd's HTTP server: hypercorn's HTTP/1.1 and WebSocket connections (its ``TCPServer``)
serving the HttpFace inside irisd's own nursery and ``trio.run``, under irisd's accept loop.

The socket is bound before the core starts, and this module (with hypercorn and
starlette) loaded when the face is first needed: irisd/http/door.py. The server accepts
on a duplicate of that socket
(not inheritable, so nothing irisd starts could hold the port): it owns and closes the
duplicate, the daemon its own.

``HttpServer.run`` serves until cancelled; ``stop_accepting`` begins the drain: the
listener closes, new requests get ``shutting_down`` (``Serving``, shared with the
socket), and the daemon waits for those in flight (``Serving.wait_idle``); connections
still open ``GRACEFUL_TIMEOUT_S`` later are closed.

irisd runs hypercorn's connection (``TCPServer``) under its own accept loop, so that no
client can take what the others and the children need:

* at most ``max_connections`` connections at once (``irisd/fds.py``: below the
  open-file limit, with descriptors kept for spawning claude children); the next client
  waits in the kernel's listen queue until one closes;
* a connection that sends no request within ``IDLE_TIMEOUT_S`` (hypercorn's keep-alive
  timeout, which also runs before the first request) is closed;
* out of descriptors all the same, accepting backs off and says so (rarely) in words
  with the fix;
* a send can be cancelled: hypercorn shields each write to the socket, so a client that
  reads nothing held its request, the drain and even a second SIGTERM for good. Here a
  write that is cancelled (the drain's deadline, a WebSocket send's timeout) closes the
  connection instead, since half a message may have gone out.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Callable
from typing import Any, cast

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState

from irisd.fds import CAPACITY_ERRNOS, open_file_limit, out_of_descriptors
from irisd.http.app import MAX_BODY_BYTES, HttpFace
from irisd.http.door import HttpError, open_http_socket, socket_url
from irisd.throttle import LogThrottle

log = logging.getLogger("irisd.http")

__all__ = ["HttpError", "HttpServer", "open_http_socket", "socket_url"]  # the first, third, fourth: door.py's

MAX_WEBSOCKET_MESSAGE = 64 * 1024  # clients of /api/events have nothing big to say
GRACEFUL_TIMEOUT_S = 2.0
IDLE_TIMEOUT_S = 5.0  # no request yet, or none since the last answer: closed
ACCEPT_BACKOFF_S = (0.05, 2.0)  # out of file descriptors: wait this long, doubling


class _Connection(TCPServer):
    """hypercorn's connection, whose writes a cancel can stop (see the module's docstring),
    and which ends when its client closes (hypercorn's waited for the idle timeout)."""

    async def _read_data(self) -> None:
        await super()._read_data()
        await self.idle_task.stop()  # the client is gone: what waits for its next request ends

    async def protocol_send(self, event: Event) -> None:
        if not isinstance(event, RawData):
            await super().protocol_send(event)
            return
        async with self.send_lock:
            done = False
            try:
                await self.stream.send_all(event.data)
                done = True
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                done = True
                await self.protocol.handle(Closed())
            finally:
                if not done:  # cancelled part-way: the stream is unusable, and the reader must stop
                    self.stream.socket.close()


class HttpServer:
    def __init__(self, face: HttpFace, sock: socket.socket, *, max_connections: int) -> None:
        self.face = face
        self.sock = sock
        self.max_connections = max_connections
        self.connections = 0
        self._stop = trio.Event()
        self._log_budget = LogThrottle(burst=1, window_s=60.0)

    def stop_accepting(self) -> None:
        self.face.serving.stop_accepting()
        self._stop.set()

    def want_mcp(self) -> None:
        """Load the MCP SDK now (in a thread): a child connects to ``/mcp`` soon."""
        self.face.mcp.want()

    def config(self) -> Config:
        config = Config()
        config.accesslog = None
        config.errorlog = logging.getLogger("irisd.http.hypercorn")
        config.include_server_header = False
        config.websocket_max_message_size = MAX_WEBSOCKET_MESSAGE
        config.h11_max_incomplete_size = 16 * 1024  # request line and headers
        config.keep_alive_timeout = IDLE_TIMEOUT_S
        config.wsgi_max_body_size = MAX_BODY_BYTES
        return config

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; after ``stop_accepting``, the connections left get
        ``GRACEFUL_TIMEOUT_S``, then are closed (and ``run`` returns)."""
        config = self.config()
        # (cast: hypercorn types ASGI scopes as TypedDicts, starlette as plain mappings)
        app = ASGIWrapper(cast(Any, self.face))
        context = WorkerContext(None)
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(self.sock.dup()))  # ours to close
        async with trio.open_nursery() as nursery:
            await nursery.start(self.face.mcp.run)
            async with listener, trio.open_nursery() as connections:
                accepting = trio.CancelScope()

                async def accept() -> None:
                    with accepting:
                        await self._accept(listener, connections, functools.partial(_Connection, app, config, context))

                connections.start_soon(accept)
                task_status.started()
                await self._stop.wait()
                accepting.cancel()
                await context.terminated.set()  # idle keep-alive connections close now
                connections.cancel_scope.deadline = trio.current_time() + GRACEFUL_TIMEOUT_S
            nursery.cancel_scope.cancel()

    async def _accept(
        self, listener: trio.SocketListener, connections: trio.Nursery, connection: Callable[..., _Connection]
    ) -> None:
        slots = trio.Semaphore(self.max_connections)
        backoff = ACCEPT_BACKOFF_S[0]
        while True:
            await slots.acquire()
            try:
                stream = await listener.accept()
            except OSError as exc:
                slots.release()
                if exc.errno not in CAPACITY_ERRNOS:
                    raise
                self._warn(exc, backoff)
                await trio.sleep(backoff)
                backoff = min(backoff * 2, ACCEPT_BACKOFF_S[1])
                continue
            backoff = ACCEPT_BACKOFF_S[0]
            connections.start_soon(self._serve, connection, stream, slots)

    async def _serve(
        self, connection: Callable[..., _Connection], stream: trio.SocketStream, slots: trio.Semaphore
    ) -> None:
        self.connections += 1
        try:
            await connection(ConnectionState({}), stream)
        finally:
            stream.socket.close()  # hypercorn's own close is not reached when cancelled
            self.connections -= 1
            slots.release()

    def _warn(self, exc: OSError, retry_in_s: float) -> None:
        allowed, suppressed = self._log_budget.allow(trio.current_time())
        if allowed:
            why = out_of_descriptors(exc.errno, open_file_limit()) or os.strerror(exc.errno or 0)
            log.warning(
                f"cannot accept HTTP clients: {why}",
                extra={"connections": self.connections, "retry_in_s": retry_in_s, "suppressed": suppressed},
            )
