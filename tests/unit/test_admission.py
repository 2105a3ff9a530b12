"""Admission of a tell, decided on frozen facts: each refusal with its message."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
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
    chain_problem,
    check_message,
    check_wait,
    continued,
    parent_tell,
    persist_problem,
    result_wait_problem,
    self_tell_problem,
    stored_chain,
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
    Snapshot((None, "alpha", ""), TellLink("t1", None, "alpha", "c1", 0, ("external", "alpha"))),
    Snapshot(("alpha", "beta", ""), TellLink("t2", "alpha", "beta", "c1", 1, ("external", "alpha", "beta"))),
    Snapshot(("gamma", "delta", ""), TellLink("t9", "gamma", "delta", "c9", 0, ("gamma", "delta"))),  # another chain
]


def test_a_first_tell_is_admitted_and_starts_a_chain() -> None:
    assert admit(tell(), facts()) == Admit(chain_id="", hops=0, path=("alpha", "beta"))


def test_a_nested_tell_continues_its_callers_chain_one_hop_further() -> None:
    decision = admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=CHAIN))
    assert decision == Admit(chain_id="c1", hops=2, path=("external", "alpha", "beta", "gamma"))
    external = admit(tell("gamma", parent_pair="external->alpha"), facts(pairs=CHAIN))
    assert external == Admit(chain_id="c1", hops=1, path=("external", "alpha", "gamma"))


def test_a_nested_tell_from_a_threads_claude_continues_that_threads_chain() -> None:
    threaded = [
        *CHAIN,
        Snapshot(("alpha", "beta", "auth"), TellLink("t3", "alpha", "beta", "c3", 1, ("external", "alpha", "beta"))),
    ]
    decision = admit(tell("gamma", parent_pair="alpha->beta#auth"), facts(pairs=threaded))
    assert decision == Admit(chain_id="c3", hops=2, path=("external", "alpha", "beta", "gamma"))
    default = admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=threaded))
    assert isinstance(default, Admit) and default.chain_id == "c1"  # the default thread's, not the thread's


def test_a_nested_tell_whose_caller_already_ended_starts_a_chain() -> None:
    assert admit(tell("alpha", parent_pair="beta->gamma"), facts(pairs=CHAIN)) == Admit("", 0, ("alpha", "alpha"))


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
    came = ChainRef(chain_id="far-1", hops=2, path=["web", "crm"])
    assert admit(tell(from_team="a2a:crm", across=came), facts()) == Admit("far-1", 3, ("web", "crm", "beta"))
    refusal = refused(admit(tell(from_team="a2a:crm", across=came), facts(settings=Settings(hop_limit=2))))
    problem = "this tell would be hop 3 of a chain of nested tells; the limit is 2"  # the same words as inside
    assert (refusal.error, refusal.recorded) == (LoopError, problem)
    # Inside this Iris, the parent's chain is the one that counts.
    nested = admit(tell("gamma", parent_pair="alpha->beta", across=came), facts(pairs=CHAIN))
    assert nested == Admit(chain_id="c1", hops=2, path=("external", "alpha", "beta", "gamma"))


def link(from_team: str, to_team: str, hops: int, *path: str) -> Snapshot:
    """A running tell of chain c1, with the teams waiting in it."""
    return Snapshot((from_team, to_team, ""), TellLink(f"t-{to_team}", from_team, to_team, "c1", hops, path))


def test_the_loop_refusal_prints_the_chain_as_it_went_and_a_sibling_is_not_waiting() -> None:
    # alpha -> beta, which asked gamma and delta at once (a fan-out); gamma asked epsilon.
    fan = [
        link("beta", "delta", 1, "alpha", "beta", "delta"),
        link("beta", "gamma", 1, "alpha", "beta", "gamma"),
        link("alpha", "beta", 0, "alpha", "beta"),
        link("gamma", "epsilon", 2, "alpha", "beta", "gamma", "epsilon"),
    ]
    loop = refused(admit(tell("alpha", from_team="epsilon", parent_pair="gamma->epsilon"), facts(pairs=fan)))
    assert loop.recorded == "loop: alpha is already waiting in this chain (alpha -> beta -> gamma -> epsilon -> alpha)"
    short = refused(admit(tell("alpha", from_team="gamma", parent_pair="beta->gamma"), facts(pairs=fan)))
    assert short.recorded == "loop: alpha is already waiting in this chain (alpha -> beta -> gamma -> alpha)"
    # delta answers beta, not epsilon: nobody in epsilon's line waits for it.
    sibling = admit(tell("delta", from_team="epsilon", parent_pair="gamma->epsilon"), facts(pairs=fan))
    assert sibling == Admit("c1", 3, ("alpha", "beta", "gamma", "epsilon", "delta"))


def test_one_check_holds_the_hop_limit_and_the_loop_guard_for_every_chain() -> None:
    chain = ChainRef(chain_id="c", hops=1, path=["web", "alpha"])
    assert chain_problem(chain, "beta", 4) == ""
    assert chain_problem(ChainRef(chain_id="c", hops=4), "beta", 4) == (
        "this tell would be hop 5 of a chain of nested tells; the limit is 4"
    )
    assert chain_problem(chain, "alpha", 4) == "loop: alpha is already waiting in this chain (web -> alpha -> alpha)"
    # Another Iris's chain that closes a loop here is refused and recorded like a nested tell.
    refusal = refused(admit(tell("alpha", from_team="a2a:web", across=chain), facts()))
    assert (refusal.error, refusal.recorded) == (LoopError, chain_problem(chain, "alpha", 4))


def test_a_stored_tell_keeps_its_chain_with_its_sender_as_the_only_one_waiting() -> None:
    sent_in = continued(parent_tell("alpha->beta", CHAIN), None)
    assert sent_in == ChainRef(chain_id="c1", hops=1, path=["external", "alpha", "beta"])
    stored = stored_chain(sent_in, "beta")
    assert stored == ChainRef(chain_id="c1", hops=1, path=["beta"])
    # Delivered, it continues the chain one hop further; alpha is not waiting any more.
    assert admit(tell("alpha", from_team="beta", across=stored), facts()) == Admit("c1", 2, ("beta", "alpha"))
    # Two teams storing tells for each other stop at the hop limit.
    at_limit = ChainRef(chain_id="c1", hops=4, path=["alpha"])
    refusal = refused(admit(tell("beta", from_team="alpha", across=at_limit, kind="notification"), facts()))
    assert refusal.recorded == "this tell would be hop 5 of a chain of nested tells; the limit is 4"
    assert stored_chain(None, "alpha") is None  # sent outside a chain: it starts one when delivered


def test_a_stored_tell_to_its_own_sender_is_refused_with_what_to_do() -> None:
    assert self_tell_problem("alpha", "beta") == "" and self_tell_problem(None, "beta") == ""
    assert self_tell_problem("alpha", "alpha") == (
        "alpha cannot store a tell for itself (persist): it would be delivered to alpha as a new tell, "
        "which may store another; keep the note in a file, or tell another team"
    )


def test_a_chain_carries_no_negative_hops_and_no_endless_path() -> None:
    decode = msgspec.json.Decoder(ChainRef).decode
    assert decode(b'{"chain_id": "c", "hops": 2, "path": ["a"]}') == ChainRef(chain_id="c", hops=2, path=["a"])
    with pytest.raises(msgspec.ValidationError, match=r"Expected `int` >= 0 - at `\$.hops`"):
        decode(b'{"chain_id": "c", "hops": -1}')
    with pytest.raises(msgspec.ValidationError, match=r"length <= 64 - at `\$.path`"):
        decode(msgspec.json.encode({"chain_id": "c", "path": ["a"] * 65}))
    with pytest.raises(msgspec.ValidationError, match=r"length <= 256 - at `\$.path\[0\]`"):
        decode(msgspec.json.encode({"chain_id": "c", "path": ["a" * 257]}))


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
    assert admit(tell("gamma"), facts(settings=settings, spending=spent)) == Admit("", 0, ("alpha", "gamma"))
    refusal = refused(admit(tell("gamma", parent_pair="alpha->beta"), facts(pairs=CHAIN, settings=settings,
                                                                             spending=spent)))
    assert refusal.error is BudgetError and "the chain stops here" in refusal.message


@pytest.mark.parametrize(("ask", "more"), [(False, None), (True, 0.5), (0.25, 0.25), (0.0, None)])
def test_a_chain_at_its_budget_may_ask_the_person_to_go_on(ask: bool | float, more: float | None) -> None:
    """settings.budget.askToExceed: true offers chainUsd more, a number that much, false or 0 nothing."""
    settings = Settings(budget=BudgetConfig(chain_usd=0.5, ask_to_exceed=ask))
    nested = tell("gamma", parent_pair="alpha->beta")
    refusal = refused(admit(nested, facts(pairs=CHAIN, settings=settings, spending=Spending(chain=0.5))))
    assert refusal.exceed_usd == more
    if more is not None:
        assert refusal.question.endswith(f"its next tell goes to gamma. Continue for up to ${more:g} more?")
    # What the person allowed grows the chain's budget; the daily budgets are never asked about.
    grown = facts(pairs=CHAIN, settings=settings, spending=Spending(chain=0.7), chain_extra_usd=0.5)
    assert admit(nested, grown) == Admit("c1", 2, ("external", "alpha", "beta", "gamma"))
    daily = Settings(budget=BudgetConfig(daily_usd=1.0, ask_to_exceed=True, chain_usd=0.5))
    assert refused(admit(nested, facts(pairs=CHAIN, settings=daily, spending=Spending(today_all=1.0, chain=0.0)))
                   ).exceed_usd is None


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
    assert admit(tell(from_team=None), facts(rate=rate, now=55.0)) == Admit("", 0, ("external", "beta"))  # another pair
    assert admit(tell(), facts(rate=rate, now=70.0)) == Admit("", 0, ("alpha", "beta"))  # the first one left the window
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
    assert persist_problem(Tell(to_team="beta", message="hi", persist=True, thread="auth")).startswith(
        "a stored tell (persist) cannot go to a thread yet (thread 'auth')"
    )
    assert persist_problem(Tell(to_team="beta", message="hi", persist=True, ttl_days=0)).startswith(
        "a time to live of 0 days (ttl_days) is out of range"
    )
