"""``iris costs``: the cost ledger, summed per team, pair, chain or day."""

from __future__ import annotations

import datetime
import re
import time
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from iris_cli.commands.common import JsonOption, fail, print_json, send

if TYPE_CHECKING:
    from protocol.messages import CostRow

app = typer.Typer()

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float) -> float:
    """'today', '7d', '12h', '30m', '2w', or a date '2026-11-01' (local) -> epoch seconds."""
    from protocol.errors import InvalidRequestError

    text = text.strip().lower()
    if text in ("", "all"):
        return 0.0
    if text == "today":
        from iris_common.money import day_start

        return day_start(now)
    relative = _RELATIVE.match(text)
    if relative:
        return now - float(relative.group(1)) * _UNIT_S[relative.group(2)]
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InvalidRequestError(
            f"--since {text!r} is not a time; use 'today', 'all', a span such as 7d, 12h, 30m, 2w, "
            "or a date such as 2026-11-01"
        ) from None


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
    from iris_cli import render
    from iris_cli.table import Column, Table
    from protocol.errors import InvalidRequestError
    from protocol.messages import Costs, CostsReply

    try:
        start = parse_since(since, time.time())
    except InvalidRequestError as exc:
        fail(exc, as_json)
    reply = send(Costs(by=by, since=start, team=team), as_json)
    assert isinstance(reply, CostsReply)
    if as_json:
        print_json(reply)
        return
    if not reply.rows:
        render.out.print("no costs recorded yet" + (" in that time" if start else ""))
        return
    maintenance = reply.total.maintenance_usd > 0  # a column only when Iris compacted something
    rows = [_cells(row, maintenance) for row in [*reply.rows, reply.total]]
    headers = (by, "tells", "cost", *(("maintenance",) if maintenance else ()), "input", "output", "cache read",
               "cache write", "turns", "claude time")
    render.show(Table([Column(h) for h in headers], rows))
    if maintenance:
        render.note("maintenance: of the cost, what the compactions Iris ran between tells cost")


def _cells(row: CostRow, maintenance: bool = False) -> tuple[str, ...]:
    from iris_cli.text import usd

    return (
        row.key or "-",
        str(row.tells),
        usd(row.cost_usd),
        *((usd(row.maintenance_usd),) if maintenance else ()),
        f"{row.input_tokens:,}",
        f"{row.output_tokens:,}",
        f"{row.cache_read_tokens:,}",
        f"{row.cache_creation_tokens:,}",
        str(row.num_turns),
        f"{row.duration_ms / 1000:.1f} s",
    )
