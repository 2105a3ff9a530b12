"""``iris tell alpha,beta,gamma MESSAGE``: the same message to several teams at once."""

from __future__ import annotations

import typer

from iris_cli import render
from iris_cli.commands.common import print_json, send
from iris_cli.text import ANSWERED, tell_data
from protocol.messages import Event, FanOutEvent, FanOutResult, TellMany, TellReply, TellsReply


def result_data(result: FanOutResult) -> dict[str, object]:
    """One target for scripts: the tell (as 'iris tell --json' prints it), or the refusal."""
    if result.tell is not None:
        status = "in_progress" if result.status == "refused" else result.status
        return tell_data(TellReply(status=status, tell=result.tell))
    return {"to_team": result.to_team, "status": result.status, "error": {"code": result.error_code,
                                                                          "message": result.error}}


def show(result: FanOutResult) -> None:
    """One target's outcome for people, labelled with its team."""
    from rich.text import Text

    render.out.print(Text.assemble((f"── {result.to_team}", "bold"), " ", (f"({result.status})", "dim")))
    if result.tell is not None and result.tell.text:
        print(result.tell.text)
    if result.error:
        render.err.print(Text.assemble((f"{result.to_team}:", "red"), " ", result.error))
    elif result.tell is not None and result.status not in ("completed",):
        render.tell_outcome(result.status, result.tell)


def tell_many(
    teams: list[str],
    message: str,
    from_team: str | None,
    timeout: int,
    as_json: bool,
    max_budget_usd: float | None = None,
) -> None:
    """Print each answer as it comes (labelled), or a JSON list in the order given."""
    def on_event(event: Event) -> None:
        if isinstance(event, FanOutEvent) and not as_json:
            show(event.result)

    request = TellMany(
        to_teams=teams, message=message, from_team=from_team, timeout_ms=timeout, stream=True,
        max_budget_usd=max_budget_usd,
    )
    reply = send(request, as_json, on_event)
    assert isinstance(reply, TellsReply)
    if as_json:
        print_json([result_data(r) for r in reply.results])
    if any(r.status not in ANSWERED for r in reply.results):
        raise typer.Exit(1)
