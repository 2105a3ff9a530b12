"""The HTTP face: one starlette app. Every request and WebSocket passes the gate
(gate.py: security headers, refusals as JSON, a cap on what is served at once, Host and
Origin, the caller, the body limit), then goes to its route in ``HttpFace.routes``:
``/health`` and ``/login`` (no token), ``/api/openapi.json``, ``/api/events``
(WebSocket), the ``/api`` table of api.py, ``/mcp`` (MCP for irisd's own children), the
A2A face (``/.well-known/agent-card.json``, ``/a2a/...``: public cards, methods that take
the A2A tokens, so it names its callers itself: irisd/http/a2a.py), and the dashboard at
``/`` and ``/static/``.

Every request reaches the core through ``Serving`` (irisd/serving.py) with its caller,
the same path as the socket's: refused while draining, counted in flight until its
answer is sent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from iris_common.config import IrisConfig
from irisd import dashboard
from irisd.a2a.inbound.service import A2AService
from irisd.caller import OWNER
from irisd.http import a2a as a2a_face
from irisd.http import api
from irisd.http.events import serve_events
from irisd.http.gate import (
    CALLER_KEY,
    ActiveLimits,
    Authenticate,
    CapBody,
    CheckHost,
    LimitActive,
    MethodNotAllowedError,
    Refusals,
    SecurityHeaders,
    count_failure,
    http_exception,
)
from irisd.http.mcp import McpEndpoint
from irisd.http.security import Allowlist, FailedAuthLimiter
from irisd.serving import Serving
from irisd.tokens import COOKIE_NAME, Access
from protocol.codec import UNDECODABLE, undecodable
from protocol.errors import InvalidRequestError, IrisError, NotFoundError, UnauthorizedError
from protocol.limits import explain
from protocol.messages import ErrorReply, Event, ReadTranscript, TranscriptPage, TranscriptReply
from protocol.messages import Request as IrisRequest

MAX_BODY_BYTES = 4 * 1024 * 1024  # a tell's message may hold 1,000,000 characters
COOKIE_MAX_AGE_S = 30 * 86400
PUBLIC_PATHS = frozenset({"/health", "/login"})  # served without a token


def public(path: str) -> bool:
    """Paths the gate lets through without naming a caller: /health, /login, and the A2A
    face, which authenticates its own callers (A2A tokens)."""
    return path in PUBLIC_PATHS or a2a_face.handles(path)


_encoder = msgspec.json.Encoder()


class HttpFace:
    """The ASGI app of irisd's HTTP face. ``mcp`` serves ``/mcp`` (irisd/http/mcp.py)."""

    def __init__(
        self,
        serving: Serving,
        access: Access,
        allowlist: Allowlist,
        *,
        config: Callable[[], IrisConfig],
        limits: ActiveLimits | None = None,
    ) -> None:
        self.serving = serving
        self.config = config  # the current config (core.Services' holder): A2A's agent cards
        self.access = access
        self.limiter = FailedAuthLimiter()  # shared by the gate and /login
        self.limits = limits or ActiveLimits()
        self.mcp = McpEndpoint(serving)
        self.a2a = a2a_face.A2AFace(
            A2AService(serving.serve, config, watch=serving.dispatch),
            access,
            a2a_face.owner_teams(serving.serve),
            lambda scope: count_failure(self.limiter, scope),
        )
        self.app = Starlette(
            routes=self.routes(),
            middleware=[
                Middleware(SecurityHeaders),
                Middleware(Refusals, jsonrpc=a2a_face.handles),
                Middleware(CheckHost, allowlist=allowlist),
                Middleware(Authenticate, access=access, limiter=self.limiter, public=public),
                Middleware(LimitActive, limits=self.limits),
                Middleware(CapBody, limit=MAX_BODY_BYTES),
            ],
            exception_handlers={HTTPException: http_exception},
        )
        self.app.router.redirect_slashes = False  # /api/status/ is not /api/status: 404, not 307

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/health", health),
            Route("/login", self.login),
            Route("/api/openapi.json", openapi),
            WebSocketRoute("/api/events", self.events),
            WebSocketRoute("/{path:path}", no_websocket),  # before the mounts below, which take any type
            *(Route(path, ApiPath(self.serving, routes)) for path, routes in api.by_path().items()),
            Route("/mcp", self.mcp),
            Route("/mcp/", self.mcp),
            *self.a2a.routes(),  # the A2A face: the root card, each team's agent
            *dashboard.routes(),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    async def login(self, request: Request) -> Response:
        """``/login?token=OWNER_TOKEN`` or ``?code=ONE_TIME_CODE``: the login cookie, then ``/``."""
        token = request.query_params.get("token", "")
        owner = bool(token) and self.access.caller_for_token(token) == OWNER
        if not owner and not self.access.use_login_code(request.query_params.get("code", "")):
            count_failure(self.limiter, request.scope)
            raise UnauthorizedError("this login link is not valid (the token was rotated?); run 'iris dashboard' again")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE_NAME, self.access.cookie, max_age=COOKIE_MAX_AGE_S, path="/", httponly=True, samesite="strict"
        )
        return response

    async def events(self, websocket: WebSocket) -> None:
        await serve_events(self.serving, websocket, websocket.scope[CALLER_KEY])


