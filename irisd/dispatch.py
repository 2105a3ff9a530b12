"""Requests to daemon operations: one ``match`` on the request type, no socket code."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable

import trio

from irisd import __version__
from irisd.config import IrisConfig
from irisd.paths import IrisPaths
from irisd.pool.active_tell import ActiveTell
from irisd.pool.supervisor import Supervisor
from irisd.store import tells
from irisd.store.facade import Store
from irisd.tell.machine import TellMachine
from protocol.errors import BusyError, InvalidRequestError, NotFoundError
from protocol.messages import (
    Event,
    GetStatus,
    GetTell,
    Hello,
    ListTeams,
    Reply,
    Request,
    StatusReply,
    TeamInfo,
    TeamsReply,
    Tell,
    TellReply,
    Welcome,
)

MAX_MESSAGE_CHARS = 1_000_000
MIN_WAIT_MS, MAX_WAIT_MS = 1_000, 3_600_000

SendEvent = Callable[[Event], Awaitable[None]]


class Dispatcher:
    def __init__(
        self, *, config: IrisConfig, paths: IrisPaths, store: Store, supervisor: Supervisor
    ) -> None:
        self.config = config
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.started_at = time.time()

    async def dispatch(self, request: Request, send_event: SendEvent) -> Reply:
        """Serve one request; raises IrisError subclasses for the client to see."""
        match request:
            case Hello():
                return self.welcome()
            case Tell():
                return await self.tell(request, send_event)
            case GetTell(tell_id):
                return await self.get_tell(tell_id)
            case ListTeams():
                return TeamsReply(teams=self.team_infos())
            case GetStatus():
                return self.status()

    def welcome(self) -> Welcome:
        from protocol import PROTOCOL_VERSION

        return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version=__version__, pid=os.getpid())

    def team_infos(self) -> list[TeamInfo]:
        return [
            TeamInfo(name=t.name, path=t.path, description=t.description, color=t.color)
            for t in sorted(self.config.teams.values(), key=lambda t: t.name)
        ]

    def status(self) -> StatusReply:
        return StatusReply(
            pid=os.getpid(),
            daemon_version=__version__,
            started_at=self.started_at,
            socket_path=str(self.paths.socket),
            config_path=self.config.source,
            teams=self.team_infos(),
            processes=self.supervisor.statistics(),
            max_processes=self.config.settings.max_processes,
        )

    async def tell(self, request: Tell, send_event: SendEvent) -> TellReply:
        team = self.config.team(request.to_team)
        if request.from_team is not None:
            self.config.team(request.from_team)
        message = request.message.replace("\x00", "")
        if not message.strip():
            raise InvalidRequestError("the message is empty; say what the team should do")
        if len(message) > MAX_MESSAGE_CHARS:
            raise InvalidRequestError(
                f"the message has {len(message)} characters, over the {MAX_MESSAGE_CHARS} limit; "
                "point the team at a file instead"
            )
        check_wait(request.timeout_ms)
        pair = await self.supervisor.pair(request.from_team, team.name)
        machine = TellMachine(
            response_timeout_s=team.response_timeout_ms / 1000,
            caller_timeout_ms=request.timeout_ms,
            now=trio.current_time(),
        )
        tell = ActiveTell(
            from_team=request.from_team, to_team=team.name, message=message, machine=machine
        )
        await self.store.call(tells.insert, tell.info())
        listener = tell.listen() if request.stream else None
        try:
            pair.submit(tell)
        except BusyError as exc:
            machine.fail(trio.current_time(), exc.message)
            tell.note_status()
            await self.store.call(tells.update, tell.info(), None)
            raise
        if listener is None:
            await tell.replied.wait()
        else:
            await _forward_until(tell, listener, send_event)
        return TellReply(status=tell.machine.reply_status(), tell=tell.info())

    async def get_tell(self, tell_id: str) -> TellReply:
        active = self.supervisor.find_tell(tell_id)
        info = active.info() if active else await self.store.call(tells.get, tell_id)
        if info is None:
            raise NotFoundError(f"no tell with id {tell_id!r}; 'iris tell' prints the id of each tell")
        status = info.status if info.status not in ("queued", "running") else "in_progress"
        return TellReply(status=status, tell=info)  # type: ignore[arg-type]


def check_wait(timeout_ms: int) -> None:
    if timeout_ms in (-1, 0) or MIN_WAIT_MS <= timeout_ms <= MAX_WAIT_MS:
        return
    raise InvalidRequestError(
        f"timeout {timeout_ms} ms is out of range; use -1 (return at once), 0 (wait for the "
        f"answer) or {MIN_WAIT_MS} to {MAX_WAIT_MS} ms"
    )


async def _forward_until(
    tell: ActiveTell, listener: trio.MemoryReceiveChannel[Event], send_event: SendEvent
) -> None:
    """Push the tell's events to the client until its caller reply is due."""
    async with trio.open_nursery() as nursery:

        async def forward() -> None:
            try:
                async for event in listener:
                    await send_event(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client left; the tell runs on

        nursery.start_soon(forward)
        await tell.replied.wait()
        nursery.cancel_scope.cancel()
    while True:  # what arrived just before the reply
        try:
            await send_event(listener.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel, trio.BrokenResourceError):
            break
    listener.close()
