"""``iris tell TEAM MESSAGE``: a tell streamed to the terminal, without Typer, so the most
common command starts fast (``iris_cli.entry`` runs the plain form directly; ``iris tell``
with options goes through Typer to the same ``run_tell``)."""

from __future__ import annotations

import sys


def run_tell(
    team: str, message: str, *, from_team: str | None, timeout: int, max_budget_usd: float | None, as_json: bool,
    thread: str = "",
) -> None:
    """Send the tell, stream its answer, print the outcome; exits non-zero unless it completed
    (or is still running by the caller's choice)."""
    from iris_cli.calls import print_json, send
    from iris_cli.watcher import TellWatcher
    from protocol.core_messages import (  # not protocol.messages: the hot path creates these alone
        ANSWERED_STATUSES,
        Tell,
        TellReply,
    )
    from protocol.errors import DaemonNotRunningError, IrisError

    # Streaming also tells us the tell's id early (for the Ctrl-C message) and what it
    # waits for (the status line on a terminal, an approval's commands everywhere).
    request = Tell(
        to_team=team, message=message, from_team=from_team, timeout_ms=timeout, stream=True,
        max_budget_usd=max_budget_usd, thread=thread,
    )
    watcher = TellWatcher(
        stream_text=not as_json and sys.stdout.isatty() and timeout != -1,
        status_line=not as_json and sys.stdout.isatty() and sys.stderr.isatty() and timeout != -1,
        hints=not as_json,
    )

    def lost(exc: IrisError) -> IrisError:
        """The connection broke under a tell irisd had taken: say which, and how to find it."""
        if watcher.tell_id and isinstance(exc, DaemonNotRunningError):
            return DaemonNotRunningError(
                f"{exc.message}; tell {watcher.tell_id} was under way: once irisd is back, "
                f"'iris result {watcher.tell_id}' shows its answer so far"
            )
        return exc

    try:
        with watcher:
            reply = send(request, as_json, watcher.on_event, explain=lost, expect=(TellReply, *TellWatcher.EVENTS))
    except KeyboardInterrupt:
        tell_id = watcher.tell_id
        which = f"'iris result {tell_id}' or 'iris cancel {tell_id}'" if tell_id else f"'iris report {team}'"
        from rich.text import Text

        from iris_cli import render

        waiting = ("stopped waiting", "yellow")
        render.err.print(Text.assemble("\n", waiting, f": the tell goes on in irisd; see {which}"))
        raise SystemExit(130) from None
    assert isinstance(reply, TellReply)
    streamed = watcher.streamed
    info = reply.tell
    if as_json:
        from iris_cli.text import tell_data  # here: the streamed tell needs none of the CLI's text

        print_json(tell_data(reply))
    elif timeout == -1 and reply.status == "in_progress":
        print(info.id)
        from iris_cli import render

        render.note(f"tell {info.id} is {info.status}; see it with: iris result {info.id}", render.err)
    else:
        if streamed:
            if watcher.line_open:
                print()
        elif info.text:
            print(info.text)
        if reply.status != "completed" or info.new_session:  # rich only when there is more to say
            from iris_cli import render

            render.tell_outcome(reply.status, info)
    if reply.status not in ANSWERED_STATUSES:
        raise SystemExit(1)
