"""The CLI's one table (iris_cli/table.py): what is cut, what folds under its row, and
what a cell may never do to the terminal."""

from __future__ import annotations

import pytest

from iris_cli.plain import team_lines
from iris_cli.table import Cell, Column, Table, draw, fit, width_of
from protocol.messages import TeamInfo

ID = "0123456789abcdef"


def test_ids_stay_whole_and_the_free_text_is_cut_to_the_width() -> None:
    table = Table([Column("id"), Column("pair"), Column("message", free=True)],
                  [(ID, "web->api", "why does GET /users return 500 when the user was deleted? " * 3)])
    header, row = draw(table, width=60, color=False)
    assert header.split() == ["id", "pair", "message"]
    assert row.startswith(f"{ID}  web->api  why does GET") and row.endswith("…") and width_of(row) == 60
    narrow = draw(table, width=20, color=False)[1]  # too narrow for the row: the ids still are whole
    assert narrow.startswith(f"{ID}  web->api  ") and width_of(narrow.split("  ")[-1]) == 8


def test_the_narrower_free_column_keeps_its_text_and_passes_the_rest_on() -> None:
    table = Table([Column("team"), Column("state", free=True), Column("description", free=True)],
                  [("alpha", "failed (exit 1)", "x" * 100)])
    row = draw(table, width=60, color=False)[1]
    assert "failed (exit 1)" in row and width_of(row) == 60 and row.endswith("x…")


def test_a_column_with_too_little_room_folds_under_its_row_with_the_notes() -> None:
    why = "; ".join(["why: team 'gone' is not configured"] * 3)
    table = Table([Column("id"), Column("status"), Column("message", free=True, fold=30)],
                  [(ID, "expired", "deploy " * 20)], notes=[[why]])
    wide = draw(table, width=160, color=False)
    assert wide[0].split() == ["id", "status", "message"] and wide[1].startswith(f"{ID}  expired  deploy deploy")
    assert wide[2] == "  " + why
    header, row, message, reason = draw(table, width=40, color=False)
    assert header.split() == ["id", "status"] and row == f"{ID}  expired"
    assert message.startswith("  deploy deploy") and message.endswith("…") and width_of(message) <= 40
    assert reason == "  " + why  # a note after the first stays whole


def test_an_empty_folded_cell_leaves_no_blank_line() -> None:
    # 'iris teams' with a remote team's long place and no descriptions printed "  " under each row
    place = "mesh: irisd ws-2 (home irisd `ws-2` stopped since 20:07:46)"
    table = Table([Column("team"), Column("path"), Column("description", free=True, fold=30)],
                  [("billing", place, "")])
    assert draw(table, width=80, color=False)[1:] == [f"billing  {place}"]


def test_wide_characters_take_two_columns() -> None:
    lines = draw(Table([Column("team"), Column("note")], [("東京", "x"), ("web", "y")]), width=80, color=False)
    assert [width_of(line[: line.index(note)]) for line, note in zip(lines[1:], "xy", strict=True)] == [6, 6]
    assert fit("東京東京", 5) == "東京…" and fit("abc", 3) == "abc"


def test_a_cell_keeps_to_one_line_and_cannot_restyle_the_terminal() -> None:
    row = draw(Table([Column("message")], [("two\nlines\x1b[31m red\x07",)]), width=80, color=False)[1]
    assert row == "two lines[31m red"


def test_iris_status_prints_no_control_character_of_a_team_or_a_model() -> None:
    from iris_cli.plain import status_lines
    from protocol.messages import ProcessInfo, StatusReply, TeamInfo, UnsolicitedInfo

    evil = "\x1b]0;owned\x07\x1b[2J"
    reply = StatusReply(
        pid=7, daemon_version="0", started_at=0.0, socket_path="/s", config_path="/c", max_processes=4,
        teams=[TeamInfo(name="web", path="/w", description=evil, unavailable=evil)],
        processes=[ProcessInfo(from_team=None, to_team="web", state="failed", reason=evil)],
        unsolicited=[UnsolicitedInfo(id="u-1", from_team=None, to_team="web", status="failed", started_at=0.0,
                                     text=evil, error=evil)],
    )
    shown = "\n".join(status_lines(reply, width=80, color=False))
    assert "\x1b" not in shown and "\x07" not in shown and "]0;owned[2J" in shown


def test_styles_are_ansi_only_on_a_colour_terminal() -> None:
    table = Table([Column("team"), Column("state")], [(Cell("web", "#E91E63"), Cell("failed", "red"))])
    header, row = draw(table, width=80, color=True)
    assert header == "\x1b[1mteam\x1b[0m  \x1b[1mstate\x1b[0m"
    assert row == "\x1b[38;2;233;30;99mweb\x1b[0m   \x1b[31mfailed\x1b[0m"
    assert draw(table, width=80, color=False) == ["team  state", "web   failed"]


def test_a_team_with_a_long_address_keeps_its_description_readable() -> None:
    agent = TeamInfo(name="billing", path="", kind="a2a", remote="https://agents.example.com/a2a/v1/billing-service",
                     description="answers questions about invoices")
    _header, row, description = team_lines([agent], width=80, color=False)
    assert "https://agents.example.com/a2a/v1/billing-service" in row
    assert description.strip() == "answers questions about invoices"  # under its row, not cut to "descrip…"


def test_the_terminal_width_is_read_as_shutil_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``terminal_width`` spares ``iris status`` importing shutil; it must give what shutil gives."""
    import shutil

    from iris_cli.table import terminal_width

    for columns in ("132", "0", "-3", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert terminal_width() == shutil.get_terminal_size((80, 24)).columns, columns
    monkeypatch.setenv("COLUMNS", "0")
    monkeypatch.setattr("sys.__stdout__", None)  # started with no stdout at all
    assert terminal_width() == 80 == shutil.get_terminal_size((80, 24)).columns
