"""``iris monitor``: every pair, tell and approval of irisd, live in the terminal.

How it works
------------
``MonitorState`` is the picture, with no I/O: ``apply_status`` takes a ``GetStatus``
reply (pairs, processes, the latest unsolicited turns), ``apply_approvals`` the pending
approvals, and ``apply(event)`` every event of a ``Watch`` (tells starting, their text
as it streams, their ends, approvals asked and decided, pairs' process states).
``render`` draws it with rich. ``run_monitor`` is the only async code: one connection
watches, another asks for the status again (at most every ``STATUS_EVERY_S``, sooner
after an event that may have changed a pair), and rich's ``Live`` redraws at most
``FRAMES_PER_S`` times a second. It ends when irisd stops (the watch ends or the
connection drops) and on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import trio
from rich.console import Console, Group, RenderableType
from rich.text import Text

from iris_cli.aclient import open_connection
from iris_cli.render import tool_input
from iris_cli.table import Cell, Column, Table, draw
from iris_cli.text import ago, decide_line, pair_name, short, tail
from protocol.errors import DaemonNotRunningError, ShuttingDownError
from protocol.messages import (
    ApprovalEvent,
    ApprovalInfo,
    ApprovalsReply,
    Event,
    GetStatus,
    ListApprovals,
    ProcessEvent,
    ProcessInfo,
    StatusReply,
    TellNotice,
    TellState,
    TellText,
    UnsolicitedEvent,
    UnsolicitedInfo,
    Watch,
)

FRAMES_PER_S = 8
STATUS_EVERY_S = 5.0  # the status is asked again this often (ages, pids) ...
STATUS_AFTER_EVENT_S = 0.3  # ... and this soon after an event that may change a pair
TELLS_SHOWN = 8  # finished tells stay on screen until this many newer ones came
TEXT_KEPT = 4000  # characters of a tell's answer kept (the end of it)
STATE_COLORS = {"failed": "red", "processing": "yellow", "idle": "green", "spawning": "cyan",
                "terminating": "magenta"}
STATUS_COLORS = {"running": "yellow", "awaiting_approval": "magenta", "completed": "green",
                 "failed": "red", "timed_out": "red", "interrupted": "red", "queued": "cyan"}

PairKey = tuple[str | None, str, str]  # (from, to, thread): each thread's process is its own


@dataclass
class TellView:
    """A tell as the monitor saw it: from its events (or from the middle, if it started first)."""

    id: str
    from_team: str | None = None
    to_team: str = ""
    message: str = ""
    status: str = "running"
    text: str = ""
    error: str = ""
    notice: str = ""


@dataclass
class MonitorState:
    team: str | None = None  # only pairs to or from this team (the watch filters the events)
    status: StatusReply | None = None
    processes: dict[PairKey, ProcessInfo] = field(default_factory=dict)
    tells: dict[str, TellView] = field(default_factory=dict)  # oldest first
    approvals: dict[str, ApprovalInfo] = field(default_factory=dict)  # pending only
    unsolicited: dict[str, UnsolicitedInfo] = field(default_factory=dict)

    def apply_status(self, reply: StatusReply) -> None:
        self.status = reply
        self.processes = {
            (p.from_team, p.to_team, p.thread): p for p in reply.processes if self._shows(p.from_team, p.to_team)
        }
        for turn in reversed(reply.unsolicited):  # oldest first, like the events
            if self._shows(turn.from_team, turn.to_team):
                self.unsolicited.setdefault(turn.id, turn)

    def _shows(self, from_team: str | None, to_team: str) -> bool:
        return self.team is None or self.team in (from_team, to_team)

    def apply_approvals(self, approvals: Iterable[ApprovalInfo]) -> None:
        self.approvals = {a.id: a for a in approvals if a.status == "pending"}

    def apply(self, event: Event) -> bool:
        """Take one watched event; True if it may have changed a pair (ask the status again)."""
        match event:
            case TellState():
                view = self._tell(event.tell_id)
                view.from_team, view.to_team, view.status = event.from_team, event.to_team, event.status
                view.message = event.message or view.message
                view.error = event.error
                self._forget_old_tells()
                return True
            case TellText():
                view = self._tell(event.tell_id)
                view.text = (view.text + event.text)[-TEXT_KEPT:]
                view.notice = ""
            case TellNotice():
                self._tell(event.tell_id).notice = event.text
            case ApprovalEvent(approval):
                if approval.status == "pending":
                    self.approvals[approval.id] = approval
                else:
                    self.approvals.pop(approval.id, None)
            case UnsolicitedEvent(turn):
                self.unsolicited[turn.id] = turn
                self.unsolicited = dict(list(self.unsolicited.items())[-TELLS_SHOWN:])
                return True
            case ProcessEvent(process):
                self.processes[(process.from_team, process.to_team, process.thread)] = process
        return False

    def _tell(self, tell_id: str) -> TellView:
        view = self.tells.get(tell_id)
        if view is None:
            view = self.tells[tell_id] = TellView(tell_id)
        return view

    def _forget_old_tells(self) -> None:
        finished = [v.id for v in self.tells.values() if v.status not in ("queued", "running", "awaiting_approval")]
        for tell_id in finished[: max(0, len(self.tells) - TELLS_SHOWN)]:
            del self.tells[tell_id]


# --- drawing --------------------------------------------------------------------------


def render(state: MonitorState, *, note: str = "", width: int = 80, height: int = 24) -> RenderableType:
    """The whole screen for a ``width`` x ``height`` terminal (80x24 first): what waits for
    you (approvals) at the top, then the pairs, then as many of the newest tells as fit,
    each with its answer wrapped to the width, never cut to a narrow column."""
    parts: list[RenderableType] = [_header(state, note)]
    used = 1 + (1 if note else 0)
    if state.approvals:
        parts.append(Text(f"approvals waiting ({len(state.approvals)})", style="bold magenta"))
        parts += [_approval(a, width) for a in state.approvals.values()]
        used += 1 + 3 * len(state.approvals)
    pairs = _pairs(state, width)
    parts += [Text("pairs", style="bold"), pairs]
    used += 2 + len(state.processes)
    if state.unsolicited:
        parts.append(Text("unsolicited (turns no tell asked for)", style="bold red"))
        parts += [_unsolicited(t, width) for t in reversed(state.unsolicited.values())]
        used += 1 + len(state.unsolicited)
    parts.append(Text("tells", style="bold"))
    parts += _tells(state, width, room=max(2, height - used - 1))
    return Group(*parts)


def _header(state: MonitorState, note: str) -> Text:
    status = state.status
    line = Text("iris monitor", style="bold")
    if status is None:
        line.append(" connecting to irisd ...")
    else:
        running = sum(p.pid is not None for p in state.processes.values())
        line.append(f" · irisd pid {status.pid} · {running}/{status.max_processes} claude")
    line.append(" · Ctrl-C quits", style="dim")
    if note:
        line.append(f"\n{note}", style="bold red")
    return line


def _pairs(state: MonitorState, width: int) -> RenderableType:
    shown = list(state.processes.values())
    if not shown:
        return Text("  no pair used yet; 'iris tell TEAM ...' or 'iris wake TEAM' starts one", style="dim")
    rows = []
    for p in sorted(shown, key=lambda p: (p.to_team, p.from_team or "")):
        why = " (unsolicited turn)" if p.unsolicited else f" ({p.reason})" if p.reason else ""
        rows.append((pair_name(p.from_team, p.to_team, p.thread), Cell(p.state + why, STATE_COLORS.get(p.state, "")),
                     str(p.pid or "-"), str(p.queued), ago(p.last_used_at)))
    columns = (Column("pair"), Column("state", free=True), Column("pid"), Column("queued"), Column("last used"))
    return Text("\n").join(Text.from_ansi(line) for line in draw(Table(columns, rows), width=width, color=True))


ANSWER_LINES = 2  # the end of a tell's answer, wrapped: what it is saying now


def _tells(state: MonitorState, width: int, room: int) -> list[RenderableType]:
    """The newest tells that fit in ``room`` lines: a line of id, pair, status and message,
    then the end of its answer wrapped to the width."""
    if not state.tells:
        return [Text("  none since the monitor started", style="dim")]
    shown: list[RenderableType] = []
    for view in reversed(state.tells.values()):
        head = Text.assemble(
            (view.id, "bold"), " ", pair_name(view.from_team, view.to_team) if view.to_team else "?", " ",
            (view.status, STATUS_COLORS.get(view.status, "")),
        )
        if view.message:
            head.append(": " + short(view.message, max(10, width - head.cell_len - 2)), style="dim")
        answer = view.notice or view.error if view.status != "completed" and (view.notice or view.error) else ""
        answer = answer or " ".join(view.text.split())
        lines = [head]
        if answer:
            room_for = max(10, (width - 2) * ANSWER_LINES)
            lines.append(Text("  " + tail(answer, room_for)))
        cost = 1 + (ANSWER_LINES if answer else 0)
        if cost > room and shown:
            break
        shown += lines
        room -= cost
    return shown


def _approval(a: ApprovalInfo, width: int) -> RenderableType:
    """Three lines: who wants what, the request itself (its first line), how to decide. An
    MCP server's input request: who asks, what, the form's fields, how to answer."""
    if a.kind == "input":
        from protocol.forms import describe_form

        head = Text.assemble((a.id[:10], "bold"), f" {pair_name(a.from_team, a.to_team)}: ", (a.tool_name, "bold"),
                             f" asks for your input ({ago(a.created_at)}): ", " ".join(a.message.split()))
        fields = f"fields: {describe_form(a.schema) or 'none'}"
        return Group(head, Text(short(fields, width - 2)), Text(decide_line(a.id, kind="input"), style="magenta"))
    if a.kind == "budget":
        head = Text.assemble((a.id[:10], "bold"), f" {pair_name(a.from_team, a.to_team)}: its chain reached ",
                             (a.tool_name, "bold"), f" ({ago(a.created_at)})")
        return Group(head, Text(short(a.message, width - 2)), Text(decide_line(a.id, kind="budget"), style="magenta"))
    first_line = tool_input(a.tool_name, a.input).splitlines()[0] if a.input else ""
    who = f" {pair_name(a.from_team, a.to_team)} wants "
    if a.kind == "agent":  # an action iris-agent proposes: what it will do
        who, first_line = " iris-agent proposes ", a.summary
    return Group(
        Text.assemble((a.id[:10], "bold"), who, (a.tool_name, "bold"), f" ({ago(a.created_at)})"),
        Text(short(first_line, width - 2) if len(first_line) > width - 2 else first_line),
        Text(decide_line(a.id, kind=a.kind), style="magenta"),
    )


def _unsolicited(turn: UnsolicitedInfo, width: int) -> RenderableType:
    head = f"{turn.id} {pair_name(turn.from_team, turn.to_team)} {turn.status} {ago(turn.started_at)}: "
    return Text.assemble(
        (turn.id, "bold"), f" {pair_name(turn.from_team, turn.to_team)} ", (turn.status, "red"),
        f" {ago(turn.started_at)}: ", short(turn.text, max(10, width - len(head))),
    )


# --- running --------------------------------------------------------------------------


async def run_monitor(socket_path: Path, console: Console, *, team: str | None = None) -> str:
    """Show the monitor until irisd stops; returns why it ended. Cancellation (and
    Ctrl-C, SIGTERM) just stops it; connection errors before the first picture are raised."""
    from rich.live import Live

    state = MonitorState(team=team)
    redraw = trio.Event()
    status_wanted = trio.Event()
    ended = ""
    async with open_connection(socket_path, "iris-monitor") as asking:
        reply = await asking.request(GetStatus())
        assert isinstance(reply, StatusReply)
        state.apply_status(reply)
        approvals = await asking.request(ListApprovals(team=team))
        assert isinstance(approvals, ApprovalsReply)
        state.apply_approvals(approvals.approvals)

        async def on_event(event: Event) -> None:
            if state.apply(event):
                status_wanted.set()
            redraw.set()

        async def watch() -> None:
            nonlocal ended
            try:
                async with open_connection(socket_path, "iris-monitor") as watching:
                    await watching.request(Watch(team=team), on_event)
            except (ShuttingDownError, DaemonNotRunningError) as exc:
                ended = _why_it_ended(exc)
            nursery.cancel_scope.cancel()

        async def refresh_status() -> None:
            nonlocal status_wanted, ended
            try:
                while True:
                    with trio.move_on_after(STATUS_EVERY_S):
                        await status_wanted.wait()
                        await trio.sleep(STATUS_AFTER_EVENT_S)  # one request for a burst of events
                    status_wanted = trio.Event()
                    reply = await asking.request(GetStatus())
                    assert isinstance(reply, StatusReply)
                    state.apply_status(reply)
                    redraw.set()
            except (ShuttingDownError, DaemonNotRunningError) as exc:
                ended = ended or _why_it_ended(exc)
            nursery.cancel_scope.cancel()

        async def quit_on_ctrl_c() -> None:
            nonlocal ended
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    ended = "monitor stopped"
                    nursery.cancel_scope.cancel()

        def picture() -> RenderableType:
            return render(state, width=console.width, height=console.height)

        with Live(picture(), console=console, auto_refresh=False, screen=True, vertical_overflow="crop") as live:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                nursery.start_soon(refresh_status)
                nursery.start_soon(quit_on_ctrl_c)
                while True:
                    live.update(picture(), refresh=True)
                    with trio.move_on_after(1.0):  # ages ("3s ago") move on by themselves
                        await redraw.wait()
                    redraw = trio.Event()
                    await trio.sleep(1 / FRAMES_PER_S)
    return ended or "irisd stopped; the monitor ends"


def _why_it_ended(exc: ShuttingDownError | DaemonNotRunningError) -> str:
    if isinstance(exc, ShuttingDownError):
        return "irisd is stopping; the monitor ends"
    return "irisd closed the connection (it stopped); the monitor ends"


def main(team: str | None = None) -> int:
    """The command: 0 when irisd stopped or on Ctrl-C; errors are the caller's to show."""
    from iris_cli.client import default_socket_path

    console = Console(highlight=False)
    why = trio.run(functools.partial(run_monitor, team=team), default_socket_path(), console)
    console.print(why)
    return 0
