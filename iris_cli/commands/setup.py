"""``iris init`` and ``iris demo``: getting started."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import fail

app = typer.Typer()


@app.command()
def init(
    team: Annotated[
        list[str] | None,
        typer.Option("--team", help="A team as NAME=FOLDER (repeat for each); '.' is this folder."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing config.yaml.")] = False,
) -> None:
    """Write a starter config.yaml with your teams (checked before it is written)."""
    from iris_cli import render
    from iris_cli.setup import write_starter_config
    from protocol.errors import IrisError

    try:
        path, teams = write_starter_config(team or [], force=force)
    except IrisError as exc:
        fail(exc)
    render.out.print(f"wrote {path} with {len(teams)} team(s): {', '.join(teams)}", markup=False)
    render.out.print(
        f"next: start the daemon ('iris daemon start', or 'irisd' in a terminal), then "
        f"'iris tell {teams[0]} \"hello\"'; 'iris doctor' checks the set-up",
        markup=False,
    )


@app.command()
def demo(
    claude: Annotated[
        str | None,
        typer.Option(
            help="The claude executable (default: $IRIS_CLAUDE_BIN, the one next to iris, then 'claude' on PATH)."
        ),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the temporary folder (for a look inside).")] = False,
) -> None:
    """Run Iris end to end, offline: a scripted model, two teams, the daemon, a few tells."""
    from iris_cli.demo import run_demo
    from protocol.errors import IrisError

    try:
        run_demo(claude, keep=keep)
    except IrisError as exc:
        fail(exc)
