"""The CLI's tables on a narrow terminal: ids stay whole, free text gives way."""

from __future__ import annotations

import io
import time
from typing import Any

import msgspec
import pytest
from rich.console import Console

from iris_cli import render
from protocol.messages import (
    NotificationInfo,
    ProcessInfo,
    SessionInfo,
    TellInfo,
    TellNotice,
    TellPhase,
    TellPhaseEvent,
)


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    buffer = io.StringIO()
    monkeypatch.setattr(render, "out", Console(file=buffer, width=80, highlight=False, soft_wrap=True))
    return buffer


@pytest.mark.parametrize("asking", ["web", "a-rather-long-team-name"])
def test_report_keeps_ids_whole_and_the_message_readable_at_80_columns(screen: io.StringIO, asking: str) -> None:
    now = time.time()
    tells = [
        TellInfo(id=f"{n:016x}", from_team=asking, to_team="backend", status="completed",
                 message="What does GET /users return when the user was deleted? " * 3, created_at=now,
                 started_at=now, finished_at=now + 12.5, cost_usd=0.0123)
        for n in range(3)
    ]
    render.report(tells)
    lines = screen.getvalue().splitlines()
    assert lines[0].split() == ["id", "pair", "status", "when", "took", "cost"]
    assert len(lines) == 1 + 2 * len(tells)  # the message on a line of its own, under its tell
    for index, tell in enumerate(tells):
        row, message = lines[1 + 2 * index], lines[2 + 2 * index]
        assert row.startswith(f"{tell.id}  {asking}->backend  completed") and "$0.0123" in row
        assert message.startswith("  What does GET /users return when the user was deleted? What")
        assert message.endswith("…") and len(message) <= 80


def test_a_tell_took_what_it_took_from_its_submission_queue_included() -> None:
    def took(started: float | None, finished: float | None) -> str:
        tell = TellInfo(id="t", from_team=None, to_team="b", status="completed", message="m", created_at=1000.0,
                        started_at=started, finished_at=finished)
        return render.duration(tell, now=1500.0)

    assert took(1460.0, 1460.1) == "7m40s, 7m40s queued"  # not "0.1 s": it waited behind an approval
    assert took(1000.2, 1012.5) == "12.5 s"  # a wait under a second is not worth a word
    assert took(None, None) == "8m20s queued"  # still queued
    assert took(None, 1003.0) == "3.0 s queued"  # cancelled before it started
    assert took(1000.01, 1000.042) == "42 ms"  # a warm tell: not "0.0 s"
    assert took(1000.01, 1000.96) == "1.0 s"  # no "960 ms" next to "1.0 s"


def test_a_wide_terminal_keeps_the_message_on_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(render, "out", Console(file=buffer, width=160, highlight=False, soft_wrap=True))
    render.report([TellInfo(id="1" * 16, from_team=None, to_team="b", status="failed", message="hello there")])
    header, row = buffer.getvalue().splitlines()
    assert header.split()[-1] == "message" and row.endswith("hello there")


def test_notifications_show_the_tell_and_reasons_whole_at_80_columns(screen: io.StringIO) -> None:
    why = "team 'gone' is not configured; known teams: alpha, beta (add it to config.yaml and restart irisd)"
    render.notifications([
        NotificationInfo(id="n" * 16, from_team=None, to_team="alpha", message="deploy " * 30, status="delivered",
                         created_at=time.time(), expires_at=0.0, attempts=1, tell_id="t" * 16),
        NotificationInfo(id="m" * 16, from_team="web", to_team="gone", message="hi", status="expired",
                         created_at=time.time(), expires_at=0.0, attempts=3, error=why),
    ])
    lines = screen.getvalue().splitlines()
    assert lines[0].split() == ["id", "pair", "status", "created", "tries", "tell"]
    assert lines[1].split()[:3] == ["n" * 16, "external->alpha", "delivered"] and lines[1].endswith("t" * 16)
    assert lines[2].startswith("  deploy deploy") and lines[2].endswith("…") and len(lines[2]) <= 80
    assert lines[3].split()[2] == "expired" and lines[3].endswith("-")
    assert lines[4] == "  hi"
    assert " ".join(lines[5:-1]).replace("  ", " ").strip() == f"why: {why}"
    assert lines[-1] == "the answer: iris result TELL"


