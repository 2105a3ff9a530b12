"""``iris init``: a starter config.yaml, validated exactly as irisd will read it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from iris_common.config import parse_config, team_name_problem, team_unavailable
from iris_common.locate import find_claude, not_found_fix
from iris_common.paths import IrisPaths
from protocol.errors import ConfigError

TEMPLATE_HEAD = """\
# Iris configuration: see README 'Configuration'. Times are in milliseconds.
settings:
  responseTimeout: 120000   # a tell fails if claude prints nothing for this long
  idleTimeout: 1800000      # stop a pair's idle claude after this long
  maxProcesses: 10
  permissions: ask          # ask | deny | skip: how a team's tool use is decided
"""


def write_starter_config(
    team_specs: list[str], *, force: bool = False, claude: str | None = None, http_port: int | None = None
) -> tuple[Path, list[str]]:
    """Write $IRIS_HOME/config.yaml from NAME=FOLDER specs; refuses to overwrite, and
    refuses a config without teams (irisd would refuse it). ``claudePath`` is the claude
    found as irisd would find it (``claude`` overrides), written out so that irisd started
    any other way (systemd, another PATH) runs the same one. ``http_port`` is written as
    ``httpPort`` when given (0: any free port), for a machine where 1615 is taken."""
    path = IrisPaths.from_env().config_file
    if not team_specs:
        raise ConfigError(
            "name at least one team: 'iris init --team NAME=FOLDER' (repeat --team for more; "
            "'.' is this folder), e.g. 'iris init --team api=~/src/api --team web=~/src/web'"
        )
    if path.exists() and not force:
        raise ConfigError(f"{path} exists already; edit it, or pass --force to replace it")
    teams: dict[str, dict[str, str]] = {}
    for spec in team_specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise ConfigError(f"--team {spec!r} is not NAME=FOLDER (e.g. --team backend=~/src/api)")
        if problem := team_name_problem(name):
            raise ConfigError(f"--team {spec!r}: {problem}")
        if name in teams:
            raise ConfigError(f"--team {name!r} is given twice; give each team once")
        teams[name] = {"path": os.path.abspath(os.path.expanduser(folder))}
    found = find_claude(claude)
    if claude and found is None:
        raise ConfigError(f"--claude {claude!r} is not an executable; give the path of the claude CLI")
    claude_line = (
        f"  claudePath: {json.dumps(found)}  # the claude irisd runs\n"
        if found
        else f"  # claudePath: /path/to/claude   # none found: {not_found_fix()}\n"
    )
    port_note = "any free port (iris dashboard finds it)" if http_port == 0 else "the HTTP face"
    port_line = f"  httpPort: {http_port}   # {port_note}\n" if http_port is not None else ""
    body = TEMPLATE_HEAD + port_line + claude_line + yaml.safe_dump({"teams": teams}, sort_keys=False)
    # The same checks irisd makes; what they refuse came from the options (nothing is written yet).
    checked = parse_config(body.encode(), source="iris init")
    for team in checked.teams.values():  # irisd would start, but a new team's folder is surely a typo
        if problem := team_unavailable(team):
            raise ConfigError(problem.replace("fix teams." + team.name + ".path in config.yaml", "fix --team"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path, list(teams)
