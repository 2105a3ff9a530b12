"""The stdio ``iris mcp``'s requests of the 2026-07-28 era, read and answered without the
MCP SDK (not even imported: loading it costs about a second of CPU, and Claude Code starts
``iris mcp`` for every session).

How it works: every line from the client is offered to ``read_line`` first. A
``server/discover``, ``tools/list`` or ``tools/call`` of protocol 2026-07-28 (what Claude
Code sends, each carrying its own envelope in ``params._meta``) whose shape is plain comes
back as a ``FastRequest``: ``iris_mcp/stdio.py`` answers it on the same ``Shim`` and the
same ``StateSeal`` as the SDK's server would (``response``). A ``notifications/cancelled``
comes back as a ``Cancel`` (it cancels a fast call of that id). Anything else is None and
goes to the SDK's server, unchanged: ``initialize`` and every request of the older era, a
retry answering a form (``requestState``, ``inputResponses``: the SDK verifies them), a
field this module does not know, an envelope the SDK would refuse, capabilities or client
info of a shape this module does not read (the SDK's validation decides those), a line
that is no JSON. The helpers below are the SDK's rules, restated for plain JSON values
(``classify``: its ``classify_inbound_request`` without headers; ``client_forms``: its
``ClientCapabilities`` as ``can_elicit`` reads it; ``as_request_id``, ``coerce_request_id``,
``cancelled_request_id``): ``tests/subsystem/test_mcp_fastpath.py`` checks each against the
SDK's own on odd inputs, and a whole session's answers both ways.

Pure: bytes in, values out; no trio, no I/O, no SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import msgspec

FAST_METHODS = ("server/discover", "tools/call", "tools/list")  # ping is no method of this era
INTERNAL_ERROR = -32603  # what the SDK answers when a handler raised (mcp.server.runner.modern_error_data)
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)  # mcp_types.version.MODERN_PROTOCOL_VERSIONS
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"

RequestId = int | str


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
    """``tools/list`` (no cursor: one page) and ``server/discover``."""

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
    forms: bool  # the client declared form elicitation (it can show its person a form)
    progress_token: int | str | None = None
    name: str = ""  # tools/call: the tool and its arguments
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Cancel:
    """``notifications/cancelled``: the client no longer wants request ``request_id``."""

    request_id: RequestId


class FastError(Exception):
    """A fast request refused with a JSON-RPC error (as the SDK's server refuses it)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def read_line(line: bytes) -> FastRequest | Cancel | None:
    """What the fast path does with one line of a connection serving the 2026-07-28 era, or
    opening it (see the module docstring); None: the SDK's."""
    try:
        message = _decode_message(line)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested ~1000 deep
        return None
    if message.id is None:
        if message.method != "notifications/cancelled":
            return None
        request_id = cancelled_request_id(message.params)
        return None if request_id is None else Cancel(coerce_request_id(request_id))
    if message.method not in FAST_METHODS or isinstance(message.id, bool):
        return None
    params = message.params or {}
    route = classify(params)
    if route is None:
        return None  # the SDK's refusal, in its words
    version, capabilities = route
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
    forms = client_forms(capabilities)
    if forms is None or not plain_client_info(meta.get(CLIENT_INFO_KEY)):
        return None
    request = FastRequest(message.id, message.method, params, version, forms, token)
    if message.method == "tools/call":
        return replace(request, name=call.name, arguments=call.arguments)
    return request


def classify(params: Any) -> tuple[str, Any] | None:
    """The protocol version and the raw client capabilities of a request's envelope, when
    the SDK's ``classify_inbound_request`` (no headers: stdio) routes it as a 2026-07-28
    request; None when the SDK refuses it (and answers that itself)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or PROTOCOL_VERSION_KEY not in meta or CLIENT_CAPABILITIES_KEY not in meta:
        return None
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str) or version not in MODERN_PROTOCOL_VERSIONS:
        return None
    return version, meta[CLIENT_CAPABILITIES_KEY]


_CAPABILITY_MAPS = ("experimental", "extensions")  # dict[str, dict[str, Any]]
_FIELDLESS = ("sampling", "tasks")  # read here only when empty


def client_forms(capabilities: Any) -> bool | None:
    """Whether the client declared form elicitation in ``capabilities``, as the SDK's
    ``can_elicit`` reads its ``ClientCapabilities`` (an empty elicitation means form; url
    alone is no form); None for a shape read only by the SDK's validation (such a
    request is the SDK's to answer)."""
    if not isinstance(capabilities, dict):
        return None
    for key in _CAPABILITY_MAPS:
        value = capabilities.get(key)
        if value is not None and not (isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())):
            return None
    for key in _FIELDLESS:
        if capabilities.get(key) not in (None, {}):
            return None
    roots = capabilities.get("roots")
    if roots is not None and not (isinstance(roots, dict) and roots.get("listChanged") in (None, True, False)):
        return None
    elicitation = capabilities.get("elicitation")
    if elicitation is None:
        return False
    if not isinstance(elicitation, dict):
        return None
    form, url = elicitation.get("form"), elicitation.get("url")
    if not all(mode is None or isinstance(mode, dict) for mode in (form, url)):
        return None
    return form is not None or url is None


