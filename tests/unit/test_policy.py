"""Who may see and change which tell (irisd/policy.py): plain values, no daemon."""

from __future__ import annotations

import pytest

from irisd import policy
from irisd.caller import OWNER, Caller
from irisd.policy import Owned
from protocol.errors import PermissionDeniedError
from protocol.messages import Ask, Decide, HttpInfo, Reload, Request

CHILD = Caller.child("beta", "alpha->beta")  # beta's claude, answering alpha
THREAD_CHILD = Caller.child("beta", "alpha->beta#auth-refactor")  # the claude of a thread of that pair
AGENT = Caller.agent("crm")
REMOTE = Caller.remote("ws2", "beta")

BETA_TO_GAMMA = Owned("beta", "gamma", "c-1")  # beta sent it (any of beta's claudes)
ALPHA_TO_BETA = Owned("alpha", "beta", "c-2")  # the child's own pair
GAMMA_TO_DELTA = Owned("gamma", "delta", "c-2")  # deeper in the chain the child serves
GAMMA_TO_ALPHA = Owned("gamma", "alpha", "c-3")  # nobody's business of beta's
PERSON_TO_BETA = Owned(None, "beta", "c-4")  # the person's own conversation with beta
CRM = Owned("a2a:crm", "gamma", "c-5")
FROM_WS2 = Owned("alpha@ws2", "gamma", "c-6")


@pytest.mark.parametrize(
    ("caller", "thing", "chains", "seen"),
    [
        (OWNER, GAMMA_TO_ALPHA, frozenset(), True),
        (Caller.reader(), GAMMA_TO_ALPHA, frozenset(), True),
        (CHILD, BETA_TO_GAMMA, frozenset(), True),
        (CHILD, ALPHA_TO_BETA, frozenset(), True),
        (CHILD, GAMMA_TO_DELTA, frozenset(), False),
        (CHILD, GAMMA_TO_DELTA, frozenset({"c-2"}), True),
        (CHILD, GAMMA_TO_ALPHA, frozenset({"c-2"}), False),
        (CHILD, PERSON_TO_BETA, frozenset(), False),  # another pair of the same team
        (Caller.child("beta", "external->beta"), PERSON_TO_BETA, frozenset(), True),
        (AGENT, CRM, frozenset(), True),
        (AGENT, BETA_TO_GAMMA, frozenset(), False),
        (Caller.agent("erp"), CRM, frozenset(), False),
        (AGENT, PERSON_TO_BETA, frozenset(), False),
        (REMOTE, FROM_WS2, frozenset(), True),  # another team of the same irisd
        (Caller.remote("ws3", "alpha"), FROM_WS2, frozenset(), False),
        (REMOTE, BETA_TO_GAMMA, frozenset(), False),
        (REMOTE, PERSON_TO_BETA, frozenset(), False),
        # A thread belongs to its pair: the same rules as the pair's claude.
        (THREAD_CHILD, BETA_TO_GAMMA, frozenset(), True),
        (THREAD_CHILD, ALPHA_TO_BETA, frozenset(), True),
        (THREAD_CHILD, GAMMA_TO_DELTA, frozenset(), False),
        (THREAD_CHILD, GAMMA_TO_DELTA, frozenset({"c-2"}), True),
        (THREAD_CHILD, PERSON_TO_BETA, frozenset(), False),
        (Caller.child("beta", "external->beta#notes"), PERSON_TO_BETA, frozenset(), True),
    ],
)
def test_who_sees_which_tell(caller: Caller, thing: Owned, chains: frozenset[str], seen: bool) -> None:
    assert policy.sees(caller, thing, chains) is seen
    assert policy.may_change(caller, thing, chains) is (seen and caller.kind != "reader")


def test_a_refusal_names_the_caller_the_tell_and_whose_it_is() -> None:
    refusal = r"team 'beta' .* may not read tell t-9: it is gamma's tell to alpha"
    with pytest.raises(PermissionDeniedError, match=refusal):
        policy.check_sees(CHILD, GAMMA_TO_ALPHA, "tell t-9")
    with pytest.raises(PermissionDeniedError, match=r"iris-agent .* may not change tell t-9"):
        policy.check_changes(Caller.reader(), GAMMA_TO_ALPHA, "tell t-9")
    policy.check_changes(CHILD, BETA_TO_GAMMA, "tell t-1")  # its team's: no error


def test_only_the_caller_a_question_was_asked_of_answers_it() -> None:
    policy.check_answers(OWNER, "beta", "q-1")
    policy.check_answers(CHILD, "beta", "q-1")
    policy.check_answers(AGENT, "a2a:crm", "q-1")
    for caller, asked_of in ((CHILD, "alpha"), (CHILD, None), (AGENT, "beta"), (Caller.reader(), None)):
        with pytest.raises(PermissionDeniedError, match="may not answer question q-1"):
            policy.check_answers(caller, asked_of, "q-1")


def test_an_event_reaches_a_subscriber_that_may_see_its_tell() -> None:
    assert policy.event_filter(OWNER, frozenset) is None
    assert policy.event_filter(Caller.reader(), frozenset) is None
    asked: list[int] = []

    def chains() -> frozenset[str]:
        asked.append(1)
        return frozenset({"c-2"})

    wanted = policy.event_filter(CHILD, chains)
    assert wanted is not None
    assert wanted("alpha", "beta", "")  # its pair (a process event has no chain)
    assert wanted("beta", "gamma", "c-1") and not asked  # decided without asking for chains
    assert wanted("gamma", "delta", "c-2") and asked == [1]
    assert not wanted("gamma", "alpha", "c-3")
    assert not wanted("gamma", "alpha", "")
    agent = policy.event_filter(AGENT, frozenset)
    assert agent is not None and agent("a2a:crm", "gamma", "") and not agent("beta", "gamma", "")


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (Reload(), "only the person who owns irisd reloads config.yaml"),
        (Ask(question="what"), "only the person who owns irisd asks iris-agent"),
        (Decide(approval_id="a-1", allow=True), "only the person who owns irisd decides approvals"),
        (HttpInfo(), "only the person who owns irisd sees irisd's tokens"),
    ],
)
def test_a_childs_refused_owner_request_says_what_only_the_person_does(request_: Request, reason: str) -> None:
    """A team's claude that asks for a reload was told "only the person who owns irisd
    decides approvals and sees its tokens": the reason of another request."""
    with pytest.raises(PermissionDeniedError) as refused:
        CHILD.apply(request_)
    assert refused.value.message.endswith(reason)
