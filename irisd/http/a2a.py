"""Every team an A2A agent: the cards and the JSON-RPC endpoints on irisd's HTTP face.

Routes (one path per team, not one card with tenants: each team is its own agent, with its
own name, description and skill, and A2A clients find an agent by its card's URL):

* ``GET /a2a/TEAM/.well-known/agent-card.json``: TEAM's card. Public, as discovery needs
  (it names the bearer scheme a client must use).
* ``GET /.well-known/agent-card.json``: the card of the first team by name (the agent a
  client finds at irisd's root).
* ``POST /a2a/TEAM``: JSON-RPC 2.0, the A2A 1.0 methods; ``SendStreamingMessage`` and
  ``SubscribeToTask`` answer with Server-Sent Events.

Every method needs a token (401 without): the owner's, or one ``iris a2a token --name
NAME`` issued for an outside agent. A token of irisd's own claude children is refused
(403): a team reaches another team through Iris's tells, where loops are guarded.
``A2A-Version`` must be 1.0 (none means 0.3: VersionNotSupportedError).

The face is starlette routes (``A2AFace.routes``), a ``Request`` for the body and a
``StreamingResponse`` for the events; the gate (gate.py) checks Host and Origin, caps the
body, adds the headers every answer carries, and answers what is refused before a call is
read (no route, a wrong method, no or a wrong token), in JSON-RPC's form for a POST here.
What stays here is A2A's own: the cards and the JSON-RPC bodies of a call's errors.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import msgspec
import trio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import Receive, Scope, Send

from irisd import __version__
from irisd.a2a.inbound import mapping
from irisd.a2a.inbound.mapping import A2AError
from irisd.a2a.inbound.service import A2AService
from irisd.caller import OWNER, Caller
from irisd.http.security import bearer_token
from irisd.tokens import Access
from protocol import a2a
from protocol.codec import UNDECODABLE, undecodable
from protocol.errors import (
    IrisError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    UnauthorizedError,
    closest_team,
)
from protocol.messages import ListTeams, TeamInfo, TeamsReply

log = logging.getLogger("irisd.http.a2a")

PREFIX = "/a2a/"
SSE = "text/event-stream"
STREAM_BUFFER = 64  # events of a stream waiting for a slow client; then the stream waits
_PUSH_METHODS = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
_PARAMS: dict[str, type[msgspec.Struct]] = {
    "SendMessage": a2a.SendMessageRequest,
    "SendStreamingMessage": a2a.SendMessageRequest,
    "GetTask": a2a.GetTaskRequest,
    "ListTasks": a2a.ListTasksRequest,
    "CancelTask": a2a.CancelTaskRequest,
    "SubscribeToTask": a2a.SubscribeToTaskRequest,
}


def handles(path: str) -> bool:
    """Whether ``path`` is the A2A face's (a POST there is a JSON-RPC call: the gate answers
    its refusals in JSON-RPC's form)."""
    return path == a2a.AGENT_CARD_PATH or path.startswith(PREFIX) or path == PREFIX.rstrip("/")


