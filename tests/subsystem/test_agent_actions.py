"""iris-agent's actions (irisd/agent/actions.py) against a real store and hub, on trio's
autojump clock: a proposal is done only once allowed, never when denied or expired (at
exactly settings.approvalTimeout), at once when settings.agent.allow says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from fakes.core import teams_config
from irisd.agent.actions import AgentActions, as_approved, describe
from irisd.events import EventHub
from irisd.store import approvals
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.errors import InvalidRequestError
from protocol.messages import (
    AnswerQuestion,
    ApprovalEvent,
    ApprovalReply,
    CancelTell,
    PairReply,
    ProcessInfo,
    Reply,
    Request,
    Sleep,
    Tell,
    Wake,
)

BASE = 1_800_000_000.0
TIMEOUT_S = 600.0  # settings.approvalTimeout's default


def setup(tmp_path: Path, settings: str = "") -> tuple[AgentActions, list[Request], EventHub]:
    config = teams_config(tmp_path, settings)
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    hub = EventHub()
    performed: list[Request] = []

    async def perform(request: Request) -> Reply:
        performed.append(request)
        return PairReply(process=ProcessInfo(from_team=None, to_team="beta", state="idle"), message="woke beta")

    async def target(action: Any) -> str:
        return "beta"

    actions = AgentActions(config=lambda: config, store=store, hub=hub, perform=perform, target=target,
                           clock=lambda: BASE + trio.current_time())
    return actions, performed, hub


def test_what_each_action_says_it_will_do() -> None:
    assert describe(Wake(to_team="beta"), "beta") == "wake external->beta"
    assert describe(Sleep(to_team="beta", from_team="alpha", force=True), "beta") == (
        "put alpha->beta to sleep (force: cancel the tell it is serving)"
    )
    assert describe(CancelTell(tell_id="t-1"), "beta") == "cancel tell t-1 (to beta)"
    assert describe(Tell(to_team="beta", message="run\n the   tests"), "beta") == (
        "tell beta (as iris-agent): 'run the tests'"
    )
    assert describe(AnswerQuestion(question_id="q-1", text="yes"), "beta") == "answer question q-1 of beta with: 'yes'"
    long = describe(Tell(to_team="beta", message="x" * 1000), "beta")
    assert len(long) < 360 and long.endswith("…'")
    # Allowed, a tell or an answer is sent without waiting for its answer.
    assert as_approved(Tell(to_team="beta", message="hi")) == Tell(to_team="beta", message="hi", timeout_ms=-1)
    assert as_approved(Wake(to_team="beta")) == Wake(to_team="beta")


async def test_allowed_it_is_done_denied_or_expired_it_is_not(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    actions, performed, hub = setup(tmp_path)
    with trio.fail_after(10 * TIMEOUT_S), hub.subscribe() as events:
        async with trio.open_nursery() as nursery:
            await nursery.start(actions.run)
            first = await actions.act(Wake(to_team="beta"))
            assert isinstance(first, ApprovalReply) and first.approval.status == "pending" and performed == []
            allowed = await actions.decide(first.approval, allow=True, remember=False, by="me", reason="")
            assert (allowed.status, allowed.decided_by, allowed.reason) == ("allowed", "me", "done: woke beta")
            assert performed == [Wake(to_team="beta")]
            with pytest.raises(InvalidRequestError, match="already allowed by me"):
                await actions.decide(first.approval, allow=True, remember=False, by="you", reason="")

            second = await actions.act(Sleep(to_team="beta"))
            assert isinstance(second, ApprovalReply)
            with pytest.raises(InvalidRequestError, match="decided once"):
                await actions.decide(second.approval, allow=True, remember=True, by="me", reason="")
            denied = await actions.decide(second.approval, allow=False, remember=False, by="me", reason="not now")
            assert (denied.status, denied.reason) == ("denied", "not now") and len(performed) == 1

            third = await actions.act(CancelTell(tell_id="t-1"))
            assert isinstance(third, ApprovalReply)
            filed_at = trio.current_time()
            expired = None
            while expired is None:
                for event in await events.wait_batch():
                    if isinstance(event, ApprovalEvent) and event.approval.status == "expired":
                        expired = event.approval
            assert trio.current_time() - filed_at == TIMEOUT_S  # exactly settings.approvalTimeout
            assert expired.id == third.approval.id and "nothing was done" in expired.reason
            with pytest.raises(InvalidRequestError, match="already expired"):
                await actions.decide(third.approval, allow=True, remember=False, by="me", reason="")
            nursery.cancel_scope.cancel()
    assert len(performed) == 1
    stored = {a.id: a.status for a in await actions.store.call(approvals.listing, None, True)}
    assert stored == {first.approval.id: "allowed", second.approval.id: "denied", third.approval.id: "expired"}


async def test_settings_agent_allow_does_it_at_once_but_never_an_answer(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    actions, performed, _ = setup(tmp_path, "  agent:\n    allow: [team_wake]\n")
    reply = await actions.act(Wake(to_team="beta"))
    assert isinstance(reply, PairReply) and performed == [Wake(to_team="beta")]
    (done,) = await actions.store.call(approvals.listing, None, True)
    assert (done.kind, done.status, done.decided_by) == ("agent", "allowed", "settings.agent.allow")
    asked = await actions.act(Sleep(to_team="beta"))  # not in the list: an approval
    assert isinstance(asked, ApprovalReply) and len(performed) == 1

    (tmp_path / "answers").mkdir()
    answering, answered, _ = setup(tmp_path / "answers", "  agent:\n    allow: [team_tell]\n")
    proposal = await answering.act(AnswerQuestion(question_id="q-1", text="yes"))
    assert isinstance(proposal, ApprovalReply) and answered == []
