"""Human output with rich: tables and short status lines. Scripts use ``--json``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from iris_cli import plain
from iris_cli.text import ago as ago  # the commands call render.ago
from iris_cli.text import decide_line, pair_name, short, usd
from protocol.messages import (
    ApprovalInfo,
    NotificationInfo,
    ProcessInfo,
    RuleInfo,
    SessionInfo,
    StatusReply,
    TeamInfo,
    TellInfo,
    TellNotice,
    TellPhaseEvent,
    TellState,
    TranscriptReply,
    UnsolicitedInfo,
)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)



# Ids, pairs and short values are never wrapped or cut: users copy them. The free text
# shares what is left of the terminal's width; a message keeps to one line.
FREE_TEXT = frozenset({"message", "description", "path", "state"})
ONE_LINE = frozenset({"message", "description"})


Cell = str | Text  # a str cell is plain text: team and model text is never read as markup


def _text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def table(headers: tuple[str, ...], rows: Sequence[Sequence[Cell]]) -> Table:
    widest = [
        max([len(header), *(_text(row[index]).cell_len for row in rows)])
        for index, header in enumerate(headers)
    ]
    fixed = sum(w for h, w in zip(headers, widest, strict=True) if h not in FREE_TEXT)
    free = sum(h in FREE_TEXT for h in headers) or 1
    share = max(8, (out.width - fixed - 2 * (len(headers) - 1)) // free)

    def column(header: str, width: int) -> Column:
        if header in ONE_LINE:
            return Column(header, no_wrap=True, overflow="ellipsis", max_width=share)
        if header in FREE_TEXT:
            return Column(header, min_width=min(width, share))
        return Column(header, no_wrap=True, min_width=width)

    built = Table(*(column(h, w) for h, w in zip(headers, widest, strict=True)), box=None, pad_edge=False)
    for row in rows:
        built.add_row(*(_text(cell) for cell in row))
    return built


MESSAGE_MIN = 30  # narrower than this, a row's free text goes on a line of its own


def rows_with_notes(headers: tuple[str, ...], rows: Sequence[Sequence[Cell]], notes: Sequence[list[str]]) -> None:
    """A table whose short columns stay on the row and whose free text (a message, an
    error) goes on indented lines under it, each cut to the terminal's width: readable at
    80 columns, where a free-text column would shrink to a few characters."""
    widths = [
        max([len(header), *(_text(row[index]).cell_len for row in rows)])
        for index, header in enumerate(headers)
    ]

    def line(cells: Sequence[Cell]) -> Text:
        padded = Text("  ").join(
            _text(c) + " " * (w - _text(c).cell_len) for c, w in zip(cells, widths, strict=True)
        )
        padded.rstrip()
        return padded

    out.print(line([Text(h, style="bold") for h in headers]))
    for row, row_notes in zip(rows, notes, strict=True):
        out.print(line(row))
        for index, note in enumerate(row_notes):  # the first (a message) is cut; reasons stay whole
            out.print(Text("  " + (short(note, max(10, out.width - 3)) if index == 0 else note), style="dim"))


def teams_table(teams: list[TeamInfo]) -> Table:
    rows = [(Text(t.name, style=_style(t.color)), plain.team_place(t), t.description) for t in teams]
    return table(("team", "path", "description"), rows)


def status(reply: StatusReply) -> None:
    """``iris status`` (plain lines: see ``iris_cli.plain``)."""
    _plain_lines(plain.status_lines(reply, width=out.width, color=out.is_terminal and not out.no_color))
    if reply.unsolicited:
        out.print("\n[bold red]unsolicited[/] (turns no tell asked for: see README, 'What children accept')")
        for turn in reply.unsolicited:
            unsolicited(turn, limit=200)


def unsolicited(turn: UnsolicitedInfo, *, limit: int | None = None) -> None:
    """A turn a pair's claude took by itself, with what it said (all of it, or its start
    on one line); ``iris cache read ID`` shows every line it printed."""
    error = f" ({turn.error})" if turn.error else ""
    out.print(Text.assemble(
        (turn.id, "bold"), f" {pair_name(turn.from_team, turn.to_team)} ", (f"unsolicited {turn.status}", "red"),
        f"{error} {ago(turn.started_at)}",
    ))
    if turn.text and limit is not None:
        out.print("  " + short(turn.text, limit), markup=False)
    elif turn.text:
        out.print("\n".join("  " + line for line in turn.text.splitlines()), markup=False)


def processes(items: list[ProcessInfo]) -> None:
    _plain_lines(plain.process_lines(items, width=out.width, color=out.is_terminal and not out.no_color))


def _plain_lines(lines: list[str]) -> None:
    for line in lines:
        out.print(Text.from_ansi(line))


def sessions(items: list[SessionInfo]) -> None:
    if not items:
        out.print("no sessions yet; the first tell of a pair creates its session")
        return
    rows = []
    for s in items:
        lost = not s.transcript_exists and s.message_count > 0
        rows.append((pair_name(s.from_team, s.to_team), s.session_id, str(s.message_count),
                     ago(s.last_used_at), s.process_state + ("*" if lost else "")))
    out.print(table(("pair", "session", "turns", "last used", "state"), rows))
    if any(not s.transcript_exists and s.message_count > 0 for s in items):
        out.print("[dim]* claude no longer has this conversation's transcript: the next tell starts a new one[/]")


def duration(tell: TellInfo) -> str:
    if tell.started_at is None:
        return "-"
    end = tell.finished_at or time.time()
    return f"{end - tell.started_at:.1f} s"


def report(items: list[TellInfo]) -> None:
    if not items:
        out.print("no tells yet")
        return
    rows = [
        (t.id, pair_name(t.from_team, t.to_team), t.status, ago(t.created_at), duration(t),
         usd(t.cost_usd) if t.cost_usd is not None else "-")
        for t in items
    ]
    headers = ("id", "pair", "status", "when", "took", "cost")
    fixed = sum(max([len(h), *(len(r[i]) for r in rows)]) + 2 for i, h in enumerate(headers))
    if out.width - fixed >= MESSAGE_MIN:  # wide enough: the message stays on the row
        out.print(table((*headers, "message"), [(*r, _short(t.message)) for r, t in zip(rows, items, strict=True)]))
        return
    rows_with_notes(headers, rows, [[t.message] for t in items])


def notifications(items: list[NotificationInfo]) -> None:
    if not items:
        out.print("no notifications waiting")
        return
    rows = [
        (n.id, pair_name(n.from_team, n.to_team), n.status, ago(n.created_at), str(n.attempts), n.tell_id or "-")
        for n in items
    ]
    notes = [
        [n.message, *([f"why: {n.error}"] if n.error and n.status != "delivered" else [])] for n in items
    ]
    rows_with_notes(("id", "pair", "status", "created", "tries", "tell"), rows, notes)
    if any(n.tell_id for n in items):
        out.print("[dim]the answer: iris result TELL[/]")


def tell_notice(event: TellNotice) -> None:
    out.print(Text.assemble("\n", (event.tell_id, "bold"), " ", (event.text, "yellow")))


def tell_phase(event: TellPhaseEvent) -> None:
    from protocol.phases import describe

    out.print(Text(f"\n{event.tell_id} {describe(event.phase)}", style="dim"))


def tell_state(event: TellState) -> None:
    pair = pair_name(event.from_team, event.to_team)
    detail = f": {_short(event.message)}" if event.message and event.status == "queued" else ""
    error = f" ({event.error})" if event.error else ""
    out.print(Text.assemble("\n", (event.tell_id, "bold"), f" {pair} ", (event.status, "cyan"), detail, error))


def approvals(items: list[ApprovalInfo]) -> None:
    if not items:
        out.print("no approvals waiting")
        return
    for a in items:
        out.print(Text.assemble(
            (a.id, "bold"), f" {pair_name(a.from_team, a.to_team)} wants ", (a.tool_name, "bold"),
            f" ({a.status}, {ago(a.created_at)}, tell {a.tell_id})",
        ))
        out.print(tool_input(a.tool_name, a.input), markup=False)
        if a.status == "pending":
            out.print(decide_line(a.id) + "\n", markup=False)
        elif a.reason or a.decided_by:
            why = f": {a.reason}" if a.reason else ""
            out.print(f"  {a.status} by {a.decided_by or '-'}{why}\n", markup=False)


def tool_input(tool: str, value: dict[str, Any]) -> str:
    """A tool's input, readable: the command of Bash, the path of file tools, else JSON."""
    if tool == "Bash" and isinstance(value.get("command"), str):
        described = f"  # {value['description']}\n" if value.get("description") else ""
        return f"{described}  $ {value['command']}"
    if isinstance(value.get("file_path"), str):
        rest = {k: v for k, v in value.items() if k != "file_path"}
        body = json.dumps(rest, indent=2, ensure_ascii=False)
        return f"  file: {value['file_path']}\n" + "\n".join("  " + line for line in body.splitlines())
    return "\n".join("  " + line for line in json.dumps(value, indent=2, ensure_ascii=False).splitlines())


