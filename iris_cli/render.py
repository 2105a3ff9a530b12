"""Human output with rich: tables and short status lines. Scripts use ``--json``."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from protocol.messages import StatusReply, TeamInfo, TellInfo

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def ago(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    seconds = max(0, time.time() - timestamp)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def teams_table(teams: list[TeamInfo]) -> Table:
    table = Table("team", "path", "description", box=None, pad_edge=False)
    for team in teams:
        name = f"[{team.color}]{team.name}[/]" if team.color else team.name
        table.add_row(name, team.path, team.description)
    return table


def status(reply: StatusReply) -> None:
    out.print(
        f"[green]irisd is running[/] (pid {reply.pid}, version {reply.daemon_version}, "
        f"up since {ago(reply.started_at)})"
    )
    out.print(f"socket: {reply.socket_path}\nconfig: {reply.config_path}")
    out.print(f"\n[bold]teams[/] ({len(reply.teams)})")
    out.print(teams_table(reply.teams) if reply.teams else "  none configured")
    live = [p for p in reply.processes if p.state != "stopped" or p.reason]
    out.print(f"\n[bold]processes[/] ({sum(p.pid is not None for p in reply.processes)} of "
              f"at most {reply.max_processes} running)")
    if not live:
        out.print("  none")
        return
    table = Table("pair", "state", "pid", "queued", "session", "last used", box=None, pad_edge=False)
    for p in live:
        state = p.state if not p.reason else f"{p.state} ({p.reason})"
        table.add_row(
            f"{p.from_team or 'external'} -> {p.to_team}",
            state,
            str(p.pid or "-"),
            str(p.queued),
            p.session_id[:8],
            ago(p.last_used_at),
        )
    out.print(table)


def tell_outcome(status: str, tell: TellInfo) -> None:
    """Explain on stderr a tell that did not simply complete."""
    if status == "in_progress":
        err.print(
            f"[yellow]still {tell.status}[/]: this is the answer so far. "
            f"Fetch the rest with: iris result {tell.id}"
        )
    elif status != "completed":
        reason = f": {tell.error}" if tell.error else ""
        err.print(f"[red]tell {tell.id} {status}[/]{reason}")
    if tell.new_session and tell.session_id:
        err.print(f"[dim]started a new conversation (session {tell.session_id})[/]")
