"""The daemon's root: opens the store and the socket, runs the core services and the
server, tells systemd how it is doing, and drains on request.

Stopping (``request_stop``, on SIGTERM/SIGINT) drains in order, so every caller still
hears what became of its tell:

1. the servers (the Unix socket, HTTP) stop accepting; connected clients' new
   requests get ShuttingDownError;
2. the core is cancelled: every pair stops its claude child's process group and
   records its unfinished tells as interrupted, which answers the callers waiting on
   them;
3. those answers are sent (at most ``REPLY_GRACE_S``), then the connections close.

Cancelling ``run`` instead stops everything at once; children are still stopped and
tells still recorded (that cleanup is shielded), only the waiting callers get no reply.
"""

from __future__ import annotations

import functools
import importlib
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths
from irisd.claude.containment import Containment
from irisd.claude.launcher import marked_claude_child
from irisd.core import Services, run_core
from irisd.fds import http_connection_limit, open_file_limit
from irisd.home_lock import hold_home_lock
from irisd.http.door import HttpDoor, open_http_socket, socket_url
from irisd.http.security import Allowlist, host_names
from irisd.serving import Serving
from irisd.socket_server import Server, SocketError, open_unix_listener, prepare_socket_dir
from irisd.store.facade import Store
from irisd.systemd import (
    Notifier,
    SystemdEnv,
    SystemdError,
    inherited_listener,
    serve_watchdog,
    socket_path_of,
)
from irisd.tokens import Access

if TYPE_CHECKING:
    from irisd.http.listener import HttpServer
from protocol.errors import IrisError

log = logging.getLogger("irisd")

REPLY_GRACE_S = 2.0


