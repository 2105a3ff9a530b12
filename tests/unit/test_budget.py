"""Budgets and the rate limit, decided on plain numbers."""

from __future__ import annotations

import datetime

from iris_common.money import day_start, usd
from irisd.budget import Budgets, RateWindow, Spending, refusal


def test_no_budget_refuses_nothing() -> None:
    assert refusal("alpha", Spending(today_all=1e9, today_team=1e9, chain=1e9), Budgets()) is None
    assert not Budgets().any


def test_the_daily_budget_refuses_once_reached_and_says_how_to_raise_it() -> None:
    budgets = Budgets(daily_usd=5.0)
    assert refusal("alpha", Spending(today_all=4.99), budgets) is None
    problem = refusal("alpha", Spending(today_all=5.0), budgets)
    assert problem is not None
    assert "$5.00" in problem and "settings.budget.dailyUsd" in problem
    assert "raise it in config.yaml and run 'iris reload'" in problem  # no restart needed


def test_a_team_budget_counts_only_that_team() -> None:
    budgets = Budgets(daily_usd=100.0, team_daily_usd=1.0)
    assert refusal("alpha", Spending(today_all=50.0, today_team=0.5), budgets) is None
    problem = refusal("alpha", Spending(today_all=50.0, today_team=1.25), budgets)
    assert problem is not None and "teams.alpha.budget.dailyUsd" in problem and "$1.25" in problem


def test_the_chain_budget_stops_a_chain_and_not_a_first_tell() -> None:
    budgets = Budgets(chain_usd=0.5)
    assert refusal("beta", Spending(chain=None), budgets) is None  # a first tell starts a chain
    assert refusal("beta", Spending(chain=0.49), budgets) is None
    problem = refusal("beta", Spending(chain=0.5), budgets)
    assert problem is not None and "settings.budget.chainUsd" in problem and "chain stops here" in problem


def test_a_zero_budget_refuses_everything() -> None:
    assert refusal("alpha", Spending(), Budgets(daily_usd=0.0)) is not None


def test_money_is_readable() -> None:
    assert usd(1234.5) == "$1,234.50"
    assert usd(0.000164) == "$0.000164"
    assert usd(0.0) == "$0"


def test_the_day_starts_at_local_midnight() -> None:
    noon = datetime.datetime(2026, 11, 23, 12, 30).astimezone().timestamp()
    start = day_start(noon)
    assert datetime.datetime.fromtimestamp(start).strftime("%Y-%m-%d %H:%M:%S") == "2026-11-23 00:00:00"


def test_the_rate_window_admits_n_per_minute_per_key() -> None:
    window = RateWindow(2)
    assert window.admit("a", 0.0) is None
    assert window.admit("a", 10.0) is None
    assert window.admit("a", 20.0) == 40.0  # the first one leaves the window at 60
    assert window.admit("b", 20.0) is None  # another pair is counted apart
    assert window.admit("a", 60.0) is None
    assert window.admit("a", 61.0) == 9.0
    window.forget_idle(200.0)
    assert window.admit("a", 200.0) is None


def test_no_rate_limit_admits_everything() -> None:
    window = RateWindow(None)
    assert all(window.admit("a", float(t)) is None for t in range(1000))
