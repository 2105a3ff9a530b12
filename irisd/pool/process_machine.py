"""The process lifecycle of one pair as a pure state machine. No trio, no I/O: time is
an argument.

How it works
------------
A pair owns at most one claude child and serves its tells one at a time, in arrival
order. This machine decides when a child is started and with which session, which
tell it is handed, when it is stopped, and what its exit means. The pair's actor
feeds it events and carries out the actions it returns, in order; it arms ONE timer
at ``next_deadline()`` and calls ``handle_timer(now)`` when it fires. Tells are known
here by id only: their own lifecycle is ``irisd/tell/machine.py``.

::

               work or wake         slot_granted    session_probed    spawned
    stopped ──────────────> spawning: slot ────> probe ─────> launch ───> idle <──> processing
     ^  ^ ^                     │ retry timer ^      └── spawn_failed ──> failed   (next tell /
     │  │ └─ (crashed on start: backoff) ─────┘                           │   ^    tell ended)
     │  └──── cooldown over (a tell, a wake) ─────────────────────────────┘   │
     │                             (crashed on start too often: gave up) ─────┘
     │ exited                stop_child: sleep, eviction, idle timer, a tell's StopChild
     └─────── terminating <──────────────────────────────────────── idle | processing

* Spawning has three phases: ``slot`` (waiting for a place under maxProcesses),
  ``probe`` (may the pair's session be resumed? did it ever take a turn? the launcher
  and the store say) and ``launch`` (the child is being started). From the probe the
  machine decides: resume the session, start it under its id, or renew it (a new id)
  when its conversation is lost. A resume that finds no conversation (claude says so
  on its first line or on stderr) is retried ONCE with a renewed session, same tell.
* A child that dies before its first line "crashed on start": it is retried after a
  backoff with the same tell (``policy.start_retry_delay``); after too many the pair
  is ``failed`` and refuses tells for a cooldown, then tries again. A child that
  worked and then died ends its tell interrupted; the next tell starts a new one. But
  a child that dies having printed nothing since it was handed its tell never started
  that turn (claude's first line of a turn comes before the model is asked, so before
  any tool runs): the tell goes again to a new child, once (a claude killed while idle,
  and the next tell written to it before its exit was read).
* A tell with a budget of its own (``--max-budget-usd``) gets a child of its own:
  claude's budget caps a whole process, so the child is started with that budget for
  that one tell and stopped when the tell ends. A child with no budget never serves it,
  and a budgeted child never serves another tell.
* Iris compacts a conversation between tells (``compaction.py`` says when): the
  compaction is a tell of its own that ``compaction_queued`` puts first in the queue
  while the tell that asked for it still runs, so the child takes it right after that
  tell and before any tell waiting; never while a tell runs.
* The actor owns the requests (wake, sleep, reset) and answers them when told:
  ``Answer`` answers the request being handled, ``AwaitStart`` / ``AwaitExit`` park it
  until ``WakersDone`` / ``StoppersDone``.

Calling an event that makes no sense in the current state raises ``IllegalTransition``:
that is a bug in the caller, not a runtime condition.
"""

from __future__ import annotations

import collections
import math
from typing import Literal

import msgspec

from irisd.pool.policy import (
    ChildExit,
    Died,
    Expected,
    GiveUp,
    NewConversation,
    RetryStart,
    classify_exit,
)
from irisd.tell.machine import IllegalTransition
from protocol.messages import ProcessState

__all__ = ["IllegalTransition", "ProcessMachine"]

FAILED_COOLDOWN_S = 30.0  # a pair that gave up refuses tells this long, then tries again
NO_CONVERSATION = "No conversation found"  # what claude says when a resume finds nothing

SpawnPhase = Literal["", "slot", "probe", "launch"]
AnswerError = Literal["", "busy", "claude"]


# --- what the actor tells the machine -----------------------------------------------------


class SessionProbe(msgspec.Struct, frozen=True):
    """What the actor found out about the pair's session once it had a slot."""

    resumable: bool  # claude has its conversation (the launcher looked for the transcript)
    used: bool  # the session took at least one turn (the store says so)


# --- what the machine tells the actor to do -------------------------------------------------


