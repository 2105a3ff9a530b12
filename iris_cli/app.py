"""``iris``: the command line. Thin: build a request, send it to irisd, render the reply."""

from __future__ import annotations

import json
import sys
from typing import Annotated, NoReturn

import msgspec
import typer

from iris_cli import render
from iris_cli.client import Client, EventHandler
from iris_cli.text import tell_data
from protocol.errors import IrisError
from protocol.messages import (
    ApprovalEvent,
    ApprovalReply,
    ApprovalsReply,
    CancelTell,
    ClearCache,
    Command,
    CountReply,
    Decide,
    Event,
    GetStatus,
    GetTell,
    ListApprovals,
    ListNotifications,
    ListSessions,
    ListTeams,
    NotificationReply,
    NotificationsReply,
    PairReply,
    PairsReply,
    ReadTranscript,
    Reply,
    Report,
    ReportReply,
    Request,
    ResetSession,
    SessionReply,
    SessionsReply,
    Sleep,
    StatusReply,
    TeamsReply,
    Tell,
    TellNotice,
    TellReply,
    TellState,
    TellText,
    TranscriptReply,
    Wake,
    WakeAll,
    Watch,
)

app = typer.Typer(
    name="iris",
    help="Let the Claude Code agents of your projects talk to each other.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _print_version(wanted: bool) -> None:
    if wanted:
        from irisd import __version__
        from protocol import PROTOCOL_VERSION

        print(f"iris {__version__} (protocol {PROTOCOL_VERSION})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Let the Claude Code agents of your projects talk to each other."""
FromOption = Annotated[
    str | None, typer.Option("--from", help="The team asking (default: you, outside any team).")
]


def fail(error: IrisError, as_json: bool = False) -> NoReturn:
    if as_json:
        print(json.dumps({"error": {"code": error.code, "message": error.message}}), file=sys.stderr)
    else:
        render.err.print(f"[red]error:[/] {error.message}")
    raise typer.Exit(1)


def send(request: Request, as_json: bool = False, on_event: EventHandler | None = None) -> Reply:
    """One request to irisd; an IrisError ends the command with its message."""
    try:
        with Client() as client:
            return client.request(request, on_event)
    except IrisError as exc:
        fail(exc, as_json)


def print_json(value: object) -> None:
    print(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False))


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
            "tell's id, N returns the answer so far after N ms (the tell runs on).",
        ),
    ] = 0,
    persist: Annotated[
        bool,
        typer.Option(help="Store it and deliver it later, even across restarts (fire and forget)."),
    ] = False,
    ttl_days: Annotated[float, typer.Option(help="With --persist: give up after this many days.")] = 30.0,
    as_json: JsonOption = False,
) -> None:
    """Tell TEAM something and print its answer."""
    if message == "-":
        message = sys.stdin.read()
    if persist:
        request = Tell(to_team=team, message=message, from_team=from_team, persist=True, ttl_days=ttl_days)
        stored = send(request, as_json)
        assert isinstance(stored, NotificationReply)
        if as_json:
            print_json(stored.notification)
        else:
            print(stored.notification.id)
            render.err.print(f"[dim]stored; it will be delivered to {team} (see 'iris notifications')[/]")
        return
    streamed: list[str] = []
    live = not as_json and sys.stdout.isatty() and timeout != -1

    tell_id: list[str] = []

    def on_event(event: Event) -> None:
        if isinstance(event, TellState | TellText) and not tell_id:
            tell_id.append(event.tell_id)
        if isinstance(event, TellText) and live:
            streamed.append(event.text)
            sys.stdout.write(event.text)
            sys.stdout.flush()
        if isinstance(event, TellNotice) and not as_json and sys.stderr.isatty():
            render.err.print(f"[yellow]{event.text}[/]")

    # Streaming also tells us the tell's id early, for the Ctrl-C message below.
    request = Tell(to_team=team, message=message, from_team=from_team, timeout_ms=timeout, stream=True)
    try:
        reply = send(request, as_json, on_event)
    except KeyboardInterrupt:
        which = f"'iris result {tell_id[0]}' or 'iris cancel {tell_id[0]}'" if tell_id else f"'iris report {team}'"
        render.err.print(f"\n[yellow]stopped waiting[/]: the tell goes on in irisd; see {which}")
        raise typer.Exit(130) from None
    assert isinstance(reply, TellReply)
    info = reply.tell
    if as_json:
        print_json(tell_data(reply))
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
    tell_id: Annotated[str, typer.Argument(metavar="ID", help="The tell's id (printed by 'iris tell').")],
    wait: Annotated[int, typer.Option(help="Wait up to this many ms for the tell to end.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Show the status and answer of one tell (partial while it runs)."""
    reply = send(GetTell(tell_id=tell_id, wait_ms=wait), as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_data(reply))
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
    reply = send(ListTeams(), as_json)
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
def init(
    team: Annotated[
        list[str] | None,
        typer.Option("--team", help="A team as NAME=FOLDER (repeat for each); '.' is this folder."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing config.yaml.")] = False,
) -> None:
    """Write a starter config.yaml with your teams (checked before it is written)."""
    from iris_cli.setup import write_starter_config

    try:
        path, teams = write_starter_config(team or [], force=force)
    except IrisError as exc:
        fail(exc)
    render.out.print(f"wrote {path} with {len(teams)} team(s): {', '.join(teams) or 'none yet'}")
    render.out.print("next: start the daemon ('iris daemon start', or 'irisd' in a terminal), then 'iris tell'")


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


@app.command()
def cancel(
    tell_id: Annotated[str, typer.Argument(metavar="ID", help="The tell to interrupt (queued or running).")],
    as_json: JsonOption = False,
) -> None:
    """Interrupt a tell without killing the team's warm claude process."""
    reply = send(CancelTell(tell_id=tell_id), as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_data(reply))
    else:
        status = reply.tell.status
        if status in ("completed", "failed", "timed_out"):
            render.out.print(f"tell {tell_id} had already ended ({status}); nothing to cancel")
            return
        render.out.print(f"tell {tell_id} is {status}")
        if reply.tell.text:
            print(reply.tell.text)


@app.command()
def command(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The team whose session gets the command.")],
    name: Annotated[str, typer.Argument(metavar="NAME", help="The slash command, e.g. compact or /compact.")],
    args: Annotated[str, typer.Argument(metavar="ARGS", help="Its arguments.")] = "",
    from_team: FromOption = None,
    timeout: Annotated[int, typer.Option(help="Milliseconds to wait, as for 'iris tell'.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Send a slash command (such as /compact) to a pair's session, through its queue."""
    request = Command(to_team=team, command=name, args=args, from_team=from_team, timeout_ms=timeout)
    reply = send(request, as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_data(reply))
    else:
        if reply.tell.text:
            print(reply.tell.text)
        render.tell_outcome(reply.status, reply.tell)
    if reply.status not in ("completed", "in_progress"):
        raise typer.Exit(1)


@app.command()
def sessions(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only the sessions with this team.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the pairs' persistent conversations."""
    reply = send(ListSessions(to_team=team), as_json)
    assert isinstance(reply, SessionsReply)
    if as_json:
        print_json(reply.sessions)
    else:
        render.sessions(reply.sessions)


session_app = typer.Typer(help="Manage one pair's conversation.", no_args_is_help=True)
app.add_typer(session_app, name="session")


@session_app.command("reset")
def session_reset(
    from_team: Annotated[str, typer.Argument(metavar="FROM", help="The asking team ('external' for you).")],
    to_team: Annotated[str, typer.Argument(metavar="TO", help="The answering team.")],
    as_json: JsonOption = False,
) -> None:
    """Start a fresh conversation for the pair FROM -> TO."""
    reply = send(ResetSession(to_team=to_team, from_team=_caller(from_team)), as_json)
    assert isinstance(reply, SessionReply)
    if as_json:
        print_json(reply.session)
    else:
        session = reply.session.session_id
        render.out.print(f"{from_team} -> {to_team} starts a new conversation (session {session})")


def _caller(name: str | None) -> str | None:
    return None if name in (None, "", "external", "-") else name


@app.command()
def wake(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="The team to wake.")] = None,
    from_team: FromOption = None,
    all_teams: Annotated[bool, typer.Option("--all", help="Wake every team (for --from).")] = False,
    sequential: Annotated[bool, typer.Option(help="With --all: one at a time.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Start a pair's claude process now, so the next tell is fast."""
    if all_teams == (team is not None):
        fail(IrisError("name a TEAM, or use --all"), as_json)
    if team is None:
        many = send(WakeAll(from_team=from_team, parallel=not sequential), as_json)
        assert isinstance(many, PairsReply)
        if as_json:
            print_json(many)
        else:
            render.processes(many.processes)
            for name, error in sorted(many.errors.items()):
                render.err.print(f"[red]{name}:[/] {error}")
        if many.errors:
            raise typer.Exit(1)
        return
    reply = send(Wake(to_team=team, from_team=from_team), as_json)
    assert isinstance(reply, PairReply)
    print_json(reply) if as_json else render.out.print(reply.message)


@app.command()
def sleep(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The team to put to sleep.")],
    from_team: FromOption = None,
    force: Annotated[bool, typer.Option(help="Stop it even in the middle of a tell.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Stop a pair's claude process (its conversation is kept)."""
    reply = send(Sleep(to_team=team, from_team=from_team, force=force), as_json)
    assert isinstance(reply, PairReply)
    print_json(reply) if as_json else render.out.print(reply.message)
    if "busy" in reply.message:
        raise typer.Exit(1)


@app.command()
def report(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The answering team.")],
    from_team: FromOption = None,
    all_callers: Annotated[bool, typer.Option("--all-callers", help="Tells from every caller.")] = False,
    limit: Annotated[int, typer.Option(help="How many recent tells.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Recent tells of a pair: status, duration, cost."""
    reply = send(Report(to_team=team, from_team=from_team, all_callers=all_callers, limit=limit), as_json)
    assert isinstance(reply, ReportReply)
    print_json(reply.tells) if as_json else render.report(reply.tells)


cache_app = typer.Typer(help="The stored transcripts of tells.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("read")
def cache_read(
    tell_id: Annotated[str, typer.Argument(metavar="ID", help="The tell whose transcript to show.")],
    as_json: JsonOption = False,
) -> None:
    """Every line claude printed during one tell."""
    reply = send(ReadTranscript(tell_id=tell_id), as_json)
    assert isinstance(reply, TranscriptReply)
    if as_json:
        print_json(reply)
        return
    for entry in reply.entries:
        print(entry.raw)


@cache_app.command("clear")
def cache_clear(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The answering team.")],
    from_team: FromOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget a pair's finished tells and their transcripts (the conversation stays)."""
    reply = send(ClearCache(to_team=team, from_team=from_team), as_json)
    assert isinstance(reply, CountReply)
    print_json(reply) if as_json else render.out.print(f"forgot {reply.count} finished tells")


@app.command()
def notifications(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only those for this team.")] = None,
    include_done: Annotated[bool, typer.Option("--all", help="Delivered and expired ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Persisted tells and whether they were delivered."""
    reply = send(ListNotifications(to_team=team, include_done=include_done), as_json)
    assert isinstance(reply, NotificationsReply)
    print_json(reply.notifications) if as_json else render.notifications(reply.notifications)


@app.command()
def watch(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only tells to or from this team.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Follow tells live as their text streams (Ctrl-C to stop)."""

    def show(event: Event) -> None:
        if as_json:
            print(json.dumps(msgspec.to_builtins(event)), flush=True)
        elif isinstance(event, TellState):
            render.tell_state(event)
        elif isinstance(event, ApprovalEvent):
            render.approval_event(event.approval)
        elif isinstance(event, TellNotice):
            render.tell_notice(event)
        elif isinstance(event, TellText):
            sys.stdout.write(event.text)
            sys.stdout.flush()

    try:
        send(Watch(team=team), as_json, show)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@app.command()
def approvals(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only requests of or for this team.")] = None,
    include_decided: Annotated[bool, typer.Option("--all", help="Decided and expired ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Requests of teams to use a tool, waiting for your decision."""
    reply = send(ListApprovals(team=team, include_decided=include_decided), as_json)
    assert isinstance(reply, ApprovalsReply)
    print_json(reply.approvals) if as_json else render.approvals(reply.approvals)


@app.command()
def approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    remember: Annotated[
        bool, typer.Option(help="Also allow the same request from this pair from now on, without asking.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Allow a team's tool use."""
    _decide(Decide(approval_id=approval_id, allow=True, remember=remember, by=_me()), as_json)


@app.command()
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    reason: Annotated[str, typer.Option(help="Why; the team's model reads it.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Refuse a team's tool use."""
    _decide(Decide(approval_id=approval_id, allow=False, reason=reason, by=_me()), as_json)


def _decide(request: Decide, as_json: bool) -> None:
    reply = send(request, as_json)
    assert isinstance(reply, ApprovalReply)
    if as_json:
        print_json(reply.approval)
    else:
        remembered = " (remembered for this pair)" if reply.approval.remembered else ""
        render.out.print(f"{reply.approval.tool_name}: {reply.approval.status}{remembered}")


def _me() -> str:
    import getpass

    return f"{getpass.getuser()} (cli)"


def main() -> None:
    app()


# Command groups that live in modules of their own.
from iris_cli.daemon_cmd import daemon_app  # noqa: E402
from iris_cli.mcp_cmd import mcp_app  # noqa: E402

app.add_typer(daemon_app, name="daemon")
app.add_typer(mcp_app, name="mcp")
