"""The HTTP face as one ASGI app: every request passes the same gate, then goes to its
route. The gate, in order (see security.py for why):

1. at most ``MAX_ACTIVE`` requests and WebSockets at once (503 beyond);
2. ``Host`` must be irisd's own name and port, ``Origin`` (if any) irisd itself (403);
3. ``/health`` answers here, without a token;
4. a token (``Authorization: Bearer``) or the login cookie names the ``Caller``
   (401; 429 after too many failures from one address);
5. bodies are capped (413).

The A2A routes (``/.well-known/agent-card.json``, ``/a2a/...``) keep their own gate after
step 2: their cards are public, their methods take the A2A tokens (irisd/http/a2a.py).

Then: ``/login`` (sets the cookie), ``/`` (a plain page until the dashboard lands),
``/api/openapi.json``, ``/api/events`` (WebSocket), ``/mcp`` (MCP for irisd's own
children), and the ``/api`` table of api.py. Every request is served by the one
``Dispatcher``, with its caller; draining answers new ones with ``shutting_down``.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from irisd.a2a.inbound.service import A2AService
from irisd.caller import OWNER, Caller
from irisd.dispatch import Dispatcher
from irisd.http import a2a as a2a_face
from irisd.http import api
from irisd.http.asgi import ASGIApp, Message, Receive, Scope, Send
from irisd.http.events import serve_events
from irisd.http.security import Allowlist, FailedAuthLimiter, bearer_token, cookie
from irisd.tokens import COOKIE_NAME, Access
from protocol.errors import (
    IrisError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ShuttingDownError,
    TooLargeError,
    UnauthorizedError,
)
from protocol.limits import explain
from protocol.messages import ErrorReply, Event, Reply, Request

log = logging.getLogger("irisd.http")

MAX_BODY_BYTES = 4 * 1024 * 1024  # a tell's message may hold 1,000,000 characters
MAX_ACTIVE = 256  # requests and WebSockets served at once
COOKIE_MAX_AGE_S = 30 * 86400
CALLER_KEY = "iris.caller"  # where the gate leaves the Caller in the ASGI scope

_encoder = msgspec.json.Encoder()
_BASE_HEADERS = [
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # the login URL carries the token
    (b"x-frame-options", b"DENY"),
]
_INDEX = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Iris</title></head>
<body><h1>Iris</h1><p>irisd is running. The API is described at
<a href="/api/openapi.json">/api/openapi.json</a>; live events are on the WebSocket
<code>/api/events</code>.</p></body></html>
"""


