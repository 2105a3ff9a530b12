"""One small error hierarchy, shared by the daemon and its clients.

Every error carries a wire code, so an error raised inside ``irisd`` reaches the
CLI (or the MCP shim) as the same class with the same message. Messages are
written for the person reading them: they name the problem and the fix.
"""

from __future__ import annotations

from typing import ClassVar


class IrisError(Exception):
    """Base of every error Iris reports to a user."""

    code: ClassVar[str] = "internal"

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

    @classmethod
    def for_name(cls, name: str, known: list[str]) -> UnknownTeamError:
        listed = ", ".join(sorted(known)) or "(none configured)"
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


class InvalidRequestError(IrisError):
    """A request was well-formed on the wire but its values make no sense."""

    code = "invalid_request"


class ProtocolError(IrisError):
    """The bytes on the socket are not the Iris protocol (garbage, too large, wrong version)."""

    code = "protocol"


class DaemonNotRunningError(IrisError):
    """A client could not reach irisd."""

    code = "daemon_not_running"


class DaemonUnreachable(DaemonNotRunningError):
    """irisd could not be reached; the request was not sent (starting it and trying again is safe)."""


class ConnectionLost(DaemonNotRunningError):
    """The connection broke after the request was sent; irisd may have acted on it."""


class ClaudeError(IrisError):
    """The claude process failed: it could not start, or exited in the middle of a tell."""

    code = "claude_failed"


class NotFoundError(IrisError):
    """A tell, session or approval id does not exist."""

    code = "not_found"


class BusyError(IrisError):
    """The request cannot be served now (queue full, every process busy)."""

    code = "busy"


class LoopError(IrisError):
    """A nested tell would loop back to a team already waiting, or exceed the hop limit."""

    code = "loop"


class BudgetError(IrisError):
    """A budget (settings.budget, a team's budget) is spent: the tell was not started."""

    code = "budget"


class PermissionDeniedError(IrisError):
    """The caller may not use this irisd (another user's process)."""

    code = "permission_denied"


class UnauthorizedError(PermissionDeniedError):
    """An HTTP request without a valid token (or login cookie)."""

    code = "unauthorized"


class RateLimitedError(BusyError):
    """Too many failed authentications from this address, or a pair sent more tells in
    the last minute than settings.rateLimit allows; wait before trying again."""

    code = "rate_limited"


class TooLargeError(InvalidRequestError):
    """A request body (or WebSocket message) over the size limit."""

    code = "too_large"


class ShuttingDownError(IrisError):
    """irisd is draining and accepts no new work."""

    code = "shutting_down"


class A2AAgentError(IrisError):
    """An A2A agent configured as a team cannot be reached, or does not speak A2A 1.0 as
    Iris needs (its card, its answers); the message names the agent and the fix."""

    code = "a2a_agent"


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
        A2AAgentError,
    )
}
