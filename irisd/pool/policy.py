"""Pool policy, pure: which pair may start a child, which idle child to evict, how long
to wait before retrying a child that crashes on start. Time is an argument.

Spares (``settings.sessions.spares``: started, idle claudes waiting to be a new pair's)
hold slots like pairs, are the first to go when a pair needs a slot, and start only into
a slot that is free: a spare never evicts anything."""

from __future__ import annotations

import msgspec

from protocol.messages import ProcessState
from protocol.pairs import PairKey as PairKey

START_RETRY_DELAYS_S = (0.25, 1.0)  # after the 1st and 2nd crash on start; the 3rd gives up


class PairView(msgspec.Struct, frozen=True):
    """What the policy needs to know of a pair."""

    key: PairKey
    state: ProcessState
    last_used_at: float  # monotonic time of the last tell served (or spawn)
    queued: int = 0
    holds_slot: bool = False  # counted against maxProcesses
    spare: bool = False  # a spare claude, no pair's yet (pool/spares.py)


class Grant(msgspec.Struct, frozen=True):
    """Start the child now."""


class Evict(msgspec.Struct, frozen=True):
    """Stop this idle pair's child first, then ask again."""

    key: PairKey


class Wait(msgspec.Struct, frozen=True):
    """Every slot is held by a busy pair: wait until one frees up."""

    busy: int


SlotDecision = Grant | Evict | Wait


def decide_slot(requester: PairKey, pairs: list[PairView], max_processes: int) -> SlotDecision:
    """May ``requester`` start a child? Never evicts a busy pair, nor one with work queued."""
    holders = [p for p in pairs if p.holds_slot and p.key != requester]
    if len(holders) < max_processes:
        return Grant()
    if any(p.state == "terminating" for p in holders):
        return Wait(busy=len(holders))  # a slot is already on its way back: evict no more
    victim = least_recently_used_idle(holders, for_team=requester[1])
    if victim is not None:
        return Evict(victim)
    return Wait(busy=len(holders))


def may_start_spare(pairs: list[PairView], max_processes: int) -> bool:
    """A spare may start only into a free slot: it never evicts a pair, nor another spare."""
    return sum(p.holds_slot for p in pairs) < max_processes


def least_recently_used_idle(pairs: list[PairView], for_team: str = "") -> PairKey | None:
    """The idle child to stop first: a spare (another team's than ``for_team``'s, whose
    spare the new child may be; then the oldest), else the least recently used pair."""
    spares = [p for p in pairs if p.spare]
    if spares:
        return min(spares, key=lambda p: (p.key[1] == for_team, p.last_used_at)).key
    idle = [p for p in pairs if p.state == "idle" and p.queued == 0]
    if not idle:
        return None
    return min(idle, key=lambda p: p.last_used_at).key


def start_retry_delay(consecutive_failures: int) -> float | None:
    """Seconds to wait before starting again after N crashes on start; None: give up."""
    if consecutive_failures <= 0:
        return 0.0
    if consecutive_failures > len(START_RETRY_DELAYS_S):
        return None
    return START_RETRY_DELAYS_S[consecutive_failures - 1]


def idle_deadline(state: ProcessState, last_active: float, idle_timeout_s: float) -> float | None:
    """When an idle child should be reaped (None while it is not idle)."""
    return last_active + idle_timeout_s if state == "idle" else None


class ChildExit(msgspec.Struct, frozen=True):
    """What the pair knows when its child is gone."""

    stopped_by_us: bool
    spoke: bool  # it printed at least one line
    returncode: int | None
    conversation_lost: bool  # claude said it has no conversation to resume
    renewed_already: bool = False  # the pair already started a new conversation for this


class Expected(msgspec.Struct, frozen=True):
    """We stopped it (sleep, eviction, idle, timeout): nothing to recover."""


class Died(msgspec.Struct, frozen=True):
    """It exited on its own after working: its tell ends interrupted; the next one respawns."""


class NewConversation(msgspec.Struct, frozen=True):
    """The resume failed: start a new conversation and hand it the same tell (once)."""


class RetryStart(msgspec.Struct, frozen=True):
    """It crashed on start: try again after ``delay`` seconds with the same tell."""

    delay: float
    failures: int


class GiveUp(msgspec.Struct, frozen=True):
    """It crashed on start too often: the pair is failed."""

    failures: int


ExitVerdict = Expected | Died | NewConversation | RetryStart | GiveUp


def classify_exit(exit: ChildExit, start_failures: int) -> ExitVerdict:
    """What to do about a child that is gone, given how many starts failed in a row."""
    if exit.stopped_by_us:
        return Expected()
    if exit.conversation_lost and not exit.renewed_already:
        return NewConversation()
    if exit.spoke or exit.returncode == 0:
        return Died()
    failures = start_failures + 1
    delay = start_retry_delay(failures)
    return GiveUp(failures) if delay is None else RetryStart(delay, failures)
