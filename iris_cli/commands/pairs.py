"""``iris wake``, ``sleep``, ``report``, ``sessions``, ``session reset`` and ``cache``: one pair."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import FromOption, JsonOption, ThreadOption, caller, fail, print_json, send, thread_named

app = typer.Typer()


@app.command()
def wake(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="The team to wake.")] = None,
    from_team: FromOption = None,
    all_teams: Annotated[bool, typer.Option("--all", help="Wake every team (for --from).")] = False,
    sequential: Annotated[bool, typer.Option(help="With --all: one at a time.")] = False,
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Start a pair's claude process now, so the next tell is fast."""
    from iris_cli import render
    from protocol.errors import IrisError
    from protocol.messages import PairsReply, WakeAll

    if all_teams == (team is not None):
        fail(IrisError("name a TEAM, or use --all"), as_json)
    if team is None:
        many = send(WakeAll(from_team=caller(from_team), parallel=not sequential), as_json)
        assert isinstance(many, PairsReply)
        if as_json:
            print_json(many)
        else:
            render.processes(many.processes)
            for name, error in sorted(many.errors.items()):
                from rich.text import Text

                render.err.print(Text.assemble((f"{name}:", "red"), " ", str(error)))
        if many.errors:
            raise typer.Exit(1)
        return
    from iris_cli import runs

    runs.wake(team, from_team, thread, as_json)


