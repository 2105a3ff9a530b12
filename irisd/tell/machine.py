"""The tell lifecycle as a pure state machine. No trio, no I/O: time is an argument.

How it works
------------
A tell is created ``queued`` when a caller submits it. The pair's worker calls
``start(now)`` when it writes the message to the claude child; from then on every
line the child prints goes to ``child_line(line, now)``. The machine keeps two
deadlines and the trio runner arms ONE timer at ``next_deadline()`` and calls
``handle_timer(now)`` when it fires:

* the *response deadline* (process health): ``response_timeout`` after the last line
  from the child; it restarts on every line. Expiry ends the tell ``timed_out`` and
  asks for the child to be stopped (the output so far is kept).
* the *caller deadline* (caller patience), from ``caller_timeout_ms``: -1 replies at
  once, 0 waits for the end, N replies after N ms with the text so far while the tell
  runs on. It counts from submission, so time spent queued counts too.

::

    queued ──start──> running ──result──────────────> completed | failed
                        │ <─child_restarted (same tell, new child)
                        │ <─approval_requested / approval_settled─> awaiting_approval
                        │       (no response deadline while a person decides)
      │                 │ ─────response deadline──> timed_out   (StopChild)
      │                 │ ─────child exited───────> interrupted
      │                 └─cancel─> interrupting ─result / grace─> interrupted
      └──cancel─────────────────────────────────> interrupted
    any non-final ──fail(reason)──> failed

A tell of a *remote* team (an A2A agent, a team homed on another irisd) has no child:
its executor reports instead. ``remote_started`` (queued -> running, with a silence
deadline only if the executor asks for one), ``remote_progress`` (the answer so far;
restarts that deadline), ``approval_requested``/``approval_settled`` (the far side
waits for a person) and ``remote_finished`` (the far side's final state and answer).

Methods return a list of actions for the runner: ``ReplyToCaller`` (exactly once per
tell), ``StopChild``, ``SendInterrupt``. Calling a method that makes no sense in the
current state raises ``IllegalTransition``: that is a bug in the caller, not a runtime
condition.
"""

from __future__ import annotations

import math

import msgspec

from irisd.claude.wire import (
    AnyLine,
    ResultLine,
)
from irisd.tell.answer import AnswerText
from protocol.messages import FINAL_TELL_STATUSES, UNFINISHED_TELL_STATUSES, ReplyStatus, TellStatus

INTERRUPT_GRACE_S = 5.0
BUDGET_REACHED = "error_max_budget_usd"  # a result's subtype when --max-budget-usd stopped the turn


class IllegalTransition(RuntimeError):
    """A tell was asked to do something its state does not allow."""


class ReplyToCaller(msgspec.Struct, frozen=True):
    """The caller waiting on this tell gets its answer now (final, or partial)."""


class StopChild(msgspec.Struct, frozen=True):
    """The child must be stopped (it hung, or ignored an interrupt)."""

    reason: str


class SendInterrupt(msgspec.Struct, frozen=True):
    """Write an interrupt control request to the child."""


Action = ReplyToCaller | StopChild | SendInterrupt


