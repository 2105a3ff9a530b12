"""Output of a pair's claude that no tell of Iris asked for.

Children refuse cross-session messages (``crossSessionInbound: refuse``), so a turn of
their own should not happen that way; but a later claude might let one in, and a
background task that finishes makes claude take a turn by itself. What the child says
then is kept, never dropped, and never given to a tell: the pair records it as
*unsolicited* (its own id, ``u-...``, and every line), announces it, and shows it.

How it works
------------
One ``UnsolicitedTurn`` collects a run of such lines (it may hold no turn at all, only
status lines, or several turns back to back). While a *turn* is under way (it opened
with a command starting, an ``init``, model output, a permission request: see
``opens_turn``) the record *holds* the pair: the next tell waits for the turn's
``result``, and a turn silent for the response timeout gets its child stopped. Once
nothing holds it, the record ends after ``QUIET_S`` without a line, or at once when
the pair starts a tell.

A message claude queued itself runs framed by ``command_lifecycle`` ``started`` ...
``completed`` (2.1.330; turns written to its stdin have no such frame). The pair's router
(``child_router.py``) uses that to keep such a turn out of a tell that was written at
the same moment and runs after it.

No trio, no I/O: the pair feeds lines and times in and stores what ``info()`` says.
"""

from __future__ import annotations

import secrets

from irisd.claude.spend import Spent
from irisd.claude.wire import (
    AnyLine,
    AssistantLine,
    CommandLifecycleLine,
    ControlRequestLine,
    StreamEventLine,
    SystemLine,
    UserLine,
)
from irisd.tell.machine import Action, ReplyToCaller, TellMachine
from protocol.messages import TellStatus, UnsolicitedInfo

QUIET_S = 1.0  # lines closer together than this belong to one record
STRAY_TEXT_CHARS = 2000  # of raw lines shown as the text of a record that holds no turn


def new_turn_id() -> str:
    return "u-" + secrets.token_hex(8)


def opens_turn(line: AnyLine) -> bool:
    """Whether a line means the child is taking a turn (which a ``result`` ends): a
    command starting, its ``init``, model output, a tool result, a permission request.
    Other lines (a status line, an unknown type, garbage) start nothing to wait for."""
    if isinstance(line, SystemLine):
        return line.subtype == "init"
    if isinstance(line, CommandLifecycleLine):
        return line.state == "started"
    return isinstance(line, AssistantLine | StreamEventLine | UserLine | ControlRequestLine)


class UnsolicitedTurn:
    def __init__(
        self,
        *,
        from_team: str | None,
        to_team: str,
        session_id: str,
        response_timeout_s: float,
        now: float,
        wall: float,
    ) -> None:
        self.id = new_turn_id()
        self.from_team = from_team
        self.to_team = to_team
        self.session_id = session_id
        self.started_wall = wall
        self.finished_wall: float | None = None
        self.status: TellStatus = "running"
        self.error = ""
        self.cost_usd: float | None = None
        self.turns = 0  # turns that ended with a result
        self._response_timeout_s = response_timeout_s
        self._turn: TellMachine | None = None  # the turn under way
        self._texts: list[str] = []  # what the ended turns said
        self._stray: list[str] = []  # lines outside any turn
        self._last_line = now

    @property
    def holding(self) -> bool:
        """A turn is under way: the pair's next tell must wait for its end."""
        return self._turn is not None

    @property
    def ended(self) -> bool:
        return self.status != "running"

    @property
    def text(self) -> str:
        """What it said: the turns' answers, else the stray lines themselves."""
        said = [*self._texts, self._turn.text] if self._turn is not None else self._texts
        if any(said):
            return "\n".join(text for text in said if text)
        return "\n".join(self._stray)[:STRAY_TEXT_CHARS]

    def info(self) -> UnsolicitedInfo:
        return UnsolicitedInfo(
            id=self.id,
            from_team=self.from_team,
            to_team=self.to_team,
            status=self.status,
            started_at=self.started_wall,
            text=self.text,
            session_id=self.session_id,
            finished_at=self.finished_wall,
            error=self.error,
            cost_usd=self.cost_usd,
        )

    # --- events -------------------------------------------------------------------

    def child_line(self, line: AnyLine, raw: bytes, now: float, spent: Spent | None = None) -> None:
        """``spent``: what a result's turn cost (the pair's router says, child_router.py)."""
        self._last_line = now
        if spent is not None:
            self.cost_usd = (self.cost_usd or 0.0) + spent.cost_usd
        if self._turn is None and opens_turn(line):
            self._turn = TellMachine(response_timeout_s=self._response_timeout_s, caller_timeout_ms=0, now=now)
            self._turn.start(now)
        if self._turn is None:
            self._stray.append(raw.decode(errors="replace"))
            return
        self._turn.child_line(line, now)
        if self._turn.is_final:
            self._end_turn(self._turn)

    def next_deadline(self) -> float:
        return self._turn.next_deadline() if self._turn is not None else self._last_line + QUIET_S

    def handle_timer(self, now: float, wall: float) -> list[Action]:
        """A turn silent for the response timeout ends ``timed_out`` with a ``StopChild``;
        a record that holds nothing ends after ``QUIET_S``."""
        if self._turn is None:
            if now >= self._last_line + QUIET_S:
                self.close(wall)
            return []
        turn = self._turn
        actions: list[Action] = [a for a in turn.handle_timer(now) if not isinstance(a, ReplyToCaller)]
        if turn.is_final:
            self._texts.append(turn.text)
            self._turn = None
            self._finish(turn.status, turn.error, wall)
        return actions

    def close(self, wall: float) -> None:
        """Nothing more belongs to it (quiet, or the pair starts a tell). Not while holding."""
        assert self._turn is None, "close() while a turn is under way"
        if not self.ended:
            self._finish("failed" if self.error else "completed", self.error, wall)

    def end(self, now: float, wall: float, reason: str) -> None:
        """The child exited, or irisd stops: a turn under way ends ``interrupted``."""
        if self._turn is not None:
            self._texts.append(self._turn.text)
            self._turn = None
            self._finish("interrupted", reason, wall)
        else:
            self.close(wall)

    # --- internals ----------------------------------------------------------------

    def _end_turn(self, turn: TellMachine) -> None:
        self._turn = None
        self.turns += 1
        self._texts.append(turn.text)
        if turn.status == "failed":
            self.error = turn.error

    def _finish(self, status: TellStatus, error: str, wall: float) -> None:
        self.status, self.error, self.finished_wall = status, error, wall
