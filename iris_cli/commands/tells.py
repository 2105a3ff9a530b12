"""``iris tell``, ``result``, ``cancel`` and ``command``: one tell at a time."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import (
    FromOption,
    JsonOption,
    ThreadOption,
    caller,
    fail,
    print_json,
    read_stdin,
    send,
    thread_named,
)
from protocol.limits import DEFAULT_TTL_DAYS, MAX_TELL_BUDGET_USD, MAX_TTL_DAYS, MAX_WAIT_MS, MIN_WAIT_MS

app = typer.Typer()


@app.command()
def tell(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The team to tell.")],
    message: Annotated[str, typer.Argument(metavar="MESSAGE", help="What to tell it ('-' reads standard input).")],
    from_team: FromOption = None,
    timeout: Annotated[
        int,
        typer.Option(
            "--timeout",
            help="Milliseconds to wait: 0 waits for the answer, -1 returns at once with the "
            f"tell's id, N ({MIN_WAIT_MS} to {MAX_WAIT_MS}) returns the answer so far after N ms (the tell runs on).",
        ),
    ] = 0,
    persist: Annotated[
        bool,
        typer.Option(help="Store it and deliver it later, even across restarts (fire and forget)."),
    ] = False,
    ttl_days: Annotated[
        float | None,
        typer.Option(
            help=f"With --persist: give up after this many days (default {DEFAULT_TTL_DAYS:g}, up to {MAX_TTL_DAYS})."
        ),
    ] = None,
    max_budget_usd: Annotated[
        float | None,
        typer.Option(
            "--max-budget-usd",
            help=f"Stop the tell once its claude has spent this many dollars, up to {MAX_TELL_BUDGET_USD:g} "
            "(claude's --max-budget-usd; "
            "the tell runs on a claude of its own, in the same conversation).",
        ),
    ] = None,
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Tell TEAM something and print its answer. TEAM may be several: alpha,beta,gamma."""
    from iris_cli.tell_cmd import run_tell
    from protocol.errors import InvalidRequestError
    from protocol.limits import range_problem, stored_ttl
    from protocol.messages import NotificationReply, Tell

    try:
        days = stored_ttl(persist, ttl_days, names=("--ttl-days", "--persist"))
    except InvalidRequestError as exc:
        fail(exc, as_json)
    if ttl_days is not None and (problem := range_problem(Tell, "ttl_days", ttl_days)):
        fail(InvalidRequestError(f"--ttl-days {ttl_days:g} is {problem}"), as_json)
    if max_budget_usd is not None and (problem := range_problem(Tell, "max_budget_usd", max_budget_usd)):
        fail(InvalidRequestError(f"--max-budget-usd {max_budget_usd:g} is {problem}"), as_json)
    thread = thread_named(thread, as_json)
    if message == "-":
        message = read_stdin()
    from_team = caller(from_team)
    if "," in team:
        from iris_cli.commands.fanout import tell_many

        tell_many(team.split(","), message, from_team, timeout, as_json, max_budget_usd, thread)
        return
    if persist:
        request = Tell(
            to_team=team, message=message, from_team=from_team, persist=True, ttl_days=days,
            max_budget_usd=max_budget_usd, thread=thread,
        )
        stored = send(request, as_json)
        assert isinstance(stored, NotificationReply)
        if as_json:
            print_json(stored.notification)
        else:
            print(stored.notification.id)
            from iris_cli import render

            render.note(f"stored; it will be delivered to {team} (see 'iris notifications')", render.err)
        return
    run_tell(team, message, from_team=from_team, timeout=timeout, max_budget_usd=max_budget_usd, as_json=as_json,
             thread=thread)


@app.command()
def result(
    tell_id: Annotated[str, typer.Argument(metavar="ID", help="The tell's id (printed by 'iris tell').")],
    wait: Annotated[int, typer.Option(help="Wait up to this many ms for the tell to end.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Show the status and answer of one tell (partial while it runs).

    Exits 1 if the tell ended other than completed, as 'iris tell' does."""
    from iris_cli import runs

    runs.result(tell_id, wait, as_json)


@app.command()
def cancel(
    tell_id: Annotated[str, typer.Argument(metavar="ID", help="The tell to interrupt (queued or running).")],
    as_json: JsonOption = False,
) -> None:
    """Interrupt a tell without killing the team's warm claude process."""
    from iris_cli import runs

    runs.cancel(tell_id, as_json)


@app.command()
def command(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The team whose session gets the command.")],
    name: Annotated[str, typer.Argument(metavar="NAME", help="The slash command, e.g. compact or /compact.")],
    args: Annotated[str, typer.Argument(metavar="ARGS", help="Its arguments.")] = "",
    from_team: FromOption = None,
    timeout: Annotated[int, typer.Option(help="Milliseconds to wait, as for 'iris tell'.")] = 0,
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Send a slash command (such as /compact) to a pair's session, through its queue."""
    from iris_cli import render
    from iris_cli.text import ANSWERED, tell_data
    from protocol.messages import Command, TellReply

    thread = thread_named(thread, as_json)
    request = Command(to_team=team, command=name, args=args, from_team=caller(from_team), timeout_ms=timeout,
                      thread=thread)
    reply = send(request, as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_data(reply))
    else:
        render.answer(reply.status, reply.tell)
    if reply.status not in ANSWERED:
        raise typer.Exit(1)