class TellMachine:
    def __init__(
        self,
        *,
        response_timeout_s: float,
        caller_timeout_ms: int,
        now: float,
        interrupt_grace_s: float = INTERRUPT_GRACE_S,
    ) -> None:
        if caller_timeout_ms < -1:
            raise ValueError(f"caller timeout {caller_timeout_ms} ms is below -1")
        self.status: TellStatus = "queued"
        self.error = ""
        self.result: ResultLine | None = None
        self.finished_at: float | None = None
        self._response_timeout_s = response_timeout_s
        self._interrupt_grace_s = interrupt_grace_s
        self._caller_deadline = (
            math.inf if caller_timeout_ms == 0 else now + max(caller_timeout_ms, 0) / 1000
        )
        self._response_deadline = math.inf
        self._interrupt_deadline = math.inf
        self._interrupting = False
        self._cancelled = False
        self.caller_replied = False
        self.caller_got_end = False  # the caller's one reply carried the final answer
        self._approvals_pending = 0
        self._answer = AnswerText()
        self._remote_text: str | None = None  # a remote team's answer so far
        self._remote_silence_s: float | None = None
        # A remote team's tell that the far side (or a durable queue on the way) does not
        # hold yet: the caller hears nothing before it does, and it fails at this time.
        self._handoff_deadline: float | None = None
        self._handoff_s = 0.0
        self._handoff_sent = False  # it left for the far side: it may be held there
        self.handoff_unconfirmed = False  # sent, the handoff time passed, not held there as far as we know

    # --- queries ------------------------------------------------------------------

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_TELL_STATUSES

    @property
    def cancelled(self) -> bool:
        """Someone cancelled the tell (it may still be winding down)."""
        return self._cancelled

    @property
    def text(self) -> str:
        """The answer: the final result's text, else everything generated so far."""
        if self.result is not None and self.result.result:
            return self.result.result
        if self._remote_text is not None:
            return self._remote_text
        return self._answer.text

    def reply_status(self) -> ReplyStatus:
        """What the caller is told: the final state, or in_progress."""
        if self.status in UNFINISHED_TELL_STATUSES:
            return "in_progress"
        return self.status  # type: ignore[return-value]

    def next_deadline(self) -> float:
        """The earliest time ``handle_timer`` has something to do (``inf`` if none)."""
        deadlines = [self._response_deadline, self._interrupt_deadline]
        if self._handoff_deadline is not None:
            deadlines.append(self._handoff_deadline)
        elif not self.caller_replied:
            deadlines.append(self._caller_deadline)
        return min(deadlines)

    # --- events -------------------------------------------------------------------

    def caller_attached(self, now: float) -> list[Action]:
        """Right after submission: a caller that does not wait (-1) is answered at once."""
        return self.handle_timer(now)

    def start(self, now: float, *, startup_s: float = 0.0) -> list[Action]:
        """The message was handed to the child. ``startup_s``: a child that has not
        printed anything yet gets that long (if longer) for its first line, since
        claude's start-up is not a stall (settings.sessionInitTimeout)."""
        self._require("start", "queued")
        self.status = "running"
        self._response_deadline = now + max(self._response_timeout_s, startup_s)
        return []

    def child_restarted(self, now: float, *, startup_s: float = 0.0) -> list[Action]:
        """The message was handed again, to a new child (the last one crashed on start, or
        died before it read the message). A tell cancelled meanwhile goes no further."""
        self._require("child_restarted", "running", "awaiting_approval")
        if self._interrupting:
            return self._finish("interrupted", now, "interrupted by request")
        self._response_deadline = now + max(self._response_timeout_s, startup_s)
        return []

    def approval_requested(self, now: float) -> list[Action]:
        """The child asked to use a tool and waits for a decision: the response deadline
        stops, since the silence is a person deciding, not a stall."""
        self._require("approval_requested", "running", "awaiting_approval")
        self._approvals_pending += 1
        self.status = "awaiting_approval"
        self._response_deadline = math.inf
        return []

    def approval_settled(self, now: float) -> list[Action]:
        """A decision went back to the child; with none pending, the deadline restarts."""
        self._require("approval_settled", "awaiting_approval")
        self._approvals_pending -= 1
        if self._approvals_pending == 0:
            self.status = "running"
            if not self._interrupting:
                self._response_deadline = now + self._response_timeout_s
        return []

    def child_line(self, line: AnyLine, now: float) -> list[Action]:
        """A line from the child: restarts the response deadline, collects text."""
        self._require("child_line", "running", "awaiting_approval")
        if not self._interrupting and self.status == "running":
            self._response_deadline = now + self._response_timeout_s
        self._answer.feed(line)
        match line:
            case ResultLine():
                self.result = line
                if self._interrupting:
                    return self._finish("interrupted", now, "interrupted by request")
                if line.subtype == BUDGET_REACHED:
                    return self._finish("failed", now, budget_reached(line))
                if line.is_error:
                    return self._finish("failed", now, claude_failed(line))
                return self._finish("completed", now)
        return []

    def child_exited(self, now: float, detail: str) -> list[Action]:
        """The child process ended before the turn's result."""
        self._require("child_exited", "running", "awaiting_approval")
        return self._finish("interrupted", now, detail)

    def cancel(self, now: float) -> list[Action]:
        """Interrupt the tell: at once if queued, through the child if running."""
        if not self.is_final:
            self._cancelled = True
        if self.status == "queued":
            return self._finish("interrupted", now, "cancelled before it started")
        self._require("cancel", "running", "awaiting_approval")
        if self._interrupting:
            return []
        self._interrupting = True
        self._response_deadline = math.inf
        self._interrupt_deadline = now + self._interrupt_grace_s
        return [SendInterrupt()]

    # --- a remote team's tell (no child: its executor reports) -------------------------

    def await_handoff(self, now: float, within_s: float) -> None:
        """A remote team's tell: no reply to the caller (not even to one that does not
        wait) before ``remote_accepted``; not accepted within ``within_s``, it fails."""
        self._require("await_handoff", "queued")
        self._handoff_deadline = now + within_s
        self._handoff_s = within_s

    def remote_sent(self, now: float) -> list[Action]:
        """The tell left for the far side, which may hold it now or later (no word yet):
        at the handoff deadline it is not failed as "not sent" (it may run there) but
        its caller hears it in progress, and the far side's result settles it."""
        if self._handoff_deadline is not None and not self.is_final:
            self._handoff_sent = True
        return []

    def remote_accepted(self, now: float) -> list[Action]:
        """The far side, or a durable queue on the way to it, holds the tell now."""
        self.handoff_unconfirmed = False
        if self._handoff_deadline is None or self.is_final:
            return []
        self._handoff_deadline = None
        return self.handle_timer(now)

    def remote_started(self, now: float, *, silence_s: float | None = None) -> list[Action]:
        """The far side took the tell. ``silence_s``: end it ``timed_out`` when the far
        side says nothing for that long (None: the far side keeps its own timeouts)."""
        self._require("remote_started", "queued")
        self._handoff_deadline = None  # what runs there is held there
        self.handoff_unconfirmed = False
        self.status = "running"
        self._remote_silence_s = silence_s
        self._response_deadline = math.inf if silence_s is None else now + silence_s
        return []

    def remote_progress(self, now: float, text: str | None = None) -> list[Action]:
        """The far side said it still works, with its answer so far if ``text``."""
        self._require("remote_progress", "running", "awaiting_approval")
        if text is not None:
            self._remote_text = text
        silence = self._remote_silence_s
        if silence is not None and self.status == "running" and not self._interrupting:
            self._response_deadline = now + silence
        return []

    def remote_finished(self, now: float, status: TellStatus, text: str, error: str = "") -> list[Action]:
        """The far side's final state, with its whole answer (kept even when it failed)."""
        if status not in FINAL_TELL_STATUSES:
            raise IllegalTransition(f"remote_finished() with {status}, which is not final")
        self._require("remote_finished", "queued", "running", "awaiting_approval")
        if text:
            self._remote_text = text
        if self._interrupting and status == "completed":
            status, error = "interrupted", "interrupted by request"
        return self._finish(status, now, error)

    def fail(self, now: float, reason: str) -> list[Action]:
        """The tell cannot go on (the child failed to start, the daemon is stopping, ...)."""
        if self.is_final:
            raise IllegalTransition(f"fail() on a tell that is already {self.status}")
        return self._finish("failed", now, reason)

    def interrupt(self, now: float, reason: str) -> list[Action]:
        """End a non-final tell as interrupted from outside (child gone, daemon draining)."""
        if self.is_final:
            raise IllegalTransition(f"interrupt() on a tell that is already {self.status}")
        return self._finish("interrupted", now, reason)

    def handle_timer(self, now: float) -> list[Action]:
        if self._handoff_deadline is not None and not self.is_final:
            if now < self._handoff_deadline:
                return []  # the caller hears nothing before the tell is held on the far side
            if self._handoff_sent:  # unknown: failing it "not sent" would have it sent twice
                self._handoff_deadline = None
                self.handoff_unconfirmed = True
                return self.handle_timer(now)
            why = (
                f"not sent: the remote team did not take it within {self._handoff_s:g} s; send it again once "
                "'iris status' shows the team reachable"
            )
            return [StopChild("not taken in time"), *self._finish("failed", now, why)]
        actions: list[Action] = []
        live = self.status in ("running", "awaiting_approval")
        if live and now >= self._interrupt_deadline:
            actions += self._finish("interrupted", now, "interrupted (claude ignored the interrupt)")
            actions.insert(0, StopChild("it did not honour an interrupt in time"))
        elif live and now >= self._response_deadline:
            if self._remote_silence_s is not None:
                why = f"no word from the remote team for {self._remote_silence_s:g} s (responseTimeout)"
            else:
                why = f"no output from claude for {self._response_timeout_s:g} s (responseTimeout)"
            actions += self._finish("timed_out", now, why)
            actions.insert(0, StopChild("response timeout"))
        if not self.caller_replied and now >= self._caller_deadline:
            self.caller_replied = True
            actions.append(ReplyToCaller())
        return actions

    # --- internals ----------------------------------------------------------------

    def _finish(self, status: TellStatus, now: float, error: str = "") -> list[Action]:
        self.status = status
        self._handoff_deadline = None
        self._approvals_pending = 0
        self.error = error
        self.finished_at = now
        self._response_deadline = self._interrupt_deadline = math.inf
        if self.caller_replied:
            return []
        self.caller_replied = True
        self.caller_got_end = True
        return [ReplyToCaller()]

    def _require(self, event: str, *states: TellStatus) -> None:
        if self.status not in states:
            raise IllegalTransition(f"{event}() on a tell that is {self.status}")