def test_a_failure_reason_is_shown_under_the_table_whole(screen: io.StringIO) -> None:
    why = "claude keeps crashing on start (3 times): exit code 1: cannot be used with root/sudo privileges"
    render.processes([ProcessInfo(from_team=None, to_team="alpha", state="failed", reason=why)])
    lines = screen.getvalue().splitlines()
    assert lines[1].split()[:2] == ["external->alpha", "failed*"] and len(lines[1]) <= 80
    assert lines[2] == "* why:"
    assert " ".join(line.strip() for line in lines[3:]) == f"external->alpha: {why}"


def test_sessions_show_the_whole_session_id_and_state_in_80_columns(screen: io.StringIO) -> None:
    session = SessionInfo(from_team=None, to_team="frontend", session_id="1246fe1e-01e2-4b3a-8cae-054d9f8f6309",
                          created_at=0.0, last_used_at=time.time(), message_count=12, process_state="stopped")
    render.sessions([session])
    header, row = screen.getvalue().splitlines()
    assert header.split() == ["pair", "session", "turns", "full", "last", "used", "state"]
    assert row.split() == ["external->frontend", session.session_id, "12", "-", "0s", "ago", "stopped"]


def test_sessions_say_how_full_each_conversation_is_and_its_compactions(screen: io.StringIO) -> None:
    session = SessionInfo(from_team=None, to_team="frontend", session_id="1246fe1e-01e2-4b3a-8cae-054d9f8f6309",
                          created_at=0.0, last_used_at=time.time(), message_count=12, process_state="idle",
                          status="compact_pending", context_tokens=150_000, context_window=200_000, compactions=1,
                          compact_trigger="auto", compact_tokens_before=190_000, compact_tokens_after=9000,
                          compact_messages_before=10)
    render.sessions([session])
    _header, row, *notes = screen.getvalue().splitlines()
    assert row.split() == ["external->frontend", session.session_id, "12", "75%", "0s", "ago", "idle",
                           "(compact_pending)"]
    assert " ".join(n.strip() for n in notes) == (
        "external->frontend: context 150k of 200k (75%); compactions 1, last by claude, its context nearly "
        "full: 190k -> 9k tokens after 10 messages; 2 messages since"
    )


def test_a_notice_names_its_tell(screen: io.StringIO) -> None:
    render.tell_notice(TellNotice(tell_id="abc", text="claude is retrying the Anthropic API after HTTP 529"))
    assert screen.getvalue() == "abc claude is retrying the Anthropic API after HTTP 529\n"


def test_watch_names_a_tells_phase(screen: io.StringIO) -> None:
    render.tell_phase(TellPhaseEvent(tell_id="abc", phase=TellPhase(name="queued", ahead=1)))
    assert screen.getvalue() == "abc queued behind 1 tell\n"


def test_a_tell_still_waiting_with_nothing_written_says_no_answer_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    said = io.StringIO()
    monkeypatch.setattr(render, "err", Console(file=said, width=200, highlight=False, soft_wrap=True))
    tell = TellInfo(id="39570f6fc3bfd712", from_team=None, to_team="billing", message="hi", status="queued",
                    created_at=time.time())
    render.tell_outcome("in_progress", tell)  # was: "this is the answer so far", over no answer
    assert said.getvalue() == "still queued: no answer yet. Fetch it with: iris result 39570f6fc3bfd712\n"
    render.tell_outcome("in_progress", msgspec.structs.replace(tell, status="running", text="half"))
    assert "still running: this is the answer so far. Fetch the rest with" in said.getvalue()