class Daemon:
    def __init__(
        self,
        config: IrisConfig,
        paths: IrisPaths,
        *,
        systemd: SystemdEnv | None = None,
        allowed_uid: int | None = None,
    ) -> None:
        self.config = config
        self.paths = paths
        self.systemd = systemd or SystemdEnv()
        self.allowed_uid = allowed_uid
        self.notifier = Notifier(self.systemd.notify_socket)
        self._stop_requested = trio.Event()
        self._services: Services | None = None

    async def reload(self) -> None:
        """SIGHUP: read config.yaml again (what it did, or why not, goes to the log and
        ``iris status``; a bad file never stops irisd)."""
        if self._services is None:
            log.warning("SIGHUP before irisd was ready; ignored (send it again)")
            return
        self.notifier.send(RELOADING=1, STATUS="reloading config.yaml")
        try:
            await self._services.reload()
        except IrisError:
            pass  # logged, and shown by iris status
        finally:
            self.notifier.send(READY=1, STATUS=f"serving {len(self._services.current.config.teams)} teams")

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def request_stop(self) -> None:
        """Drain and return from ``run`` (see the module's docstring). Idempotent."""
        self._stop_requested.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until ``request_stop`` (drains, then returns) or cancellation.

        Reports started once the socket and the database are open and clients are
        served; that is also when systemd hears READY=1. Raises HomeInUseError,
        SocketError or StoreError when it cannot start.
        """
        with hold_home_lock(self.paths.database.parent):  # before the socket: a twin stops here
            store = await Store.open(self.paths.database)
            try:
                listener, owned_socket = await self._listen()
                try:
                    settings = self.config.settings
                    # Bound before the core starts: a taken port fails here, and children know the URL.
                    with open_http_socket(settings.http_host, settings.http_port) as http_socket:
                        access = self._access(http_socket)
                        await self._serve(store, listener, http_socket, access, task_status)
                finally:
                    if owned_socket is not None:  # systemd's socket outlives us: not ours to remove
                        owned_socket.unlink(missing_ok=True)
            finally:
                store.close()
                self.notifier.close()

    def _access(self, http_socket: socket.socket) -> Access:
        access = Access.open(self.paths.home)
        host, port = socket_url(http_socket)
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1" if host == "0.0.0.0" else "[::1]"
        access.url = access.child_url = f"http://{host}:{port}"
        return access

    async def _listen(self) -> tuple[trio.SocketListener, Path | None]:
        """systemd's socket when activated, else our own; and the path we must remove."""
        if not self.systemd.listen_fds:
            return await open_unix_listener(self.paths.socket), self.paths.socket
        try:
            listener = inherited_listener()
        except SystemdError as exc:
            raise SocketError(str(exc)) from None
        bound = socket_path_of(listener)
        if bound:
            prepare_socket_dir(Path(bound).parent)
        if bound != str(self.paths.socket):
            log.warning(
                "systemd's socket is not where clients look for it; set IRIS_SOCKET to the same path",
                extra={"activated_socket": bound, "clients_socket": str(self.paths.socket)},
            )
        log.info("serving the socket systemd passed", extra={"socket": bound, "fds": self.systemd.listen_fds})
        return listener, None

    async def _serve(
        self,
        store: Store,
        listener: trio.SocketListener,
        http_socket: socket.socket,
        access: Access,
        task_status: trio.TaskStatus[None],
    ) -> None:
        async with trio.open_nursery() as nursery:
            # First: what an earlier run left is stopped before any pair starts; last out:
            # what this run's children left is stopped after the core has drained.
            containment = Containment(self.paths.home)
            await nursery.start(containment.serve)
            core_scope, core_done = trio.CancelScope(), trio.Event()
            services = await nursery.start(self._run_core, store, access, containment, core_scope, core_done)
            self._services = services
            serving = Serving(services.dispatcher)  # one serve path for the socket and HTTP
            server = Server(listener, serving, allowed_uid=self.allowed_uid)
            await nursery.start(server.run)
            port = socket_url(http_socket)[1]
            allowlist = Allowlist(host_names(self.config.settings.http_host), port)
            socket_clients = server.limits.max_clients + server.limits.reserve
            max_connections = http_connection_limit(open_file_limit(), socket_clients)

            def http_server() -> HttpServer:  # once the face is needed (irisd/http/door.py)
                from irisd.http.app import HttpFace
                from irisd.http.listener import HttpServer

                face = HttpFace(serving, access, allowlist, config=lambda: services.current.config)
                return HttpServer(face, http_socket, max_connections=max_connections)

            http = HttpDoor(http_socket, functools.partial(importlib.import_module, "irisd.http.listener"), http_server)
            access.on_grant = http.want_face  # a child is being spawned: it connects to /mcp next
            await nursery.start(http.run)
            self.notifier.ready(f"serving {len(self.config.teams)} teams")
            if self.systemd.watchdog_s is not None:
                await nursery.start(serve_watchdog, self.notifier, self.systemd.watchdog_s)
            log.info(
                "irisd ready",
                extra={"socket": str(self.paths.socket), "http": access.url, "teams": sorted(self.config.teams)},
            )
            task_status.started()
            if self.config.settings.preload_mcp and any(not team.a2a for team in self.config.teams.values()):
                http.want_mcp()  # after readiness, in a thread: the first child's /mcp finds it loaded
            await self._stop_requested.wait()
            await self._drain(serving, server, http, core_scope, core_done)
            nursery.cancel_scope.cancel()

    async def _run_core(
        self,
        store: Store,
        access: Access,
        containment: Containment,
        scope: trio.CancelScope,
        done: trio.Event,
        *,
        task_status: trio.TaskStatus[Services] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            with scope:
                await run_core(
                    self.config, self.paths, store, access=access,
                    child_factory=marked_claude_child(containment.new_marker, containment.reaper),
                    task_status=task_status,
                )
        finally:
            done.set()

    async def _drain(
        self, serving: Serving, server: Server, http: HttpDoor, core_scope: trio.CancelScope, core_done: trio.Event
    ) -> None:
        log.info("draining", extra={"requests_in_flight": serving.in_flight})
        self.notifier.stopping("draining: interrupting tells, stopping claude processes")
        server.stop_accepting()
        http.stop_accepting()
        core_scope.cancel()
        await core_done.wait()
        with trio.move_on_after(REPLY_GRACE_S):
            await serving.wait_idle()
        log.info("drained", extra={"requests_unanswered": serving.in_flight})
