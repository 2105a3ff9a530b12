"""``iris_cli.printer``: the CLI's text written without rich, as rich wrote it."""

from __future__ import annotations

import io
import sys

import pytest

from iris_cli.printer import Printer, Styled


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_is_printed_as_written_without_colour_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", screen)
    out = Printer()
    out.print("[bold]list[int][/bold] :smile:")  # markup and an emoji code: team text, shown as is
    out.print(Styled(("ap-1", "bold"), " wants ", ("Bash", "bold")), style="dim")
    out.print("a\tb\rc\x07")  # tabs expanded, the control characters rich drops, dropped
    assert screen.getvalue() == "[bold]list[int][/bold] :smile:\nap-1 wants Bash\na       bc\n"


def test_styles_are_ansi_colours_on_a_terminal_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.delenv("NO_COLOR", raising=False)
    err = Printer(stderr=True)
    err.print(Styled(("error:", "red"), " no such team"))
    err.print("dim words", style="dim")
    assert screen.getvalue() == "\x1b[31merror:\x1b[0m no such team\n\x1b[2mdim words\x1b[0m\n"
    monkeypatch.setenv("NO_COLOR", "1")
    err.print(Styled(("error:", "red"), " again"))
    assert screen.getvalue().endswith("\nerror: again\n")


def test_anything_else_goes_through_rich_made_at_its_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.panel import Panel

    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", screen)
    out = Printer()
    out.width = 30
    out.print(Panel("an answer", title="alpha"))
    drawn = screen.getvalue().splitlines()
    assert len(drawn) == 3 and "alpha" in drawn[0] and "an answer" in drawn[1] and len(drawn[0]) == 30
    assert out.width == 30
