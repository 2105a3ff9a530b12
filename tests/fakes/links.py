"""A daemon link that follows a script, for the MCP shim's policies without a daemon."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from iris_cli.mcp_stdio import DaemonLink
from protocol.messages import Event, Reply, Request

OnEvent = Callable[[Event], Awaitable[None]] | None


class ScriptedLink(DaemonLink):
    """A DaemonLink whose single attempts follow a script of replies and errors."""

    def __init__(self, *outcomes: Reply | Exception) -> None:
        super().__init__()
        self.outcomes = list(outcomes)
        self.sent: list[Request] = []
        self.started = 0

    async def _once(self, request: Request, on_event: OnEvent) -> Reply:
        self.sent.append(request)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def ensure_daemon(self) -> None:
        self.started += 1
