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
costs about a second of CPU before the child can take its first turn. Here irisd answers
what a claude child sends (protocol 2026-07-28) without the SDK: ``server/discover`` and
``tools/list`` as it starts (``iris_mcp/listing.py``), and a ``tools/call`` of the plain
shape claude sends (``iris_mcp/fastpath.py`` reads it; no ``requestState``, the headers
the SDK checks in agreement), run on the same ``Shim`` and ``StateSeal`` as the SDK's
path (``iris_mcp/fastcall.py``) and answered as the SDK's stateless
``StreamableHTTPSessionManager`` answers it, byte for byte (a test compares): JSON when
the call ends with nothing to stream, else an event stream (its progress notifications
as the tell runs, a ping each SSE_PING_INTERVAL_S of silence, then the answer); the
client leaving cancels the call and its tell. Any other request (a form's answer, an
older client, a shape only the SDK reads) loads the SDK (in a worker thread; the request
waits for it), as does ``settings.preloadMcp`` (off by default) once irisd is ready. The
SDK runs stateless: each POST is served on its own; no session to expire or to leak when
a child dies.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from irisd.caller import Caller
from irisd.http.gate import CALLER_KEY
from protocol.codec import UNDECODABLE
from protocol.errors import BusyError
from protocol.messages import Event, Reply, Request

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from starlette.types import Message, Receive, Scope, Send

    from iris_mcp.fastpath import FastRequest
    from iris_mcp.progress_sender import ReportProgress
    from iris_mcp.shim import Shim, StateSeal
    from irisd.serving import Serving

log = logging.getLogger("irisd.http.mcp")

LOAD_TIMEOUT_S = 60.0  # a loaded machine may take long to import the SDK
MAX_MCP_BODY_BYTES = 4 * 1024 * 1024
# How the SDK's stateless streamable HTTP answers a request of the 2026-07-28 era
# (mcp/server/_streamable_http_modern.py; tests/subsystem/test_mcp_http_fastpath.py compares):
SSE_PING_INTERVAL_S = 15.0  # a call silent this long commits the event stream (then pinged as often)
SSE_PING = b": ping\r\n\r\n"
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
               (b"connection", b"keep-alive"), (b"x-accel-buffering", b"no")]
