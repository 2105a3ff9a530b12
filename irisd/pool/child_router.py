"""Where a line of a pair's claude child belongs. Pure: no trio, no I/O.

How it works
------------
Every stdout line of the child goes one of four ways (``ChildLineRouter.route``):

* ``tell``: the running tell's (its machine reads it, its transcript keeps it);
* ``permission``: a ``can_use_tool`` request within the running tell (the approval desk);
* ``unsolicited``: output no tell asked for (``unsolicited.py`` keeps it), also while a
  tell runs when claude took a turn it queued itself ahead of the tell's;
* ``ignore``: an answer to Iris's own control request, or the last words of a child
  being stopped.

claude's ``total_cost_usd`` and ``modelUsage`` are running totals of the SESSION (a
resumed process starts from what the session had spent: ``irisd/claude/spend.py``), so
the router keeps that total for its child (one router per child, started from the total
the child resumed from) and gives every result its *share*: the difference its turn made.

A child whose ``--resume`` found no conversation says so (``No conversation found``)
on its first line or on stderr: the router recognises it; what it means (retry once with a new
session) is the process machine's decision.
"""

from __future__ import annotations

from typing import Literal, TypeGuard

import msgspec

from irisd.claude.spend import Spent, running_total, turn_share
from irisd.claude.wire import AnyLine, CommandLifecycleLine, ControlRequestLine, ControlResponseLine, ResultLine
from irisd.pool.unsolicited_turn import UnsolicitedTurn

NO_CONVERSATION = "No conversation found"  # what claude says when a resume finds nothing

Destination = Literal["tell", "permission", "unsolicited", "ignore"]


class Routed(msgspec.Struct, frozen=True):
    """Where a line goes, and (for a result) what its turn cost."""

    to: Destination
    spent: Spent | None = None


def is_permission_request(line: AnyLine) -> TypeGuard[ControlRequestLine]:
    return isinstance(line, ControlRequestLine) and line.request.subtype == "can_use_tool"


def is_input_request(line: AnyLine) -> TypeGuard[ControlRequestLine]:
    """One of the child's MCP servers asks for input (MCP elicitation, passed to its host)."""
    return isinstance(line, ControlRequestLine) and line.request.subtype == "elicitation"


def belongs_to_tell(line: AnyLine, *, record: UnsolicitedTurn | None) -> bool:
    """While a tell runs: whether ``line`` is the tell's, or part of a turn claude queued
    itself (framed by ``command_lifecycle`` ``started`` ... ``completed``; turns written
    to its stdin have no such frame), which may run ahead of the tell's."""
    if record is not None and (record.holding or isinstance(line, CommandLifecycleLine)):
        return False
    return not (isinstance(line, CommandLifecycleLine) and line.state == "started")


class ChildLineRouter:
    """Routes the lines of ONE child; a new child gets a new router. ``start``: the
    running total the child began from (what its resumed session had spent; nothing for
    a new session)."""

    def __init__(self, start: Spent | None = None) -> None:
        self.total = start or Spent()  # the session's running total, as the child's last result said

    @staticmethod
    def says_conversation_lost(line: AnyLine) -> bool:
        """The child's (first) line is claude saying that the session it resumed has no conversation."""
        return isinstance(line, ResultLine) and any(NO_CONVERSATION in error for error in line.errors)

    @staticmethod
    def stderr_says_conversation_lost(stderr_tail: str) -> bool:
        return NO_CONVERSATION in stderr_tail

    def route(
        self, line: AnyLine, *, tell_running: bool, record: UnsolicitedTurn | None, stopping: bool
    ) -> Routed:
        """``tell_running``: the pair has a current tell that has not ended; ``record``:
        the unsolicited record being kept; ``stopping``: the child is being stopped."""
        share = self._share(line)  # every result moves the running total
        if tell_running and belongs_to_tell(line, record=record):
            return Routed("permission" if is_permission_request(line) else "tell", share)
        if isinstance(line, ControlResponseLine) or stopping:
            return Routed("ignore", share)
        return Routed("unsolicited", share)

    def _share(self, line: AnyLine) -> Spent | None:
        if not isinstance(line, ResultLine) or (total := running_total(line.total_cost_usd, line.model_usage)) is None:
            return None
        share = turn_share(total, self.total, line.model_usage, line.usage)
        self.total = total
        return share
