"""The config irisd runs with now: one holder, owned by ``core.Services`` (whose
``reload`` swaps it), read by the request handlers and the faces whenever they need the
current config; nothing keeps a copy of its own that a reload would miss.

Whether a name is a team here depends on the config and on the teams that are not a local
claude (``RemoteTeams``: A2A agents, other irisds'), so the holder answers that too.
"""

from __future__ import annotations

from iris_common.config import IrisConfig, Team
from irisd.pool.remote import RemoteTeams
from irisd.tell.service import check_sender


class ConfigHolder:
    def __init__(self, config: IrisConfig, remote_teams: RemoteTeams, *, claude_version: str = "") -> None:
        self.config = config
        self.remote_teams = remote_teams
        self.claude_version = claude_version  # of the local claude: read at start and on each reload
        self.problem = ""  # why the last reload was refused ("" once one works)

    def team(self, name: str) -> Team:
        """A team of this config, or a remote one (of the mesh, an A2A agent):
        UnknownTeamError otherwise, naming the known ones."""
        return self.remote_teams.team(self.config, name)

    def check_team(self, name: str) -> None:
        self.team(name)

    def check_from(self, from_team: str | None) -> None:
        """A filter's or a pair's other end: None (external), a team, an agent, a mesh team."""
        check_sender(self.config, from_team, sending=False)
