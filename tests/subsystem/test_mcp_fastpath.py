"""The stdio ``iris mcp``'s fast path (``iris_mcp/fastpath.py``, ``iris_mcp/stdio.py``)
answers as the MCP SDK's server answers: the same lines for the same requests, driven
over in-memory streams both ways (the fast path on, and every line to the SDK), with a
scripted link standing in for irisd. A cancelled fast call cancels its tell and is not
answered; a form's requestState sealed on the fast path is the SDK's to verify."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from fakes.scripted_irisd import ScriptedIrisd
from iris_mcp.shim import Shim, StateSeal
from iris_mcp.stdio import Front
from protocol.framing import LineFramer
from protocol.messages import (
    CancelTell,
    Decide,
    Event,
    Reply,
    Request,
)

MODERN = "2026-07-28"
PLAIN = {"io.modelcontextprotocol/protocolVersion": MODERN,
         "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
         "io.modelcontextprotocol/clientCapabilities": {}}
FORMS = {**PLAIN, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}

class ScriptLink(ScriptedIrisd):
    """irisd as the shim sees it (tests/fakes/scripted_irisd.py), remembering each request."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[Request] = []

    async def call(
        self,
        request: Request,
        *,
        idempotent: bool,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        start_daemon: bool = True,
    ) -> Reply:
        self.sent.append(request)
        return await self.reply(request, on_event)


class Client:
    """A raw JSON-RPC client on the Front's streams."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        self.send, self.receive = send, receive
        self.framer = LineFramer()

    async def write(self, message: dict[str, Any]) -> None:
        await self.send.send_all(json.dumps(message).encode() + b"\n")

    async def line(self) -> dict[str, Any]:
        with trio.fail_after(10):
            while (line := self.framer.next_frame()) is None:
                self.framer.receive_data(await self.receive.receive_some())
        message: dict[str, Any] = json.loads(line)
        return message

    async def ask(self, request_id: int, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The request's answer and every line before it (its progress notifications)."""
        await self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        lines = [await self.line()]
        while lines[-1].get("id") != request_id:
            lines.append(await self.line())
        return lines


async def run_front(
    fast: bool, script: Callable[[Client, ScriptLink], Awaitable[Any]], *, team: str = "alpha"
) -> tuple[Any, Front, ScriptLink]:
    """``script`` against a Front (fast path ``fast``) on a Shim over a ScriptLink."""
    link = ScriptLink()
    shim = Shim(link, team=team)
    seal = StateSeal(lambda ctx: None)
    client_out, front_in = trio.testing.memory_stream_one_way_pair()
    front_out, client_in = trio.testing.memory_stream_one_way_pair()
    front = Front(shim, seal, front_out, fast=fast)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(front.serve, front_in)
        result = await script(Client(client_out, client_in), link)
        await client_out.aclose()  # the client leaves: the Front winds down
    return result, front, link


def call(name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "_meta": meta}


# Opened by server/discover (the SDK's, both ways), then what the fast path takes, and what it leaves.
SESSION: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {"_meta": PLAIN}),
    ("tools/list", {"_meta": PLAIN}),
    ("ping", {"_meta": PLAIN}),  # no method of this era: the SDK's answer
    ("tools/call", call("team_tell", {"toTeam": "echo", "message": "m"}, PLAIN)),
    ("tools/call", call("team_tell", {"toTeam": "behind", "message": "m"}, {**PLAIN, "progressToken": "p-1"})),
    ("tools/call", call("team_tell", {"toTeam": "echo", "message": "m"}, {**PLAIN, "progressToken": 7})),
    ("tools/call", call("team_getTeamName", {}, PLAIN)),
    ("tools/call", call("team_nonesuch", {}, PLAIN)),
    ("tools/call", call("team_tell", {"toTeam": "echo"}, PLAIN)),
    ("tools/call", call("team_tell", {"toTeam": "echo", "message": "m"}, FORMS)),
    ("tools/call", {"name": "team_getTeamName", "_meta": PLAIN}),
    # what the fast path leaves to the SDK: its answers are the same either way
    ("tools/call", {**call("team_getTeamName", {}, PLAIN), "task": {"ttl": 1000}}),
    ("tools/call", call("team_getTeamName", {}, {**PLAIN, "progressToken": None})),
    ("tools/call", {"arguments": {}, "_meta": PLAIN}),
    ("tools/call", call("team_getTeamName", {}, {**PLAIN, "io.modelcontextprotocol/protocolVersion": "2099-01-01"})),
    ("tools/list", {"_meta": PLAIN, "cursor": "x"}),
    ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
    ("resources/list", {"_meta": PLAIN}),
    # odd envelopes and capabilities: refused, or read, as the SDK does either way
    ("tools/list", {"_meta": {**PLAIN, "io.modelcontextprotocol/clientCapabilities": {"elicitation": 5}}}),
    ("tools/call", call("team_getTeamName", {}, {**PLAIN, "io.modelcontextprotocol/clientCapabilities": []})),
    ("tools/call", call("team_getTeamName", {}, {**PLAIN, "io.modelcontextprotocol/clientInfo": {"name": 1}})),
    ("tools/call", call("team_getTeamName", {}, {"io.modelcontextprotocol/protocolVersion": MODERN})),
    ("tools/call", call("team_getTeamName", {}, {**PLAIN, "io.modelcontextprotocol/protocolVersion": 2026})),
    ("server/discover", {"_meta": PLAIN, "extra": 1}),
    ("server/discover", {"_meta": {**PLAIN, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}}),
    ("tools/list", {"_meta": "no object"}),
    ("tools/list", {}),
]