class A2AFace:
    """The A2A routes (``routes()``, also an ASGI app by itself). ``teams`` lists the teams
    (through the dispatcher); ``failed_auth`` counts a failed authentication (and raises
    RateLimitedError past the limit, like the rest of the HTTP face). What it refuses
    before a call is read (no route, a wrong method, no token) it raises for the gate
    (gate.py ``Refusals``), which answers a POST here in JSON-RPC's form."""

    def __init__(
        self,
        service: A2AService,
        access: Access,
        teams: Callable[[], Awaitable[list[TeamInfo]]],
        failed_auth: Callable[[Scope], None],
    ) -> None:
        self.service = service
        self.access = access
        self.teams = teams
        self.failed_auth = failed_auth
        self.router = Router(self.routes())

    def routes(self) -> list[BaseRoute]:
        rpc = _JsonRpc(self)
        agents = Router(
            [
                Route("/{team}" + a2a.AGENT_CARD_PATH, self.team_card, methods=["GET", "HEAD"]),
                # Clients join "/" to the card's URL (the TCK's httpx does): the same endpoint.
                *(Route(path, rpc, methods=["POST"]) for path in ("/{team}", "/{team}/")),
            ],
            redirect_slashes=False,  # a POST redirected would lose its body: each path is its own
            default=_no_route,
        )
        return [
            Route(a2a.AGENT_CARD_PATH, self.root_card, methods=["GET", "HEAD"]),
            Mount(PREFIX.rstrip("/"), app=agents),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router(scope, receive, send)

    # --- cards ----------------------------------------------------------------------------

    async def root_card(self, request: Request) -> Response:
        """The card of the first team by name: the agent a client finds at irisd's root."""
        return await self._card(None)

    async def team_card(self, request: Request) -> Response:
        return await self._card(urllib.parse.unquote(request.path_params["team"]))

    async def _card(self, name: str | None) -> Response:
        teams = await self.teams()
        if not teams:
            raise NotFoundError("this Iris has no teams; add one under 'teams:' in config.yaml")
        found = teams[0] if name is None else next((t for t in teams if t.name == name), None)
        if found is None:
            raise NotFoundError(_no_team(name or "", [t.name for t in teams]))
        url = f"{self.access.url}{PREFIX}{urllib.parse.quote(found.name)}"
        body = a2a.encoder.encode(mapping.card(found, url, __version__))
        return Response(body, media_type="application/json", headers={"cache-control": "max-age=60"})

    def authenticate(self, request: Request) -> Caller:
        """The caller a token names: the owner or an outside agent (UnauthorizedError
        without a valid one; PermissionDeniedError for irisd's own children)."""
        token = bearer_token(request.headers.get("authorization"))
        caller = None
        if token:
            caller = self.access.caller_for_token(token) or self.access.agent_for_token(token)
        if caller is None:
            self.failed_auth(request.scope)  # RateLimitedError past the limit
            raise UnauthorizedError(_UNAUTHORIZED if token is None else _TOKEN_NOT_VALID)
        if not (caller.is_owner or caller.kind == "agent"):
            raise PermissionDeniedError(_CHILD_REFUSED)
        return caller

    # --- JSON-RPC ---------------------------------------------------------------------------

    async def known_team(self, team: str) -> None:
        names = [t.name for t in await self.teams()]
        if team not in names:
            raise A2AError(a2a.INVALID_PARAMS, _no_team(team, names))

    async def unary(self, caller: Caller, team: str, method: str, params: msgspec.Struct) -> msgspec.Struct:
        match params:
            case a2a.SendMessageRequest():
                return await self.service.send(caller, team, params)
            case a2a.GetTaskRequest():
                return await self.service.get(caller, team, params)
            case a2a.ListTasksRequest():
                return await self.service.list_tasks(caller, team, params)
            case a2a.CancelTaskRequest():
                return await self.service.cancel(caller, team, params)
        raise A2AError(a2a.METHOD_NOT_FOUND, f"{method} is not served here")  # pragma: no cover

    async def produce(
        self, caller: Caller, team: str, params: msgspec.Struct, out: trio.MemorySendChannel[bytes | A2AError],
        request_id: a2a.RequestId,
    ) -> None:
        """Run a streaming method, each event one JSON-RPC response on ``out``; an error
        goes on ``out`` too, as the last item. Ends when the method does or ``out``'s
        reader left (the tell runs on)."""

        async def emit(event: a2a.StreamResponse) -> None:
            await out.send(a2a.encoder.encode(a2a.JsonRpcResponse[a2a.StreamResponse](id=request_id, result=event)))

        async with out:
            failure: A2AError | None = None
            try:
                if isinstance(params, a2a.SendMessageRequest):
                    await self.service.send(caller, team, params, emit)
                elif isinstance(params, a2a.SubscribeToTaskRequest):
                    await self.service.subscribe(caller, team, params, emit)
            except A2AError as exc:
                failure = exc
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the stream's reader is gone: the client left
            except Exception as exc:
                failure = _internal(exc)
            if failure is not None:
                await out.send(failure)


class _JsonRpc:
    """``POST /a2a/TEAM``: one JSON-RPC call. A unary method's answer is one JSON body; a
    streaming one's (``SendStreamingMessage``, ``SubscribeToTask``) is Server-Sent Events,
    one JSON-RPC response each: an error before the first event is a plain JSON-RPC error,
    after it the last event. The client hanging up ends the stream (the tell runs on)."""

    def __init__(self, face: A2AFace) -> None:
        self.face = face

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        face = self.face
        caller = face.authenticate(request)
        team = urllib.parse.unquote(request.path_params["team"])
        body = await request.body()
        request_id: a2a.RequestId = None
        try:
            _check_content_type(request.headers.get("content-type"))
            try:
                call = a2a.request_decoder.decode(body)
            except msgspec.ValidationError as exc:
                raise A2AError(a2a.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {exc}") from None
            except UNDECODABLE as exc:
                raise A2AError(a2a.PARSE_ERROR, f"the body is not JSON: {undecodable(exc, body)}") from None
            request_id = None if isinstance(call.id, msgspec.UnsetType) else call.id
            params = _params(call, _version(request))
            await face.known_team(team)
            if call.method in a2a.STREAMING_METHODS:
                await self._stream(scope, receive, send, request_id, caller, team, call.method, params)
                return
            result = await face.unary(caller, team, call.method, params)
            response = Response(a2a.encoder.encode(a2a.JsonRpcResponse[Any](id=request_id, result=result)),
                                media_type="application/json")
        except A2AError as exc:
            response = _rpc_error(request_id, exc)
        except RateLimitedError:
            raise
        except IrisError as exc:
            response = _rpc_error(request_id, A2AError.of(exc))
        except Exception as exc:  # a bug of ours: the client gets a JSON-RPC error, the log the traceback
            response = _rpc_error(request_id, _internal(exc))
        await response(scope, receive, send)

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, request_id: a2a.RequestId, caller: Caller, team: str,
        method: str, params: msgspec.Struct,
    ) -> None:
        out, events = trio.open_memory_channel[bytes | A2AError](STREAM_BUFFER)
        async with trio.open_nursery() as nursery, events:
            nursery.start_soon(self.face.produce, caller, team, params, out, request_id)
            try:
                first = await events.receive()
            except trio.EndOfChannel:
                first = A2AError(a2a.INTERNAL_ERROR, "the stream ended empty")
            if isinstance(first, A2AError):
                await _rpc_error(request_id, first)(scope, receive, send)
                return
            # Exactly this type, no charset (SSE is UTF-8 by definition): some clients compare it whole.
            response = StreamingResponse(_frames(first, events, request_id), headers={"content-type": SSE})
            try:
                await response(scope, receive, send)
            except ClientDisconnect:
                pass
            finally:
                nursery.cancel_scope.cancel()  # the client left, or the stream ended: stop following
        log.debug("A2A stream ended", extra={"method": method, "team": team})


async def _frames(
    first: bytes, events: trio.MemoryReceiveChannel[bytes | A2AError], request_id: a2a.RequestId
) -> AsyncIterator[bytes]:
    """Server-Sent Events: ``data: `` and a JSON-RPC response each; an error is the last."""
    yield b"data: " + first + b"\n\n"
    async for item in events:
        if isinstance(item, A2AError):
            item = a2a.encoder.encode(a2a.JsonRpcResponse[None](id=request_id, error=item.to_wire()))
        yield b"data: " + item + b"\n\n"


async def _no_route(scope: Scope, receive: Receive, send: Send) -> None:
    raise NotFoundError(f"no A2A route {scope['path']}; a team's agent is at {PREFIX}TEAM")


_UNAUTHORIZED = (
    "this needs a token: send 'Authorization: Bearer TOKEN' with one 'iris a2a token --name NAME' issued "
    "(or the owner's, 'iris http token')"
)
_TOKEN_NOT_VALID = (
    "the token is not valid: revoked ('iris a2a revoke'), replaced by a newer one for the same name, or "
    "mistyped; ask irisd's owner for a new one ('iris a2a token --name NAME')"
)
_CHILD_REFUSED = (
    "a team's own token does not open the A2A face: a team asks another team with team_tell, where "
    "Iris guards loops and budgets"
)


def _no_team(asked: str, names: list[str]) -> str:
    close = closest_team(asked, names)
    hint = f"did you mean {PREFIX}{close}? " if close else ""
    return f"no team {asked!r} here; {hint}the agents here are: {', '.join(names)}"


def _internal(exc: Exception) -> A2AError:
    log.exception("an A2A call failed")
    return A2AError(
        a2a.INTERNAL_ERROR, f"irisd failed on this call ({type(exc).__name__}: {exc}); see the irisd log"
    )


def _unknown_method(method: str) -> A2AError:
    if method in _PUSH_METHODS:
        return A2AError(
            a2a.PUSH_NOTIFICATION_NOT_SUPPORTED,
            f"{method}: this agent sends no push notifications; follow a task with SubscribeToTask or GetTask",
        )
    if method == "GetExtendedAgentCard":
        return A2AError(a2a.UNSUPPORTED_OPERATION, "this agent has no extended card; its card is all there is")
    known = ", ".join(_PARAMS)
    return A2AError(a2a.METHOD_NOT_FOUND, f"no method {method!r}; the methods are: {known}", method=method)


# google.protobuf.Struct and Value fields: their keys are the client's own, never renamed.
_FREE_FORM = frozenset({"metadata", "data"})


def proto_names_accepted(value: Any) -> Any:
    """ProtoJSON (A2A 1.0's JSON): a parser accepts a field's proto name as well as its JSON
    name, so ``history_length`` is read as ``historyLength`` (the TCK sends the former)."""
    if isinstance(value, dict):
        return {_json_name(k): v if k in _FREE_FORM else proto_names_accepted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [proto_names_accepted(v) for v in value]
    return value


def _json_name(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest) if rest and head else key


def _params(call: a2a.JsonRpcRequest[msgspec.Raw], version: str | None) -> msgspec.Struct:
    """The params of a decoded call, as its method's type (A2AError naming what is wrong)."""
    if call.jsonrpc != a2a.JSONRPC_VERSION:
        raise A2AError(a2a.INVALID_REQUEST, f'jsonrpc must be "2.0", not {call.jsonrpc!r}')
    mapping.check_version(version)
    kind = _PARAMS.get(call.method)
    if kind is None:
        raise _unknown_method(call.method)
    raw = call.params if isinstance(call.params, msgspec.Raw) else msgspec.Raw(b"{}")
    try:
        return msgspec.convert(proto_names_accepted(msgspec.json.decode(raw)), type=kind)
    except UnicodeDecodeError as exc:  # not caught by the whole body's decoding: params stay raw
        raise A2AError(a2a.INVALID_REQUEST, f"invalid params: {undecodable(exc, raw)}") from None
    except msgspec.ValidationError as exc:
        raise A2AError(a2a.INVALID_PARAMS, f"invalid params for {call.method}: {exc}") from None


def _check_content_type(declared: str | None) -> None:
    """A JSON-RPC body is JSON: another declared Content-Type is ContentTypeNotSupportedError
    (none at all is read as JSON)."""
    if declared is None:
        return
    kind = declared.split(";")[0].strip().lower()
    if kind != "application/json" and not kind.endswith("+json"):
        raise A2AError(
            a2a.CONTENT_TYPE_NOT_SUPPORTED,
            f"the body is {kind or 'of no type'}; A2A JSON-RPC takes 'Content-Type: application/json'",
            mediaType=kind,
        )


def _version(request: Request) -> str | None:
    """The A2A-Version header, or the query parameter of that name (spec 3.6.2)."""
    header = request.headers.get(a2a.VERSION_HEADER)
    return header if header is not None else request.query_params.get(a2a.VERSION_HEADER)


def _rpc_error(request_id: a2a.RequestId, error: A2AError) -> Response:
    """A JSON-RPC error, answered with the error's own status (200 for most)."""
    headers = {"WWW-Authenticate": 'Bearer realm="irisd"'} if error.status == 401 else None
    body = a2a.encoder.encode(a2a.JsonRpcResponse[None](id=request_id, error=error.to_wire()))
    return Response(body, error.status, headers, media_type="application/json")


def owner_teams(face_dispatch: Callable[..., Awaitable[object]]) -> Callable[[], Awaitable[list[TeamInfo]]]:
    """The team list, asked of the dispatcher as the owner (a card is public; so are team names)."""

    async def teams() -> list[TeamInfo]:
        reply = await face_dispatch(ListTeams(), OWNER)
        return cast(TeamsReply, reply).teams

    return teams
