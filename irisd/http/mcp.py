"""``/mcp``: the Iris MCP tools over streamable HTTP, for irisd's own claude children.

A child gets ``{"type": "http", "url": ".../mcp", "headers": {"Authorization": "Bearer
<its token>"}}`` in a 0600 ``--mcp-config`` file (irisd/tokens.py). The gate
(gate.py) turns the token into the child's ``Caller``; each tool call then runs the
same ``Shim`` as the stdio ``iris mcp`` (iris_mcp/shim.py), with a ``ServingLink``
that hands its requests to ``Serving`` (irisd/serving.py) in process, with that caller. So the child
speaks as its own team, its tells are linked to the tell it is answering, and its
token dies with it. The owner's token works here too (as the external caller, free to
name any team).

Why HTTP: a stdio MCP server is a Python process per child, and importing the MCP SDK
costs about a second of CPU before the child can take its first turn; here irisd
pays it once. It is imported in a worker thread when the first child is spawned (or the
first request for /mcp comes), so an irisd that spawns nobody never pays it and one that
does is ready at once; a request that comes before the import finished waits for it.

The SDK's ``StreamableHTTPSessionManager`` runs stateless (each POST is served on its
own; no session to expire or to leak when a child dies), answering with an SSE stream,
so a tell's progress notifications reach the child while it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from irisd.caller import Caller
from irisd.http.gate import CALLER_KEY
from protocol.errors import BusyError
from protocol.messages import Event, Reply, Request

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from starlette.types import Receive, Scope, Send

    from iris_mcp.shim import Shim
    from irisd.serving import Serving

log = logging.getLogger("irisd.http.mcp")

LOAD_TIMEOUT_S = 60.0  # a loaded machine may take long to import the SDK
MAX_MCP_BODY_BYTES = 4 * 1024 * 1024


class ServingLink:
    """The Shim's requests, served in process as ``caller``."""

    def __init__(self, serving: Serving, caller: Caller) -> None:
        self.serving = serving
        self.caller = caller

    async def call(
        self,
        request: Request,
        *,
        idempotent: bool,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        start_daemon: bool = True,
    ) -> Reply:
        return await self.serving.serve(request, self.caller, on_event)


class McpEndpoint:
    def __init__(self, serving: Serving) -> None:
        self.serving = serving
        self.ready = trio.Event()
        self._wanted = trio.Event()
        self._manager: Any = None

    def want(self) -> None:
        """Start loading the SDK now (a child is being spawned). Idempotent, never blocks."""
        self._wanted.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Once wanted, load the SDK (in a thread), then serve MCP sessions until cancelled."""
        task_status.started()
        await self._wanted.wait()
        started = trio.current_time()
        await trio.to_thread.run_sync(_import_sdk)
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from iris_mcp.shim import build_server

        self._manager = StreamableHTTPSessionManager(
            app=build_server(self._shim_for, principal=_principal),
            stateless=True,
            max_request_body_size=MAX_MCP_BODY_BYTES,
        )
        async with self._manager.run():
            self.ready.set()
            log.info("MCP over HTTP ready", extra={"load_s": round(trio.current_time() - started, 3)})
            await trio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.want()
        with trio.move_on_after(LOAD_TIMEOUT_S):
            await self.ready.wait()
        if not self.ready.is_set():
            raise BusyError("Iris's MCP server is still starting; try again in a moment")
        await self._manager.handle_request(scope, receive, send)

    def _shim_for(self, ctx: ServerRequestContext[Any]) -> Shim:
        request = ctx.request
        return shim_for(self.serving, request.scope[CALLER_KEY])  # type: ignore[union-attr]  # set by the gate


def shim_for(serving: Serving, caller: Caller) -> Shim:
    """The tools as ``caller`` (named by its token) uses them: its requests served in process."""
    from iris_mcp.identity import Identity
    from iris_mcp.shim import Shim

    link = ServingLink(serving, caller)
    if caller.kind == "reader":  # iris-agent: the tools that read, and those irisd files as approvals
        return Shim(link, identity=Identity(None, "owner"), read_only=True, proposes=True, may_decide=False)
    owner = Identity(None, "owner")
    identity = owner if caller.is_owner else Identity(caller.team, "token", pair=caller.pair)
    # Only the person decides approvals: a team's child is never asked to (it may not).
    return Shim(link, identity=identity, may_decide=caller.is_owner)


def _principal(ctx: ServerRequestContext[Any]) -> str:
    """Who called, to bind the requestState of an approval asked of them: another caller
    (a child's token, another team) cannot answer it."""
    caller: Caller = ctx.request.scope[CALLER_KEY]  # type: ignore[union-attr]  # set by the gate
    return f"{caller.kind}:{caller.team or ''}:{caller.pair}"


def _import_sdk() -> None:
    # iris_mcp.shim first: it loads the SDK lean (iris_mcp/sdk.py), without its client parts.
    import iris_mcp.shim  # noqa: F401, I001
    import mcp.server.streamable_http_manager  # noqa: F401
