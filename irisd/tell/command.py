"""A slash command (``iris command TEAM compact``): checked against the commands the
team's claude said it knows, then sent as a tell of kind ``command``."""

from __future__ import annotations

import re

from iris_common.config import IrisConfig
from irisd.claude.wire import SystemLine, decode_line
from irisd.store import tells
from irisd.store.facade import Store
from irisd.tell.service import TellService, not_here
from protocol.errors import InvalidRequestError
from protocol.messages import Command, TellReply

COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_-]*$")


async def send_command(request: Command, *, config: IrisConfig, store: Store, service: TellService) -> TellReply:
    name = request.command.strip().removeprefix("/")
    if not COMMAND_NAME.match(name):
        raise InvalidRequestError(f"{request.command!r} is not a slash command name; use e.g. 'compact' or '/compact'")
    if (remote := service.remote_teams.get(request.to_team)) is not None:
        keeper = "its home compacts its conversations as its own settings say" if remote.kind == "mesh" else (
            "an agent has no slash commands")
        raise not_here(request.to_team, remote, f"a slash command reaches only the claude of a team of this irisd; "
                                                f"{keeper}")
    known = await slash_commands(request.to_team, config=config, store=store)
    if known is not None and name not in known:
        raise InvalidRequestError(
            f"/{name} is not a command of team {request.to_team}'s claude (as it said at its last start; "
            f"a tell refreshes it); it knows: {', '.join(sorted(known))}"
        )
    text = f"/{name} {request.args.strip()}".strip()
    tell = await service.submit(request.to_team, text, request.from_team, request.timeout_ms, kind="command",
                                thread=request.thread)
    return await service.reply(tell, None)


async def slash_commands(team: str, *, config: IrisConfig, store: Store) -> tuple[str, ...] | None:
    """The slash commands ``team``'s claude says it knows: its latest ``init`` line, as
    stored with the transcripts (so also after a restart of irisd); None before any
    claude of the team has run."""
    config.team(team)
    raw = await store.call(tells.latest_init_line, team)
    line = decode_line(raw) if raw is not None else None
    return line.commands() if isinstance(line, SystemLine) else None