ERROR_HTTP_STATUS = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32021: 400, -32022: 400, -32601: 404}
ROUTING_HEADERS = (b"mcp-method", b"mcp-protocol-version", b"mcp-name")


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
        self._seal: StateSeal | None = None

    def want(self) -> None:
        """Start loading the SDK now (a child is being spawned). Idempotent, never blocks."""
        self._wanted.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Once wanted, load the SDK (in a thread), then serve MCP sessions until cancelled."""
        task_status.started()
        await self._wanted.wait()
        started = trio.current_time()
        from iris_mcp.sdk import import_server

        await trio.to_thread.run_sync(partial(import_server, http=True))
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from iris_mcp.shim import build_server

        self._manager = StreamableHTTPSessionManager(
            app=build_server(self._shim_for, seal=self.seal),
            stateless=True,
            max_request_body_size=MAX_MCP_BODY_BYTES,
        )
        async with self._manager.run():
            self.ready.set()
            log.info("MCP over HTTP ready", extra={"load_s": round(trio.current_time() - started, 3)})
            await trio.sleep_forever()

    @property
    def seal(self) -> StateSeal:
        """The seal of every ``requestState`` this endpoint hands out, the fast path's and
        the SDK's alike (a form asked on one is answered on the other), bound to the caller."""
        if self._seal is None:
            from iris_mcp.shim import StateSeal

            self._seal = StateSeal(_principal)
        return self._seal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        replay = await self._answer_fast(scope, receive, send)
        if replay is None:
            return
        receive = replay
        self.want()
        with trio.move_on_after(LOAD_TIMEOUT_S):
            await self.ready.wait()
        if not self.ready.is_set():
            raise BusyError("Iris's MCP server is still starting; try again in a moment")
        await self._manager.handle_request(scope, receive, send)

    async def _answer_fast(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer a ``server/discover``, ``tools/list`` or ``tools/call`` of protocol
        2026-07-28 without the SDK (None: answered); else the request's ``receive`` for the
        SDK, its body read again if it was read here."""
        from iris_mcp.listing import MODERN_VERSION

        headers = dict(scope.get("headers", ()))
        method = headers.get(b"mcp-method", b"").decode(errors="replace")
        if scope.get("method") != "POST" or headers.get(b"mcp-protocol-version") != MODERN_VERSION.encode():
            return receive
        if method in LISTING:
            if b"application/json" not in headers.get(b"accept", b""):
                return receive
            return await self._answer_listing(method, scope, receive, send)
        if method != "tools/call" or not _plain_call_headers(scope.get("headers", ())):
            return receive
        body, replay = await _read_body(receive)
        if body is None:
            return replay
        from iris_mcp.fastpath import FastRequest, read_line

        request = read_line(body)
        if not (isinstance(request, FastRequest) and request.method == method
                and request.protocol_version == MODERN_VERSION
                and headers.get(b"mcp-name", b"").decode("latin-1") == request.name
                and not request.name.startswith("=?")):  # a name the SDK reads base64-encoded in the header
            return replay
        await self._answer_call(request, scope, receive, send)
        return None

    async def _answer_listing(self, method: str, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        from iris_mcp.listing import MODERN_VERSION

        body, replay = await _read_body(receive)
        if body is None:
            return replay
        try:
            message = msgspec.json.decode(body)
        except UNDECODABLE:  # the SDK answers it as it answers any body that is no JSON
            return replay
        if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and message.get("method") == method
                and isinstance(message.get("id"), str | int) and not isinstance(message.get("id"), bool)
                and _version_of(message) in (None, MODERN_VERSION)):
            return replay
        result = LISTING[method](scope[CALLER_KEY])
        payload = msgspec.json.encode({"jsonrpc": "2.0", "id": message["id"], "result": result})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})
        return None

    async def _answer_call(self, request: FastRequest, scope: Scope, receive: Receive, send: Send) -> None:
        """Run a fast ``tools/call`` as its caller and answer it as the SDK's stateless
        streamable HTTP answers one: JSON if the call ends before it has anything to
        stream, else an event stream (its progress, a ping each SSE_PING_INTERVAL_S of
        silence, then the answer). The client leaving cancels the call (and its tell)."""
        from iris_mcp import fastpath
        from iris_mcp.fastcall import CallContext, call_tool
        from iris_mcp.listing import SERVER_INFO

        caller: Caller = scope[CALLER_KEY]
        log.debug("a tools/call answered without the SDK", extra={"tool": request.name, "caller": caller.kind})
        shim = shim_for(self.serving, caller)
        context = CallContext(request.method, request.params, _HttpRequest(scope))
        events_in, events = trio.open_memory_channel[bytes](0)  # unbuffered, as the SDK's
        answer: list[dict[str, Any]] = []
        report: ReportProgress = None
        token = request.progress_token
        if token is not None:

            async def report_progress(value: float, message: str) -> None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await events_in.send(_sse_event(fastpath.progress_message(token, value, message)))

            report = report_progress

        async def run_call() -> None:
            async with events_in:
                try:
                    result = await call_tool(shim, self.seal, request, report, context)
                except fastpath.FastError as exc:  # the seal refused (as the SDK's path answers it)
                    answer.append(fastpath.error_message(request.id, exc.code, exc.message, exc.data))
                except Exception:
                    log.exception("tools/call failed")
                    answer.append(fastpath.error_message(request.id, fastpath.INTERNAL_ERROR, "Internal server error"))
                else:
                    answer.append(fastpath.response_message(request.id, fastpath.complete(result, SERVER_INFO)))

        async def watch_disconnect(cancel_scope: trio.CancelScope) -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            cancel_scope.cancel()

        async with trio.open_nursery() as nursery, events:
            nursery.start_soon(run_call)
            nursery.start_soon(watch_disconnect, nursery.cancel_scope)
            event, done = await _next_event(events)
            if done:
                await _json_response(answer[0], scope, receive, send)
            else:
                streamed = {"tool": request.name, "progress": event is not None}  # else a ping: silent for long
                log.debug("streaming a tools/call's answer", extra=streamed)
                await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
                while not done:
                    await send({"type": "http.response.body", "body": event or SSE_PING, "more_body": True})
                    event, done = await _next_event(events)
                await send({"type": "http.response.body", "body": _sse_event(answer[0]), "more_body": False})
            nursery.cancel_scope.cancel()

    def _shim_for(self, ctx: ServerRequestContext[Any]) -> Shim:
        request = ctx.request
        return shim_for(self.serving, request.scope[CALLER_KEY])  # type: ignore[union-attr]  # set by the gate


def shim_for(serving: Serving, caller: Caller) -> Shim:
    """The tools as ``caller`` (named by its token) uses them: its requests served in process."""
    from iris_mcp.identity import Identity
    from iris_mcp.shim import Shim

    link = ServingLink(serving, caller)
    if _reads_only(caller):
        return Shim(link, identity=Identity(None, "owner"), read_only=True, proposes=True, may_decide=False)
    owner = Identity(None, "owner")
    identity = owner if caller.is_owner else Identity(caller.team, "token", pair=caller.pair)
    # Only the person decides approvals: a team's child is never asked to (it may not).
    return Shim(link, identity=identity, may_decide=caller.is_owner)


def _reads_only(caller: Caller) -> bool:
    """iris-agent's token: the tools that read, and those irisd files as approvals (proposes)."""
    return caller.kind == "reader"


def _principal(ctx: ServerRequestContext[Any]) -> str:
    """Who called, to bind the requestState of an approval asked of them: another caller
    (a child's token, another team) cannot answer it."""
    caller: Caller = ctx.request.scope[CALLER_KEY]  # type: ignore[union-attr]  # set by the gate
    return f"{caller.kind}:{caller.team or ''}:{caller.pair}"


def _discover(caller: Caller) -> dict[str, Any]:
    from iris_mcp.listing import discover_result

    return discover_result()


def _tools(caller: Caller) -> dict[str, Any]:
    from iris_mcp.listing import list_result, offered_tools

    reader = _reads_only(caller)  # the tools shim_for's Shim offers this caller
    return list_result(offered_tools(read_only=reader, proposes=reader))


LISTING: dict[str, Callable[[Caller], dict[str, Any]]] = {"server/discover": _discover, "tools/list": _tools}


@dataclass
class _HttpRequest:
    """What ``_principal`` reads of a fast call's HTTP request: its scope (the caller)."""

    scope: Scope


def _plain_call_headers(raw: Iterable[tuple[bytes, bytes]]) -> bool:
    """A ``tools/call``'s headers pass every check the SDK makes of them before it calls
    the tool: a JSON body, answers taken as JSON and as an event stream, each routing header
    once, no ``Mcp-Param-*`` header (Iris's tools declare none)."""
    seen: list[bytes] = []
    accept = content_type = b""
    for name, value in raw:
        seen.append(name)
        if name == b"accept":
            accept = value
        elif name == b"content-type":
            content_type = value
    types = [part.split(b";")[0].strip().lower() for part in accept.split(b",")]
    takes_json = any(t in (b"*/*", b"application/json", b"application/*") for t in types)
    takes_sse = any(t in (b"*/*", b"text/event-stream", b"text/*") for t in types)
    return (content_type.lower().startswith(b"application/json") and takes_json and takes_sse
            and all(seen.count(name) == 1 for name in ROUTING_HEADERS)
            and not any(name.startswith(b"mcp-param-") for name in seen))


async def _next_event(events: trio.MemoryReceiveChannel[bytes]) -> tuple[bytes | None, bool]:
    """The call's next event (None: SSE_PING_INTERVAL_S went by without one), and whether
    the call is done instead."""
    with trio.move_on_after(SSE_PING_INTERVAL_S):
        try:
            return await events.receive(), False
        except trio.EndOfChannel:
            return None, True
    return None, False


def _dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))  # the SDK's own encoding (ASCII, no spaces)


def _sse_event(message: dict[str, Any]) -> bytes:
    return f"event: message\r\ndata: {_dumps(message)}\r\n\r\n".encode()


async def _json_response(message: dict[str, Any], scope: Scope, receive: Receive, send: Send) -> None:
    from starlette.responses import Response

    error = message.get("error")
    status = ERROR_HTTP_STATUS.get(error["code"], 200) if error is not None else 200
    await Response(_dumps(message), status_code=status, media_type="application/json")(scope, receive, send)


def _version_of(message: dict[str, Any]) -> object:
    """The protocol version a request of the 2026-07-28 era names in its ``_meta``, if any."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None


async def _read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The request's body (None if it is over MAX_MCP_BODY_BYTES or the client left), and a
    ``receive`` that hands it on again, for the SDK."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None, _replaying([message], receive)
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        more = message.get("more_body", False)
        if size > MAX_MCP_BODY_BYTES:
            break
    body = b"".join(chunks)
    read: list[Message] = [{"type": "http.request", "body": body, "more_body": more}]
    return (None if more else body), _replaying(read, receive)


def _replaying(first: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return first.pop(0) if first else await receive()

    return replay
