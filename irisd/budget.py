"""Budgets and the per-pair rate limit: pure decisions on plain numbers, no I/O.

How it works: before a tell is queued, the tell service reads what was spent (from the
ledger) and asks ``refusal``; a budget that is already reached refuses the tell before
any claude turn, with a message that names the budget, what was spent and how to raise
it. A nested tell carries the spending of its chain, so a chain that went over its
budget half-way is stopped at its next hop. ``RateWindow`` counts each pair's tells over
the last minute (``wait_s`` asks, ``record`` counts); time is an argument.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable
from dataclasses import dataclass

from iris_common.money import usd

WINDOW_S = 60.0


@dataclass(frozen=True)
class Budgets:
    """Limits in USD; None is no limit."""

    daily_usd: float | None = None  # settings.budget.dailyUsd: all teams, today
    team_daily_usd: float | None = None  # teams.NAME.budget.dailyUsd: this team, today
    chain_usd: float | None = None  # settings.budget.chainUsd: one chain of nested tells

    @property
    def any(self) -> bool:
        return (self.daily_usd, self.team_daily_usd, self.chain_usd) != (None, None, None)


@dataclass(frozen=True)
class Spending:
    """What was spent: today by all teams, today on the team asked, and by the chain the
    tell would continue (None for a tell that starts a chain)."""

    today_all: float = 0.0
    today_team: float = 0.0
    chain: float | None = None


def refusal(team: str, spending: Spending, budgets: Budgets) -> str | None:
    """Why a tell to ``team`` must not start, or None if every budget has room."""
    if budgets.chain_usd is not None and spending.chain is not None and spending.chain >= budgets.chain_usd:
        return (
            f"this chain of nested tells has spent {usd(spending.chain)}, reaching its budget "
            f"(settings.budget.chainUsd: {usd(budgets.chain_usd)}); the chain stops here. Answer from what "
            "you know, or raise settings.budget.chainUsd in config.yaml and run 'iris reload'"
        )
    if budgets.team_daily_usd is not None and spending.today_team >= budgets.team_daily_usd:
        return (
            f"team {team!r} has spent {usd(spending.today_team)} today, reaching its daily budget "
            f"(teams.{team}.budget.dailyUsd: {usd(budgets.team_daily_usd)}); raise it in config.yaml and "
            "run 'iris reload', or wait until midnight"
        )
    if budgets.daily_usd is not None and spending.today_all >= budgets.daily_usd:
        return (
            f"all teams together have spent {usd(spending.today_all)} today, reaching the daily budget "
            f"(settings.budget.dailyUsd: {usd(budgets.daily_usd)}); raise it in config.yaml and "
            "run 'iris reload', or wait until midnight"
        )
    return None


class RateWindow:
    """At most ``per_minute`` admissions per key in any 60 s (None: no limit)."""

    def __init__(self, per_minute: int | None) -> None:
        self.per_minute = per_minute
        self._times: dict[Hashable, collections.deque[float]] = {}

    def admit(self, key: Hashable, now: float) -> float | None:
        """Record an admission and return None, or return the seconds until one is
        allowed (nothing recorded)."""
        wait_s = self.wait_s(key, now)
        if wait_s is None:
            self.record(key, now)
        return wait_s

    def wait_s(self, key: Hashable, now: float) -> float | None:
        """None if ``key`` may be admitted at ``now``, else the seconds until it may
        (a query: nothing is recorded)."""
        if self.per_minute is None:
            return None
        recent = [t for t in self._times.get(key, ()) if t > now - WINDOW_S]
        return recent[-self.per_minute] + WINDOW_S - now if len(recent) >= self.per_minute else None

    def record(self, key: Hashable, now: float) -> None:
        """Count an admission of ``key`` at ``now``."""
        if self.per_minute is None:
            return
        times = self._times.setdefault(key, collections.deque())
        while times and times[0] <= now - WINDOW_S:
            times.popleft()
        times.append(now)

    def forget_idle(self, now: float) -> None:
        """Drop keys with nothing in the window (bounded memory)."""
        for key in [k for k, t in self._times.items() if not t or t[-1] <= now - WINDOW_S]:
            del self._times[key]
