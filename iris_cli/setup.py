"""``iris init``: a starter config.yaml, validated exactly as irisd will read it."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from irisd.config import parse_config
from irisd.paths import IrisPaths
from protocol.errors import ConfigError

TEMPLATE_HEAD = """\
# Iris configuration: see README 'Configuration'. Times are in milliseconds.
settings:
  responseTimeout: 120000   # a tell fails if claude prints nothing for this long
  idleTimeout: 1800000      # stop a pair's idle claude after this long
  maxProcesses: 10
  permissions: ask          # ask | deny | skip: how a team's tool use is decided
"""


def write_starter_config(team_specs: list[str], *, force: bool = False) -> tuple[Path, list[str]]:
    """Write $IRIS_HOME/config.yaml from NAME=FOLDER specs; refuses to overwrite."""
    path = IrisPaths.from_env().config_file
    if path.exists() and not force:
        raise ConfigError(f"{path} exists already; edit it, or pass --force to replace it")
    teams: dict[str, dict[str, str]] = {}
    for spec in team_specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise ConfigError(f"--team {spec!r} is not NAME=FOLDER (e.g. --team backend=~/src/api)")
        if name in teams:
            raise ConfigError(f"--team {name!r} is given twice; give each team once")
        teams[name] = {"path": os.path.abspath(os.path.expanduser(folder))}
    body = TEMPLATE_HEAD + (
        yaml.safe_dump({"teams": teams}, sort_keys=False) if teams else "teams: {}  # name: {path: /abs/folder}\n"
    )
    parse_config(body.encode(), source=str(path))  # the same checks irisd makes
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path, list(teams)
