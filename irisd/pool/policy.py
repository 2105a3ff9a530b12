"""Pool policy, pure: which pair may start a child, which idle child to evict, how long
to wait before retrying a child that crashes on start. Time is an argument."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.messages import ProcessState

PairKey = tuple[str | None, str]

LIVE_STATES: frozenset[ProcessState] = frozenset({"spawning", "idle", "processing", "terminating"})
START_RETRY_DELAYS_S = (0.25, 1.0)  # after the 1st and 2nd crash on start; the 3rd gives up


@dataclass(frozen=True)
class PairView:
    """What the policy needs to know of a pair."""

    key: PairKey
    state: ProcessState
    last_used_at: float  # monotonic time of the last tell served (or spawn)
    queued: int = 0
    holds_slot: bool = False  # counted against maxProcesses


@dataclass(frozen=True)
class Grant:
    """Start the child now."""


@dataclass(frozen=True)
class Evict:
    """Stop this idle pair's child first, then ask again."""

    key: PairKey


@dataclass(frozen=True)
class Wait:
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
    victim = least_recently_used_idle(holders)
    if victim is not None:
        return Evict(victim)
    return Wait(busy=len(holders))


def least_recently_used_idle(pairs: list[PairView]) -> PairKey | None:
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
