"""Progress notifications coalesced: at most one per interval, the phases that need a
person at once.

How it works: a tell's events come faster than anybody reads (a text delta each few
milliseconds); each progress message says the whole current state (the answer so far,
or what the tell waits for), so a newer message replaces an older one that has not
gone out. ``offer`` says whether a message goes out now; one that may not (the last
went out less than ``interval`` ago, or the call began less than ``interval`` ago:
``start``) is held, and ``next_deadline`` says when the held one is due (``take_due``).
An urgent message (the tell is queued behind another, or waits for an approval:
somebody must act) goes out at once whatever the interval. So a call answered within
the first interval sends no notification at all: its result says more, sooner.

Pure: time is an argument (``now``); the trio side (``iris_mcp.progress_sender``) arms
one timer from ``next_deadline``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PROGRESS_INTERVAL_S = 0.25  # at most 4 progress notifications a second, urgent ones aside


@dataclass(frozen=True)
class Said:
    """A progress message, and whether it must go out at once."""

    message: str
    urgent: bool = False


class Coalescer:
    """When each progress message goes out (see the module docstring)."""

    def __init__(self, interval: float = PROGRESS_INTERVAL_S, start: float = -math.inf) -> None:
        self.interval = interval
        self._held: str | None = None
        self._last_sent = start  # the call's start counts as news: the first interval runs from it

    def offer(self, said: Said, now: float) -> str | None:
        """The message to send now, or None: it is held (replacing any held before it)
        until ``next_deadline()``."""
        if said.urgent or now >= self._last_sent + self.interval:
            return self._send(said.message, now)
        self._held = said.message
        return None

    def next_deadline(self) -> float:
        """When the held message is due; infinity when none is held."""
        return self._last_sent + self.interval if self._held is not None else math.inf

    def take_due(self, now: float) -> str | None:
        """The held message if it is due now (it is sent: no longer held), else None."""
        if self._held is None or now < self.next_deadline():
            return None
        return self._send(self._held, now)

    def _send(self, message: str, now: float) -> str:
        self._held = None
        self._last_sent = now
        return message