def test_status_is_plain_lines_that_fit_80_columns() -> None:
    from iris_cli.plain import status_lines
    from iris_cli.table import paint
    from protocol.messages import StatusReply, TeamInfo

    reply = StatusReply(
        pid=7, daemon_version="0.1.0", started_at=time.time(), socket_path="/s", config_path="/c",
        teams=[TeamInfo(name="backend", path="/src/api", description="The API that serves the web app " * 4)],
        processes=[ProcessInfo(from_team="web", to_team="backend", state="failed", session_id="1246fe1e-01e2",
                               reason="claude keeps crashing on start (3 times): exit code 1")],
        max_processes=10, pending_approvals=1,
    )
    lines = status_lines(reply, width=80, color=False)
    assert lines[0] == "irisd is running (pid 7, version 0.1.0, started 0s ago)"
    assert lines[3] == "claude: none found"  # a reply with no claude facts
    assert lines[7].split()[:2] == ["backend", "/src/api"] and lines[7].endswith("…") and len(lines[7]) == 80
    assert "1 approval(s) waiting: see 'iris approvals'" in lines
    assert lines[-3].split() == ["web->backend", "failed*", "-", "0", "1246fe1e", "-"]
    assert lines[-2:] == ["* why:", "  web->backend: claude keeps crashing on start (3 times): exit code 1"]
    assert paint("x", "#E91E63", True) == "\x1b[38;2;233;30;99mx\x1b[0m" and paint("x", "red", False) == "x"


def test_status_says_why_a_reload_was_refused_and_the_newest_errors_of_the_log() -> None:
    # README: a refused reload is said by 'iris status'; a team the mesh refused (a name homed
    # elsewhere) is only in the log, so the plain status must show the log's newest errors too.
    from iris_cli.plain import status_lines
    from protocol.messages import LogEntry, StatusReply

    errors = [LogEntry(at=time.time() - i, level="error", logger="irisd.mesh", message=f"problem {i}\nmore")
              for i in range(5)]
    reply = StatusReply(
        pid=7, daemon_version="0.1.0", started_at=time.time(), socket_path="/s", config_path="/c", teams=[],
        processes=[], max_processes=10, config_problem="/c: not valid YAML\n  line 3", recent_errors=errors,
    )
    lines = status_lines(reply, width=80, color=False)
    assert "config.yaml was not reloaded:" in lines
    assert "  /c: not valid YAML" in lines and "    line 3" in lines
    shown = lines[lines.index("recent errors in the log (the 3 newest of 5; all: the dashboard's Health)") + 1:]
    assert [line.split(" ", 3)[3:] for line in shown] == [[f"error: problem {i} more"] for i in range(3)]
    quiet = status_lines(msgspec.structs.replace(reply, config_problem="", recent_errors=[]), width=80, color=False)
    assert not any("reloaded" in line or "recent errors" in line for line in quiet)


def test_status_counts_the_spare_claudes_under_the_processes() -> None:
    from iris_cli.plain import status_lines
    from protocol.messages import StatusReply

    reply = StatusReply(pid=7, daemon_version="0.1.0", started_at=time.time(), socket_path="/s", config_path="/c",
                        teams=[], processes=[], max_processes=4, spares={"web": [12, 13], "api": [11]})
    lines = status_lines(reply, width=80, color=False)
    assert "  + 3 spare claudes (of the slots): api pid 11, web pid 12 13" in lines
    assert not any("spare" in line for line in status_lines(msgspec.structs.replace(reply, spares={}), width=80,
                                                              color=False))


def test_status_shows_a_cost_column_once_a_pair_spent_something() -> None:
    from iris_cli.plain import process_lines

    idle = ProcessInfo(from_team=None, to_team="backend", state="idle", pid=42, session_id="abcdef12-0000")
    assert "cost" not in process_lines([idle], width=80, color=False)[0]
    spent = msgspec.structs.replace(idle, cost_usd=0.0421)
    header, row, other = process_lines([spent, msgspec.structs.replace(idle, to_team="web")], width=80, color=False)
    assert header.split()[-1] == "cost"
    assert row.split() == ["external->backend", "idle", "42", "0", "abcdef12", "-", "$0.0421"]
    assert other.split()[-1] == "$0"