class PersistState(msgspec.Struct, frozen=True):
    """The process state changed: record it and let the pool know."""

    state: ProcessState


class RequestSlot(msgspec.Struct, frozen=True):
    """Wait for a slot under maxProcesses: ``slot_granted``."""


class ProbeSession(msgspec.Struct, frozen=True):
    """Find out whether the session can be resumed: ``session_probed`` (or ``spawn_failed``)."""


class Spawn(msgspec.Struct, frozen=True):
    """Start a child: resume the session, or start it (under a new id if ``renew``).
    ``max_budget_usd``: the child is for one tell with a budget of its own (claude's
    ``--max-budget-usd`` caps a whole process). Report ``spawned`` or ``spawn_failed``."""

    resume: bool
    renew: bool = False
    max_budget_usd: float | None = None


class ReleaseSlot(msgspec.Struct, frozen=True):
    """The slot under maxProcesses is free again."""


class SendTurn(msgspec.Struct, frozen=True):
    """Hand this tell to the child. ``restarted``: the same tell again, to a new child.
    ``fresh_child``: the child has printed nothing yet (give it its start-up time).
    ``new_session``: the tell starts a new conversation (say so on it)."""

    tell_id: str
    restarted: bool = False
    fresh_child: bool = False
    new_session: bool = False


class StopChild(msgspec.Struct, frozen=True):
    """Stop the child and everything it started; ``exited`` follows."""

    reason: str


class FailTells(msgspec.Struct, frozen=True):
    """End these tells ``failed`` (the pair cannot serve them). The machine forgot them."""

    tell_ids: tuple[str, ...]
    reason: str


class InterruptTells(msgspec.Struct, frozen=True):
    """End these tells ``interrupted`` (their child is gone). The machine forgot them."""

    tell_ids: tuple[str, ...]
    reason: str


class ExpireApprovals(msgspec.Struct, frozen=True):
    """Pending permission requests can no longer be answered (the child is gone)."""

    reason: str


class RenewSession(msgspec.Struct, frozen=True):
    """Give the pair a new session id now (a reset), and answer the reset with it."""


class Answer(msgspec.Struct, frozen=True):
    """Answer the request being handled now (an error if ``error`` is set)."""

    message: str
    error: AnswerError = ""


class AwaitStart(msgspec.Struct, frozen=True):
    """Park the wake request being handled until ``WakersDone``."""


class AwaitExit(msgspec.Struct, frozen=True):
    """Park the stop request being handled until ``StoppersDone``."""


class WakersDone(msgspec.Struct, frozen=True):
    """Answer every parked wake request: the child is up, or (``error``) cannot start."""

    error: str = ""


class StoppersDone(msgspec.Struct, frozen=True):
    """Answer every parked stop request: the child is gone (or ``error``)."""

    error: str = ""


class Note(msgspec.Struct, frozen=True):
    """Something worth a log line (a warning)."""

    message: str


Action = (
    PersistState
    | RequestSlot
    | ProbeSession
    | Spawn
    | ReleaseSlot
    | SendTurn
    | StopChild
    | FailTells
    | InterruptTells
    | ExpireApprovals
    | RenewSession
    | Answer
    | AwaitStart
    | AwaitExit
    | WakersDone
    | StoppersDone
    | Note
)

_WITH_CHILD: tuple[ProcessState, ...] = ("idle", "processing", "terminating")