# claude's words when it has no credentials ("Not logged in · Please run /login"): its own
# fix (/login) is for a person at a terminal, not for a claude that irisd starts.
NO_CREDENTIALS = ("Not logged in", "Invalid API key")
CREDENTIALS_FIX = (
    "irisd's claude has no credentials: put ANTHROPIC_API_KEY=... in $IRIS_HOME/irisd.env "
    "(~/.iris/irisd.env by default), then 'iris reload'; 'iris doctor' checks it"
)


def claude_failed(line: ResultLine) -> str:
    """The error of a turn claude ended as failed: what it said, and Iris's fix where
    claude's own would not help (a missing login)."""
    said = line.result or "; ".join(line.errors) or line.subtype
    if said.startswith(NO_CREDENTIALS):
        return f"{said}: {CREDENTIALS_FIX}"
    return said


def budget_reached(line: ResultLine) -> str:
    """The error of a tell that claude stopped at its --max-budget-usd (as it says it)."""
    said = "; ".join(line.errors) or "reached its maximum budget"
    spent = f" after spending ${line.total_cost_usd:.4f}" if line.total_cost_usd is not None else ""
    return (
        f"claude stopped{spent}: {said} (the tell's --max-budget-usd); what it wrote so far is kept. "
        "Send it again with a higher --max-budget-usd, or without one"
    )
