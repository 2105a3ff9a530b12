"""Who an MCP shim speaks for: derived, never taken from the model.

``--team NAME``, else the deepest configured team folder containing the shim's working
folder, else the external caller. Over irisd's ``/mcp`` the connection decides (its token).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from iris_common.identity import sender
from protocol.messages import (
    TeamInfo,
)


@dataclass(frozen=True)
class Identity:
    """The team this shim speaks for; ``team`` None is the external caller."""

    team: str | None
    source: Literal["--team", "folder", "outside", "token", "owner"]
    cwd: str = ""
    team_path: str = ""
    pair: str = ""  # "token": the pair the claude process serves

    def describe(self) -> str:
        match self.source:
            case "--team":
                return f"you are team {self.team!r} (this Iris MCP server was started with --team)"
            case "folder":
                return f"you are team {self.team!r} (the Iris MCP server runs in its folder {self.team_path})"
            case "token":
                return (
                    f"you are team {self.team!r}: irisd started this claude process to answer for it "
                    f"({self.pair}) and knows it by its token"
                )
            case "owner":
                return "you are the owner of irisd (its owner token): the external caller, or any team you name"
            case _:
                return (
                    f"you are the external caller: this Iris MCP server runs in {self.cwd}, outside every "
                    "team's folder, and was not started with --team"
                )

    def check_from_team(self, claimed: str | None) -> str | None:
        """The team to send as (iris_common/identity.py: the rule of every front end). Over
        irisd's /mcp the connection decides (irisd/caller.py): the claim is passed on."""
        if self.source in ("token", "owner"):
            return claimed
        return sender(
            self.team, claimed, self.describe(),
            fix=f"leave fromTeam out; to speak as {claimed!r}, use Iris from that team's folder "
            f"(or 'iris mcp --team {claimed}')",
        )


def resolve_identity(explicit: str | None, cwd: str, teams: list[TeamInfo]) -> Identity:
    """``--team`` wins; else the deepest team folder holding ``cwd`` (real paths compared)."""
    if explicit is not None:
        return Identity(explicit, "--team", cwd)
    here = Path(os.path.realpath(cwd))
    best: tuple[int, TeamInfo] | None = None
    for team in teams:
        if not team.path:  # an A2A agent: no folder to be in
            continue
        root = Path(os.path.realpath(os.path.expanduser(team.path)))
        if (here == root or root in here.parents) and (best is None or len(root.parts) > best[0]):
            best = (len(root.parts), team)
    if best is None:
        return Identity(None, "outside", cwd)
    return Identity(best[1].name, "folder", cwd, best[1].path)
