"""irisd's ``/mcp`` answers a client's ``server/discover`` and ``tools/list`` (protocol
2026-07-28, what a claude child asks as it starts) without loading the MCP SDK
(``iris_mcp/listing.py``); the answers are the SDK's own, for every kind of caller, and
anything else still goes to the SDK (irisd/http/mcp.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from irisd.caller import OWNER, Caller
from irisd.http.gate import CALLER_KEY
from irisd.http.mcp import McpEndpoint

MODERN = "2026-07-28"
CALLERS = [OWNER, Caller.child("alpha", "beta->alpha"), Caller.reader()]
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


def scope_of(caller: Caller, method: str, *, version: str = MODERN) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
               (b"mcp-method", method.encode()), (b"mcp-protocol-version", version.encode()),
               (b"host", b"127.0.0.1:1615")]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/mcp", "raw_path": b"/mcp", "root_path": "", "query_string": b"", "headers": headers,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 1615), CALLER_KEY: caller}


async def answer(app: Any, scope: dict[str, Any], body: dict[str, Any] | bytes) -> tuple[int, Any]:
    """What ``app`` answers ``body`` with: its status and its JSON (the SDK answers a request of
    this era with JSON, not an event stream), or its text if it is none."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = [{"type": "http.request", "body": raw, "more_body": False}]
    started: list[dict[str, Any]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if sent:
            return sent.pop(0)
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    with trio.fail_after(30):
        await app(scope, receive, send)
    text = b"".join(chunks).decode()
    try:
        return started[0]["status"], json.loads(text)
    except ValueError:
        return started[0]["status"], text


def request(method: str, request_id: str | int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": META}}


@pytest.mark.parametrize("caller", CALLERS, ids=lambda c: c.kind)
@pytest.mark.parametrize("method", ["server/discover", "tools/list"])
async def test_the_listing_irisd_answers_itself_is_the_sdks(caller: Caller, method: str) -> None:
    endpoint = McpEndpoint(serving=None)  # type: ignore[arg-type]  # these requests serve no tool
    own_status, own = await answer(endpoint, scope_of(caller, method), request(method, 7))
    assert not endpoint.ready.is_set()  # answered without the SDK
    async with trio.open_nursery() as nursery:
        nursery.start_soon(endpoint.run)
        endpoint.want()
        with trio.fail_after(60):
            await endpoint.ready.wait()
        sdk_status, sdk = await answer(endpoint._manager.handle_request, scope_of(caller, method), request(method, 7))
        nursery.cancel_scope.cancel()
    assert (own_status, own) == (sdk_status, sdk)
    assert own["id"] == 7 and "result" in own


async def test_anything_else_goes_to_the_sdk() -> None:
    """Another method, another protocol version, a malformed body: the SDK answers (loaded then)."""
    endpoint = McpEndpoint(serving=None)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(endpoint.run)
        _, other = await answer(endpoint, scope_of(OWNER, "resources/list"), request("resources/list", 1))
        assert endpoint.ready.is_set() and other["id"] == 1, other  # the SDK's answer (Iris has no resources)
        nursery.cancel_scope.cancel()
    endpoint = McpEndpoint(serving=None)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(endpoint.run)
        # the header says one thing, the body another
        mismatched = {**request("tools/list", 2), "method": "resources/list"}
        await answer(endpoint, scope_of(OWNER, "tools/list"), mismatched)
        assert endpoint.ready.is_set()
        nursery.cancel_scope.cancel()
    endpoint = McpEndpoint(serving=None)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(endpoint.run)
        deep = b"[" * 100_000 + b"]" * 100_000  # no JSON Python's own parser could read
        status, _ = await answer(endpoint, scope_of(OWNER, "tools/list"), deep)
        assert status != 200  # refused by the SDK, not a server error of the listing's own
        older = scope_of(OWNER, "tools/list", version="2025-11-25")
        await answer(endpoint, older, request("tools/list", 3))
        assert endpoint.ready.is_set()  # another era: the SDK's answer
        nursery.cancel_scope.cancel()