async def play_session(client: Client, link: ScriptLink) -> list[list[dict[str, Any]]]:
    return [await client.ask(request_id, method, params) for request_id, (method, params) in enumerate(SESSION)]


async def test_the_fast_path_answers_what_the_sdk_answers() -> None:
    fast, front, _ = await run_front(True, play_session)
    sdk, sdk_front, _ = await run_front(False, play_session)
    assert sdk_front.taken == 0
    assert front.taken == 10  # server/discover, tools/list and the eight calls it takes
    assert sdk_front.server is not None and front.server is not None  # loaded for ping, the first line it left
    for request, mine, theirs in zip(SESSION, fast, sdk, strict=True):
        assert mine == theirs, request
    # and the answers are what they should be (not merely alike)
    answers = {request_id: lines[-1] for request_id, lines in enumerate(fast)}
    assert answers[3]["result"]["structuredContent"]["text"] == "hello" and not answers[3]["result"]["isError"]
    assert [line["params"] for line in fast[4][:-1]] == [
        {"progressToken": "p-1", "progress": 1.0, "message": "behind: queued behind 1 tell"}
    ]
    assert len(fast[5]) == 1  # answered at once: no progress (the first interval runs from the call's start)
    assert answers[7]["result"]["isError"] and "unknown tool" in answers[7]["result"]["content"][0]["text"]
    assert answers[8]["result"]["isError"] and "invalid arguments" in answers[8]["result"]["content"][0]["text"]
    assert answers[11]["result"]["resultType"] == "complete"  # an unknown field: the SDK's, ignoring it
    assert answers[2]["error"]["message"] == "Method not found"  # ping is no method of this era
    assert "error" in answers[13] and "error" in answers[14] and "error" in answers[16] and "error" in answers[17]