def approval_event(a: ApprovalInfo) -> None:
    out.print(Text.assemble(
        "\n", (f"approval {a.status}", "magenta"), f" {a.id} {pair_name(a.from_team, a.to_team)} {a.tool_name}"
    ))
    if a.status == "pending":
        out.print(tool_input(a.tool_name, a.input), markup=False)


def _style(color: str) -> str:
    """A team's color from config.yaml as a style; one rich cannot read is left out."""
    from rich.errors import StyleSyntaxError
    from rich.style import Style

    try:
        Style.parse(color)
    except StyleSyntaxError:
        return ""
    return color


def _short(text: str) -> str:
    return short(text, 50)


def tell_outcome(status: str, tell: TellInfo) -> None:
    """Explain on stderr a tell that did not simply complete."""
    if status == "in_progress":
        err.print(Text.assemble(
            (f"still {tell.status}", "yellow"),
            f": this is the answer so far. Fetch the rest with: iris result {tell.id}",
        ))
    elif status != "completed":
        reason = f": {tell.error}" if tell.error else ""
        err.print(Text.assemble((f"tell {tell.id} {status}", "red"), reason))
    if tell.new_session and tell.session_id and status in ("completed", "in_progress"):
        err.print(f"[dim]started a new conversation (session {tell.session_id})[/]")


