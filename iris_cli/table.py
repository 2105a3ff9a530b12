"""The CLI's one table: columns described once, laid out once, drawn as plain lines.

``draw`` is pure (no rich, no I/O): every column as wide as its widest cell, two spaces
apart; ids, pairs and numbers are never cut (people copy them) and the free-text columns
share what is left of the width, cut with an ellipsis; a free column narrower than its
``fold`` goes on an indented line under its row instead, as do a row's ``notes``. Styles
are ANSI colours when ``color`` is on. ``iris status`` prints these lines as they are
(it never imports rich); ``iris_cli.render`` prints the same lines through rich, which
knows the terminal (its width, NO_COLOR, a pipe), and so does ``iris monitor``.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Sequence

import msgspec

GAP = 2  # spaces between columns
MIN_FREE = 8  # a free column keeps this many columns, even on a terminal too narrow for the row
STYLES = {
    "green": "32", "yellow": "33", "red": "31", "magenta": "35", "cyan": "36", "bold": "1", "dim": "2",
}


# Structs, not dataclasses: a dataclass compiles its methods when its module is imported,
# and ``iris status`` imports this one.
class Cell(msgspec.Struct, frozen=True):
    """A cell's text (team and model text: never read as markup) and its style: a name of
    ``STYLES`` or a team's '#RRGGBB'."""

    text: str
    style: str = ""


class Column(msgspec.Struct, frozen=True):
    header: str
    free: bool = False  # free text: shares the width left by the others, cut to fit
    fold: int = 0  # (free) with less room than this, it goes under its row, whole


class Table(msgspec.Struct, frozen=True):
    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell | str]]
    notes: Sequence[Sequence[str]] = ()  # per row: dim lines under it; the first is cut to the width


def width_of(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # an escape in a team's text must not restyle the terminal


def clean(text: str) -> str:
    """``text`` without control characters, but for its line breaks and tabs."""
    return _CONTROL.sub("", text)


def one_line(text: str) -> str:
    """``text`` on one line, without control characters."""
    return clean(" ".join(text.split()))


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns, with an ellipsis where it was cut."""
    if width_of(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        used += width_of(char)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def terminal_width(fallback: int = 80) -> int:
    """The terminal's width in columns as ``shutil.get_terminal_size`` reads it (``COLUMNS``
    first, then standard output's terminal, else ``fallback``), without importing shutil,
    which loads fnmatch and the compression modules on every ``iris status``."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout, closed, or not a terminal
            columns = 0
    return columns if columns > 0 else fallback


def use_color(stream: object = None) -> bool:
    stream = sys.stdout if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ


def paint(text: str, style: str, on: bool) -> str:
    if not on or not style or not text:
        return text
    if style.startswith("#") and len(style) in (4, 7):
        digits = style[1:] if len(style) == 7 else "".join(c * 2 for c in style[1:])
        code = "38;2;" + ";".join(str(int(digits[i : i + 2], 16)) for i in (0, 2, 4))
    else:
        code = STYLES.get(style, "")
    return f"\x1b[{code}m{text}\x1b[0m" if code else text


def draw(table: Table, *, width: int, color: bool) -> list[str]:
    """The table as lines of at most ``width`` columns (but for cells never cut)."""
    columns = list(table.columns)
    rows = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in table.rows]
    rows = [[Cell(one_line(c.text), c.style) for c in row] for row in rows]
    notes = [list(n) for n in table.notes] or [[] for _ in rows]
    widths = [max([width_of(col.header), *(width_of(r[i].text) for r in rows)]) for i, col in enumerate(columns)]
    free = [i for i, col in enumerate(columns) if col.free]
    room = width - sum(w for i, w in enumerate(widths) if i not in free) - GAP * (len(columns) - 1)
    folded = [i for i in free if columns[i].fold and room // len(free) < columns[i].fold]
    for i in reversed(folded):  # under the row, in column order, before the row's own notes
        for row, row_notes in zip(rows, notes, strict=True):
            row_notes.insert(0, row.pop(i).text)
        del columns[i], widths[i]
        room += GAP
    free = [i for i, col in enumerate(columns) if col.free]
    for n, i in enumerate(sorted(free, key=lambda i: widths[i])):  # the narrow ones first: unused room passes on
        share = max(room // (len(free) - n), MIN_FREE)
        widths[i] = min(widths[i], share)
        room -= widths[i]

    def line(cells: Sequence[Cell], bold: bool = False) -> str:
        parts = []
        for index, (cell, size) in enumerate(zip(cells, widths, strict=True)):
            text = fit(cell.text, size)
            padding = " " * (size - width_of(text)) if index < len(cells) - 1 else ""
            parts.append(paint(text, "bold" if bold else cell.style, color) + padding)
        return (" " * GAP).join(parts).rstrip()

    out = [line([Cell(col.header) for col in columns], bold=True)]
    for row, row_notes in zip(rows, notes, strict=True):
        out.append(line(row))
        for index, note in enumerate(row_notes):  # the first (a message) is cut; reasons stay whole
            if not note.strip():
                continue  # an empty cell folded under its row: no blank line
            shown = fit(one_line(note), max(10, width - 3)) if index == 0 else clean(note)
            out.append(paint("  " + shown, "dim", color))
    return out
