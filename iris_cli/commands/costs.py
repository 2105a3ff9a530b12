"""``iris costs``: the cost ledger, summed per team, pair, chain or day."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from iris_cli.commands.common import JsonOption

app = typer.Typer()


@app.command()
def costs(
    by: Annotated[
        Literal["team", "pair", "chain", "day"], typer.Option(help="Sum per team, pair, chain or day.")
    ] = "team",
    since: Annotated[str, typer.Option(help="From when: today, 7d, 12h, 2w, a date, or all.")] = "all",
    team: Annotated[str | None, typer.Option(help="Only tells to or from this team.")] = None,
    as_json: JsonOption = False,
) -> None:
    """What the tells cost, as claude reported it: USD, tokens, turns."""
    from iris_cli import runs

    runs.costs(by, since, team, as_json)
