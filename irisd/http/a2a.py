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
``A2A-Version`` must be 1.0 (none means 0.3: VersionNotSupportedError). The gate
(gate.py) checks Host and Origin, caps the body and adds the headers every answer
carries; what it refuses, it answers a POST here in JSON-RPC's form.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, cast

import msgspec
import trio
from starlette.datastructures import Headers
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
from protocol.errors import IrisError, RateLimitedError, closest_team
from protocol.messages import ListTeams, TeamInfo, TeamsReply

log = logging.getLogger("irisd.http.a2a")

PREFIX = "/a2a/"
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
    """Whether ``path`` is the A2A face's (the one entry the HTTP app routes here)."""
    return path == a2a.AGENT_CARD_PATH or path.startswith(PREFIX) or path == PREFIX.rstrip("/")


class A2AFace:
    """An ASGI app for the A2A routes. ``teams`` lists the teams (through the dispatcher);
    ``failed_auth`` counts a failed authentication (and raises RateLimitedError past the
    limit, like the rest of the HTTP face)."""

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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        team, _, rest = path.removeprefix(PREFIX).partition("/")
        if path == a2a.AGENT_CARD_PATH or (path.startswith(PREFIX) and "/" + rest == a2a.AGENT_CARD_PATH):
            if method not in ("GET", "HEAD"):
                await _plain(send, 405, b"the agent card is read with GET", [(b"allow", b"GET")])
                return
            await self._card(send, None if path == a2a.AGENT_CARD_PATH else team)
            return
        if not path.startswith(PREFIX) or rest or not team:
            await _plain(send, 404, f"no A2A route {path}; a team's agent is at {PREFIX}TEAM".encode())
            return
        if method != "POST":
            await _plain(send, 405, b"A2A JSON-RPC calls are POSTed", [(b"allow", b"POST")])
            return
        token = _bearer(scope)
        caller = self._authenticate(scope, token)
        if caller is None:
            refusal = _UNAUTHORIZED if token is None else _TOKEN_NOT_VALID
            await _rpc_error(send, None, A2AError(a2a.INVALID_REQUEST, refusal), status=401)
            return
        if not (caller.is_owner or caller.kind == "agent"):
            await _rpc_error(send, None, A2AError(a2a.INVALID_REQUEST, _CHILD_REFUSED), status=403)
            return
        body = await _read_body(receive)
        await self._rpc(scope, receive, send, caller, urllib.parse.unquote(team), body)

    # --- cards ----------------------------------------------------------------------------

    async def _card(self, send: Send, name: str | None) -> None:
        teams = await self.teams()
        if not teams:
            await _plain(send, 404, b"this Iris has no teams; add one under 'teams:' in config.yaml")
            return
        found = teams[0] if name is None else next((t for t in teams if t.name == urllib.parse.unquote(name)), None)
        if found is None:
            await _plain(send, 404, _no_team(urllib.parse.unquote(name or ""), [t.name for t in teams]).encode())
            return
        url = f"{self.access.url}{PREFIX}{urllib.parse.quote(found.name)}"
        body = a2a.encoder.encode(mapping.card(found, url, __version__))
        await _respond(send, 200, body, extra=[(b"cache-control", b"max-age=60")])

    def _authenticate(self, scope: Scope, token: str | None) -> Caller | None:
        caller = None
        if token:
            caller = self.access.caller_for_token(token) or self.access.agent_for_token(token)
        if caller is None:
            self.failed_auth(scope)  # RateLimitedError past the limit
        return caller

    # --- JSON-RPC ---------------------------------------------------------------------------

    async def _rpc(self, scope: Scope, receive: Receive, send: Send, caller: Caller, team: str, body: bytes) -> None:
        request_id: a2a.RequestId = None
        try:
            _check_content_type(scope)
            try:
                call = a2a.request_decoder.decode(body)
            except msgspec.ValidationError as exc:
                raise A2AError(a2a.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {exc}") from None
            except UNDECODABLE as exc:
                raise A2AError(a2a.PARSE_ERROR, f"the body is not JSON: {undecodable(exc, body)}") from None
            request_id = None if isinstance(call.id, msgspec.UnsetType) else call.id
            if call.jsonrpc != a2a.JSONRPC_VERSION:
                raise A2AError(a2a.INVALID_REQUEST, f'jsonrpc must be "2.0", not {call.jsonrpc!r}')
            mapping.check_version(_version(scope))
            kind = _PARAMS.get(call.method)
            if kind is None:
                raise _unknown_method(call.method)
            raw = call.params if isinstance(call.params, msgspec.Raw) else msgspec.Raw(b"{}")
            try:
                params = msgspec.convert(proto_names_accepted(msgspec.json.decode(raw)), type=kind)
            except UnicodeDecodeError as exc:  # not caught by the whole body's decoding: params stay raw
                raise A2AError(a2a.INVALID_REQUEST, f"invalid params: {undecodable(exc, raw)}") from None
            except msgspec.ValidationError as exc:
                raise A2AError(a2a.INVALID_PARAMS, f"invalid params for {call.method}: {exc}") from None
            await self._known_team(team)
            if call.method in a2a.STREAMING_METHODS:
                await self._stream(receive, send, request_id, caller, team, call.method, params)
                return
            result = await self._unary(caller, team, call.method, params)
        except A2AError as exc:
            await _rpc_error(send, request_id, exc)
            return
        except RateLimitedError:
            raise
        except IrisError as exc:
            await _rpc_error(send, request_id, A2AError.of(exc))
            return
        except Exception as exc:  # a bug of ours: the client gets a JSON-RPC error, the log the traceback
            await _rpc_error(send, request_id, _internal(exc))
            return
        await _respond(send, 200, a2a.encoder.encode(a2a.JsonRpcResponse[Any](id=request_id, result=result)))

    async def _known_team(self, team: str) -> None:
        names = [t.name for t in await self.teams()]
        if team not in names:
            raise A2AError(a2a.INVALID_PARAMS, _no_team(team, names))

    async def _unary(self, caller: Caller, team: str, method: str, params: msgspec.Struct) -> msgspec.Struct:
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

    async def _stream(
        self,
        receive: Receive,
        send: Send,
        request_id: a2a.RequestId,
        caller: Caller,
        team: str,
        method: str,
        params: msgspec.Struct,
    ) -> None:
        """Server-Sent Events: one JSON-RPC response per event. An error before the first
        event is a plain JSON-RPC error; after it, the last event. The client hanging up
        ends the stream (the tell runs on)."""
        started = gone = False
        failure: A2AError | None = None

        async def emit(event: a2a.StreamResponse) -> None:
            nonlocal started
            if not started:
                headers = [(b"content-type", b"text/event-stream")]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                started = True
            frame = a2a.encoder.encode(a2a.JsonRpcResponse[a2a.StreamResponse](id=request_id, result=event))
            await send({"type": "http.response.body", "body": b"data: " + frame + b"\n\n", "more_body": True})

        async with trio.open_nursery() as nursery:

            async def hang_up() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(hang_up)
            try:
                if isinstance(params, a2a.SendMessageRequest):
                    await self.service.send(caller, team, params, emit)
                elif isinstance(params, a2a.SubscribeToTaskRequest):
                    await self.service.subscribe(caller, team, params, emit)
            except A2AError as exc:
                failure = exc
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                gone = True  # the client went away while we wrote to it
            except Exception as exc:
                failure = _internal(exc)
            nursery.cancel_scope.cancel()
        if gone:
            return
        if not started:
            await _rpc_error(send, request_id, failure or A2AError(a2a.INTERNAL_ERROR, "the stream ended empty"))
            return
        if failure is not None:
            frame = a2a.encoder.encode(a2a.JsonRpcResponse[None](id=request_id, error=failure.to_wire()))
            await send({"type": "http.response.body", "body": b"data: " + frame + b"\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        log.debug("A2A stream ended", extra={"method": method, "team": team})


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


def _check_content_type(scope: Scope) -> None:
    """A JSON-RPC body is JSON: another declared Content-Type is ContentTypeNotSupportedError
    (none at all is read as JSON)."""
    declared = Headers(scope=scope).get("content-type")
    if declared is None:
        return
    kind = declared.split(";")[0].strip().lower()
    if kind != "application/json" and not kind.endswith("+json"):
        raise A2AError(
            a2a.CONTENT_TYPE_NOT_SUPPORTED,
            f"the body is {kind or 'of no type'}; A2A JSON-RPC takes 'Content-Type: application/json'",
            mediaType=kind,
        )


def _bearer(scope: Scope) -> str | None:
    return bearer_token(Headers(scope=scope).get("authorization"))


def _version(scope: Scope) -> str | None:
    """The A2A-Version header, or the query parameter of that name (spec 3.6.2)."""
    header = Headers(scope=scope).get(a2a.VERSION_HEADER)
    if header is not None:
        return header
    query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
    found = query.get(a2a.VERSION_HEADER)
    return found[0] if found else None


async def _read_body(receive: Receive) -> bytes:
    """The whole body (the gate has capped it)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise trio.BrokenResourceError("the client left")
        body += message.get("body", b"")
        if not message.get("more_body"):
            return bytes(body)


async def _respond(
    send: Send, status: int, body: bytes, *, content_type: bytes = b"application/json", extra: list[Any] | None = None
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, text: bytes, extra: list[Any] | None = None) -> None:
    await _respond(send, status, text + b"\n", content_type=b"text/plain; charset=utf-8", extra=extra)


async def _rpc_error(send: Send, request_id: a2a.RequestId, error: A2AError, status: int | None = None) -> None:
    """A JSON-RPC error, answered with ``status`` (default: the error's own, 200 for most)."""
    status = error.status if status is None else status
    extra = [(b"www-authenticate", b'Bearer realm="irisd"')] if status == 401 else []
    body = a2a.encoder.encode(a2a.JsonRpcResponse[None](id=request_id, error=error.to_wire()))
    await _respond(send, status, body, extra=extra)


def owner_teams(face_dispatch: Callable[..., Awaitable[object]]) -> Callable[[], Awaitable[list[TeamInfo]]]:
    """The team list, asked of the dispatcher as the owner (a card is public; so are team names)."""

    async def teams() -> list[TeamInfo]:
        reply = await face_dispatch(ListTeams(), OWNER)
        return cast(TeamsReply, reply).teams

    return teams
