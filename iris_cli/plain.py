"""``iris status`` without rich: the daemon, its teams and its processes as plain lines
(ANSI colours on a terminal). Importing rich costs more than the rest of the command,
and ``iris status`` is the command people and scripts run most; the rest of the CLI's
output goes through ``iris_cli.render``, which prints these same lines for ``iris demo``
and ``iris wake --all``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from iris_cli.table import Cell, Column, Table, clean, draw, one_line, paint, terminal_width, use_color
from iris_cli.text import ago, pair_name, short, usd
from protocol.health import Finding, Recovery
from protocol.status_messages import ProcessInfo, StatusReply, TeamInfo


def team_place(team: TeamInfo) -> str:
    """Where a team lives: its folder (on its host), or the remote agent it is."""
    if team.kind:
        return f"{team.kind}: {team.remote}"
    return f"{team.host}:{team.path}" if team.host else team.path


def team_lines(teams: list[TeamInfo], *, width: int, color: bool) -> list[str]:
    rows = [(Cell(t.name + ("*" if t.unavailable else ""), t.color), team_place(t), t.description) for t in teams]
    columns = (Column("team"), Column("path"), Column("description", free=True, fold=24))  # a long URL: under it
    drawn = draw(Table(columns, rows), width=width, color=color)
    return drawn + [paint(f"* {clean(t.unavailable)}", "red", color) for t in teams if t.unavailable]


def host_of(process: ProcessInfo) -> str:
    """Where a pair's team runs, short enough for a column: an A2A agent's host and port
    (its card's whole URL is in 'iris teams'), an ssh destination, another irisd, "local"."""
    if process.kind == "a2a":
        from urllib.parse import urlsplit  # only here: it imports ipaddress, which few status replies need

        return urlsplit(process.host).netloc or process.host
    return process.host or "local"


def process_lines(items: list[ProcessInfo], *, width: int, color: bool) -> list[str]:
    """The pairs' processes; a failure's reason (``*``) follows the table, whole."""
    if not items:
        return ["  none"]
    rows: list[Sequence[Cell | str]] = []
    remote = any(p.host for p in items)  # a host column only when a team runs elsewhere
    costs = any(p.cost_usd for p in items)  # a cost column once something was spent
    for p in items:
        state_color = {"failed": "red", "processing": "yellow", "idle": "green"}.get(p.state, "")
        rows.append((
            Cell(pair_name(p.from_team, p.to_team, p.thread)),
            Cell(p.state + ("*" if p.reason else ""), state_color),
            *([Cell(host_of(p))] if remote else []),
            Cell(str(p.pid or "-")),
            Cell(str(p.queued)),
            Cell(p.session_id[:8]),
            Cell(ago(p.last_used_at)),
            *([Cell(usd(p.cost_usd))] if costs else []),
        ))
    headers = (
        "pair", "state", *(("host",) if remote else ()), "pid", "queued", "session", "last used",
        *(("cost",) if costs else ()),
    )
    drawn = draw(Table([Column(h) for h in headers], rows), width=width, color=color)
    if any(p.reason for p in items):
        drawn.append(paint("* why:", "dim", color))
        drawn += [paint(f"  {pair_name(p.from_team, p.to_team, p.thread)}: {clean(p.reason)}", "dim", color)
                  for p in items if p.reason]
    return drawn


def status_lines(reply: StatusReply, *, width: int, color: bool) -> list[str]:
    lines = [
        paint("irisd is running", "green", color)
        + f" (pid {reply.pid}, version {reply.daemon_version}, started {ago(reply.started_at)})",
        f"socket: {reply.socket_path}",
        f"config: {reply.config_path}",
        f"claude: {reply.claude_version or 'none found'}"
        + ("" if reply.claude_version == reply.claude_tested else f" (Iris is tested with {reply.claude_tested})"),
        *([f"http:   {reply.http_url} (API: /api/openapi.json; 'iris dashboard' opens it)"] if reply.http_url else []),
        *config_problem_lines(reply.config_problem, color=color),
        "",
        paint("teams", "bold", color) + f" ({len(reply.teams)})",
        *(team_lines(reply.teams, width=width, color=color) if reply.teams else ["  none configured"]),
    ]
    if reply.pending_approvals:
        lines += ["", paint(f"{reply.pending_approvals} approval(s) waiting", "magenta", color)
                  + ": see 'iris approvals'"]
    running = sum(p.pid is not None for p in reply.processes)
    shown = [p for p in reply.processes if p.state != "stopped" or p.reason]
    lines += ["", paint("processes", "bold", color) + f" ({running} of at most {reply.max_processes} running)"]
    lines += process_lines(shown, width=width, color=color)
    if reply.spares:  # started claudes a new conversation takes (settings.sessions.spares)
        held = sum(len(pids) for pids in reply.spares.values())
        lines.append(f"  + {held} spare claude{'s' if held != 1 else ''} (of the slots): " + ", ".join(
            f"{team} pid {' '.join(str(p) for p in pids)}" for team, pids in sorted(reply.spares.items())))
    if reply.unsolicited:
        why = " (turns no tell asked for: see README, 'What children accept')"
        lines += ["", paint("unsolicited", "red", color) + why]
        for turn in reply.unsolicited:
            error = f" ({clean(turn.error)})" if turn.error else ""
            pair = pair_name(turn.from_team, turn.to_team)
            lines.append(f"{turn.id} {pair} unsolicited {turn.status}{error} {ago(turn.started_at)}")
            if turn.text:
                lines.append("  " + short(clean(turn.text), 200))  # its start: 'iris cache read ID' has it all
    return lines + health_lines(reply.findings, reply.recoveries, color=color) + error_lines(reply, color=color)


SHOWN_ERRORS = 3


def config_problem_lines(problem: str, *, color: bool) -> list[str]:
    """Why the last reload was refused, whole (a YAML error points at its line over several)."""
    if not problem:
        return []
    head = paint("config.yaml was not reloaded:", "red", color)  # the problem says the rest
    return ["", head, *(f"  {line}" for line in clean(problem).splitlines())]


def error_lines(reply: StatusReply, *, color: bool) -> list[str]:
    """The log's newest warnings and errors: some (a team the mesh refused) are said nowhere else."""
    if not reply.recent_errors:
        return []
    count = len(reply.recent_errors)
    more = f" (the {SHOWN_ERRORS} newest of {count}; all: the dashboard's Health)" if count > SHOWN_ERRORS else ""
    lines = ["", paint("recent errors in the log", "red", color) + more]
    for entry in reply.recent_errors[:SHOWN_ERRORS]:
        at = time.strftime("%H:%M:%S", time.localtime(entry.at))
        lines.append(f"  {at} {entry.level}: {one_line(entry.message)}")
    return lines


SEVERITY_COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}


def health_lines(findings: Sequence[Finding], recoveries: Sequence[Recovery], *, color: bool) -> list[str]:
    """The health monitor's findings, a line each with its fix under it, and what irisd
    did about some itself (settings.health.recover)."""
    lines = []
    if findings:
        lines += ["", paint("health", "bold", color) + f" ({len(findings)} finding(s))"]
        for f in findings:
            lines.append(f"  {paint(f.severity, SEVERITY_COLORS[f.severity], color)} {one_line(f.summary)}")
            if f.fix:
                lines.append(f"    fix: {one_line(f.fix)}")
    if recoveries:
        lines += ["", paint("irisd acted on its own", "bold", color) + " (settings.health.recover)"]
        for r in recoveries[:SHOWN_ERRORS]:
            at = time.strftime("%H:%M:%S", time.localtime(r.at))
            lines.append(f"  {at} {r.action.replace('_', ' ')} {r.subject}: {r.outcome} ({one_line(r.reason)})")
    return lines


def print_status(reply: StatusReply) -> None:
    width = terminal_width()
    print("\n".join(status_lines(reply, width=width, color=use_color())))
