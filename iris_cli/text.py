"""Text for the CLI's output (no rich, no I/O); the plain helpers it shares with the MCP tools and
irisd are in ``iris_common.text``, re-exported here for the commands."""

from __future__ import annotations

import time

from iris_common.money import usd as usd  # one way to show money, for irisd's errors and the CLI
from iris_common.text import pair_name as pair_name
from iris_common.text import short as short
from iris_common.text import tail as tail
from iris_common.text import tell_data as tell_data
from protocol.core_messages import ANSWERED_STATUSES

ANSWERED = ANSWERED_STATUSES  # a tell's reply status; the others exit 1

def decide_line(approval_id: str, *, kind: str = "tool") -> str:
    """How to decide an approval, in 80 columns: its id's first characters are enough
    (irisd takes any unique prefix of an id). An input request is answered field by field."""
    brief = approval_id[:10]
    if kind == "input":
        return f"  iris approve {brief} --field NAME=VALUE ...  |  iris deny {brief} (declines)"
    if kind == "budget":
        return f"  iris approve {brief} (the chain goes on)  |  iris deny {brief} (it stops)"
    if kind == "agent":  # an action of iris-agent: decided once, never remembered
        return f"  iris approve {brief} (iris-agent does it)  |  iris deny {brief}"
    return f"  iris approve {brief} [--remember]  |  iris deny {brief} --reason '...'"


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
