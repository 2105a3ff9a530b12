"""The CLI's two output streams, without rich until something rich is printed.

Importing rich costs more CPU than most commands (``iris approvals``, ``iris report TEAM``):
their lines are text and a few styles, which ``Printer`` writes itself, as rich writes them
(styles as ANSI colours only on a terminal without ``NO_COLOR``; tabs expanded; the control
characters rich drops, dropped; team and model text never read as markup). Anything else
(a rich ``Text``, ``Panel`` or ``Group`` that a command made) goes to a rich ``Console``
made at that first use, so every caller keeps ``render.out.print(...)``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from iris_cli.table import paint, terminal_width, use_color

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# What rich removes from text it prints (rich.control.strip_control_codes): bell,
# backspace, vertical tab, form feed, carriage return.
_DROPPED = dict.fromkeys((7, 8, 11, 12, 13))
Part = str | tuple[str, str]


class Styled:
    """A line made of parts, each plain or (text, style) with a style of ``table.STYLES``:
    what ``rich.text.Text.assemble`` makes, printed without rich (and as that Text by a rich
    console: tests hand ``render`` their own)."""

    __slots__ = ("parts",)

    def __init__(self, *parts: Part, style: str = "") -> None:
        self.parts = tuple((part, style) if isinstance(part, str) else part for part in parts)

    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)

    def ansi(self, color: bool) -> str:
        return "".join(paint(text, style, color) for text, style in self.parts)

    def __rich__(self) -> Text:
        from rich.text import Text

        return Text.assemble(*((text, style) if style else text for text, style in self.parts))


class Printer:
    """``out`` or ``err``: ``print`` as rich's ``Console.print`` for text and ``Styled``
    lines; ``width`` the terminal's (or ``COLUMNS``, else 80), settable as rich's is."""

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self._width: int | None = None
        self._console: Console | None = None

    @property
    def file(self) -> TextIO:
        return sys.stderr if self.stderr else sys.stdout  # at each print: tests swap them

    @property
    def width(self) -> int:
        if self._width is not None:
            return self._width
        return self._console.width if self._console is not None else terminal_width()

    @width.setter
    def width(self, columns: int) -> None:
        self._width = columns
        if self._console is not None:
            self._console.width = columns

    def print(self, *objects: Any, style: str | None = None, end: str = "\n", **rich_options: Any) -> None:
        """Text and ``Styled`` lines written here (``rich_options`` such as ``highlight=False``
        are what this does anyway); anything else through rich."""
        if not all(isinstance(item, str | Styled) for item in objects):
            self.console().print(*objects, style=style, end=end, **rich_options)
            return
        color = use_color(self.file)
        shown = " ".join(
            item.ansi(color) if isinstance(item, Styled) else paint(item, style or "", color) for item in objects
        )
        file = self.file
        file.write(shown.translate(_DROPPED).expandtabs(8) + end)
        file.flush()  # as rich does: what goes to stdout and stderr stays in the order it was said

    def console(self) -> Console:
        """The rich console behind this stream, made at its first use."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self.stderr, highlight=False, soft_wrap=True, markup=False)
            if self._width is not None:
                self._console.width = self._width
        return self._console
