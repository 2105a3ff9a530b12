"""Plain text and data shared by the CLI's output and the MCP tools' (no rich, no I/O)."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from iris_common.money import usd as usd  # one way to show money, for irisd's errors and the CLI
from protocol.messages import TellReply


def pair_name(from_team: str | None, to_team: str) -> str:
    return f"{from_team or 'external'}->{to_team}"  # as irisd writes it (and the wire's parent_pair)


def decide_line(approval_id: str) -> str:
    """How to decide an approval, in 80 columns: its id's first characters are enough
    (irisd takes any unique prefix of an id)."""
    brief = approval_id[:10]
    return f"  iris approve {brief} [--remember]  |  iris deny {brief} --reason '...'"


def short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, an ellipsis first if cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def tell_data(reply: TellReply) -> dict[str, Any]:
    """A tell for scripts and models: its fields, ``status`` as the caller sees it
    (``in_progress`` while it runs) and ``tell_status`` as stored (queued, running, ...)."""
    data: dict[str, Any] = msgspec.to_builtins(reply.tell)
    return {**data, "status": reply.status, "tell_status": reply.tell.status}


def ago(timestamp: float | None) -> str:
    """How long ago ``timestamp`` was, for people ("3m ago"); "-" for none."""
    if timestamp is None:
        return "-"
    seconds = max(0, time.time() - timestamp)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


class Interleaved:
    """Streamed text of several tells on one output, each piece labelled.

    A tell's text is written as it arrives; when the text comes from another tell than
    the one written last, a new line starts with that tell's label, so two tells that
    stream at once read as labelled runs, never as ``word1 word1 word2 word2``. Pure:
    ``write`` returns what to print."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self._current = ""  # the tell whose text was written last
        self._line_open = False

    def name(self, tell_id: str, from_team: str | None, to_team: str) -> None:
        self.labels[tell_id] = f"{tell_id[:8]} {pair_name(from_team, to_team)}"

    def write(self, tell_id: str, text: str) -> str:
        if not text:
            return ""
        out = ""
        if tell_id != self._current:
            out += ("\n" if self._line_open else "") + f"[{self.labels.get(tell_id, tell_id[:8])}] "
            self._current = tell_id
        out += text
        self._line_open = not text.endswith("\n")
        return out

    def interrupt(self) -> str:
        """Something else is printed: end the open line; the next text is labelled again."""
        self._current = ""
        opened, self._line_open = self._line_open, False
        return "\n" if opened else ""