_SHOWN_STYLE = {
    "text": ("", ""), "tool": ("cyan", "→ "), "result": ("dim", "  ← "), "approval": ("magenta", "? "),
    "notice": ("yellow", "! "), "start": ("dim", "· "), "end": ("dim", "· "), "other": ("dim", "· "),
}


def transcript(reply: TranscriptReply) -> None:
    """A tell's transcript as a conversation (``iris cache read``)."""
    from iris_cli.transcript import conversation

    tell = reply.tell
    out.print(Text(f"{tell.id} {pair_name(tell.from_team, tell.to_team)} · {tell.status} · {ago(tell.created_at)}",
                   style="bold"))
    out.print(Text("asked: " + tell.message))
    for shown in conversation(reply.entries):
        style, mark = _SHOWN_STYLE.get(shown.kind, ("", ""))
        first, *rest = shown.text.splitlines() or [""]
        indent = " " * len(mark)
        out.print(Text("\n".join([mark + first, *(indent + line for line in rest)]), style=style))
    if tell.error:
        out.print(Text(f"error: {tell.error}", style="red"))


def rules(items: list[RuleInfo]) -> None:
    """The remembered rules: id, pair, when, then the request itself under each."""
    if not items:
        out.print("no remembered rules ('iris approve ID --remember' makes one)")
        return
    from protocol.phases import tool_summary

    rows = [(r.id, pair_name(r.from_team, r.to_team), r.tool_name, ago(r.created_at)) for r in items]
    notes = [[tool_summary(r.tool_name, r.input, 500)] for r in items]
    rows_with_notes(("rule", "pair", "tool", "made"), rows, notes)
    out.print("[dim]forget one: iris approvals forget RULE[/]")
