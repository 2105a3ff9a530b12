"""irisd's ``/mcp`` answers a ``tools/call`` of protocol 2026-07-28 without the MCP SDK
(irisd/http/mcp.py, iris_mcp/fastcall.py) byte for byte as the SDK's stateless streamable
HTTP answers it: the status, the headers, JSON or the event stream (progress, pings, the
answer). Driven both ways on the same requests, a scripted Serving standing in for irisd's;
what the fast path leaves goes to the SDK, and a form's requestState sealed on the fast
path is the SDK's to verify, for the same caller only."""

from __future__ import annotations

import json
import math
from typing import Any

import trio
import trio.testing

from fakes.scripted_irisd import ScriptedIrisd
from irisd.caller import OWNER, Caller
from irisd.http.gate import CALLER_KEY
from irisd.http.mcp import ERROR_HTTP_STATUS, McpEndpoint
from protocol.messages import (
    CancelTell,
    Decide,
    Reply,
    Request,
)

MODERN = "2026-07-28"
CLAUDE = {"io.modelcontextprotocol/protocolVersion": MODERN,
          "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
          "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
PLAIN = {**CLAUDE, "io.modelcontextprotocol/clientCapabilities": {}}
CHILD = Caller.child("alpha", "external->alpha")
class ScriptServing(ScriptedIrisd):
    """irisd's Serving as /mcp's tools see it (tests/fakes/scripted_irisd.py), remembering
    each request and its caller."""

    def __init__(self) -> None:
        super().__init__(echo_text="héllo", behind_text=False)
        self.sent: list[tuple[Request, Caller]] = []

    async def serve(self, request: Request, caller: Caller, on_event: Any = None) -> Reply:
        self.sent.append((request, caller))
        return await self.reply(request, on_event)


def call(name: str, arguments: dict[str, Any] | None, meta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "_meta": meta, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return params


def scope_of(caller: Caller, params: dict[str, Any], **headers: str | None) -> dict[str, Any]:
    """A POST of a tools/call with the headers claude sends (``headers`` change them; None drops one)."""
    sent: dict[str, str | None] = {
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-method": "tools/call", "mcp-protocol-version": MODERN, "mcp-name": params.get("name"),
        "host": "127.0.0.1:1615",
    }
    sent.update({name.replace("_", "-"): value for name, value in headers.items()})
    raw = [(name.encode(), value.encode()) for name, value in sent.items() if value is not None]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/mcp", "raw_path": b"/mcp", "root_path": "", "query_string": b"", "headers": raw,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 1615), CALLER_KEY: caller}


class Answer:
    """What an ASGI app sent: the status and headers, each body chunk with the time it left."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[tuple[float, bytes]] = []

    def body(self) -> bytes:
        return b"".join(chunk for _, chunk in self.chunks)

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of the body (JSON, or the data of each SSE event)."""
        body = self.body().decode()
        if dict(self.headers)[b"content-type"] == b"application/json":
            return [json.loads(body)]
        return [json.loads(line.removeprefix("data: ")) for line in body.split("\r\n") if line.startswith("data: ")]

    def same(self) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        return self.status, self.headers, [chunk for _, chunk in self.chunks]


async def post(app: Any, scope: dict[str, Any], body: dict[str, Any] | bytes,
               leave: trio.Event | None = None) -> Answer:
    """POST ``body`` to ``app``; the client leaves when ``leave`` is set."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = [{"type": "http.request", "body": raw, "more_body": False}]
    answer = Answer()

    async def receive() -> dict[str, Any]:
        if sent:
            return sent.pop(0)
        if leave is None:
            await trio.sleep_forever()
        else:
            await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer.status, answer.headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            answer.chunks.append((trio.current_time(), message.get("body", b"")))

    await app(scope, receive, send)
    return answer


def request(request_id: int | str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def loaded(serving: ScriptServing, nursery: trio.Nursery, *, deadline: float = 60) -> McpEndpoint:
    """An endpoint with the SDK loaded (in a worker thread: on the autojump clock, whose
    time jumps while the loop waits for it, pass ``deadline=math.inf``)."""
    endpoint = McpEndpoint(serving)  # type: ignore[arg-type]  # the script serves what the tools ask
    nursery.start_soon(endpoint.run)
    endpoint.want()
    with trio.fail_after(deadline):
        await endpoint.ready.wait()
    return endpoint


# What the fast path takes: its answers are the SDK's, byte for byte.
TAKEN: list[tuple[Caller, dict[str, Any]]] = [
    (CHILD, call("team_tell", {"toTeam": "echo", "message": "m"}, CLAUDE)),
    (CHILD, call("team_tell", {"toTeam": "behind", "message": "m"}, {**CLAUDE, "progressToken": "p-1"})),
    (CHILD, call("team_tell", {"toTeam": "echo", "message": "m"}, {**CLAUDE, "progressToken": 7})),
    (CHILD, call("team_getTeamName", {}, CLAUDE)),
    (CHILD, call("team_getTeamName", None, PLAIN)),
    (CHILD, call("team_nonesuch", {}, CLAUDE)),
    (CHILD, call("team_tell", {"toTeam": "echo"}, CLAUDE)),
    (OWNER, call("team_tell", {"toTeam": "echo", "message": "m", "fromTeam": "beta"}, CLAUDE)),
    (Caller.reader(), call("team_tell", {"toTeam": "echo", "message": "m"}, CLAUDE)),
]
# What it leaves to the SDK (a header or an envelope only the SDK reads, or refuses).
LEFT: list[tuple[dict[str, Any], dict[str, str | None]]] = [
    (call("team_getTeamName", {}, CLAUDE), {"mcp_name": None}),
    (call("team_getTeamName", {}, CLAUDE), {"mcp_name": "team_tell"}),
    (call("team_getTeamName", {}, CLAUDE), {"accept": "application/json"}),
    (call("team_getTeamName", {}, CLAUDE), {"content_type": "text/plain"}),
    (call("team_getTeamName", {}, CLAUDE), {"mcp_param_team": "x"}),
    (call("team_getTeamName", {}, CLAUDE), {"mcp_method": "tools/list"}),
    (call("team_getTeamName", {}, {**CLAUDE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}), {}),
    (call("team_getTeamName", {}, {**CLAUDE, "progressToken": None}), {}),
    (call("team_getTeamName", {}, CLAUDE, task={"ttl": 1000}), {}),
    (call("team_getTeamName", {}, CLAUDE, requestState="forged"), {}),
]


async def test_a_call_the_fast_path_takes_is_answered_as_the_sdk_answers_it() -> None:
    fast_serving, sdk_serving = ScriptServing(), ScriptServing()
    async with trio.open_nursery() as nursery:
        endpoint = McpEndpoint(fast_serving)  # type: ignore[arg-type]
        nursery.start_soon(endpoint.run)
        fast = [await post(endpoint, scope_of(caller, params), request(n, params))
                for n, (caller, params) in enumerate(TAKEN)]
        assert not endpoint.ready.is_set()  # every one answered without the SDK
        sdk_endpoint = await loaded(sdk_serving, nursery)
        sdk = [await post(sdk_endpoint._manager.handle_request, scope_of(caller, params), request(n, params))
               for n, (caller, params) in enumerate(TAKEN)]
        nursery.cancel_scope.cancel()
    for sent, mine, theirs in zip(TAKEN, fast, sdk, strict=True):
        assert mine.same() == theirs.same(), sent
    assert fast_serving.sent == sdk_serving.sent  # as the same callers
    # and the answers are what they should be (not merely alike)
    answers = [answer.messages()[-1]["result"] for answer in fast]
    assert answers[0]["structuredContent"]["text"] == "héllo" and not answers[0]["isError"]
    assert dict(fast[1].headers)[b"content-type"] == b"text/event-stream"  # progress: streamed
    assert [m["params"] for m in fast[1].messages()[:-1]] == [
        {"progressToken": "p-1", "progress": 1.0, "message": "behind: queued behind 1 tell"}]
    assert dict(fast[2].headers)[b"content-type"] == b"application/json"  # nothing to stream: JSON
    assert "alpha" in answers[3]["content"][0]["text"]
    assert answers[5]["isError"] and "unknown tool" in answers[5]["content"][0]["text"]


async def test_what_the_fast_path_leaves_is_the_sdks() -> None:
    async with trio.open_nursery() as nursery:
        endpoint = McpEndpoint(ScriptServing())  # type: ignore[arg-type]
        nursery.start_soon(endpoint.run)
        for params, headers in LEFT:
            mine = await post(endpoint, scope_of(CHILD, params, **headers), request(1, params))
            theirs = await post(endpoint._manager.handle_request, scope_of(CHILD, params, **headers),
                                request(1, params))
            assert endpoint.ready.is_set()  # the first loaded the SDK
            assert mine.same() == theirs.same(), (params, headers)
        nursery.cancel_scope.cancel()


async def test_a_call_silent_past_the_ping_interval_streams_pings_as_the_sdk_does(
    autojump_clock: trio.testing.MockClock,
) -> None:
    params = call("team_tell", {"toTeam": "late", "message": "m"}, CLAUDE)
    async with trio.open_nursery() as nursery:
        endpoint = McpEndpoint(ScriptServing())  # type: ignore[arg-type]
        nursery.start_soon(endpoint.run)
        start = trio.current_time()
        mine = await post(endpoint, scope_of(CHILD, params), request(1, params))
        assert not endpoint.ready.is_set()
        sdk_endpoint = await loaded(ScriptServing(), nursery, deadline=math.inf)
        sdk_start = trio.current_time()
        theirs = await post(sdk_endpoint._manager.handle_request, scope_of(CHILD, params), request(1, params))
        nursery.cancel_scope.cancel()
    assert mine.same() == theirs.same()
    assert [(at - start, chunk[:8]) for at, chunk in mine.chunks] == [
        (15.0, b": ping\r\n"), (30.0, b": ping\r\n"), (40.0, b"event: m")]
    assert [at - sdk_start for at, _ in theirs.chunks] == [15.0, 30.0, 40.0]
    assert mine.messages()[0]["result"]["structuredContent"]["text"] == "at last"


async def test_a_client_that_leaves_cancels_its_call_and_its_tell() -> None:
    serving = ScriptServing()
    params = call("team_tell", {"toTeam": "slow", "message": "m"}, {**CLAUDE, "progressToken": 1})
    leave = trio.Event()
    async with trio.open_nursery() as nursery:
        endpoint = McpEndpoint(serving)  # type: ignore[arg-type]
        nursery.start_soon(endpoint.run)
        with trio.fail_after(10):
            async with trio.open_nursery() as client:
                client.start_soon(post, endpoint, scope_of(CHILD, params), request(1, params), leave)
                await serving.slow_running.wait()
                leave.set()
            await serving.cancelled.wait()
        assert not endpoint.ready.is_set()
        nursery.cancel_scope.cancel()
    assert (CancelTell(tell_id="t-3"), CHILD) in serving.sent


async def test_a_form_sealed_on_the_fast_path_is_answered_through_the_sdk_by_its_caller_only() -> None:
    """The owner's tell waits for an approval: the call ends with a form (input_required),
    its requestState sealed by the endpoint's seal, bound to the owner; the retry answering
    it (the SDK's: it carries requestState) resumes the tell. Another caller's retry with
    the same state is refused."""
    serving = ScriptServing()
    arguments = {"toTeam": "gated", "message": "m", "timeout": 0}
    params = call("team_tell", arguments, CLAUDE)
    async with trio.open_nursery() as nursery:
        endpoint = McpEndpoint(serving)  # type: ignore[arg-type]
        nursery.start_soon(endpoint.run)
        asked = (await post(endpoint, scope_of(OWNER, params), request(1, params))).messages()[0]
        assert not endpoint.ready.is_set()
        assert asked["result"]["resultType"] == "input_required", asked
        state = asked["result"]["requestState"]
        answer = {"approval": {"action": "accept", "content": {"decision": "approve"}}}
        retry = call("team_tell", arguments, CLAUDE, inputResponses=answer, requestState=state)
        stranger = Caller.child("beta", "external->beta")
        refused = await post(endpoint, scope_of(stranger, retry), request(2, retry))
        done = await post(endpoint, scope_of(OWNER, retry), request(3, retry))
        nursery.cancel_scope.cancel()
    assert refused.status == ERROR_HTTP_STATUS[-32602]
    assert refused.messages()[0]["error"]["message"] == "Invalid or expired requestState"
    assert done.messages()[0]["result"]["structuredContent"]["text"] == "done"
    assert [r for r, _ in serving.sent if isinstance(r, Decide)] == [Decide(approval_id="a-1", allow=True,
                                                                           by="external (Claude Code)")]


def test_the_error_statuses_are_the_sdks() -> None:
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

    assert ERROR_CODE_HTTP_STATUS == ERROR_HTTP_STATUS

