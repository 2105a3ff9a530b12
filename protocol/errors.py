"""One small error hierarchy, shared by the daemon and its clients.

Every error carries a wire code, so an error raised inside ``irisd`` reaches the
CLI (or the MCP shim) as the same class with the same message. Messages are
written for the person reading them: they name the problem and the fix.

Every class also carries what the other faces answer with, once: its HTTP status (the
API, the gate) and its JSON-RPC code (the A2A face). The JSON-RPC codes are the spec's
(-32600 invalid request, -32602 invalid params, -32603 internal), A2A's (-32001 task not
found, -32005 content type not supported) and, for a refusal of the server's own (busy,
stopping, a budget, a loop), the implementation-defined ``REFUSED``.
"""

from __future__ import annotations

from typing import ClassVar

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REFUSED = -32000  # JSON-RPC's implementation-defined server errors: Iris refuses now
TASK_NOT_FOUND = -32001  # A2A: the only things found by id over A2A are tasks
CONTENT_TYPE_NOT_SUPPORTED = -32005  # A2A


class IrisError(Exception):
    """Base of every error Iris reports to a user."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500
    jsonrpc_code: ClassVar[int] = INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @staticmethod
    def from_wire(code: str, message: str) -> IrisError:
        """Rebuild the error a daemon sent; unknown codes become a plain IrisError."""
        return _BY_CODE.get(code, IrisError)(message)


class ConfigError(IrisError):
    """The configuration file is missing, unreadable or invalid."""

    code = "config"


class UnknownTeamError(IrisError):
    """A request named a team that is not configured."""

    code = "unknown_team"
    http_status = 404
    jsonrpc_code = INVALID_PARAMS

    @classmethod
    def for_name(cls, name: str, known: list[str]) -> UnknownTeamError:
        listed = ", ".join(sorted(known)) or "(none configured)"
        several = [part.strip() for part in name.split(",")]
        if len(several) > 1 and all(part in known for part in several):
            return cls(
                f"team {name!r} is several teams; this asks one: to ask {', '.join(several)} at once, "
                f"give them as team_tell's toTeams (or run 'iris tell {','.join(several)} MESSAGE')"
            )
        close = closest_team(name, known)
        hint = f"did you mean {close!r}? " if close else ""
        return cls(
            f"team {name!r} is not configured; {hint}known teams: {listed}. "
            "Add it under 'teams:' in config.yaml."
        )


def closest_team(name: str, known: list[str]) -> str | None:
    """The known team ``name`` is most likely a misspelling of, if any."""
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


class TeamUnavailableError(IrisError):
    """A configured team cannot answer now (e.g. its folder is missing); the message says why
    and how to fix it. The other teams go on."""

    code = "team_unavailable"
    http_status = 503
    jsonrpc_code = REFUSED


class InvalidRequestError(IrisError):
    """A request was well-formed on the wire but its values make no sense."""

    code = "invalid_request"
    http_status = 400
    jsonrpc_code = INVALID_PARAMS


class ProtocolError(IrisError):
    """The bytes on the socket are not the Iris protocol (garbage, too large, wrong version)."""

    code = "protocol"
    http_status = 400
    jsonrpc_code = INVALID_REQUEST


class DaemonNotRunningError(IrisError):
    """A client could not reach irisd."""

    code = "daemon_not_running"
    http_status = 503
    jsonrpc_code = INTERNAL_ERROR


class DaemonUnreachable(DaemonNotRunningError):
    """irisd could not be reached; the request was not sent (starting it and trying again is safe)."""


class ConnectionLost(DaemonNotRunningError):
    """The connection broke after the request was sent; irisd may have acted on it."""


class ClaudeError(IrisError):
    """The claude process failed: it could not start, or exited in the middle of a tell."""

    code = "claude_failed"
    http_status = 502
    jsonrpc_code = INTERNAL_ERROR


class NotFoundError(IrisError):
    """A tell, session or approval id does not exist."""

    code = "not_found"
    http_status = 404
    jsonrpc_code = TASK_NOT_FOUND


class BusyError(IrisError):
    """The request cannot be served now (queue full, every process busy)."""

    code = "busy"
    http_status = 503
    jsonrpc_code = REFUSED


class LoopError(IrisError):
    """A nested tell would loop back to a team already waiting, or exceed the hop limit."""

    code = "loop"
    http_status = 409
    jsonrpc_code = REFUSED


class BudgetError(IrisError):
    """A budget (settings.budget, a team's budget) is spent: the tell was not started."""

    code = "budget"
    http_status = 402
    jsonrpc_code = REFUSED


class PermissionDeniedError(IrisError):
    """The caller may not use this irisd (another user's process), or may not send this
    request, or touch this tell (irisd/caller.py, irisd/policy.py)."""

    code = "permission_denied"
    http_status = 403
    jsonrpc_code = INVALID_REQUEST


class UnauthorizedError(PermissionDeniedError):
    """An HTTP request without a valid token (or login cookie)."""

    code = "unauthorized"
    http_status = 401
    jsonrpc_code = INVALID_REQUEST


class RateLimitedError(BusyError):
    """Too many failed authentications from this address, or a pair sent more tells in
    the last minute than settings.rateLimit allows; wait before trying again."""

    code = "rate_limited"
    http_status = 429
    jsonrpc_code = REFUSED


class TooLargeError(InvalidRequestError):
    """A request body (or WebSocket message) over the size limit."""

    code = "too_large"
    http_status = 413
    jsonrpc_code = INVALID_REQUEST


class UnsupportedMediaTypeError(InvalidRequestError):
    """A body of a type this door does not read (a POST with the login cookie must be JSON)."""

    code = "unsupported_media_type"
    http_status = 415
    jsonrpc_code = CONTENT_TYPE_NOT_SUPPORTED


class ShuttingDownError(IrisError):
    """irisd is draining and accepts no new work."""

    code = "shutting_down"
    http_status = 503
    jsonrpc_code = REFUSED


class A2AAgentError(IrisError):
    """An A2A agent configured as a team cannot be reached, or does not speak A2A 1.0 as
    Iris needs (its card, its answers); the message names the agent and the fix."""

    code = "a2a_agent"
    http_status = 502
    jsonrpc_code = INTERNAL_ERROR


_BY_CODE: dict[str, type[IrisError]] = {
    cls.code: cls
    for cls in (
        IrisError,
        ConfigError,
        UnknownTeamError,
        TeamUnavailableError,
        InvalidRequestError,
        ProtocolError,
        DaemonNotRunningError,
        ClaudeError,
        NotFoundError,
        BusyError,
        LoopError,
        BudgetError,
        PermissionDeniedError,
        ShuttingDownError,
        UnauthorizedError,
        RateLimitedError,
        TooLargeError,
        UnsupportedMediaTypeError,
        A2AAgentError,
    )
}