class HttpFace:
    """The ASGI app. ``mcp`` serves ``/mcp`` (irisd/http/mcp.py)."""

    def __init__(self, dispatcher: Dispatcher, access: Access, allowlist: Allowlist) -> None:
        self.dispatcher = dispatcher
        self.access = access
        self.allowlist = allowlist
        self.limiter = FailedAuthLimiter()
        self.mcp: ASGIApp | None = None
        self.a2a: ASGIApp = a2a_face.A2AFace(
            A2AService(self.dispatch, lambda: dispatcher.config),
            access,
            a2a_face.owner_teams(self.dispatch),
            self._failed,
        )
        self.index: ASGIApp | None = None  # the dashboard may take over "/"
        self.draining = False
        self.active = 0
        self.in_flight = 0
        self._idle = trio.Event()
        self._idle.set()

    # --- the gate ------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] not in ("http", "websocket"):
            return
        if self.active >= MAX_ACTIVE:
            await refuse(scope, receive, send, ShuttingDownError("irisd serves too many HTTP clients; try again"), 503)
            return
        self.active += 1
        try:
            await self._gate(scope, receive, send)
        except IrisError as exc:
            await refuse(scope, receive, send, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client left
        finally:
            self.active -= 1

    async def _gate(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        host, origin = headers.get("host"), headers.get("origin")
        if not self.allowlist.host_ok(host):
            raise PermissionDeniedError(
                f"Host {host!r} is not irisd; use http://127.0.0.1:{self.allowlist.port} (requests under "
                "another name are refused: DNS rebinding)"
            )
        if not self.allowlist.origin_ok(origin):
            raise PermissionDeniedError(
                f"requests from the web page at {origin!r} are refused; open irisd's own pages instead"
            )
        path = scope["path"]
        if path == "/health" and scope["type"] == "http":
            await respond(send, 200, b'{"status":"ok"}')
            return
        if path == "/login" and scope["type"] == "http":
            await self._login(scope, send)
            return
        if a2a_face.handles(path) and scope["type"] == "http":  # its own gate: public cards, its tokens
            await self.a2a(scope, receive, send)
            return
        caller = self._authenticate(scope, headers)
        scope[CALLER_KEY] = caller
        if scope["type"] == "websocket":
            if path != "/api/events":
                raise NotFoundError(f"no WebSocket at {path}; live events are at /api/events")
            await serve_events(self, scope, receive, send, caller)
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            raise TooLargeError(f"the request body is over the {MAX_BODY_BYTES} byte limit")
        await self._route(scope, receive, send, caller)

    def _authenticate(self, scope: Scope, headers: dict[str, str]) -> Caller:
        token = bearer_token(headers.get("authorization"))
        session = cookie(headers.get("cookie"), COOKIE_NAME)
        caller = None
        if token is not None:
            caller = self.access.caller_for_token(token)
        elif session is not None:
            caller = self.access.caller_for_cookie(session)
        if caller is not None:
            return caller
        self._failed(scope)
        if token is None and session is None:
            raise UnauthorizedError(
                "this needs irisd's token: send 'Authorization: Bearer TOKEN' ('iris http token' prints it), "
                "or open the URL 'iris dashboard --print' prints to log in"
            )
        raise UnauthorizedError(
            "the token is not valid (rotated, or of a claude process that has stopped); "
            "'iris http token' prints the current one"
        )

    def _failed(self, scope: Scope) -> None:
        client = (scope.get("client") or ("?", 0))[0]
        now = trio.current_time()
        if self.limiter.limited(client, now):
            wait = self.limiter.retry_after(client, now)
            raise RateLimitedError(f"too many failed authentications from {client}; try again in {wait:.0f} s")
        self.limiter.failed(client, now)
        log.info("refused an HTTP request without a valid token", extra={"client": client, "path": scope["path"]})

    async def _login(self, scope: Scope, send: Send) -> None:
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [""])[0]
        code = (query.get("code") or [""])[0]
        owner = bool(token) and self.access.caller_for_token(token) == OWNER
        if not owner and not self.access.use_login_code(code):
            self._failed(scope)
            raise UnauthorizedError("this login link is not valid (the token was rotated?); run 'iris dashboard' again")
        cookie_header = (
            f"{COOKIE_NAME}={self.access.cookie}; HttpOnly; SameSite=Strict; Path=/; Max-Age={COOKIE_MAX_AGE_S}"
        )
        extra = [(b"location", b"/"), (b"set-cookie", cookie_header.encode())]
        await respond(send, 303, b"", content_type=b"text/plain", extra=extra)

    # --- routes ------------------------------------------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        path, method = scope["path"], scope["method"]
        if path in ("/mcp", "/mcp/") and self.mcp is not None:
            await self.mcp(scope, _capped(receive), send)
            return
        if method == "GET" and self.index is not None and (path == "/" or path.startswith("/static/")):
            await self.index(scope, receive, send)  # the dashboard's page and files
            return
        if path == "/" and method == "GET":
            await respond(send, 200, _INDEX, content_type=b"text/html; charset=utf-8")
            return
        if path == "/api/openapi.json" and method == "GET":
            await respond(send, 200, msgspec.json.encode(api.openapi()))
            return
        try:
            found = api.find(method, path)
        except api.MethodNotAllowed as exc:
            error = ErrorReply(code="method_not_allowed", message=f"{method} is not allowed on {path}; use {exc}")
            await respond(send, 405, _encoder.encode(error), extra=[(b"allow", str(exc).encode())])
            return
        if found is None:
            raise NotFoundError(f"no route {method} {path}; see /api/openapi.json")
        request = build_request(found, scope, await read_body(receive, found.route.max_body or MAX_BODY_BYTES))
        reply = await self.dispatch(request, caller)
        await respond(send, 200, _encoder.encode(reply))

    async def dispatch(
        self, request: Request, caller: Caller, send_event: Callable[[Event], Awaitable[None]] | None = None
    ) -> Reply:
        """One request through the core, counted for the drain; IrisError for the client."""
        if self.draining:
            raise ShuttingDownError("irisd is stopping; send this again once it is back")
        self.in_flight += 1
        self._idle = trio.Event()
        try:
            return await self.dispatcher.dispatch(request, caller, send_event or _drop)
        except IrisError:
            raise
        except Exception as exc:
            log.exception("HTTP request failed", extra={"request": type(request).__name__})
            raise IrisError(f"irisd failed on this request ({type(exc).__name__}: {exc}); see the irisd log") from None
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    async def wait_idle(self) -> None:
        while self.in_flight:
            await self._idle.wait()


def build_request(found: api.Match, scope: Scope, body: bytes) -> Request:
    route = found.route
    query = None
    if route.query is not None:
        raw = urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        values = {key: value for key, value in raw if value != ""}
        query = _convert(values, route.query, "query string")
    parsed = None
    if route.body is not None:
        parsed = _decode(body if body.strip() else b"{}", route.body)  # no body: the defaults, if it has them
    elif body.strip():
        raise _invalid(f"{route.method} {route.path} takes no body")
    return route.build(found.params, query, parsed)


def _convert(values: dict[str, str], kind: type[Any], where: str) -> Any:
    try:
        return msgspec.convert(values, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise _invalid(f"invalid {where}: {exc}") from None


def _decode(body: bytes, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise _invalid(f"invalid body: {explain(exc, [kind]) or exc}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _invalid(f"the body is not JSON: {exc}") from None


def _invalid(message: str) -> IrisError:
    from protocol.errors import InvalidRequestError

    return InvalidRequestError(message)


async def read_body(receive: Receive, limit: int = MAX_BODY_BYTES) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise trio.BrokenResourceError("the client left")
        body += message.get("body", b"")
        if len(body) > limit:
            raise TooLargeError(f"the request body is over the {limit} byte limit")
        if not message.get("more_body"):
            return bytes(body)


def _capped(receive: Receive, limit: int = MAX_BODY_BYTES) -> Receive:
    """A receive that fails once more than ``limit`` body bytes arrived (chunked bodies)."""
    seen = 0

    async def capped() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise TooLargeError(f"the request body is over the {limit} byte limit")
        return message

    return capped


async def _drop(event: Event) -> None:
    pass


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name; a repeated header keeps its first value."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


async def respond(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: bytes = b"application/json",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *_BASE_HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


async def refuse(scope: Scope, receive: Receive, send: Send, error: IrisError, status: int | None = None) -> None:
    """An error as JSON, on a plain request or as the answer to a WebSocket upgrade."""
    status = status or api.http_status(error.code)
    body = _encoder.encode(ErrorReply(code=error.code, message=error.message))
    extra = [(b"www-authenticate", b'Bearer realm="irisd"')] if status == 401 else []
    if isinstance(error, RateLimitedError):
        extra.append((b"retry-after", b"60"))
    try:
        if scope["type"] == "websocket":
            if not scope.get("iris.accepted"):
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "websocket.http.response.start", "status": status, "headers": headers + extra})
                await send({"type": "websocket.http.response.body", "body": body})
            return
        if scope.get("iris.responded"):
            return
        await respond(send, status, body, extra=extra)
    except (OSError, RuntimeError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the client is gone, or the response had started: nothing more to say


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
