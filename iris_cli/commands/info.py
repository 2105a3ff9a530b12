"""``iris status``, ``teams``, ``watch`` and ``notifications``: what irisd knows."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from iris_cli.commands.common import JsonOption, send

if TYPE_CHECKING:
    from protocol.messages import Event

app = typer.Typer()


@app.command()
def status(as_json: JsonOption = False) -> None:
    """Is irisd up? Its teams and live processes."""
    from iris_cli.status_cmd import run_status

    code = run_status(as_json)
    if code:
        raise typer.Exit(code)


@app.command()
def teams(as_json: JsonOption = False) -> None:
    """List the configured teams."""
    from iris_cli import runs

    runs.teams(as_json)


@app.command()
def watch(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only tells to or from this team.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Follow tells live as their text streams (Ctrl-C to stop)."""
    import msgspec

    from iris_cli.commands.questions import question_event
    from iris_cli.text import Interleaved, pair_name
    from protocol.messages import (
        ApprovalEvent,
        QuestionEvent,
        SessionEvent,
        TellNotice,
        TellPhaseEvent,
        TellState,
        TellText,
        UnsolicitedEvent,
        Watch,
        Watching,
    )

    streams = Interleaved()

    def show(event: Event) -> None:
        if as_json:
            print(json.dumps(msgspec.to_builtins(event)), flush=True)
            return
        from iris_cli import render  # at the first event: subscribing comes first

        if isinstance(event, TellText):  # labelled: tells streaming at once stay apart
            sys.stdout.write(streams.write(event.tell_id, event.text))
            sys.stdout.flush()
            return
        if isinstance(event, Watching):
            where = f"team {event.team}" if event.team else "every team"
            render.err.print(f"watching {where} (Ctrl-C to stop)", highlight=False)
            return
        if isinstance(event, TellState):
            streams.name(event.tell_id, event.from_team, event.to_team)
        match event:
            case TellPhaseEvent() if event.phase.name == "answering":
                return  # the text shows that
            case (TellState() | ApprovalEvent() | TellNotice() | TellPhaseEvent() | UnsolicitedEvent() | QuestionEvent()
                  | SessionEvent()):
                sys.stdout.write(streams.interrupt())  # a labelled text run ends here
            case _:
                return
        match event:
            case TellState():
                render.tell_state(event)
            case ApprovalEvent():
                render.approval_event(event.approval)
            case TellNotice():
                render.tell_notice(event)
            case TellPhaseEvent():
                render.tell_phase(event)
            case UnsolicitedEvent():
                render.unsolicited(event.turn)
            case QuestionEvent():
                question_event(event.question)
            case SessionEvent(session=session, change=change, detail=detail):
                render.out.print(f"{pair_name(session.from_team, session.to_team)}: conversation {change}"
                                 + (f" ({detail})" if detail else ""), highlight=False)

    try:
        send(Watch(team=team), as_json, show)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@app.command()
def reload(as_json: JsonOption = False) -> None:
    """Read config.yaml again and apply it without a restart.

    Warm claudes of unchanged teams are kept. An invalid file is refused (exit 1), and irisd keeps its config."""
    from iris_cli import runs

    runs.reload(as_json)


@app.command()
def notifications(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only those for this team.")] = None,
    include_done: Annotated[bool, typer.Option("--all", help="Delivered and expired ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Persisted tells and whether they were delivered."""
    from iris_cli import runs

    runs.notifications(team, include_done, as_json)