class ProcessMachine:
    def __init__(
        self,
        *,
        label: str,
        idle_timeout_s: float,
        now: float,
        failed_cooldown_s: float = FAILED_COOLDOWN_S,
    ) -> None:
        self.label = label
        self.state: ProcessState = "stopped"
        self.reason = ""  # why the pair is failed, or how its last child ended badly
        self.pid: int | None = None
        self.phase: SpawnPhase = ""
        self.holds_slot = False
        self.current: str | None = None  # the tell the child has (or will get again)
        self.queue: collections.deque[str] = collections.deque()
        self.last_active = now  # monotonic: the last tell served, or the last spawn
        self._idle_timeout_s = idle_timeout_s
        self._failed_cooldown_s = failed_cooldown_s
        self._wakers = 0
        self._stoppers = 0
        self._resend = False  # the current tell goes again to the next child
        self._launch_resume = False  # what the spawn under way does
        self._resumed = False  # the child was started with --resume
        self._spoke = False  # the child printed at least one line
        self._turn_heard = True  # the child printed a line since it was handed the current tell
        self._resent_unheard: str | None = None  # the tell handed again because its child died unheard
        self._conversation_lost = False  # the child said it has no conversation
        self._force_new_session = False  # the next spawn renews the session (once)
        self._new_session_pending = False  # the next tell handed out starts a conversation
        self._start_failures = 0  # consecutive crashes on start
        self._budgets: dict[str, float] = {}  # tells with a budget of their own
        self._launch_budget: float | None = None  # the budget of the spawn under way
        self._child_budget: float | None = None  # the running child's --max-budget-usd
        self._child_served = False  # the running child was handed a tell
        self._retry_at = -math.inf
        self._failed_until = -math.inf

    # --- queries ------------------------------------------------------------------

    @property
    def has_child(self) -> bool:
        return self.state in _WITH_CHILD

    @property
    def child_spoke(self) -> bool:
        return self._spoke

    @property
    def resumed(self) -> bool:
        return self._resumed

    @property
    def busy(self) -> bool:
        """A tell is running or waiting: the pair must not be evicted."""
        return self.state == "processing" or bool(self.queue) or self.current is not None

    @property
    def waiting_tells(self) -> int:
        return len(self.queue) + (1 if self.current is not None else 0)

    @property
    def start_failures(self) -> int:
        return self._start_failures

    def idle_deadline(self) -> float:
        """When the idle child is stopped (``inf`` while it is not idle)."""
        if self.state != "idle" or self.queue:
            return math.inf
        return self.last_active + self._idle_timeout_s

    def next_deadline(self) -> float:
        """The earliest time ``handle_timer`` has something to do (``inf`` if none)."""
        retry = self._retry_at if self.state == "stopped" and self._wanted() else math.inf
        return min(self.idle_deadline(), retry)

    # --- tells ---------------------------------------------------------------------

    def tell_queued(self, tell_id: str, now: float, *, max_budget_usd: float | None = None) -> list[Action]:
        """A tell joins the queue; it is handed to the child in arrival order. With
        ``max_budget_usd`` it runs on a child of its own started with that budget."""
        if tell_id == self.current or tell_id in self.queue:
            raise IllegalTransition(f"tell {tell_id} is already queued on {self.label}")
        if self.state == "failed" and now < self._failed_until:
            return [FailTells((tell_id,), self.reason)]
        self.queue.append(tell_id)
        if max_budget_usd is not None:
            self._budgets[tell_id] = max_budget_usd
        return self._advance(now)

    def tell_ended(self, tell_id: str, now: float) -> list[Action]:
        """A tell reached a final state (answered, timed out, cancelled...). A tell the
        machine already let go of (with FailTells / InterruptTells) is ignored."""
        self._budgets.pop(tell_id, None)
        if tell_id in self.queue:
            self.queue.remove(tell_id)
            return []
        if tell_id != self.current:
            return []
        self.current = None
        self._resend = False
        self.last_active = now
        if self.state != "processing":
            return self._advance(now)
        if self._child_budget is not None:  # it was started for that one tell
            return self.stop_child("its tell had a budget of its own (--max-budget-usd)")
        return self._hand_next()

    def can_compact(self, tell_id: str) -> bool:
        """Whether a compaction may follow ``tell_id``: it runs on this pair's child now,
        and the child stays for the next tell (not one started for a budget of its own)."""
        return self.state == "processing" and self.current == tell_id and self._child_budget is None

    def compaction_queued(self, compaction_id: str, after: str) -> list[Action]:
        """A compaction of the conversation, to run right after the tell ``after`` (which
        runs now) and before any tell waiting: it goes first in the queue."""
        if not self.can_compact(after):
            raise IllegalTransition(
                f"compaction_queued() after {after} on {self.label}, which is {self.state}"
                f" with {self.current or 'no tell'} running"
            )
        if compaction_id == self.current or compaction_id in self.queue:
            raise IllegalTransition(f"compaction {compaction_id} is already queued on {self.label}")
        self.queue.appendleft(compaction_id)
        return []

    # --- turns no tell asked for (pool/unsolicited_turn.py) -----------------------------------

    def unsolicited_started(self, now: float) -> list[Action]:
        """The idle child took a turn of its own: it is busy, so the next tell waits."""
        if self.state != "idle" or self.current is not None:
            return []
        return self._set("processing")

    def unsolicited_ended(self, now: float) -> list[Action]:
        """That turn ended: the child is free again, and the next tell goes now."""
        if self.state != "processing" or self.current is not None:
            return []
        self.last_active = now
        return self._hand_next()

    # --- requests --------------------------------------------------------------------

    def wake_requested(self, now: float) -> list[Action]:
        """Start the child if it is not running (a failed pair tries again at once)."""
        actions: list[Action] = []
        if self.state == "failed":
            actions += self._clear_failure()
        if self.state in ("idle", "processing"):
            return [*actions, Answer(f"{self.label} is already awake (pid {self.pid})")]
        self._wakers += 1
        return [*actions, AwaitStart(), *self._advance(now)]

    def stop_requested(self, now: float, *, force: bool, reason: str) -> list[Action]:
        """Stop the child. Without ``force`` a busy child is left alone (the answer says so);
        with it, the running tell ends interrupted (queued ones wait for a new child)."""
        if self.state == "terminating":
            self._stoppers += 1
            return [AwaitExit()]
        if not self.has_child:
            return [Answer(f"{self.label} is not running")]
        if self.busy and not force:
            return [Answer(f"{self.label} is busy with a tell; not stopped (use --force to stop it anyway)")]
        actions: list[Action] = []
        if self.current is not None:
            actions.append(InterruptTells((self.current,), f"stopped: {reason}"))
            self.current = None
            self._resend = False
        self._stoppers += 1
        return [*actions, AwaitExit(), *self.stop_child(reason)]

    def reset_requested(self, now: float) -> list[Action]:
        """Start a new conversation; refused while the pair has work or is starting a
        child (which may already have read the old session id)."""
        if self.busy or self.state == "spawning":
            return [
                Answer(
                    f"{self.label} has tells running or queued, or is starting; reset it when it is idle",
                    error="busy",
                )
            ]
        actions = self.stop_child("session reset")
        self._new_session_pending = True
        self._force_new_session = False  # the renewal happens now
        return [*actions, RenewSession()]

    def stop_child(self, reason: str) -> list[Action]:
        """Stop the child (a tell's StopChild, eviction, a reset); nothing if there is
        none or it is already being stopped."""
        if self.state not in ("idle", "processing"):
            return []
        return [*self._set("terminating"), StopChild(reason)]

    # --- the spawn -----------------------------------------------------------------------

    def slot_granted(self, now: float) -> list[Action]:
        """The pool gave the pair a slot under maxProcesses (it counts as held from now)."""
        self._require("slot_granted", "spawning", phase="slot")
        self.holds_slot = True
        self.phase = "probe"
        return [ProbeSession()]

    def session_probed(self, now: float, probe: SessionProbe) -> list[Action]:
        """What the session looks like; decide how the child opens it."""
        self._require("session_probed", "spawning", phase="probe")
        self.phase = "launch"
        renew = self._force_new_session or (not probe.resumable and probe.used)
        self._force_new_session = False
        self._launch_resume = probe.resumable and not renew
        # The child is for the tell it will be handed first, and its budget.
        first = self.current if self._resend else (self.queue[0] if self.queue else None)
        self._launch_budget = self._budgets.get(first) if first is not None else None
        actions: list[Action] = [Note("conversation lost; starting a new one")] if renew else []
        return [*actions, Spawn(resume=self._launch_resume, renew=renew, max_budget_usd=self._launch_budget)]

    def line_heard(self) -> None:
        """The child printed a line: the current tell's turn, if any, is under way."""
        self._turn_heard = True

    def spawned(self, now: float, pid: int | None) -> list[Action]:
        """The child process exists; it gets the tell that waits, if any."""
        self._require("spawned", "spawning", phase="launch")
        self.phase = ""
        self.pid = pid
        self.reason = ""  # it runs again: an old failure is no longer news
        self._resumed = self._launch_resume
        self._spoke = False
        self._conversation_lost = False
        self._new_session_pending = self._new_session_pending or not self._launch_resume
        self._child_budget = self._launch_budget
        self._child_served = False
        self.last_active = now
        actions: list[Action] = [WakersDone()] if self._wakers else []
        self._wakers = 0
        if self.current is not None and self._resend:
            self._resend = False
            return [*actions, *self._set("processing"), self._turn(self.current, restarted=True)]
        return [*actions, *self._hand_next()]

    def spawn_failed(self, now: float, reason: str) -> list[Action]:
        """No child could be started (a missing folder or executable, an unreachable
        host): the pair fails its tells, and the next tell or wake tries again at once."""
        self._require("spawn_failed", "spawning", phase=("probe", "launch"))
        self.phase = ""
        actions = self._release()
        return actions + self._enter_failed(reason, now, cooldown_s=0.0)

    # --- the child ---------------------------------------------------------------------

    def first_line(self, now: float, *, conversation_lost: bool = False) -> list[Action]:
        """The child's first line. ``conversation_lost``: it is claude saying that the
        resumed session has no conversation (the line is not the tell's; the exit follows)."""
        if not self.has_child or self._spoke:
            raise IllegalTransition(f"first_line() on {self.label}, which is {self.state}"
                                    + (" and heard from its child already" if self._spoke else ""))
        if conversation_lost and self._resumed:
            self._conversation_lost = True
            return []
        self._spoke = True
        self._start_failures = 0
        return []

    def exited(
        self, now: float, *, returncode: int | None, detail: str, conversation_lost: bool = False
    ) -> list[Action]:
        """The child is gone (``detail`` says how). ``conversation_lost``: its stderr said
        the resumed session has no conversation."""
        if not self.has_child:
            raise IllegalTransition(f"exited() on {self.label}, which is {self.state}")
        stopped_by_us = self.state == "terminating"
        lost = self._conversation_lost or (self._resumed and conversation_lost)
        verdict = classify_exit(
            ChildExit(
                stopped_by_us=stopped_by_us,
                spoke=self._spoke,
                returncode=returncode,
                conversation_lost=lost,
                renewed_already=self._force_new_session,
            ),
            self._start_failures,
        )
        self.pid = None
        self._conversation_lost = False
        actions: list[Action] = [*self._release(), ExpireApprovals("claude exited before a decision")]
        if self._stoppers:
            actions.append(StoppersDone())
            self._stoppers = 0
        match verdict:
            case NewConversation():
                actions.append(Note(f"resume failed; starting a new conversation ({detail})"))
                self._force_new_session = True
                self._resend = self.current is not None
                actions += self._set("stopped")
            case RetryStart(delay, failures):
                actions.append(Note(f"claude crashed on start ({failures} times): {detail}"))
                self._start_failures = failures
                self._retry_at = now + delay
                self._resend = self.current is not None
                actions += self._set("stopped")
            case GiveUp(failures):
                self._start_failures = failures
                return actions + self._enter_failed(
                    f"claude keeps crashing on start ({failures} times): {detail}", now
                )
            case Died() if self._unheard_turn():
                actions.append(Note(f"claude exited before it read tell {self.current}; "
                                    f"the tell goes to a new claude: {detail}"))
                self._resent_unheard = self.current
                self._resend = True
                self.reason = detail
                actions += self._set("stopped")
            case Expected() | Died():
                if isinstance(verdict, Died):
                    actions.append(Note(f"claude exited: {detail}"))
                self.reason = "" if stopped_by_us or not returncode else detail
                actions += self._set("stopped")
                if self.current is not None:
                    actions.append(InterruptTells((self.current,), detail))
                    self.current = None
                    self._resend = False
        return actions + self._advance(now)

    # --- time and the end ------------------------------------------------------------------

    def handle_timer(self, now: float) -> list[Action]:
        """Reap an idle child; start again after a crash's backoff."""
        if now >= self.idle_deadline():
            return self.stop_child(f"idle for {self._idle_timeout_s:g} s (idleTimeout)")
        return self._advance(now)

    def abandon(self, reason: str) -> list[Action]:
        """The pair is going away (irisd stops): every tell ends interrupted and every
        parked request is answered. The child is stopped by its owner's cancel scope."""
        tells = tuple(t for t in (self.current, *self.queue) if t is not None)
        actions: list[Action] = [InterruptTells(tells, reason)] if tells else []
        if self._wakers:
            actions.append(WakersDone(error="irisd is stopping"))
        if self._stoppers:
            actions.append(StoppersDone(error="irisd is stopping"))
        self._wakers = self._stoppers = 0
        self.current = None
        self.queue.clear()
        self._budgets.clear()
        self.holds_slot = False
        self.phase = ""
        self.pid = None
        self.state = "stopped"
        return actions

    # --- internals ---------------------------------------------------------------------

    def _unheard_turn(self) -> bool:
        """The child was handed the current tell and printed nothing since (once a tell)."""
        return self.current is not None and not self._turn_heard and self._resent_unheard != self.current

    def _wanted(self) -> bool:
        return bool(self.queue) or self.current is not None or self._wakers > 0

    def _advance(self, now: float) -> list[Action]:
        """Start a child if work waits, or hand the free child the next tell."""
        if self.state == "failed":
            if now < self._failed_until or not self._wanted():
                return []
            actions = self._clear_failure()
            return actions + self._advance(now)
        if self.state == "stopped":
            if self._wanted() and now >= self._retry_at:
                self.phase = "slot"
                return [*self._set("spawning"), RequestSlot()]
            return []
        if self.state == "idle" and self.current is None and self.queue:
            return self._hand_next()
        return []

    def _hand_next(self) -> list[Action]:
        """The running child is free: hand it the next tell, or stop it when that tell
        needs a child with another budget (the exit starts one); ``idle`` if none waits."""
        if not self.queue:
            return self._set("idle")
        budget = self._budgets.get(self.queue[0])
        fits = budget is None and self._child_budget is None
        fits = fits or (budget is not None and budget == self._child_budget and not self._child_served)
        if not fits:
            return [*self._set("terminating"), StopChild("the next tell has a budget of its own (--max-budget-usd)")]
        self.current = self.queue.popleft()
        return [*self._set("processing"), self._turn(self.current, restarted=False)]

    def _turn(self, tell_id: str, *, restarted: bool) -> SendTurn:
        new_session, self._new_session_pending = self._new_session_pending, False
        self._child_served = True
        self._turn_heard = False
        return SendTurn(tell_id, restarted=restarted, fresh_child=not self._spoke, new_session=new_session)

    def _enter_failed(self, reason: str, now: float, cooldown_s: float | None = None) -> list[Action]:
        self.reason = reason
        cooldown = self._failed_cooldown_s if cooldown_s is None else cooldown_s
        self._failed_until = now + cooldown
        self._resend = False
        actions = self._set("failed")
        if self._wakers:
            actions.append(WakersDone(error=f"{self.label} cannot start: {reason}"))
            self._wakers = 0
        tells = tuple(t for t in (self.current, *self.queue) if t is not None)
        if tells:
            actions.append(FailTells(tells, reason))
        self.current = None
        self.queue.clear()
        return actions

    def _clear_failure(self) -> list[Action]:
        self._start_failures = 0
        self._retry_at = -math.inf
        self._failed_until = -math.inf
        self.reason = ""
        return self._set("stopped")

    def _release(self) -> list[Action]:
        if not self.holds_slot:
            return []
        self.holds_slot = False
        return [ReleaseSlot()]

    def _set(self, state: ProcessState) -> list[Action]:
        if state == self.state:
            return []
        self.state = state
        return [PersistState(state)]

    def _require(
        self, event: str, state: ProcessState, *, phase: SpawnPhase | tuple[SpawnPhase, ...] = ()
    ) -> None:
        phases = (phase,) if isinstance(phase, str) else phase
        if self.state != state or (phases and self.phase not in phases):
            where = f"{self.state}" + (f" ({self.phase})" if self.phase else "")
            raise IllegalTransition(f"{event}() on {self.label}, which is {where}")
