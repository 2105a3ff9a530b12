"""``iris monitor``: the live picture in the terminal (the work is in ``iris_cli.monitor``)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from iris_cli.commands.common import fail

app = typer.Typer()


@app.command()
def monitor(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only pairs and tells of this team.")] = None,
) -> None:
    """Pairs and their states, tells as they stream, approvals waiting: live (Ctrl-C quits)."""
    from iris_cli import render

    if not sys.stdout.isatty():
        render.error(
            "iris monitor draws on a terminal and stdout is not one; for scripts use "
            "'iris watch --json' (events) or 'iris status --json' (a snapshot)"
        )
        raise typer.Exit(2)
    from iris_cli.monitor import main
    from protocol.errors import IrisError

    try:
        code = main(team)
    except IrisError as exc:
        fail(exc)
    raise typer.Exit(code)
