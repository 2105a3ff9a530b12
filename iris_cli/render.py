"""Human output with rich: tables and short status lines. Scripts use ``--json``."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from protocol.messages import (
    NotificationInfo,
    ProcessInfo,
    SessionInfo,
    StatusReply,
    TeamInfo,
    TellInfo,
    TellState,
)

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
    running = sum(p.pid is not None for p in reply.processes)
    out.print(f"\n[bold]processes[/] ({running} of at most {reply.max_processes} running)")
    processes([p for p in reply.processes if p.state != "stopped" or p.reason])


def pair_name(from_team: str | None, to_team: str) -> str:
    return f"{from_team or 'external'} -> {to_team}"


def processes(items: list[ProcessInfo]) -> None:
    if not items:
        out.print("  none")
        return
    table = Table("pair", "state", "pid", "queued", "session", "last used", box=None, pad_edge=False)
    for p in items:
        state = p.state if not p.reason else f"{p.state} ({p.reason})"
        color = {"failed": "red", "processing": "yellow", "idle": "green"}.get(p.state, "")
        table.add_row(
            pair_name(p.from_team, p.to_team),
            f"[{color}]{state}[/]" if color else state,
            str(p.pid or "-"),
            str(p.queued),
            p.session_id[:8],
            ago(p.last_used_at),
        )
    out.print(table)


def sessions(items: list[SessionInfo]) -> None:
    if not items:
        out.print("no sessions yet; the first tell of a pair creates its session")
        return
    table = Table("pair", "session", "messages", "last used", "state", box=None, pad_edge=False)
    for s in items:
        lost = not s.transcript_exists and s.message_count > 0
        state = f"{s.process_state} (transcript missing: a new one starts)" if lost else s.process_state
        table.add_row(pair_name(s.from_team, s.to_team), s.session_id, str(s.message_count),
                      ago(s.last_used_at), state)
    out.print(table)


def duration(tell: TellInfo) -> str:
    if tell.started_at is None:
        return "-"
    end = tell.finished_at or time.time()
    return f"{end - tell.started_at:.1f} s"


def report(items: list[TellInfo]) -> None:
    if not items:
        out.print("no tells yet")
        return
    table = Table("id", "pair", "status", "when", "took", "cost", "message", box=None, pad_edge=False)
    for t in items:
        cost = f"${t.cost_usd:.4f}" if t.cost_usd is not None else "-"
        table.add_row(t.id, pair_name(t.from_team, t.to_team), t.status, ago(t.created_at),
                      duration(t), cost, _short(t.message))
    out.print(table)


def notifications(items: list[NotificationInfo]) -> None:
    if not items:
        out.print("no notifications waiting")
        return
    table = Table("id", "pair", "status", "created", "tries", "message", box=None, pad_edge=False)
    for n in items:
        status = f"{n.status} ({n.error})" if n.error and n.status != "delivered" else n.status
        table.add_row(n.id, pair_name(n.from_team, n.to_team), status, ago(n.created_at),
                      str(n.attempts), _short(n.message))
    out.print(table)


def tell_state(event: TellState) -> None:
    pair = pair_name(event.from_team, event.to_team)
    detail = f": {_short(event.message)}" if event.message and event.status == "queued" else ""
    error = f" ({event.error})" if event.error else ""
    out.print(f"\n[bold]{event.tell_id}[/] {pair} [cyan]{event.status}[/]{detail}{error}")


def _short(text: str, width: int = 50) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


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
