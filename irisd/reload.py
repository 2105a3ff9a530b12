"""Reloading config.yaml without a restart: what changes, as a pure function of the old
and the new configuration (``plan_reload``), applied to every service by ``core.Services.reload``.

* a new team is there at once;
* a removed team takes no new tell; its pairs (either side) finish what they hold,
  then their claude stops;
* a changed team (anything of its own, or the environment every claude gets) keeps
  running what it holds; its claude then stops, so its next tell starts one with the
  new settings; an unchanged team's warm claude is kept;
* settings take effect at once (``maxProcesses``, budgets, the rate limit, approval
  and question settings, timeouts of new tells), except those that need a restart of
  irisd, which the plan names (``httpHost``/``httpPort``, the database, the socket).
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from iris_common import locate
from iris_common.config import IrisConfig, load_config
from iris_common.environment import ENV_FILE, for_children, load_env_file
from iris_common.paths import IrisPaths
from protocol.errors import ConfigError

log = logging.getLogger("irisd")

# Settings irisd reads once, at start: a change waits for a restart (and says so).
AT_RESTART = ("http_host", "http_port", "retention_days", "retention_keep", "preload_mcp")


class ReloadPlan(msgspec.Struct, frozen=True):
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()  # changed teams: their claude restarts once idle
    agents: tuple[str, ...] = ()  # those of them that are A2A agents: no claude, only new settings
    settings: tuple[str, ...] = ()  # changed settings that apply now
    at_restart: tuple[str, ...] = ()  # changed settings that wait for irisd's restart
    notes: list[str] = msgspec.field(default_factory=list)

    def summary(self) -> list[str]:
        """What the reload did, in words for people."""
        said = [*self.notes, *(f"team {name} added" for name in self.added)]
        said += [f"team {name} removed: its pairs finish what they hold, then stop" for name in self.removed]
        said += [
            f"team {name} changed: its next tell goes to the agent with the new settings" if name in self.agents
            else f"team {name} changed: its claude restarts with the new settings once idle"
            for name in self.restart
        ]
        said += [f"settings.{_camel(name)} changed: in effect now" for name in self.settings]
        said += [f"settings.{_camel(name)} changed: takes effect when irisd restarts" for name in self.at_restart]
        return said or ["nothing changed"]


def plan_reload(old: IrisConfig, new: IrisConfig) -> ReloadPlan:
    added = tuple(sorted(set(new.teams) - set(old.teams)))
    removed = tuple(sorted(set(old.teams) - set(new.teams)))
    everyone = old.daemon_env != new.daemon_env or old.settings.claude_path != new.settings.claude_path
    restart = tuple(sorted(
        name for name in set(old.teams) & set(new.teams) if everyone or old.teams[name] != new.teams[name]
    ))
    changed = [
        name for name in old.settings.__struct_fields__
        if getattr(old.settings, name) != getattr(new.settings, name)
    ]
    notes = []  # why every team restarts, which their own lines do not say
    if old.daemon_env != new.daemon_env:
        notes.append("irisd.env changed: every team's claude takes it when it restarts")
    return ReloadPlan(
        added=added,
        removed=removed,
        restart=restart,
        agents=tuple(name for name in restart if new.teams[name].a2a),
        settings=tuple(n for n in changed if n not in AT_RESTART),
        at_restart=tuple(n for n in changed if n in AT_RESTART),
        notes=notes,
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def read_config(paths: IrisPaths) -> tuple[IrisConfig, IrisPaths]:
    """config.yaml with ``$IRIS_HOME/irisd.env`` applied, as irisd runs it (ConfigError
    with the fix for anything wrong): at start and at every reload. The env file's
    CLAUDE_CONFIG_DIR is irisd's own; the rest goes to every claude child."""
    config = load_config(paths.config_file)
    file_env = load_env_file(paths.home / ENV_FILE)
    if file_env.get("CLAUDE_CONFIG_DIR"):
        paths = msgspec.structs.replace(paths, claude_config_dir=Path(file_env["CLAUDE_CONFIG_DIR"]).expanduser())
    return msgspec.structs.replace(config, daemon_env=for_children(file_env)), paths


def check_claude(config: IrisConfig) -> str:
    """The local claude's version, logged at every start (and reload): "" when there is
    none (its tells fail with the fix), ConfigError when it is older than Iris runs."""
    found = locate.find_claude(config.settings.claude_path)
    version = locate.claude_version(found) if found else ""
    if problem := locate.version_problem(version):
        raise ConfigError(problem)
    log.info("claude", extra={"path": found or "(none found)", "version": version or "?",
                              "tested_with": locate.CLAUDE_VERSION})
    return version
