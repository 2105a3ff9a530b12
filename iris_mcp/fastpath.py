"""The stdio ``iris mcp``'s hot requests, read and answered without the MCP SDK's JSON-RPC.

How it works: every line from the client is offered to ``read_line`` first. A
``tools/call``, ``tools/list`` or ``ping`` of protocol 2026-07-28 (what Claude Code
sends, each carrying its own envelope in ``params._meta``) whose shape is plain comes
back as a ``FastRequest``: ``iris_mcp/stdio.py`` runs it on the same ``Shim`` and the
same ``StateSeal`` as the SDK's server and writes the answer itself (``response``).
A ``notifications/cancelled`` comes back as a ``Cancel`` (it cancels a fast call of
that id). Anything else is None and goes to the SDK's server, unchanged: the first
request of the connection (it decides the protocol era there), ``initialize`` and every
request of the older era, ``server/discover``, a retry answering a form
(``requestState``, ``inputResponses``: the SDK verifies them), a field this module
does not know, an envelope the SDK would refuse (its own ``classify_inbound_request``
says), a line that is no JSON. So a fast answer is the SDK's own answer for the same
request, minus its pydantic models, memory streams and task per request
(``tests/subsystem/test_mcp_fastpath.py`` compares them).

Pure: bytes in, values out; no trio, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import msgspec
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp_types import ClientCapabilities, RequestId
from pydantic import ValidationError

FAST_METHODS = ("tools/call", "tools/list")  # ping is no method of this era: the SDK refuses it
INTERNAL_ERROR = -32603  # what the SDK answers when a handler raised (mcp.server.runner.modern_error_data)


class _Message(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC request or notification from the client (a response has other fields)."""

    jsonrpc: Literal["2.0"]
    method: str
    id: int | str | None = None
    params: dict[str, Any] | None = None


class _CallParams(msgspec.Struct, forbid_unknown_fields=True):
    """``tools/call`` as the fast path takes it: no ``requestState``, no ``inputResponses``."""

    name: str
    meta: dict[str, Any] = msgspec.field(name="_meta")
    arguments: dict[str, Any] | None = None


class _EnvelopeOnly(msgspec.Struct, forbid_unknown_fields=True):
    """``tools/list`` (no cursor: one page)."""

    meta: dict[str, Any] = msgspec.field(name="_meta")


_decode_message = msgspec.json.Decoder(_Message).decode
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class FastRequest:
    """A request the fast path answers."""

    id: int | str
    method: str
    params: dict[str, Any]  # as sent (the StateSeal binds a requestState to its arguments)
    protocol_version: str
    capabilities: ClientCapabilities | None  # as the SDK reads them (None: none or mis-shaped)
    progress_token: int | str | None = None
    name: str = ""  # tools/call: the tool and its arguments
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Cancel:
    """``notifications/cancelled``: the client no longer wants request ``request_id``."""

    request_id: RequestId


def read_line(line: bytes) -> FastRequest | Cancel | None:
    """What the fast path does with one line of a connection already serving the
    2026-07-28 era (see the module docstring); None: the SDK's."""
    try:
        message = _decode_message(line)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested ~1000 deep
        return None
    if message.id is None:
        if message.method != "notifications/cancelled":
            return None
        request_id = cancelled_request_id_from_params(message.params)
        return None if request_id is None else Cancel(coerce_request_id(request_id))
    if message.method not in FAST_METHODS or isinstance(message.id, bool):
        return None
    route = classify_inbound_request({"method": message.method, "params": message.params})
    if not isinstance(route, InboundModernRoute):
        return None  # the SDK's refusal, in its words
    params = message.params or {}
    try:
        if message.method == "tools/call":
            call = msgspec.convert(params, _CallParams)
            meta = call.meta
        else:
            meta = msgspec.convert(params, _EnvelopeOnly).meta
    except msgspec.ValidationError:
        return None
    token = meta.get("progressToken")
    if "progressToken" in meta and (not isinstance(token, int | str) or isinstance(token, bool)):
        return None  # the SDK drops a malformed _meta whole: leave that to it
    capabilities = _capabilities(route.client_capabilities)
    request = FastRequest(message.id, message.method, params, route.protocol_version, capabilities, token)
    if message.method == "tools/call":
        return replace(request, name=call.name, arguments=call.arguments)
    return request


def _capabilities(value: Any) -> ClientCapabilities | None:
    """The client's capabilities as the SDK's ``Connection.from_envelope`` reads them (a
    client sends the same ones with every request: the last are kept)."""
    global _last_capabilities
    last_value, last = _last_capabilities
    if value == last_value:
        return last
    try:
        capabilities: ClientCapabilities | None = ClientCapabilities.model_validate(value, by_name=False)
    except ValidationError:
        capabilities = None
    _last_capabilities = (value, capabilities)
    return capabilities


_last_capabilities: tuple[Any, ClientCapabilities | None] = (object(), None)


def opens_modern(method: str, params: Any) -> bool:
    """Whether a connection's first request opens the 2026-07-28 era (the SDK's rule,
    ``mcp.server.runner.serve_dual_era_loop``): a request other than ``initialize``
    whose ``_meta`` names a protocol version."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return method != "initialize" and isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


def complete(result: dict[str, Any], server_info: dict[str, Any]) -> dict[str, Any]:
    """A result of this era as the SDK finishes it: ``resultType`` and who answered."""
    return {"resultType": "complete", **result, "_meta": {"io.modelcontextprotocol/serverInfo": server_info}}


def response(request_id: int | str, result: dict[str, Any]) -> bytes:
    """The line answering ``request_id``."""
    return _encode({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n"


def error_response(request_id: int | str, code: int, message: str, data: Any = None) -> bytes:
    """The line refusing ``request_id``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _encode({"jsonrpc": "2.0", "id": request_id, "error": error}) + b"\n"


def progress(token: int | str, value: float, message: str) -> bytes:
    """A ``notifications/progress`` line, as the SDK's ``report_progress`` sends it."""
    params = {"progressToken": token, "progress": value, "message": message}
    return _encode({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}) + b"\n"
