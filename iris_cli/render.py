"""Human output; scripts use ``--json``. Tables are drawn by ``iris_cli.table`` (the one
renderer, plain lines with ANSI colours on a terminal) and printed here, with the rest of
what the commands say, through ``iris_cli.printer``: rich is imported only when a command
prints something of rich's own (a panel, a live view). Team and model text is never read as
markup (see ``out``)."""

from __future__ import annotations

import json
import time
from typing import Any

from iris_cli import plain
from iris_cli.printer import Printer, Styled
from iris_cli.table import Column, Table, draw, use_color
from iris_cli.text import ago as ago  # the commands call render.ago
from iris_cli.text import decide_line, pair_name, short, usd
from protocol import session_words
from protocol.messages import (
    ApprovalInfo,
    NotificationInfo,
    PairStats,
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

# A str is printed as written, never read as markup: team and model text ("[/code]",
# "list[int]") is most of what the CLI prints. Styles come from Styled parts or the tables' ANSI.
out = Printer()
err = Printer(stderr=True)


def error(message: str) -> None:
    """``error: MESSAGE`` on stderr."""
    err.print(Styled(("error:", "red"), " ", message))


def note(text: str, console: Printer | None = None) -> None:
    """A line of help around the output, dim (on ``out`` unless told)."""
    (console or out).print(Styled(text, style="dim"))


MESSAGE_MIN = 30  # with less room, a tell's message goes on a line of its own under its row


def show(table: Table) -> None:
    """A table (iris_cli.table, the one the whole CLI draws) at the terminal's width."""
    lines(draw(table, width=out.width, color=_color()))


def lines(drawn: list[str]) -> None:
    """Lines drawn with ``color=_color()``: ANSI styles only where the terminal shows them."""
    for line in drawn:
        out.print(line)


def _color() -> bool:
    """Whether ``out`` shows colours (a terminal, no ``NO_COLOR``)."""
    return use_color(out.file)


def teams(items: list[TeamInfo]) -> None:
    lines(plain.team_lines(items, width=out.width, color=_color()))


def status(reply: StatusReply) -> None:
    """``iris status`` (plain lines: see ``iris_cli.plain``)."""
    lines(plain.status_lines(reply, width=out.width, color=_color()))


def unsolicited(turn: UnsolicitedInfo, *, limit: int | None = None) -> None:
    """A turn a pair's claude took by itself, with what it said (all of it, or its start
    on one line); ``iris cache read ID`` shows every line it printed."""
    error = f" ({turn.error})" if turn.error else ""
    out.print(Styled(
        (turn.id, "bold"), f" {pair_name(turn.from_team, turn.to_team)} ", (f"unsolicited {turn.status}", "red"),
        f"{error} {ago(turn.started_at)}",
    ))
    if turn.text and limit is not None:
        out.print("  " + short(turn.text, limit))
    elif turn.text:
        out.print("\n".join("  " + line for line in turn.text.splitlines()))


def processes(items: list[ProcessInfo]) -> None:
    lines(plain.process_lines(items, width=out.width, color=_color()))


def sessions(items: list[SessionInfo], *, archived: bool = False) -> None:
    if not items:
        out.print("no archived conversations" if archived else
                  "no sessions yet; the first tell of a pair creates its session")
        return
    rows = []
    threads = any(s.thread for s in items)  # a thread column once a pair has one: the default thread shows "-"
    for s in items:
        lost = not s.transcript_exists and s.message_count > 0
        state = s.process_state + ("*" if lost else "") + (f" ({s.status})" if s.status != "active" else "")
        thread = (s.thread or "-",) if threads else ()
        rows.append((pair_name(s.from_team, s.to_team), *thread, s.session_id, str(s.message_count),
                     session_words.fill(s), ago(s.last_used_at), state))
    headers = ("pair", *(("thread",) if threads else ()), "session", "turns", "full", "last used", "state")
    show(Table([Column(h) for h in headers], rows))
    for s in items:  # the figures behind "full", and the compactions, below the table
        if s.context_tokens is not None or s.compactions:
            note(f"{pair_name(s.from_team, s.to_team, s.thread)}: context {session_words.context(s)}; "
                 f"compactions {session_words.compactions(s)}")
    if any(not s.transcript_exists and s.message_count > 0 for s in items):
        note("* claude no longer has this conversation's transcript: the next tell starts a new one")


def session_stats(items: list[PairStats], *, since: float = 0.0) -> None:
    """Each pair's figures, the most active first (irisd sorts them)."""
    if not items:
        out.print("no tells yet" + (" in that time" if since else ""))
        return
    headers = ("pair", "tells", "msgs", "cost", "input", "output", "first used", "last used", "lifetime",
               "compactions", "mean", "p95")
    rows = [
        (pair_name(s.from_team, s.to_team, s.thread), str(s.tells), str(s.messages), usd(s.cost_usd),
         f"{s.input_tokens:,}", f"{s.output_tokens:,}", ago(s.first_used_at), ago(s.last_used_at),
         _span(s.lifetime_s) if s.first_used_at is not None else "-", str(s.compactions),
         _seconds(s.mean_tell_ms / 1000) if s.tells else "-", _seconds(s.p95_tell_ms / 1000) if s.tells else "-")
        for s in items
    ]
    show(Table([Column(h) for h in headers], rows))
    note("tells: those the cost ledger has; msgs: the conversation's exchanges now; mean, p95: claude's time per tell")


def _span(seconds: float) -> str:
    """A pair's lifetime: seconds to months."""
    if seconds < 3600:
        return _seconds(seconds)
    hours = int(seconds) // 3600
    return f"{hours}h{int(seconds) % 3600 // 60:02d}m" if hours < 24 else f"{hours // 24}d{hours % 24:02d}h"


def duration(tell: TellInfo, now: float | None = None) -> str:
    """How long the tell took (or has taken), from its submission: a tell that waited in
    its pair's queue says how long of it was waiting ("7m40s, 7m39s queued")."""
    if not tell.created_at:
        return "-"
    end = tell.finished_at or (time.time() if now is None else now)
    waited = (tell.started_at or end) - tell.created_at
    took = _seconds(end - tell.created_at)
    if tell.started_at is None:
        return f"{took} queued"
    return f"{took}, {_seconds(waited)} queued" if waited >= 1.0 else took


def _seconds(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 0.95:  # a warm tell takes tens of milliseconds: "0.0 s" would read as nothing
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def report(items: list[TellInfo]) -> None:
    if not items:
        out.print("no tells yet")
        return
    rows = [
        (t.id, pair_name(t.from_team, t.to_team, t.thread), t.status, ago(t.created_at), duration(t),
         usd(t.cost_usd) if t.cost_usd is not None else "-")
        for t in items
    ]
    columns = [Column(h) for h in ("id", "pair", "status", "when", "took", "cost")]
    message = Column("message", free=True, fold=MESSAGE_MIN)  # on the row when it has room, else under it
    show(Table([*columns, message], [(*r, t.message) for r, t in zip(rows, items, strict=True)]))


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
    show(Table([Column(h) for h in ("id", "pair", "status", "created", "tries", "tell")], rows, notes))
    if any(n.tell_id for n in items):
        note("the answer: iris result TELL")


def tell_notice(event: TellNotice) -> None:
    out.print(Styled((event.tell_id, "bold"), " ", (event.text, "yellow")))


def tell_phase(event: TellPhaseEvent) -> None:
    from protocol.phases import describe

    out.print(Styled(f"{event.tell_id} {describe(event.phase)}", style="dim"))


def tell_state(event: TellState) -> None:
    pair = pair_name(event.from_team, event.to_team)
    detail = f": {_short(event.message)}" if event.message and event.status == "queued" else ""
    error = f" ({event.error})" if event.error else ""
    out.print(Styled((event.tell_id, "bold"), f" {pair} ", (event.status, "cyan"), detail, error))


def approvals(items: list[ApprovalInfo]) -> None:
    if not items:
        out.print("no approvals waiting")
        return
    for a in items:
        if a.kind == "agent":  # an action iris-agent proposes: what it will do
            out.print(Styled(
                (a.id, "bold"), " iris-agent proposes to ", (a.summary, "bold"), f" ({a.status}, {ago(a.created_at)})"
            ))
        else:
            wants = {"input": " asks for your input through its MCP server ", "budget": " would go beyond "}.get(
                a.kind, " wants "
            )
            out.print(Styled(
                (a.id, "bold"), f" {pair_name(a.from_team, a.to_team)}{wants}", (a.tool_name, "bold"),
                f" ({a.status}, {ago(a.created_at)}, tell {a.tell_id})",
            ))
            out.print(asked(a))
        if a.status == "pending":
            out.print(decide_line(a.id, kind=a.kind) + "\n")
        elif a.reason or a.decided_by:
            why = f": {a.reason}" if a.reason else ""
            out.print(f"  {a.status} by {a.decided_by or '-'}{why}\n")


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


def asked(a: ApprovalInfo) -> str:
    """What the approval asks: a tool's input, or an MCP server's message, its form's fields
    and (answered) the answer."""
    if a.kind == "budget":
        return f"  {a.message}"
    if a.kind != "input":
        return tool_input(a.tool_name, a.input)
    from protocol.forms import describe_form

    lines = [f"  {line}" for line in (a.message or "(no message)").splitlines()]
    lines.append(f"  fields: {describe_form(a.schema) or 'none'}")
    if a.content:
        lines.append(f"  answered: {json.dumps(a.content, ensure_ascii=False)}")
    return "\n".join(lines)


def approval_event(a: ApprovalInfo) -> None:
    what = f"{pair_name(a.from_team, a.to_team)} {a.tool_name}"
    if a.kind == "agent":
        what = f"iris-agent proposes to {a.summary}"
    title = "input request" if a.kind == "input" else "approval"
    out.print(Styled("\n", (f"{title} {a.status}", "magenta"), f" {a.id} {what}"))
    if a.status == "pending" and a.kind != "agent":
        out.print(asked(a))


def _short(text: str) -> str:
    return short(text, 50)


def answer(status: str, tell: TellInfo, *, id_if_empty: bool = False) -> None:
    """A tell's answer on stdout as it is (its id instead, with ``id_if_empty``, while the
    answer is to come), and on stderr what did not simply complete."""
    if tell.text:
        print(tell.text)
    elif id_if_empty and status == "in_progress":
        print(tell.id)
    tell_outcome(status, tell)


def tell_outcome(status: str, tell: TellInfo) -> None:
    """Explain on stderr a tell that did not simply complete."""
    if status == "in_progress":
        so_far = "this is the answer so far. Fetch the rest" if tell.text else "no answer yet. Fetch it"
        err.print(Styled((f"still {tell.status}", "yellow"), f": {so_far} with: iris result {tell.id}"))
    elif status != "completed":
        reason = f": {tell.error}" if tell.error else ""
        err.print(Styled((f"tell {tell.id} {status}", "red"), reason))
    if tell.new_session and tell.session_id and status in ("completed", "in_progress"):
        note(f"started a new conversation (session {tell.session_id})", err)


_SHOWN_STYLE = {
    "text": ("", ""), "thinking": ("dim", "~ "), "tool": ("cyan", "→ "), "result": ("dim", "  ← "),
    "approval": ("magenta", "? "), "notice": ("yellow", "! "), "start": ("dim", "· "), "end": ("dim", "· "),
    "other": ("dim", "· "),
}


def transcript(reply: TranscriptReply) -> None:
    """A tell's transcript as a conversation (``iris cache read``)."""
    from iris_cli.transcript import conversation, shown

    tell = reply.tell
    out.print(Styled(f"{tell.id} {pair_name(tell.from_team, tell.to_team)} · {tell.status} · {ago(tell.created_at)}",
                   style="bold"))
    out.print(Styled("asked: " + tell.message))
    for step in shown(reply.steps) if reply.steps else conversation(reply.entries, tell):
        style, mark = _SHOWN_STYLE.get(step.kind, ("", ""))
        first, *rest = step.text.splitlines() or [""]
        indent = " " * len(mark)
        out.print(Styled("\n".join([mark + first, *(indent + line for line in rest)]), style=style))
    if tell.error:
        out.print(Styled(f"error: {tell.error}", style="red"))


def rules(items: list[RuleInfo]) -> None:
    """The remembered rules: id, pair, when, then the request itself under each."""
    if not items:
        out.print("no remembered rules ('iris approve ID --remember' makes one)")
        return
    from protocol.phases import tool_summary

    rows = [(r.id, pair_name(r.from_team, r.to_team), r.tool_name, ago(r.created_at)) for r in items]
    notes = [[tool_summary(r.tool_name, r.input, 500)] for r in items]
    show(Table([Column(h) for h in ("rule", "pair", "tool", "made")], rows, notes))
    note("forget one: iris approvals forget RULE")
