"""irisd's HTTP server: hypercorn's public ``hypercorn.trio.serve`` running the HttpFace
inside irisd's own nursery and ``trio.run``.

The socket is bound before the core starts (``open_http_socket``), so a port already
taken stops irisd at once with an error naming ``settings.httpPort``, and the children
the core spawns already know the URL. hypercorn serves it through an ``fd://`` bind of a
duplicate of that socket: hypercorn owns (and closes) the duplicate, the daemon its own.
hypercorn marks a socket it was given that way inheritable (for its reloader's
workers); it is made non-inheritable again once hypercorn listens, so that nothing irisd
starts could hold the port (its children are spawned with ``close_fds`` anyway).

``HttpServer.run`` serves until cancelled; ``stop_accepting`` begins the drain: the
listener closes, new requests get ``shutting_down`` (``Serving``, shared with the
socket), and the daemon waits for those in flight (``Serving.wait_idle``).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from irisd.http.app import MAX_BODY_BYTES, HttpFace
from irisd.http.security import url_host
from irisd.throttle import LogThrottle
from protocol.errors import IrisError

log = logging.getLogger("irisd.http")

BACKLOG = 128
MAX_WEBSOCKET_MESSAGE = 64 * 1024  # clients of /api/events have nothing big to say
GRACEFUL_TIMEOUT_S = 2.0


class HttpError(IrisError):
    code = "http"


def open_http_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one); HttpError naming
    the setting to change when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise HttpError(
            f"settings.httpHost {host!r} is not an address of this machine ({exc.strerror}); use 127.0.0.1"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of our last run only
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise HttpError(
                f"settings.httpPort {port} is already in use on {host} (another irisd, or another program); "
                "set settings.httpPort in config.yaml to a free port, or 0 for any free port"
            ) from None
        raise HttpError(
            f"cannot listen on {host}:{port} ({exc.strerror}); check settings.httpHost and settings.httpPort"
        ) from None
    sock.setblocking(False)
    return sock


def socket_url(sock: socket.socket) -> tuple[str, int]:
    """The host (as in a URL) and port a bound socket listens on."""
    host, port = sock.getsockname()[:2]
    return url_host(host), port


class QuietAcceptErrors(logging.Filter):
    """trio's accept loop (``trio.serve_listeners``, under hypercorn) logs a failed accept,
    EMFILE when irisd is out of file descriptors, at ERROR with its traceback, and tries
    again every 100 ms: ten tracebacks a second, caused by clients. Here it is one line at
    WARNING, without the traceback, at most ``burst`` a minute (the next one says how many
    were left out)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, burst: int = 1) -> None:
        super().__init__()
        self.clock = clock
        self.throttle = LogThrottle(burst=burst, window_s=60.0)

    def filter(self, record: logging.LogRecord) -> bool:
        allowed, suppressed = self.throttle.allow(self.clock())
        if not allowed:
            return False
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        if suppressed:
            record.similar_lines_suppressed = suppressed  # as irisd.server says it
        return True


ACCEPT_LOG = logging.getLogger("trio.serve_listeners")


def quiet_accept_errors() -> None:
    """Install ``QuietAcceptErrors`` on trio's accept loop logger, once."""
    if not any(isinstance(f, QuietAcceptErrors) for f in ACCEPT_LOG.filters):
        ACCEPT_LOG.addFilter(QuietAcceptErrors())


class HttpServer:
    def __init__(self, face: HttpFace, sock: socket.socket) -> None:
        self.face = face
        self.sock = sock
        self._stop = trio.Event()

    def stop_accepting(self) -> None:
        self.face.serving.stop_accepting()
        self._stop.set()

    def config(self) -> Config:
        config = Config()
        config.backlog = BACKLOG
        config.accesslog = None
        config.errorlog = logging.getLogger("irisd.http.hypercorn")
        config.include_server_header = False
        config.websocket_max_message_size = MAX_WEBSOCKET_MESSAGE
        config.h11_max_incomplete_size = 16 * 1024  # request line and headers
        config.graceful_timeout = GRACEFUL_TIMEOUT_S
        config.keep_alive_timeout = 30.0
        config.wsgi_max_body_size = MAX_BODY_BYTES
        return config

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (or drained by ``stop_accepting``)."""
        config = self.config()
        quiet_accept_errors()
        fd = os.dup(self.sock.fileno())
        config.bind = [f"fd://{fd}"]
        async with trio.open_nursery() as nursery:
            await nursery.start(self.face.mcp.run)
            # (cast: hypercorn types ASGI scopes as TypedDicts, starlette as plain mappings)
            app = cast(Any, self.face)
            await nursery.start(functools.partial(serve, app, config, shutdown_trigger=self._stop.wait, mode="asgi"))
            os.set_inheritable(fd, False)
            task_status.started()