def test_status_names_an_a2a_agents_host_not_its_card_url_and_fits_80_columns() -> None:
    from iris_cli.plain import process_lines

    card = "http://127.0.0.1:1615/a2a/frontend/.well-known/agent-card.json"
    agent = ProcessInfo(from_team="backend", to_team="webagent", state="idle", host=card, kind="a2a")
    local = ProcessInfo(from_team=None, to_team="backend", state="idle", pid=42, session_id="abcdef12-0000")
    header, row, other = process_lines([agent, local], width=80, color=False)
    assert header.split()[2] == "host"
    assert row.split()[:3] == ["backend->webagent", "idle", "127.0.0.1:1615"]
    assert other.split()[:3] == ["external->backend", "idle", "local"]
    assert all(len(line) <= 80 for line in (header, row, other))


def test_tells_streaming_at_once_are_labelled_runs_not_interleaved_words() -> None:
    from iris_cli.text import Interleaved

    streams = Interleaved()
    streams.name("aaaaaaaa11", None, "alpha")
    streams.name("bbbbbbbb22", "beta", "alpha")
    written = "".join([
        streams.write("aaaaaaaa11", "word1 "), streams.write("aaaaaaaa11", "word2 "),
        streams.write("bbbbbbbb22", "word1 "), streams.write("aaaaaaaa11", "word3"),
        streams.interrupt(), streams.write("aaaaaaaa11", "word4"),
    ])
    assert written.splitlines() == [
        "[aaaaaaaa external->alpha] word1 word2 ",
        "[bbbbbbbb beta->alpha] word1 ",
        "[aaaaaaaa external->alpha] word3",
        "[aaaaaaaa external->alpha] word4",
    ]
    assert streams.interrupt() == "\n" and streams.interrupt() == ""


def test_every_commands_summary_in_iris_help_is_one_line() -> None:
    # 'iris --help' prints a command's first paragraph as written: a line break inside it
    # leaves a ragged fragment ("teams are kept)...") in the listing.
    import typer.main

    from iris_cli.app import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    ragged, seen = [], 0
    groups: list[tuple[str, Any]] = [("", root)]
    while groups:
        prefix, group = groups.pop()
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            seen += 1
            if "\n" in (command.help or "").strip().split("\n\n")[0]:
                ragged.append(prefix + name)
            if hasattr(command, "list_commands"):  # a group (iris a2a, iris mesh, ...)
                groups.append((f"{prefix}{name} ", command))
    assert seen > 40 and ragged == []


def test_watch_names_the_approval_a_queued_tell_waits_behind(screen: io.StringIO) -> None:
    approval = TellPhase(name="awaiting_approval", tool="Bash", detail="touch x", approval_id="a-0123456789ab")
    render.tell_phase(TellPhaseEvent(tell_id="abc", phase=TellPhase(name="queued", ahead=1, head=approval,
                                                                    head_id="t-0")))
    assert screen.getvalue() == (
        "abc queued behind 1 tell; tell t-0 ahead awaits your approval of Bash `touch x`: run 'iris approve "
        "a-01234567' (or 'iris deny a-01234567')\n"
    )


def test_an_action_of_iris_agent_reads_as_what_it_will_do(screen: io.StringIO) -> None:
    from iris_cli.monitor import _approval
    from protocol.messages import ApprovalInfo

    now = time.time()
    proposal = ApprovalInfo(
        id="ag-0123456789ab", from_team="iris-agent", to_team="backend", tell_id="", tool_name="team_wake",
        input={"type": "wake", "to_team": "backend"}, status="pending", created_at=now, expires_at=now + 600,
        kind="agent", summary="wake external->backend",
    )
    render.approvals([proposal])
    render.approval_event(proposal)
    render.out.print(_approval(proposal, 80))
    shown = screen.getvalue()
    assert "ag-0123456789ab iris-agent proposes to wake external->backend (pending" in shown
    assert "approval pending ag-0123456789ab iris-agent proposes to wake external->backend" in shown
    assert "ag-0123456 iris-agent proposes team_wake" in shown and "\nwake external->backend\n" in shown
    assert '"to_team"' not in shown  # the request itself is irisd's to serve; the summary says it
