"""``iris``: the command line. Thin: build a request, send it to irisd, render the reply."""

from __future__ import annotations

import json
import sys
from typing import Annotated, NoReturn

import msgspec
import typer

from iris_cli import render
from iris_cli.client import Client
from protocol.errors import IrisError
from protocol.messages import (
    Event,
    GetStatus,
    GetTell,
    ListTeams,
    StatusReply,
    TeamsReply,
    Tell,
    TellReply,
    TellText,
)

app = typer.Typer(
    name="iris",
    help="Let the Claude Code agents of your projects talk to each other.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
FromOption = Annotated[
    str | None, typer.Option("--from", help="The team asking (default: you, outside any team).")
]


def fail(error: IrisError, as_json: bool = False) -> NoReturn:
    if as_json:
        print(json.dumps({"error": {"code": error.code, "message": error.message}}), file=sys.stderr)
    else:
        render.err.print(f"[red]error:[/] {error.message}")
    raise typer.Exit(1)


def print_json(value: object) -> None:
    print(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False))


def tell_json(reply: TellReply) -> dict[str, object]:
    """A tell for scripts: its fields, ``status`` as the caller sees it (``in_progress``
    while it runs) and ``tell_status`` as stored (queued, running, completed, ...)."""
    fields: dict[str, object] = msgspec.to_builtins(reply.tell)
    return {**fields, "status": reply.status, "tell_status": reply.tell.status}


@app.command()
def tell(
    team: Annotated[str, typer.Argument(help="The team to tell.")],
    message: Annotated[str, typer.Argument(help="What to tell it ('-' reads standard input).")],
    from_team: FromOption = None,
    timeout: Annotated[
        int,
        typer.Option(
            "--timeout",
            help="Milliseconds to wait: 0 waits for the answer, -1 returns at once with the "
            "tell's id, N returns the answer so far after N ms (the tell runs on).",
        ),
    ] = 0,
    as_json: JsonOption = False,
) -> None:
    """Tell TEAM something and print its answer."""
    if message == "-":
        message = sys.stdin.read()
    streamed: list[str] = []
    live = not as_json and sys.stdout.isatty() and timeout != -1

    def on_event(event: Event) -> None:
        if isinstance(event, TellText):
            streamed.append(event.text)
            sys.stdout.write(event.text)
            sys.stdout.flush()

    request = Tell(to_team=team, message=message, from_team=from_team, timeout_ms=timeout, stream=live)
    try:
        with Client() as client:
            reply = client.request(request, on_event if live else None)
    except IrisError as exc:
        fail(exc, as_json)
    assert isinstance(reply, TellReply)
    info = reply.tell
    if as_json:
        print_json(tell_json(reply))
    elif timeout == -1 and reply.status == "in_progress":
        print(info.id)
        render.err.print(f"[dim]tell {info.id} is {info.status}; see it with: iris result {info.id}[/]")
    else:
        if streamed:
            if not "".join(streamed).endswith("\n"):
                print()
        elif info.text:
            print(info.text)
        render.tell_outcome(reply.status, info)
    if reply.status not in ("completed", "in_progress"):
        raise typer.Exit(1)


@app.command()
def result(
    tell_id: Annotated[str, typer.Argument(help="The tell's id (printed by 'iris tell').")],
    as_json: JsonOption = False,
) -> None:
    """Show the status and answer of one tell (partial while it runs)."""
    try:
        with Client() as client:
            reply = client.request(GetTell(tell_id=tell_id))
    except IrisError as exc:
        fail(exc, as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_json(reply))
        return
    info = reply.tell
    pair = f"{info.from_team or 'external'} -> {info.to_team}"
    render.err.print(f"[dim]{pair} · {info.status} · {render.ago(info.created_at)}[/]")
    if info.text:
        print(info.text)
    render.tell_outcome(reply.status, info)


@app.command()
def teams(as_json: JsonOption = False) -> None:
    """List the configured teams."""
    try:
        with Client() as client:
            reply = client.request(ListTeams())
    except IrisError as exc:
        fail(exc, as_json)
    assert isinstance(reply, TeamsReply)
    if as_json:
        print_json(reply.teams)
    elif not reply.teams:
        render.err.print("no teams configured; add them under 'teams:' in config.yaml")
    else:
        render.out.print(render.teams_table(reply.teams))


@app.command()
def status(as_json: JsonOption = False) -> None:
    """Is irisd up? Its teams and live processes."""
    try:
        with Client() as client:
            reply = client.request(GetStatus())
    except IrisError as exc:
        if as_json and exc.code == "daemon_not_running":
            print(json.dumps({"running": False, "message": exc.message}))
            raise typer.Exit(1) from None
        fail(exc, as_json)
    assert isinstance(reply, StatusReply)
    if as_json:
        print_json({"running": True, **msgspec.to_builtins(reply)})
    else:
        render.status(reply)


@app.command()
def demo(
    claude: Annotated[
        str | None,
        typer.Option(help="The claude executable (default: $IRIS_CLAUDE_BIN, then 'claude' on PATH)."),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the temporary folder (for a look inside).")] = False,
) -> None:
    """Run Iris end to end, offline: a scripted model, two teams, the daemon, a few tells."""
    from iris_cli.demo import run_demo

    try:
        run_demo(claude, keep=keep)
    except IrisError as exc:
        fail(exc)


def main() -> None:
    app()


# Command groups that live in modules of their own.
from iris_cli.daemon_cmd import daemon_app  # noqa: E402
from iris_cli.mcp_cmd import mcp_app  # noqa: E402

app.add_typer(daemon_app, name="daemon")
app.add_typer(mcp_app, name="mcp")
