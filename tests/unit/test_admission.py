"""Admission of a tell, decided on frozen facts: each refusal with its message."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from iris_common.config import BudgetConfig, Settings
from irisd.budget import RateWindow, Spending
from irisd.pool.pair import TellLink
from irisd.tell.admission import (
    Admit,
    Candidate,
    Facts,
    PairKey,
    Refuse,
    admit,
    check_message,
    check_wait,
    persist_problem,
    result_wait_problem,
)
from protocol.errors import (
    BudgetError,
    ClaudeError,
    InvalidRequestError,
    LoopError,
    RateLimitedError,
    TeamUnavailableError,
)
from protocol.limits import MAX_MESSAGE_CHARS
from protocol.messages import ChainRef, Tell


@dataclass(frozen=True)
class Snapshot:
    key: PairKey
    current: TellLink | None


def facts(**changes: object) -> Facts:
    given: dict[str, object] = {
        "settings": Settings(),
        "pairs": [],
        "spending": Spending(),
        "rate": RateWindow(None),
        "now": 100.0,
    }
    given.update(changes)
    return Facts(**given)  # type: ignore[arg-type]


def tell(to_team: str = "beta", message: str = "hi", **changes: object) -> Candidate:
    given: dict[str, object] = {"from_team": "alpha", "to_team": to_team, "message": message, "timeout_ms": 0}
    given.update(changes)
    return Candidate(**given)  # type: ignore[arg-type]


def refused(decision: object) -> Refuse:
    assert isinstance(decision, Refuse), decision
    return decision


# A chain external -> alpha -> beta: beta's claude is answering; its tells are nested.
CHAIN = [
    Snapshot((None, "alpha"), TellLink("t1", None, "alpha", "c1", 0)),
    Snapshot(("alpha", "beta"), TellLink("t2", "alpha", "beta", "c1", 1)),
    Snapshot(("gamma", "delta"), TellLink("t9", "gamma", "delta", "c9", 0)),  # another chain
]


def test_a_first_tell_is_admitted_and_starts_a_chain() -> None:
    assert admit(tell(), facts()) == Admit(chain_id="", hops=0)


def test_a_nested_tell_continues_its_callers_chain_one_hop_further() -> None:
    decision = admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=CHAIN))
    assert decision == Admit(chain_id="c1", hops=2)
    external = admit(tell("gamma", parent_pair="external->alpha"), facts(pairs=CHAIN))
    assert external == Admit(chain_id="c1", hops=1)


def test_a_nested_tell_whose_caller_already_ended_starts_a_chain() -> None:
    assert admit(tell("alpha", parent_pair="beta->gamma"), facts(pairs=CHAIN)) == Admit("", 0)


def test_an_unavailable_team_is_refused_with_the_fix() -> None:
    why = "team 'beta' is unavailable: its folder /x does not exist; create it"
    refusal = refused(admit(tell(), facts(unavailable=why)))
    assert (refusal.error, refusal.message, refusal.recorded) == (TeamUnavailableError, why, "")
    assert isinstance(refusal.exception(), TeamUnavailableError) and refusal.exception().message == why


def test_a_claude_that_would_not_start_is_refused_before_it_is_queued() -> None:
    refusal = refused(admit(tell(), facts(launch_problem="claude refuses to run as root")))
    assert (refusal.error, refusal.message) == (ClaudeError, "claude refuses to run as root")


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("a\x00b", "the message holds a NUL character (at position 1); it cannot be passed on as it is: "
                   "remove it (e.g. tr -d '\\000'), or send binary data as a file"),
        ("  \n", "the message is empty; say what the team should do"),
        ("x" * (MAX_MESSAGE_CHARS + 1), f"the message has {MAX_MESSAGE_CHARS + 1} characters, over the "
                                         f"{MAX_MESSAGE_CHARS} limit; point the team at a file instead"),
    ],
)
def test_a_message_that_cannot_be_passed_on_is_refused(message: str, said: str) -> None:
    refusal = refused(admit(tell(message=message), facts()))
    assert (refusal.error, refusal.message) == (InvalidRequestError, said)
    with pytest.raises(InvalidRequestError, match="the message"):
        check_message(message)


def test_a_wait_out_of_range_is_refused_with_a_hint_for_seconds() -> None:
    refusal = refused(admit(tell(timeout_ms=5), facts()))
    assert refusal.error is InvalidRequestError
    assert refusal.message == (
        "timeout 5 ms is out of range; did you mean 5000 (5 s)? use -1 (return at once), "
        "0 (wait for the answer) or 1000 to 3600000 ms"
    )
    assert refused(admit(tell(timeout_ms=-2), facts())).message.startswith("timeout -2 ms is out of range; use -1")
    for fine in (-1, 0, 1000, 3_600_000):
        check_wait(fine)
    with pytest.raises(InvalidRequestError):
        check_wait(3_600_001)


def test_a_wait_for_a_result_has_no_minus_one() -> None:
    assert result_wait_problem(0) == "" and result_wait_problem(1000) == ""
    assert result_wait_problem(-1) == "wait -1 ms is out of range; use 0 (answer at once) or 1000 to 3600000 ms"
    assert "did you mean 2000 (2 s)?" in result_wait_problem(2)


@pytest.mark.parametrize("budget", [0.0, -1.0, 10_001.0])
def test_a_max_budget_that_is_not_one_is_refused(budget: float) -> None:
    refusal = refused(admit(tell(max_budget_usd=budget), facts()))
    assert refusal.error is InvalidRequestError
    assert refusal.message == (
        f"max budget {budget!r} USD is not a budget; give a positive number of dollars up to 10000 (e.g. 0.5), "
        "or leave it out"
    )


def test_a_loop_back_to_a_waiting_team_is_refused_and_recorded() -> None:
    refusal = refused(admit(tell("alpha", parent_pair="alpha->beta"), facts(pairs=CHAIN)))
    problem = "loop: alpha is already waiting in this chain (external -> alpha -> beta -> alpha)"
    assert refusal.error is LoopError
    assert refusal.message == f"{problem}; answer from what you know instead of asking alpha"
    assert refusal.recorded == problem  # the refused tell is stored with this reason


def test_a_chain_past_the_hop_limit_is_refused_and_recorded() -> None:
    settings = Settings(hop_limit=1)
    refusal = refused(admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=CHAIN, settings=settings)))
    problem = "this tell would be hop 2 of a chain of nested tells; the limit is 1"
    assert (refusal.error, refusal.recorded) == (LoopError, problem)
    assert refusal.message == f"{problem}; answer from what you know instead of asking gamma"


def test_a_tell_from_another_iris_continues_its_chain_and_its_hop_limit_holds() -> None:
    came = ChainRef(chain_id="far-1", hops=2)
    assert admit(tell(from_team="a2a:crm", across=came), facts()) == Admit(chain_id="far-1", hops=3)
    refusal = refused(admit(tell(from_team="a2a:crm", across=came), facts(settings=Settings(hop_limit=2))))
    problem = "this tell would be hop 3 of a chain of nested tells that came from another Iris; the limit is 2"
    assert (refusal.error, refusal.recorded) == (LoopError, problem)
    # Inside this Iris, the parent's chain is the one that counts.
    nested = admit(tell("gamma", parent_pair="alpha->beta", across=came), facts(pairs=CHAIN))
    assert nested == Admit(chain_id="c1", hops=2)


def test_a_spent_budget_refuses_with_what_was_spent() -> None:
    settings = Settings(budget=BudgetConfig(daily_usd=5.0))
    refusal = refused(admit(tell(), facts(settings=settings, spending=Spending(today_all=5.0))))
    assert refusal.error is BudgetError and refusal.recorded == ""
    assert refusal.message.startswith("not sent: all teams together have spent $5.00 today")
    team = refused(admit(tell(), facts(team_daily_usd=1.0, spending=Spending(today_team=1.0))))
    assert team.message.startswith("not sent: team 'beta' has spent $1.00 today")


def test_the_chain_budget_counts_only_for_a_nested_tell() -> None:
    settings = Settings(budget=BudgetConfig(chain_usd=0.5))
    spent = Spending(chain=0.5)
    assert admit(tell("gamma"), facts(settings=settings, spending=spent)) == Admit("", 0)
    refusal = refused(admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=CHAIN, settings=settings,
                                                                             spending=spent)))
    assert refusal.error is BudgetError and "the chain stops here" in refusal.message


def test_a_pair_over_its_rate_is_refused_with_when_to_send_and_nothing_is_counted() -> None:
    rate = RateWindow(2)
    rate.record(("alpha", "beta"), 10.0)
    rate.record(("alpha", "beta"), 40.0)
    refusal = refused(admit(tell(), facts(rate=rate, now=55.0)))
    assert refusal.error is RateLimitedError
    assert refusal.message == (
        "alpha->beta sent 2 tells in the last minute (settings.rateLimit); send this one in 15 s, "
        "or raise settings.rateLimit in config.yaml and run 'iris reload'"
    )
    assert admit(tell(from_team=None), facts(rate=rate, now=55.0)) == Admit("", 0)  # another pair
    assert admit(tell(), facts(rate=rate, now=70.0)) == Admit("", 0)  # the first one left the window
    assert rate.wait_s(("alpha", "beta"), 70.0) is None  # admit only reads the window


def test_checks_come_in_order_the_team_first() -> None:
    everything_wrong = facts(unavailable="gone", launch_problem="root", pairs=CHAIN)
    assert refused(admit(tell("alpha", message="", parent_pair="alpha->beta"), everything_wrong)).message == "gone"
    wrong_message_and_loop = refused(admit(tell("alpha", message="", parent_pair="alpha->beta"), facts(pairs=CHAIN)))
    assert wrong_message_and_loop.error is InvalidRequestError


def test_a_persisted_tell_is_refused_a_max_budget_and_a_ttl_out_of_range() -> None:
    assert persist_problem(Tell(to_team="beta", message="hi", persist=True)) == ""
    assert persist_problem(Tell(to_team="beta", message=" ", persist=True)) == (
        "the message is empty; say what the team should do"
    )
    assert persist_problem(Tell(to_team="beta", message="hi", persist=True, max_budget_usd=1.0)) == (
        "a stored tell (persist) cannot carry a max budget yet; send it without persist to give it one, "
        "or rely on settings.budget and the team's budget.dailyUsd"
    )
    assert persist_problem(Tell(to_team="beta", message="hi", persist=True, ttl_days=0)).startswith(
        "a time to live of 0 days (ttl_days) is out of range"
    )