@app.command()
def sleep(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The team to put to sleep.")],
    from_team: FromOption = None,
    force: Annotated[bool, typer.Option(help="Stop it even in the middle of a tell.")] = False,
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Stop a pair's claude process (its conversation is kept)."""
    from iris_cli import runs

    runs.sleep(team, from_team, force, thread, as_json)


@app.command()
def report(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The answering team.")],
    from_team: FromOption = None,
    all_callers: Annotated[bool, typer.Option("--all-callers", help="Tells from every caller.")] = False,
    limit: Annotated[int, typer.Option(help="How many recent tells.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Recent tells of a pair: status, duration, cost."""
    from iris_cli import runs

    runs.report(team, from_team, all_callers, limit, as_json)


@app.command()
def sessions(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only the sessions with this team.")] = None,
    archived: Annotated[bool, typer.Option("--archived", help="The archived conversations (only those).")] = False,
    stats: Annotated[bool, typer.Option("--stats", help="Each pair's figures over its life, the most active "
                                        "first; with TEAM: the pairs to or from it.")] = False,
    since: Annotated[str, typer.Option(help="With --stats, from when: today, 7d, 12h, 2w, a date, or all.")] = "all",
    as_json: JsonOption = False,
) -> None:
    """List the pairs' persistent conversations: how full each is, its compactions (--stats: analytics)."""
    from iris_cli import runs

    if stats:
        _stats(team, since, as_json)
        return
    runs.sessions(team, archived, as_json)


def _stats(team: str | None, since: str, as_json: bool) -> None:
    import time

    from iris_cli import render
    from iris_cli.runs import parse_since
    from protocol.errors import InvalidRequestError
    from protocol.messages import SessionStats, SessionStatsReply

    try:
        start = parse_since(since, time.time())
    except InvalidRequestError as exc:
        fail(exc, as_json)
    reply = send(SessionStats(team=team, since=start), as_json)
    assert isinstance(reply, SessionStatsReply)
    print_json(reply) if as_json else render.session_stats(reply.pairs, since=start)


session_app = typer.Typer(help="Manage one pair's conversation.", no_args_is_help=True)
app.add_typer(session_app, name="session")


@session_app.command("reset")
def session_reset(
    from_team: Annotated[str, typer.Argument(metavar="FROM", help="The asking team ('external' for you).")],
    to_team: Annotated[str, typer.Argument(metavar="TO", help="The answering team.")],
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Start a fresh conversation for the pair FROM->TO (or one of its threads)."""
    from iris_cli import render
    from iris_cli.text import pair_name
    from protocol.messages import ResetSession, SessionReply

    thread = thread_named(thread, as_json)
    reply = send(ResetSession(to_team=to_team, from_team=caller(from_team), thread=thread), as_json)
    assert isinstance(reply, SessionReply)
    if as_json:
        print_json(reply.session)
    else:
        session = reply.session.session_id
        pair = pair_name(caller(from_team), to_team, thread)
        render.out.print(f"{pair} starts a new conversation (session {session})")


@session_app.command("archive")
def session_archive(
    from_team: Annotated[str, typer.Argument(metavar="FROM", help="The asking team ('external' for you).")],
    to_team: Annotated[str, typer.Argument(metavar="TO", help="The answering team.")],
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Archive the pair FROM->TO now: its claude stops, its history stays; the next tell restores it."""
    _archive_or_restore(from_team, to_team, thread_named(thread, as_json), as_json, restore=False)


@session_app.command("restore")
def session_restore(
    from_team: Annotated[str, typer.Argument(metavar="FROM", help="The asking team ('external' for you).")],
    to_team: Annotated[str, typer.Argument(metavar="TO", help="The answering team.")],
    thread: ThreadOption = "",
    as_json: JsonOption = False,
) -> None:
    """Restore the archived pair FROM->TO (settings.sessions.restore: resume it, or start anew)."""
    _archive_or_restore(from_team, to_team, thread_named(thread, as_json), as_json, restore=True)


def _archive_or_restore(from_team: str, to_team: str, thread: str, as_json: bool, *, restore: bool) -> None:
    from iris_cli import render
    from iris_cli.text import pair_name
    from protocol.messages import ArchiveSession, RestoreSession, SessionReply

    kind = RestoreSession if restore else ArchiveSession
    reply = send(kind(to_team=to_team, from_team=caller(from_team), thread=thread), as_json)
    assert isinstance(reply, SessionReply)
    if as_json:
        print_json(reply.session)
        return
    pair = pair_name(caller(from_team), to_team, thread)
    if restore:
        render.out.print(f"{pair} is active again (session {reply.session.session_id}); its next tell continues it")
    else:
        render.out.print(f"{pair} is archived (session {reply.session.session_id}); its next tell restores it")


cache_app = typer.Typer(help="The stored transcripts of tells.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("read")
def cache_read(
    tell_id: Annotated[
        str, typer.Argument(metavar="ID", help="The tell (or unsolicited turn, u-...) whose transcript to show.")
    ],
    raw: Annotated[bool, typer.Option("--raw", help="Claude's stream-json lines as they were printed.")] = False,
    as_json: JsonOption = False,
) -> None:
    """One tell's conversation: the message, the answer, tool calls and their results.

    An id starting with u- is a turn no tell asked for: every line of it."""
    import msgspec

    from iris_cli import render
    from protocol.messages import (
        Event,
        ReadTranscript,
        ReadUnsolicited,
        TranscriptPage,
        TranscriptReply,
        UnsolicitedReply,
    )
    from protocol.transcript import entries, join

    # In pages (irisd holds one at a time), the lines packed as irisd stores them: the lines
    # as printed (--raw, or an unsolicited turn's) are printed as each page comes; the rest
    # gather them (for the conversation the steps, not the lines: irisd reads them).
    unsolicited = tell_id.startswith("u-")
    printed = (raw or unsolicited) and not as_json
    pages: list[TranscriptPage] = []

    def on_event(event: Event) -> None:
        if not isinstance(event, TranscriptPage):
            return
        if printed:
            for entry in entries(event):
                print(entry.raw)
        else:
            pages.append(event)

    request = (ReadUnsolicited(turn_id=tell_id, paged=True, packed=True) if unsolicited
               else ReadTranscript(tell_id=tell_id, steps=not (raw or as_json), paged=True, packed=True))
    reply = send(request, as_json, on_event)
    assert isinstance(reply, TranscriptReply | UnsolicitedReply)
    if printed:
        return
    if isinstance(reply, UnsolicitedReply):  # --json
        print_json(msgspec.structs.replace(reply, entries=[entry for page in pages for entry in entries(page)]))
    elif as_json:
        print_json(join(pages, reply))
    else:
        render.transcript(join(pages, reply))


@cache_app.command("clear")
def cache_clear(
    team: Annotated[str, typer.Argument(metavar="TEAM", help="The answering team.")],
    from_team: FromOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget a pair's finished tells, unsolicited turns and their transcripts (the conversation stays)."""
    from iris_cli import render
    from protocol.messages import ClearCache, CountReply

    reply = send(ClearCache(to_team=team, from_team=caller(from_team)), as_json)
    assert isinstance(reply, CountReply)
    print_json(reply) if as_json else render.out.print(f"forgot {reply.count} finished tells")