_INFO_TEXTS = ("name", "version", "title", "description", "websiteUrl")


def plain_client_info(info: Any) -> bool:
    """The envelope's client info is absent or of the plain shape Claude Code sends (its
    names and version as strings); any other is the SDK's to read."""
    if info is None:
        return True
    return (
        isinstance(info, dict)
        and "name" in info
        and "version" in info
        and all(key in _INFO_TEXTS and isinstance(value, str) for key, value in info.items())
    )


def opens_modern(method: str, params: Any) -> bool:
    """Whether a connection's first request opens the 2026-07-28 era (the SDK's rule,
    ``mcp.server.runner.serve_dual_era_loop``): a request other than ``initialize``
    whose ``_meta`` names a protocol version."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return method != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def as_request_id(value: object) -> RequestId | None:
    """An id off the wire, or None; a bool is none (True would alias id 1). The SDK's rule."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    return None


def coerce_request_id(request_id: RequestId) -> RequestId:
    """The id a request is known by: "7" and 7 are one (the SDK's ``coerce_request_id``)."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


def cancelled_request_id(params: dict[str, Any] | None) -> RequestId | None:
    """The request a ``notifications/cancelled`` names, or None (the SDK's reading)."""
    return as_request_id((params or {}).get("requestId"))


def complete(result: dict[str, Any], server_info: dict[str, Any]) -> dict[str, Any]:
    """A result of this era as the SDK finishes it: ``resultType`` and who answered."""
    finished = {**result, "resultType": result.get("resultType", "complete")}  # appended if absent, as the SDK
    return {**finished, "_meta": {"io.modelcontextprotocol/serverInfo": server_info}}


def response_message(request_id: int | str, result: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC message answering ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: int | str, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """The JSON-RPC message refusing ``request_id``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def progress_message(token: int | str, value: float, message: str) -> dict[str, Any]:
    """A ``notifications/progress``, as the SDK's ``report_progress`` sends it."""
    params = {"progressToken": token, "progress": value, "message": message}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def response(request_id: int | str, result: dict[str, Any]) -> bytes:
    """The line answering ``request_id``."""
    return _encode(response_message(request_id, result)) + b"\n"


def error_response(request_id: int | str, code: int, message: str, data: Any = None) -> bytes:
    """The line refusing ``request_id``."""
    return _encode(error_message(request_id, code, message, data)) + b"\n"


def progress(token: int | str, value: float, message: str) -> bytes:
    """A ``notifications/progress`` line."""
    return _encode(progress_message(token, value, message)) + b"\n"
