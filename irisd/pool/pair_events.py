"""What goes into a pair's inbox, and what others see of a pair.

Other tasks post requests (``WakeRequest`` ...) and tells; the pair's spawn steps
report back (``SlotGranted`` ... ``SpawnFailed``); its child sends its lines and its exit.
Others read a pair only through the frozen ``PairSnapshot``; the pair reaches the pool
only through the narrow ``SlotPool``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from irisd.claude.launcher import Child
from irisd.claude.process import ChildEvent
from irisd.claude.spend import Spent
from irisd.pool.policy import PairKey
from irisd.pool.process_machine import SessionProbe
from irisd.tell.active import ActiveTell
from protocol.errors import IrisError
from protocol.messages import ApprovalInfo, ProcessInfo

if TYPE_CHECKING:
    from irisd.pool.approvals import Pending as BudgetAsk


class SlotPool(Protocol):
    """What a pair needs of the pool: slots under maxProcesses, and a word when its
    state changed (so that whoever waits for a slot looks again)."""

    async def acquire_slot(self, key: PairKey) -> None:
        """Wait for a slot; it counts as held from the moment this returns."""
        ...

    def release_slot(self, key: PairKey) -> None: ...
    def waiting_for_slot(self, key: PairKey) -> int:
        """How many busy processes fill the pool while this pair waits (0: it does not)."""
        ...

    def pair_changed(self) -> None: ...


class TellLink(msgspec.Struct, frozen=True):
    """Where a running tell sits in a chain of nested tells."""

    id: str
    from_team: str | None
    to_team: str
    chain_id: str
    hops: int
    path: tuple[str, ...] = ()  # the teams waiting in its chain, its own last

    @staticmethod
    def of(tell: ActiveTell) -> TellLink:
        return TellLink(tell.id, tell.from_team, tell.to_team, tell.chain_id, tell.hops, tell.path)


class PairSnapshot(msgspec.Struct, frozen=True):
    """A pair as other actors may see it: frozen, taken in one go."""

    key: PairKey
    process: ProcessInfo
    current: TellLink | None
    pending_approvals: frozenset[str]


# --- requests from other tasks (answered by the actor) -----------------------------------


class Request(msgspec.Struct, eq=False):
    """A request from another task; ``done`` is set once the actor has handled it."""

    done: trio.Event = msgspec.field(default_factory=trio.Event)
    message: str = ""
    error: IrisError | None = None

    def finish(self, message: str = "", error: IrisError | None = None) -> None:
        self.message, self.error = message, error
        self.done.set()


class WakeRequest(Request):
    pass


class StopRequest(Request):
    force: bool = False
    reason: str = ""


class ResetRequest(Request):
    pass


class WriteHeldRequest(Request):
    """Write what the pair holds (a tell's end held for a next tell's start) before a
    reader of the database reads."""


class DecideRequest(Request):
    approval_id: str = ""
    allow: bool = False
    remember: bool = False
    reason: str = ""
    by: str = ""
    content: dict[str, Any] = msgspec.field(default_factory=dict)  # an input request's answer
    approval: ApprovalInfo | None = None


class AskBudgetRequest(Request):
    """The chain of the running tell ``tell_id`` reached its budget as its claude sends the
    next tell: ask the person (``settings.budget.askToExceed``). ``asked``: the desk's record,
    whose ``done`` is set once it is decided."""

    tell_id: str = ""
    question: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    asked: BudgetAsk | None = None


class Submitted(msgspec.Struct, frozen=True):
    tell: ActiveTell


class CancelTell(msgspec.Struct, frozen=True):
    tell_id: str


# --- what the steps of a spawn report ----------------------------------------------------


class SlotGranted(msgspec.Struct, frozen=True):
    pass


class SessionProbed(msgspec.Struct, frozen=True):
    probe: SessionProbe


class Spawned(msgspec.Struct, frozen=True):
    process: Child
    session_id: str
    start: Spent | None = None  # the running cost a resumed claude starts from, if known


class SpawnFailed(msgspec.Struct, frozen=True):
    reason: str


Reporting = SlotGranted | SessionProbed | Spawned | SpawnFailed
PairEvent = (
    Submitted
    | CancelTell
    | WakeRequest
    | StopRequest
    | ResetRequest
    | DecideRequest
    | AskBudgetRequest
    | WriteHeldRequest
    | Reporting
    | ChildEvent
)