class ApiPath:
    """The rows of the ``/api`` table at one path, by method. Each row reads its body
    (within its own limit, if it has one), builds its protocol Request, and answers with
    the Reply as JSON; errors are raised for the gate to answer."""

    def __init__(self, serving: Serving, routes: list[api.ApiRoute]) -> None:
        self.serving = serving
        self.methods: dict[str, ASGIApp] = {}
        for route in routes:
            app: ASGIApp = functools.partial(self.serve, route)
            if route.max_body is not None:
                app = CapBody(app, limit=route.max_body)
            self.methods[route.method] = app
        self.allowed = ", ".join(self.methods)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.methods.get(scope["method"])
        if app is None:
            raise MethodNotAllowedError(scope["method"], scope["path"], self.allowed)
        await app(scope, receive, send)

    async def serve(self, route: api.ApiRoute, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        built = build_request(route, request.path_params, request.query_params, await request.body())
        with self.serving.counted():
            if isinstance(built, ReadTranscript) and built.paged:
                await _stream_transcript(self.serving, built, scope, send)
                return
            reply = await self.serving.dispatch(built, scope[CALLER_KEY])
            await Response(_encoder.encode(reply), media_type="application/json")(scope, receive, send)


async def _stream_transcript(serving: Serving, request: ReadTranscript, scope: Scope, send: Send) -> None:
    """A transcript as the JSON of its ``TranscriptReply``, written page by page as irisd reads
    it (each page is written, then the next is read: a slow reader holds the reading, not
    irisd's memory), the tell last: ``{"type": "transcript_reply", "entries": [...], "tell":
    {...}}``, or with ``steps`` ``{..., "steps": [...], "entries": [], "tell": {...}}``. The
    response starts with the first page: an error before it (no such tell, not yours) is
    answered as any other; one after it (the database failing half-way) ends the body with
    the error's JSON on a line of its own: no JSON reader takes that for a whole reply."""
    field = "steps" if request.steps else "entries"
    started = False

    async def write(body: bytes) -> None:
        nonlocal started
        if not started:
            started = True
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            body = b'{"type":"transcript_reply","' + field.encode() + b'":[' + body
        await send({"type": "http.response.body", "body": body, "more_body": True})

    first = True

    async def page(event: Event) -> None:
        nonlocal first
        if isinstance(event, TranscriptPage) and (items := event.steps if request.steps else event.entries):
            await write((b"" if first else b",") + _encoder.encode(items)[1:-1])  # the items, without [ ]
            first = False

    try:
        reply = await serving.dispatch(request, scope[CALLER_KEY], page)
    except IrisError as exc:
        if not started:
            raise  # answered with its status, as any other error
        # Too late for a status: the error ends the body, which no JSON reader then takes for a reply.
        error = b"\n" + _encoder.encode(ErrorReply(code=exc.code, message=exc.message))
        await send({"type": "http.response.body", "body": error, "more_body": False})
        return
    assert isinstance(reply, TranscriptReply)
    if not started:
        await write(b"")
    # As msgspec writes the Struct: ``entries`` always, ``steps`` (a default) only when not empty.
    end = (b'],"entries":[]' if request.steps else b"]") + b',"tell":' + _encoder.encode(reply.tell) + b"}"
    await send({"type": "http.response.body", "body": end, "more_body": False})


async def health(request: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


async def openapi(request: Request) -> Response:
    return Response(_openapi_json(), media_type="application/json")


@functools.cache
def _openapi_json() -> bytes:
    return msgspec.json.encode(api.openapi())


async def no_websocket(websocket: WebSocket) -> None:
    raise NotFoundError(f"no WebSocket at {websocket.url.path}; live events are at /api/events")


def build_request(route: api.ApiRoute, params: Mapping[str, str], query: Mapping[str, str], body: bytes) -> IrisRequest:
    """The protocol Request of one call of ``route``; InvalidRequestError naming what is wrong."""
    parsed_query = None
    if route.query is not None:
        values = {key: value for key, value in query.items() if value != ""}
        parsed_query = _convert(values, route.query, "query string")
    parsed = None
    if route.body is not None:
        parsed = _decode(body if body.strip() else b"{}", route.body)  # no body: the defaults, if it has them
    elif body.strip():
        raise InvalidRequestError(f"{route.method} {route.path} takes no body")
    return route.build(params, parsed_query, parsed)


def _convert(values: dict[str, str], kind: type[Any], where: str) -> Any:
    try:
        return msgspec.convert(values, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(f"invalid {where}: {exc}") from None


def _decode(body: bytes, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(f"invalid body: {explain(exc, [kind]) or exc}") from None
    except UNDECODABLE as exc:
        raise InvalidRequestError(f"the body is not JSON: {undecodable(exc, body)}") from None
