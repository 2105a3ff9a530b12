"""The gate of the HTTP face: the ASGI middleware every request and WebSocket passes
before it reaches a route, outermost first (security.py says why each check):

1. ``SecurityHeaders``: every response carries the same headers (no caching, no
   sniffing, no referrer, never framed, a content security policy);
2. ``Refusals``: an ``IrisError`` raised anywhere below is answered as JSON (``{"type":
   "error", "code", "message"}``, the socket's codes, an HTTP status per code), or as a
   JSON-RPC error to a JSON-RPC caller (the A2A face's POSTs), whose client reads no
   other form; on a WebSocket upgrade, as the HTTP answer refusing it. A client that left
   is dropped quietly; any other error is a bug, logged once and answered 500;
3. ``CheckHost``: ``Host`` must be irisd's own name and port, ``Origin`` (if any) irisd
   itself (403);
4. ``Authenticate``: a token (``Authorization: Bearer``) or the login cookie names the
   ``Caller``, left in the scope under ``CALLER_KEY`` (401; 429 after too many failures
   from one address). A POST with the cookie must be ``application/json`` (415): a web
   page can make a browser send a form or text/plain with its cookies, never JSON.
   Only the public paths pass without (``/health``, ``/login``, and
   the A2A face, which authenticates its own callers);
5. ``LimitActive``: requests and WebSockets served at once, by caller (``ActiveLimits``:
   503 beyond), so that no token can take the room of the others, nor the owner's;
   ``/health`` answers at once and is not counted;
6. ``CapBody``: bodies are capped (413), by their Content-Length before they are read,
   or as they arrive; a route may cap lower (app.py). (starlette's own body limit
   answers in plain text, over any answer of ours, when the Content-Length is over.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec
import trio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irisd.caller import OWNER, Caller
from irisd.http.security import Allowlist, FailedAuthLimiter, bearer_token
from irisd.serving import CLIENT_LEFT, internal_error
from irisd.tokens import COOKIE_NAME, Access
from protocol import a2a
from protocol.errors import (
    INVALID_REQUEST,
    BusyError,
    IrisError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    TooLargeError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from protocol.messages import ErrorReply

log = logging.getLogger("irisd.http")

MAX_ACTIVE = 256  # requests and WebSockets served at once, all callers together
MAX_ACTIVE_PER_CALLER = 64  # of one caller that is not the owner (a child, iris-agent, the A2A face's)
OWNER_ROOM = 32  # of MAX_ACTIVE, only ever the owner's
CALLER_KEY = "iris.caller"  # where Authenticate leaves the Caller in the ASGI scope

# No inline script or style, nothing from another origin, never framed. 'self' in
# connect-src covers the dashboard's same-origin WebSocket.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the login URL carries the token
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

_RAW_SECURITY_HEADERS = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
_encoder = msgspec.json.Encoder()


class MethodNotAllowedError(IrisError):
    code = "method_not_allowed"
    http_status = 405
    jsonrpc_code = INVALID_REQUEST

    def __init__(self, method: str, path: str, allowed: str) -> None:
        super().__init__(f"{method} is not allowed on {path}; use {allowed}")
        self.allowed = allowed


def refusal(error: IrisError, *, jsonrpc: bool = False) -> Response:
    """The JSON answer to ``error``, with the status and headers its code calls for; in
    JSON-RPC's form (``id`` null: the request was not read) if ``jsonrpc``."""
    status = error.http_status
    headers = {}
    if isinstance(error, UnauthorizedError):
        headers["WWW-Authenticate"] = 'Bearer realm="irisd"'
    if isinstance(error, RateLimitedError):
        headers["Retry-After"] = "60"
    if isinstance(error, MethodNotAllowedError):
        headers["Allow"] = error.allowed
    if jsonrpc:
        body = a2a.encoder.encode(
            a2a.JsonRpcResponse[None](id=None, error=a2a.error(error.jsonrpc_code, error.message))
        )
    else:
        body = _encoder.encode(ErrorReply(code=error.code, message=error.message))
    return Response(body, status, headers, media_type="application/json")


async def http_exception(request: Request, exc: Exception) -> Response:
    """starlette's own refusals (no route, a wrong method) in our form."""
    assert isinstance(exc, HTTPException)
    method, path = request.method, request.url.path
    error: IrisError
    if exc.status_code == 405:
        error = MethodNotAllowedError(method, path, (exc.headers or {}).get("Allow", ""))
    elif exc.status_code == 404:
        error = NotFoundError(f"no route {method} {path}; see /api/openapi.json")
    else:
        error = IrisError(f"{method} {path}: {exc.detail}")
    return refusal(error)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}  # a response's own value wins
                message["headers"] = headers + [h for h in _RAW_SECURITY_HEADERS if h[0] not in present]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class Refusals:
    """``jsonrpc(path)``: whether a POST to ``path`` is a JSON-RPC call."""

    def __init__(self, app: ASGIApp, jsonrpc: Callable[[str], bool] = lambda path: False) -> None:
        self.app = app
        self.jsonrpc = jsonrpc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True  # a response began, or the WebSocket was accepted: too late to refuse
            await send(message)

        try:
            await self.app(scope, receive, tracked)
            return
        except IrisError as exc:
            error = exc
        except (*CLIENT_LEFT, ClientDisconnect):
            return
        except Exception as exc:
            error = internal_error(exc, "HTTP request", path=scope["path"])
        if started:
            return  # nothing more to say
        jsonrpc = scope["type"] == "http" and scope["method"] == "POST" and self.jsonrpc(scope["path"])
        try:
            await refusal(error, jsonrpc=jsonrpc)(scope, receive, send)
        except (*CLIENT_LEFT, OSError):
            pass  # the client is gone


