"""How irisd is doing, on request: ``iris status`` (pairs, teams, memory, recent problems,
the claude version, a refused reload, health findings), the health reply of
``/api/health`` and ``iris health``, and the team list."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from iris_common import locate
from iris_common.config import Team, team_unavailable
from iris_common.environment import child_environment
from iris_common.paths import IrisPaths
from irisd import __version__
from irisd.config_holder import ConfigHolder
from irisd.health import rss_bytes, total_rss
from irisd.logs import recent_problems
from irisd.pool.supervisor import Supervisor
from irisd.store import unsolicited
from irisd.store.facade import Store
from protocol.health import worst
from protocol.messages import HealthReply, StatusReply, TeamInfo, TeamsReply

if TYPE_CHECKING:
    from irisd.health.monitor import HealthMonitor

RECENT_UNSOLICITED = 10  # turns no tell asked for, shown by status


class Status:
    def __init__(
        self,
        *,
        current: ConfigHolder,
        paths: IrisPaths,
        store: Store,
        supervisor: Supervisor,
        health: HealthMonitor | None = None,
        http_url: Callable[[], str] = lambda: "",
    ) -> None:
        self.current = current
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.health = health  # the health monitor (irisd/health): findings for status and /api/health
        self.http_url = http_url
        self.started_at = time.time()

    async def status(self) -> StatusReply:
        config = self.current.config
        processes = self.supervisor.statistics()
        spares = [pid for pids in self.supervisor.spares.pids().values() for pid in pids]
        return StatusReply(
            pid=os.getpid(),
            daemon_version=__version__,
            started_at=self.started_at,
            socket_path=str(self.paths.socket),
            config_path=config.source,
            teams=self.team_infos(),
            processes=processes,
            max_processes=config.settings.max_processes,
            pending_approvals=sum(len(s.pending_approvals) for s in self.supervisor.snapshots()),
            http_url=self.http_url(),
            environment={name: self.environment_names(team) for name, team in config.teams.items()},
            unsolicited=await self.store.call(unsolicited.recent, RECENT_UNSOLICITED),
            memory_rss=rss_bytes(os.getpid()),
            children_rss=total_rss([*(p.pid for p in processes if p.pid is not None), *spares]),
            spares=self.supervisor.spares.pids(),
            recent_errors=recent_problems.entries(),
            claude_version=self.current.claude_version,
            claude_tested=locate.CLAUDE_VERSION,
            config_problem=self.current.problem,
            findings=await self.health.look() if self.health is not None else [],
            recoveries=list(self.health.recoveries) if self.health is not None else [],
        )

    async def health_reply(self) -> HealthReply:
        found = await self.health.look() if self.health is not None else []
        recoveries = list(self.health.recoveries) if self.health is not None else []
        return HealthReply(status="ok", worst=worst(found), findings=found, recoveries=recoveries,
                           checked_at=time.time())

    async def teams(self) -> TeamsReply:
        return TeamsReply(teams=self.team_infos())

    def team_infos(self) -> list[TeamInfo]:
        remote = {executor.team.name: executor for executor in self.current.remote_teams.all()}
        local = [
            TeamInfo(name=t.name, path=t.path, description=t.description, color=t.color, host=t.host,
                     unavailable=team_unavailable(t))
            for t in self.current.config.teams.values()
            if t.name not in remote
        ]
        far = [
            TeamInfo(name=e.team.name, path=e.team.path, description=e.team.description, color=e.team.color,
                     kind=e.kind, remote=e.where)
            for e in remote.values()
        ]
        return sorted([*local, *far], key=lambda t: t.name)

    def environment_names(self, team: Team) -> list[str]:
        """The names (never the values) of the variables the team's claude gets."""
        env = child_environment(
            claude_config_dir=self.paths.claude_config_dir, daemon_env=self.current.config.daemon_env,
            team_env=team.env,
        )
        return sorted(env)