async def test_a_form_asked_on_the_fast_path_is_the_sdks_and_its_answer_resumes_the_tell() -> None:
    """The tell waits for an approval: the call ends with a form (input_required), its
    requestState sealed; the retry answering it goes to the SDK, which verifies the seal."""
    arguments = {"toTeam": "gated", "message": "m", "timeout": 0}

    async def ask_and_answer(client: Client, link: ScriptLink) -> tuple[dict[str, Any], dict[str, Any]]:
        await client.ask(0, "server/discover", {"_meta": FORMS})
        (asked,) = await client.ask(1, "tools/call", call("team_tell", arguments, FORMS))
        state = asked["result"]["requestState"]
        answer = {"approval": {"action": "accept", "content": {"decision": "approve"}}}
        retry = {**call("team_tell", arguments, FORMS), "inputResponses": answer, "requestState": state}
        (done,) = await client.ask(2, "tools/call", retry)
        return asked, done

    (fast_asked, fast_done), front, link = await run_front(True, ask_and_answer)
    (sdk_asked, sdk_done), _, _ = await run_front(False, ask_and_answer)
    assert front.taken == 2  # discover and the first call; the retry was the SDK's
    assert fast_asked["result"]["resultType"] == "input_required"
    assert fast_asked["result"]["requestState"] != sdk_asked["result"]["requestState"]  # sealed, each its own
    for asked in (fast_asked, sdk_asked):
        asked["result"]["requestState"] = "sealed"
    assert fast_asked == sdk_asked
    assert fast_done == sdk_done and fast_done["result"]["structuredContent"]["text"] == "done"
    assert [r for r in link.sent if isinstance(r, Decide)] == [Decide(approval_id="a-1", allow=True,
                                                                        by="alpha (Claude Code)")]


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "sdk"])
async def test_a_cancelled_call_cancels_its_tell_and_is_not_answered(fast: bool) -> None:
    async def cancel(client: Client, link: ScriptLink) -> list[dict[str, Any]]:
        await client.ask(0, "server/discover", {"_meta": PLAIN})
        await client.write({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": call("team_tell", {"toTeam": "slow", "message": "m"}, PLAIN)})
        with trio.fail_after(10):
            await link.slow_running.wait()
        await client.write({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 1, "reason": "the person pressed Esc"}})
        with trio.fail_after(10):
            await link.cancelled.wait()
        return await client.ask(2, "tools/list", {"_meta": PLAIN})

    after, front, link = await run_front(fast, cancel)
    assert [line["id"] for line in after] == [2]  # nothing for the cancelled call before the next answer
    assert CancelTell(tell_id="t-3") in link.sent
    assert front.taken == (3 if fast else 0)  # with the fast path: discover, the call (never answered) was its own


async def test_calls_running_when_the_client_leaves_are_answered_closed() -> None:
    async def leave(client: Client, link: ScriptLink) -> None:
        await client.ask(0, "server/discover", {"_meta": PLAIN})
        await client.write({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": call("team_tell", {"toTeam": "slow", "message": "m"}, PLAIN)})
        with trio.fail_after(10):
            await link.slow_running.wait()

    client_out, front_in = trio.testing.memory_stream_one_way_pair()
    front_out, client_in = trio.testing.memory_stream_one_way_pair()
    link = ScriptLink()
    shim = Shim(link, team="alpha")
    seal = StateSeal(lambda ctx: None)
    front = Front(shim, seal, front_out)
    client = Client(client_out, client_in)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(front.serve, front_in)
        await leave(client, link)
        await client_out.aclose()
        closed = await client.line()
    assert closed == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "Connection closed"}}
    assert CancelTell(tell_id="t-3") in link.sent


async def test_a_client_gone_from_stdout_ends_the_session_quietly() -> None:
    """Its answers are dropped (no crash, no hang); the session ends with stdin."""
    client_out, front_in = trio.testing.memory_stream_one_way_pair()
    front_out, client_in = trio.testing.memory_stream_one_way_pair()
    link = ScriptLink()
    shim = Shim(link, team="alpha")
    seal = StateSeal(lambda ctx: None)
    front = Front(shim, seal, front_out)
    client = Client(client_out, client_in)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(front.serve, front_in)
            await client.ask(0, "server/discover", {"_meta": PLAIN})
            await client_in.aclose()
            await client.write({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": call("team_tell", {"toTeam": "echo", "message": "m"}, PLAIN)})
            await client.write({"jsonrpc": "2.0", "id": 2, "method": "resources/list", "params": {"_meta": PLAIN}})
            await client_out.aclose()
    assert front.broken and front.taken == 2


# What claude 2.1.330 sent iris mcp (recorded 2026-11-27 through a pass-through wrapper, `claude -p`
# calling team_tell against the scripted model), in its order: the fast path must take both.
CLAUDE_CODE_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {
        "name": "claude-code", "title": "Claude Code", "version": "2.1.330",
        "description": "Anthropic's agentic coding tool", "websiteUrl": "https://claude.com/claude-code",
    },
    "io.modelcontextprotocol/clientCapabilities": {
        "roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}},
    },
}
CLAUDE_CODE_LINES = [
    {"method": "tools/list", "jsonrpc": "2.0", "id": 0, "params": {"_meta": CLAUDE_CODE_META}},
    {"method": "tools/call",
     "params": {"name": "team_tell", "arguments": {"toTeam": "beta", "message": "ping"},
                "_meta": {**CLAUDE_CODE_META, "claudecode/toolUseId": "toolu_scripted_000001", "progressToken": 1}},
     "jsonrpc": "2.0", "id": 1},
]


def test_what_claude_code_sends_takes_the_fast_path() -> None:
    from iris_mcp.fastpath import FastRequest, read_line

    listed, called = (read_line(json.dumps(line).encode()) for line in CLAUDE_CODE_LINES)
    assert isinstance(listed, FastRequest) and listed.method == "tools/list"
    assert isinstance(called, FastRequest) and called.method == "tools/call" and called.name == "team_tell"
    assert called.progress_token == 1 and called.arguments == {"toTeam": "beta", "message": "ping"}
    assert called.forms  # it declares forms


async def test_an_id_still_in_use_goes_to_the_sdk_and_the_running_call_stays_cancellable() -> None:
    async def reuse(client: Client, link: ScriptLink) -> list[dict[str, Any]]:
        await client.ask(0, "server/discover", {"_meta": PLAIN})
        await client.write({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": call("team_tell", {"toTeam": "slow", "message": "m"}, PLAIN)})
        with trio.fail_after(10):
            await link.slow_running.wait()
        again = await client.ask(1, "tools/call", call("team_getTeamName", {}, PLAIN))  # the same id
        await client.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        with trio.fail_after(10):
            await link.cancelled.wait()  # the first call, still known by its id
        return again

    again, front, link = await run_front(True, reuse)
    assert "You are team" in again[-1]["result"]["content"][0]["text"]  # answered (by the SDK's server)
    assert front.taken == 2 and CancelTell(tell_id="t-3") in link.sent


async def test_a_session_the_fast_path_answers_whole_never_loads_the_sdk() -> None:
    """discover, list, a call with progress, a cancelled call: the SDK's server is never
    built (the subprocess test in tests/e2e/test_mcp_shim.py checks that nothing of it is
    imported either)."""

    async def session(client: Client, link: ScriptLink) -> list[dict[str, Any]]:
        await client.ask(0, "server/discover", {"_meta": PLAIN})
        await client.ask(1, "tools/list", {"_meta": PLAIN})
        await client.ask(2, "tools/call", call("team_tell", {"toTeam": "behind", "message": "m"},
                                               {**PLAIN, "progressToken": 2}))
        await client.write({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": call("team_tell", {"toTeam": "slow", "message": "m"}, PLAIN)})
        with trio.fail_after(10):
            await link.slow_running.wait()
        await client.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        await client.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
        with trio.fail_after(10):
            await link.cancelled.wait()
        return await client.ask(4, "tools/list", {"_meta": PLAIN})

    after, front, link = await run_front(True, session)
    assert [line["id"] for line in after] == [4]
    assert front.server is None and front.taken == 5 and CancelTell(tell_id="t-3") in link.sent


async def test_an_initialize_first_is_the_sdks_and_so_is_the_rest_of_the_session() -> None:
    async def legacy(client: Client, link: ScriptLink) -> list[list[dict[str, Any]]]:
        return [
            await client.ask(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                               "clientInfo": {"name": "x", "version": "0"}}),
            await client.ask(1, "tools/list", {"_meta": PLAIN}),  # an envelope on this era: refused
            await client.ask(2, "tools/call", {"name": "team_getTeamName", "arguments": {}}),
        ]

    (opened, enveloped, called), front, _ = await run_front(True, legacy)
    assert front.server is not None and front.taken == 0 and not front.modern
    assert opened[-1]["result"]["protocolVersion"] == "2025-11-25"
    assert enveloped[-1]["error"]["code"] == -32600
    assert "You are team" in called[-1]["result"]["content"][0]["text"]


# --- the fast path's helpers are the SDK's rules, for the same inputs -------------------

ENVELOPES: list[Any] = [
    None, [], "x", {}, {"_meta": None}, {"_meta": []}, {"_meta": {}}, {"_meta": PLAIN}, {"_meta": FORMS},
    {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
    {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
    {"_meta": {**PLAIN, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}},
    {"_meta": {**PLAIN, "io.modelcontextprotocol/protocolVersion": 20260728}},
    {"_meta": {**PLAIN, "io.modelcontextprotocol/protocolVersion": None}},
    {"_meta": {**PLAIN, "io.modelcontextprotocol/clientCapabilities": None}},
    {"_meta": {**PLAIN, "io.modelcontextprotocol/clientInfo": None}},
]


@pytest.mark.parametrize("params", ENVELOPES)
def test_classify_routes_and_refuses_as_the_sdk(params: Any) -> None:
    from mcp.shared.inbound import InboundModernRoute, classify_inbound_request

    from iris_mcp.fastpath import classify

    theirs = classify_inbound_request({"method": "tools/list", "params": params})
    mine = classify(params)
    if isinstance(theirs, InboundModernRoute):
        assert mine == (theirs.protocol_version, theirs.client_capabilities)
    else:
        assert mine is None


CAPABILITIES: list[Any] = [
    {}, {"elicitation": {}}, {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}},
    {"elicitation": {"form": {}, "url": {}}}, {"elicitation": None}, {"elicitation": {"form": None, "url": {}}},
    {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}, {"roots": {}}, {"roots": None},
    {"experimental": {"x": {}}}, {"extensions": {"io.example/x": {"a": 1}}}, {"sampling": {}}, {"tasks": {}},
    {"future": [1, 2]}, {"elicitation": {"form": {"anything": 1}}},
    # mis-shaped: the SDK reads them as no capabilities (or by rules of its own): the fast path leaves them
    None, [], "x", 5, {"elicitation": 5}, {"elicitation": []}, {"elicitation": {"form": 5}},
    {"elicitation": {"url": "yes"}}, {"roots": {"listChanged": "yes"}}, {"roots": {"listChanged": 1}},
    {"roots": []}, {"experimental": {"x": 5}}, {"experimental": []}, {"extensions": "x"},
    {"sampling": {"context": {}}}, {"sampling": 5}, {"tasks": {"list": {}}},
]
PLAIN_CAPABILITIES = 16  # the first ones: the fast path reads them itself


@pytest.mark.parametrize("capabilities", CAPABILITIES)
def test_client_forms_reads_capabilities_as_the_sdk(capabilities: Any) -> None:
    import mcp_types
    from pydantic import ValidationError

    from iris_mcp.fastpath import client_forms
    from iris_mcp.shim import can_elicit

    try:
        model: mcp_types.ClientCapabilities | None = mcp_types.ClientCapabilities.model_validate(
            capabilities, by_name=False)
    except ValidationError:
        model = None
    mine = client_forms(capabilities)
    if CAPABILITIES.index(capabilities) < PLAIN_CAPABILITIES:
        assert mine is not None
    assert mine is None or mine == can_elicit(MODERN, model)  # None: the SDK's to read (lax rules of its own)


@pytest.mark.parametrize("value", [7, "7", "x", "-3", " 8 ", "1_0", True, False, None, 1.5, [], {}, "", "٣"])
def test_request_ids_are_read_and_coerced_as_the_sdk(value: Any) -> None:
    from mcp.shared.dispatcher import as_request_id, coerce_request_id
    from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params

    from iris_mcp import fastpath

    assert fastpath.as_request_id(value) == as_request_id(value)
    assert fastpath.cancelled_request_id({"requestId": value}) == cancelled_request_id_from_params({"requestId": value})
    if (request_id := as_request_id(value)) is not None:
        assert fastpath.coerce_request_id(request_id) == coerce_request_id(request_id)
        assert type(fastpath.coerce_request_id(request_id)) is type(coerce_request_id(request_id))
    for params in (None, {}, {"reason": "x"}):  # a cancel naming no request
        assert fastpath.cancelled_request_id(params) is None is cancelled_request_id_from_params(params)


@pytest.mark.parametrize("line", [
    {"jsonrpc": "2.0", "id": True, "method": "tools/list", "params": {"_meta": PLAIN}},
    {"jsonrpc": "2.0", "id": None, "method": "tools/list", "params": {"_meta": PLAIN}},
    {"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {"_meta": PLAIN}},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]},
    {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": {"_meta": PLAIN}},
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "no id"}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
])
def test_odd_lines_are_left_to_the_sdk(line: dict[str, Any]) -> None:
    from iris_mcp.fastpath import read_line

    assert read_line(json.dumps(line).encode()) is None


def test_the_server_info_stamped_on_each_answer_is_the_sdks() -> None:
    from iris_mcp.listing import SERVER_INFO
    from iris_mcp.shim import build_server

    shim = Shim(ScriptLink(), team="alpha")
    assert build_server(shim).server_info_stamp == SERVER_INFO


async def test_the_sdk_loaded_late_serves_the_era_the_fast_path_opened() -> None:
    """The fast path answered the first request (no discover: a call straight away); the
    SDK's server, loaded for a later line, refuses an initialize as a 2026-07-28 connection
    does, as it would have had it seen the session from its start."""
    late = [
        ("tools/call", call("team_getTeamName", {}, {**PLAIN, "progressToken": 5})),
        ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "x", "version": "0"}}),
        ("ping", {"_meta": PLAIN}),
        ("tools/list", {"_meta": PLAIN}),
    ]

    async def session(client: Client, link: ScriptLink) -> list[list[dict[str, Any]]]:
        return [await client.ask(request_id, method, params) for request_id, (method, params) in enumerate(late)]

    fast, front, _ = await run_front(True, session)
    sdk, _, _ = await run_front(False, session)
    assert fast == sdk and front.taken == 2 and front.server is not None
    assert fast[1][-1]["error"]["code"] == -32022  # initialize on a connection of the 2026-07-28 era
