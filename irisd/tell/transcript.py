"""What a tell's transcript keeps of claude's lines, and when it is written (pure: no I/O).

How it works
------------
claude prints about ten lines for a warm turn: a ~4.5 KB ``init`` line (the same every
turn but for its ``uuid``), token deltas (``stream_event``, with
``--include-partial-messages``), the assistant message, the result. Written one by one,
they were most of irisd's own work on a warm tell. So a tell keeps its lines here and
they are written in one go when the tell's state is saved (it started, ended, waits for
a person), or once its oldest unsaved change is ``SAVE_AFTER_S`` old (a long turn: so
a crash of irisd loses at most that much of it; the tell's text so far is saved with
them). Not kept at all:

* token deltas: streamed live to whoever watches the tell, never stored (the assistant
  line that follows holds the same text; the text so far is saved with the tell);
* an ``init`` line the same as the one before from the same claude (``Inits``): the
  first turn of each claude keeps it, and a changed one is kept again.
"""

from __future__ import annotations

import math
import re

SAVE_AFTER_S = 0.5
NOT_STORED = frozenset({"stream_event"})
_UUID = re.compile(rb'"uuid":\s*"[^"]*",?')

Line = tuple[float, str, bytes]  # wall time, claude's type, the raw line


class Inits:
    """The ``init`` lines one pair's claude printed: is this one new?"""

    def __init__(self) -> None:
        self._last: bytes | None = None

    def new_child(self) -> None:
        """A new claude: its first ``init`` line is kept."""
        self._last = None

    def is_new(self, raw: bytes) -> bool:
        """Whether ``raw`` (an ``init`` line) differs from the last one, but for its uuid."""
        key = _UUID.sub(b"", raw)
        if key == self._last:
            return False
        self._last = key
        return True


class TurnLines:
    """A tell's lines not written yet, and since when it has unsaved changes."""

    def __init__(self) -> None:
        self._lines: list[Line] = []
        self._writing: list[Line] = []  # taken, their write not done yet
        self._since = math.inf  # trio time of the oldest unsaved change

    def __len__(self) -> int:
        return len(self._lines)

    def add(self, now: float, wall: float, type_: str, raw: bytes, *, keep: bool = True) -> None:
        """A line of the tell's at trio time ``now``; ``keep`` False (or a token delta):
        it changed the tell (its text) but is not stored."""
        if keep and type_ not in NOT_STORED:
            self._lines.append((wall, type_, raw))
        self._since = min(self._since, now)

    def next_deadline(self) -> float:
        """When the unsaved changes must be written (inf: none)."""
        return self._since + SAVE_AFTER_S

    def due(self, now: float) -> bool:
        return now >= self.next_deadline()

    def take(self) -> list[Line]:
        """The lines to write now; the tell counts as saved. Until ``written``, a reader
        still sees them in ``unwritten``."""
        lines, self._lines, self._since = self._lines, [], math.inf
        self._writing = [*self._writing, *lines]
        return lines

    def written(self, count: int) -> None:
        """The first ``count`` lines taken are in the database (or queued to be written)."""
        del self._writing[:count]

    def unwritten(self) -> list[Line]:
        """What a reader of the transcript must add to what the database holds."""
        return [*self._writing, *self._lines]


def not_stored(stored_tail: list[tuple[float, str]], unwritten: list[Line]) -> list[Line]:
    """The ``unwritten`` lines a reader adds after those it read from the database, less
    those the database held already by then (a write that ended while it read):
    ``stored_tail`` is (time, type) of the last lines it read."""
    seen = set(stored_tail)
    return [line for line in unwritten if (line[0], line[1]) not in seen]