class ActiveLimits(msgspec.Struct):
    """Requests and WebSockets served at once, counted by caller (no I/O). The owner may
    use them all; every other caller (a team's child, iris-agent, the callers of the
    public paths together) at most ``per_caller``, and all of those together at most
    ``total - owner_room``: what they cannot take is the owner's, always."""

    total: int = MAX_ACTIVE
    per_caller: int = MAX_ACTIVE_PER_CALLER
    owner_room: int = OWNER_ROOM
    active: int = 0
    _by_caller: dict[Caller | None, int] = msgspec.field(default_factory=dict)

    def admit(self, caller: Caller | None) -> None:
        """Count one more for ``caller`` (None: a public path's); BusyError if it is over."""
        caller = _key(caller)
        own = self._by_caller.get(caller, 0)
        if caller == OWNER:
            if self.active >= self.total:
                raise BusyError(f"irisd serves {self.total} HTTP requests at once, its limit; try again in a moment")
        elif own >= self.per_caller:
            who = "the public paths' callers" if caller is None else caller.describe()
            raise BusyError(
                f"{who} already has {self.per_caller} HTTP requests or WebSockets open at once, the limit "
                "for a caller; close some, or try again in a moment"
            )
        elif self.active >= self.total or self.active - self._by_caller.get(OWNER, 0) >= self.total - self.owner_room:
            raise BusyError(
                f"irisd serves {self.total - self.owner_room} HTTP requests at once for callers other than "
                "its owner, its limit; try again in a moment"
            )
        self.active += 1
        self._by_caller[caller] = own + 1

    def release(self, caller: Caller | None) -> None:
        caller = _key(caller)
        self.active -= 1
        left = self._by_caller[caller] - 1
        if left:
            self._by_caller[caller] = left
        else:
            del self._by_caller[caller]


def _key(caller: Caller | None) -> Caller | None:
    return OWNER if caller is not None and caller.is_owner else caller


class LimitActive:
    def __init__(self, app: ASGIApp, limits: ActiveLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        caller = scope.get(CALLER_KEY)
        self.limits.admit(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            self.limits.release(caller)


class CheckHost:
    def __init__(self, app: ASGIApp, allowlist: Allowlist) -> None:
        self.app = app
        self.allowlist = allowlist

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = Headers(scope=scope)
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
        await self.app(scope, receive, send)


class Authenticate:
    """Names the Caller of every request but those to ``public`` paths (plain HTTP only)."""

    def __init__(
        self, app: ASGIApp, access: Access, limiter: FailedAuthLimiter, public: Callable[[str], bool]
    ) -> None:
        self.app = app
        self.access = access
        self.limiter = limiter
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" or (scope["type"] == "http" and not self.public(scope["path"])):
            scope[CALLER_KEY] = self.caller(HTTPConnection(scope))
        await self.app(scope, receive, send)

    def caller(self, connection: HTTPConnection) -> Caller:
        token = bearer_token(connection.headers.get("authorization"))
        session = connection.cookies.get(COOKIE_NAME)
        caller = None
        if token is not None:
            caller = self.access.caller_for_token(token)
        elif session is not None:
            caller = self.access.caller_for_cookie(session)
            if caller is not None:
                check_cookie_body(connection)
        if caller is not None:
            return caller
        count_failure(self.limiter, connection.scope)
        if token is None and session is None:
            raise UnauthorizedError(
                "this needs irisd's token: send 'Authorization: Bearer TOKEN' ('iris http token' prints it), "
                "or open the URL 'iris dashboard --print' prints to log in"
            )
        raise UnauthorizedError(
            "the token is not valid (rotated, or of a claude process that has stopped); "
            "'iris http token' prints the current one"
        )


def check_cookie_body(connection: HTTPConnection) -> None:
    """A request that changes something with the login cookie must be JSON: a web page can
    make the browser send a form or text/plain body with its cookies and no preflight, never
    ``application/json`` (UnsupportedMediaTypeError, 415)."""
    if connection.scope["type"] != "http" or connection.scope["method"] in ("GET", "HEAD", "OPTIONS"):
        return
    declared = connection.headers.get("content-type", "")
    kind = declared.split(";")[0].strip().lower()
    if kind != "application/json":
        raise UnsupportedMediaTypeError(
            f"a {connection.scope['method']} with the login cookie must be 'Content-Type: application/json', "
            f"not {kind or 'none'}; send JSON (a script sends 'Authorization: Bearer TOKEN' instead of the cookie)"
        )


def count_failure(limiter: FailedAuthLimiter, scope: Scope) -> None:
    """Count a failed authentication of the client's address; RateLimitedError once it
    failed too often (then nothing more is counted or logged until the window passes)."""
    connection = HTTPConnection(scope)
    client = connection.client.host if connection.client else "?"
    now = trio.current_time()
    if limiter.limited(client, now):
        wait = limiter.retry_after(client, now)
        raise RateLimitedError(f"too many failed authentications from {client}; try again in {wait:.0f} s")
    limiter.failed(client, now)
    log.info("refused an HTTP request without a valid token", extra={"client": client, "path": connection.url.path})


class CapBody:
    """Refuses a request body over ``limit`` bytes: by its Content-Length before it is
    read, or once more than that has arrived (a chunked body)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            raise self._too_large()
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise self._too_large()
            return message

        await self.app(scope, capped, send)

    def _too_large(self) -> TooLargeError:
        return TooLargeError(f"the request body is over the {self.limit} byte limit")
