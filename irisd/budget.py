"""Budgets and the per-pair rate limit: pure decisions on plain numbers, no I/O.

How it works: before a tell is queued, the tell service reads what was spent (from the
ledger) and asks ``refusal``; a budget that is already reached refuses the tell before
any claude turn, with a message that names the budget, what was spent and how to raise
it. A nested tell carries the spending of its chain, so a chain that went over its
budget half-way is stopped at its next hop — unless ``settings.budget.askToExceed`` is
on: then the person is asked first (``exceed_question``) whether the chain may go on for
``more_usd`` more, and the chain's budget grows by that much if they say yes.
``RateWindow`` counts each pair's tells over the last minute (``wait_s`` asks, ``record``
counts); time is an argument.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable

import msgspec

from iris_common.money import usd

WINDOW_S = 60.0


class Budgets(msgspec.Struct, frozen=True):
    """Limits in USD; None is no limit."""

    daily_usd: float | None = None  # settings.budget.dailyUsd: all teams, today
    team_daily_usd: float | None = None  # teams.NAME.budget.dailyUsd: this team, today
    chain_usd: float | None = None  # settings.budget.chainUsd: one chain of nested tells

    @property
    def any(self) -> bool:
        return (self.daily_usd, self.team_daily_usd, self.chain_usd) != (None, None, None)


class Spending(msgspec.Struct, frozen=True):
    """What was spent: today by all teams, today on the team asked, and by the chain the
    tell would continue (None for a tell that starts a chain)."""

    today_all: float = 0.0
    today_team: float = 0.0
    chain: float | None = None


def chain_reached(spending: Spending, budgets: Budgets) -> bool:
    """The chain's budget is what refuses (the one the person may be asked to exceed)."""
    return budgets.chain_usd is not None and spending.chain is not None and spending.chain >= budgets.chain_usd


def more_usd(ask_to_exceed: bool | float, chain_usd: float | None) -> float | None:
    """How much more a chain may spend if the person says yes (None: do not ask)."""
    if ask_to_exceed is False or chain_usd is None:
        return None
    more = chain_usd if ask_to_exceed is True else float(ask_to_exceed)
    return more if more > 0 else None


def exceed_question(to_team: str, spending: Spending, budgets: Budgets, more: float) -> str:
    """What the person is asked when a chain reaches its budget."""
    return (
        f"This chain of nested tells has spent {usd(spending.chain or 0.0)}, reaching its budget "
        f"(settings.budget.chainUsd: {usd(budgets.chain_usd or 0.0)}); its next tell goes to {to_team}. "
        f"Continue for up to {usd(more)} more?"
    )


def refusal(team: str, spending: Spending, budgets: Budgets) -> str | None:
    """Why a tell to ``team`` must not start, or None if every budget has room."""
    if chain_reached(spending, budgets):
        return (
            f"this chain of nested tells has spent {usd(spending.chain or 0.0)}, reaching its budget "
            f"(settings.budget.chainUsd: {usd(budgets.chain_usd or 0.0)}); the chain stops here. Answer from what "
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
