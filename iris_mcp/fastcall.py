"""A fast ``tools/call`` (``iris_mcp/fastpath.py``'s ``FastRequest``) run on the SDK path's
terms, for both faces that answer one without the MCP SDK: the stdio ``iris mcp``
(``iris_mcp/stdio.py``) and irisd's ``/mcp`` (``irisd/http/mcp.py``).

The same ``Shim`` call, ``Asking`` and result as the SDK's ``call_tool``
(``iris_mcp/shim.py``'s ``build_server``); a form the call asks for (an ``input_required``
result) has its ``requestState`` sealed by the same ``StateSeal`` as the SDK's server
seals it (the SDK's ``RequestStateBoundary``, loaded then: only a form needs it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from iris_mcp.fastpath import FastRequest
    from iris_mcp.progress_sender import ReportProgress
    from iris_mcp.shim import Shim, StateSeal


@dataclass
class CallContext:
    """What the seal reads of a request's context (as of the SDK's ``ServerRequestContext``):
    the method, the params, and (irisd's ``/mcp``) the HTTP request whose ``scope`` names
    the caller its principal binds; None on stdio (one client)."""

    method: str
    params: dict[str, Any]
    request: Any = None


async def call_tool(
    shim: Shim, seal: StateSeal, request: FastRequest, report: ReportProgress, context: CallContext
) -> dict[str, Any]:
    """The call's result (before ``fastpath.complete``), as the SDK's ``call_tool`` and
    ``seal`` make it. Raises ``FastError`` when the seal refuses, as the SDK's server
    answers; cancelled, the call's tell is cancelled (the Shim's doing)."""
    from iris_mcp import fastpath
    from iris_mcp.asking import Asking

    can_ask = request.forms and request.protocol_version in fastpath.MODERN_PROTOCOL_VERSIONS
    asking = Asking(can_ask=can_ask, spent=seal.spent())
    output = await shim.call(request.name, request.arguments, report, asking)
    wire = output.wire()
    if output.ask is None:
        return wire  # no requestState to seal: the SDK's boundary passes it as it is
    return await _sealed(seal, wire, context)


async def _sealed(seal: StateSeal, wire: dict[str, Any], context: CallContext) -> dict[str, Any]:
    """``wire`` (a form, ``input_required``) with its requestState sealed by the SDK's
    ``RequestStateBoundary``, as the SDK's server seals it."""
    from mcp.shared.exceptions import MCPError

    from iris_mcp.fastpath import FastError

    async def computed(ctx: Any) -> dict[str, Any]:
        return wire

    try:
        return cast(dict[str, Any], await seal(cast(Any, context), cast(Callable[..., Any], computed)))
    except MCPError as exc:
        raise FastError(exc.error.code, exc.error.message, exc.error.data) from None
