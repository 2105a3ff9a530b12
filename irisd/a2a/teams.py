"""The A2A teams of config.yaml as executors of the pool (at start and at each reload)."""

from __future__ import annotations

import os

from iris_common.config import IrisConfig
from irisd.pool.remote import RemoteTeams
from irisd.store.facade import Store

KIND = "a2a"


def sync_a2a_teams(remote: RemoteTeams, config: IrisConfig, store: Store) -> None:
    """Register one executor per team with ``a2a``. An unchanged team keeps its executor
    (so its pairs go on); a changed one gets a new executor (its pairs close once their
    running tells end); a removed one is unregistered. The HTTP client is imported only
    when some team is an A2A agent."""
    wanted = {name: team for name, team in config.teams.items() if team.a2a}
    environ = {**os.environ, **config.daemon_env}
    for executor in remote.all():
        if executor.kind == KIND and executor.team.name not in wanted:
            remote.unregister(executor.team.name)
    if not wanted:
        return
    from irisd.a2a.executor import A2AExecutor

    for name, team in wanted.items():
        current = remote.get(name)
        if isinstance(current, A2AExecutor) and current.team == team and current.environ == environ:
            continue
        remote.register(A2AExecutor(team, store=store, environ=environ))
