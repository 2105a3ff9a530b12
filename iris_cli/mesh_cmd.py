"""``iris mesh status``: the irisds of the mesh and their teams, read from the NATS
servers with this irisd's settings (so also while irisd is down)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

from iris_cli.calls import fail

if TYPE_CHECKING:
    from iris_common.mesh import HomeEntry

mesh_app = typer.Typer(help="Teams on many hosts: the irisds of the mesh (README 'Teams on many hosts').")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


@mesh_app.command("status")
def status(as_json: JsonOption = False) -> None:
    """List the irisds of the mesh (up, last seen, clock) and each team with its home."""
    import msgspec

    from iris_common.config import load_config
    from iris_common.mesh import reachable
    from iris_common.mesh_probe import look
    from iris_common.paths import IrisPaths
    from protocol.errors import ConfigError, IrisError

    try:
        config = load_config(IrisPaths.from_env().config_file)
    except ConfigError as exc:
        fail(exc, as_json)
    if config.mesh is None:
        fail(IrisError("this irisd is on no mesh: add settings.mesh to config.yaml (README 'Teams on many hosts')"),
             as_json)
    view = look(config.mesh)
    if view.problem:
        fail(IrisError(f"{view.problem}; {view.fix}" if view.fix else view.problem), as_json)
    now = view.read_at
    if as_json:
        homes = [{**msgspec.to_builtins(home), "reachable": reachable(home, now), "skew_s": home.skew_s}
                 for home in view.homes.values()]
        teams = [{**msgspec.to_builtins(team), "reachable": reachable(view.homes.get(team.home), now)}
                 for team in view.teams.values()]
        print(json.dumps({"server": view.server, "name": config.mesh.name, "irisds": homes, "teams": teams}))
        return
    print(f"mesh on {view.server}; this irisd is {config.mesh.name}")
    for home in sorted(view.homes.values(), key=lambda h: h.name):
        print(home_line(home, now))
    for team in sorted(view.teams.values(), key=lambda t: t.name):
        mark = "" if reachable(view.homes.get(team.home), now) else "  (home unreachable)"
        print(f"  team  {team.name:<16} home {team.home}{mark}")


def home_line(home: HomeEntry, now: float) -> str:
    """One irisd of the mesh: up or not, last seen, its clock against the server's, its teams."""
    from iris_common.mesh import reachable

    state = "up" if reachable(home, now) else ("stopped" if not home.up else "unreachable")
    seen = time.strftime("%H:%M:%S", time.localtime(home.seen_at)) if home.seen_at else "never"
    # round first and add 0.0: a skew of -0.01 s reads "+0.0 s", not "-0.0 s"
    skew = f", clock {round(home.skew_s, 1) + 0.0:+.1f} s" if home.skew_s is not None else ""
    teams = ", ".join(home.teams) or "no teams"
    return f"  irisd {home.name:<16} {state:<11} last seen {seen} ({home.host}{skew}): {teams}"
