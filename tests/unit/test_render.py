"""The CLI's tables on a narrow terminal: ids stay whole, free text gives way."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from iris_cli import render
from protocol.messages import SessionInfo, TellInfo, TellNotice


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    buffer = io.StringIO()
    monkeypatch.setattr(render, "out", Console(file=buffer, width=80, highlight=False, soft_wrap=True))
    return buffer


@pytest.mark.parametrize("asking", ["web", "a-rather-long-team-name"])
def test_report_keeps_ids_whole_and_each_tell_on_one_line(screen: io.StringIO, asking: str) -> None:
    now = time.time()
    tells = [
        TellInfo(id=f"{n:016x}", from_team=asking, to_team="backend", status="completed",
                 message="What does GET /users return when the user was deleted? " * 3, created_at=now,
                 started_at=now, finished_at=now + 12.5, cost_usd=0.0123)
        for n in range(3)
    ]
    render.report(tells)
    lines = screen.getvalue().splitlines()
    assert len(lines) == 1 + len(tells)
    for tell, line in zip(tells, lines[1:], strict=True):
        assert line.startswith(f"{tell.id}  {asking} -> backend  completed")
        assert line.rstrip().endswith("…")
        # Within the width when the whole columns fit; past it (the terminal wraps) when not.
        assert len(line) <= 80 or asking != "web"


def test_sessions_show_the_whole_session_id_and_state_in_80_columns(screen: io.StringIO) -> None:
    session = SessionInfo(from_team=None, to_team="frontend", session_id="1246fe1e-01e2-4b3a-8cae-054d9f8f6309",
                          created_at=0.0, last_used_at=time.time(), message_count=12, process_state="stopped")
    render.sessions([session])
    header, row = screen.getvalue().splitlines()
    assert header.split() == ["pair", "session", "turns", "last", "used", "state"]
    assert row.split() == ["external", "->", "frontend", session.session_id, "12", "0s", "ago", "stopped"]


def test_a_notice_names_its_tell(screen: io.StringIO) -> None:
    render.tell_notice(TellNotice(tell_id="abc", text="claude is retrying the Anthropic API after HTTP 529"))
    assert screen.getvalue() == "\nabc claude is retrying the Anthropic API after HTTP 529\n"
