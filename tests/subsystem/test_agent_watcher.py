"""iris-agent's watcher on trio's autojump clock (exact virtual times), against a real
store and hub, with iris-agent's turn scripted: when it looks, what it stores, what it does
with each verdict, and what it never does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
import trio.testing

from fakes.core import teams_config
from harness import wait_until
from irisd.agent.actions import AgentActions
from irisd.agent.watcher import Watcher
from irisd.events import EventHub
from irisd.store import agent, approvals, ledger, questions
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.messages import (
    AskReply,
    QuestionEvent,
    QuestionInfo,
    Reply,
    Request,
)

BASE = 1_800_000_000.0  # the wall clock when the test's virtual time is 0
WITHIN_S = 60.0
WATCH = "  agent:\n    watch: true\n  questions:\n    answerWithin: 60000\n"


class Scripted:
    """iris-agent's turns: each says the next verdict (JSON), and when it was asked."""

    def __init__(self, *verdicts: dict[str, Any]) -> None:
        self.verdicts = list(verdicts)
        self.asked: list[tuple[float, str, str | None]] = []

    async def look(self, prompt: str, session_id: str | None) -> AskReply:
        self.asked.append((trio.current_time(), prompt, session_id))
        return AskReply(text="Here is my verdict: " + json.dumps(self.verdicts.pop(0)), session_id="s-w1",
                        cost_usd=0.25)


def question(qid: str = "q-1", from_team: str | None = "alpha", at: float = BASE) -> QuestionInfo:
    return QuestionInfo(
        id=qid, from_team=from_team, to_team="beta", session_id="s", tell_id="t-" + qid, question="Shall I deploy?",
        context="Fixed. Shall I deploy?", confidence=0.9, status="pending", created_at=at, expires_at=at + 86400,
    )


def setup(tmp_path: Path, scripted: Scripted, settings: str = WATCH) -> tuple[Watcher, Store, EventHub, list[Any]]:
    config = teams_config(tmp_path, settings)
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    hub = EventHub()
    performed: list[Request] = []

    async def perform(request: Request) -> Reply:  # pragma: no cover - nothing here is allowed at once
        performed.append(request)
        raise AssertionError("nothing is performed without the person")

    async def target(action: Any) -> str:
        return "beta"

    actions = AgentActions(config=lambda: config, store=store, hub=hub, perform=perform, target=target)

    async def dismiss(question_id: str, by: str) -> QuestionInfo:
        closed = await store.call(questions.close, question_id, "dismissed", BASE + trio.current_time(), by=by)
        assert closed is not None
        hub.publish(QuestionEvent(question=closed), closed.from_team, closed.to_team)
        return closed

    watcher = Watcher(config=lambda: config, store=store, hub=hub, look=scripted.look, actions=actions,
                      dismiss=dismiss, clock=lambda: BASE + trio.current_time())
    return watcher, store, hub, performed


async def file(store: Store, hub: EventHub, asked: QuestionInfo) -> None:
    await store.call(questions.insert, asked)
    hub.publish(QuestionEvent(question=asked), asked.from_team, asked.to_team)


async def until(condition: Any) -> None:
    await wait_until(condition, every=1.0)


async def test_an_unanswered_question_is_looked_at_after_answer_within_and_dismissed_when_it_is_none(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    scripted = Scripted({"classification": "none", "confidence": 0.9, "reason": "a courtesy"})
    watcher, store, hub, _ = setup(tmp_path, scripted)
    with trio.fail_after(10 * WITHIN_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run)
            await file(store, hub, question())
            await until(lambda: store.call(agent.looked_at, "q-1"))
            nursery.cancel_scope.cancel()
    ((at, prompt, session),) = scripted.asked
    assert at == WITHIN_S and session is None  # exactly answerWithin after it was filed; a new session
    assert prompt.startswith("Pending question q-1: team beta answered alpha")
    closed = await store.call(questions.get, "q-1")
    assert closed is not None and closed.status == "dismissed"
    assert closed.closed_by == "iris-agent (not a question: a courtesy)"
    assert closed.agent is not None and (closed.agent.classification, closed.agent.confidence) == ("none", 0.9)
    assert closed.agent.said.startswith("Here is my verdict: {")  # what it said, shown with the question
    # its turn is stored: its session for the pair, what it was shown and what it said
    assert await store.call(agent.session_of, "alpha", "beta") == "s-w1"
    (shown, said) = await store.call(agent.messages, "alpha", "beta")
    assert (shown[1], said[1]) == ("iris", "agent") and shown[2] == prompt and said[2].startswith("Here is my verdict")
    # ... and its cost is in the ledger, under iris-agent
    rows, total = await store.read(ledger.summary, "pair", 0.0, None)
    assert total.cost_usd == 0.25 and [row.key for row in rows] == ["iris ask"]


async def test_a_question_the_team_can_answer_gets_a_suggested_answer_as_an_approval(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    scripted = Scripted({"classification": "team", "confidence": 0.7, "reason": "alpha asked", "suggestion": "yes"})
    watcher, store, hub, performed = setup(tmp_path, scripted)
    with trio.fail_after(10 * WITHIN_S), hub.subscribe() as events:
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run)
            await file(store, hub, question())
            await until(lambda: store.call(agent.looked_at, "q-1"))
            await trio.sleep(1.0)  # the verdict's question event
            nursery.cancel_scope.cancel()
        pushed = [e.question for e in events.take_nowait() if isinstance(e, QuestionEvent)]
    (proposal,) = await store.call(approvals.listing, None, False)
    assert (proposal.kind, proposal.tool_name, proposal.status) == ("agent", "team_answer", "pending")
    assert proposal.input["text"] == "yes" and proposal.input["question_id"] == "q-1" and performed == []
    shown = await store.call(questions.get, "q-1")
    assert shown is not None and shown.status == "pending"  # the person decides
    assert shown.agent is not None and shown.agent.approval_id == proposal.id
    assert pushed[-1].agent == shown.agent  # shown with the pending question as it changed
    assert len(scripted.asked) == 1  # its own event did not make it look again


async def test_it_never_looks_at_its_own_tells_question_twice_or_when_the_watch_is_off(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    scripted = Scripted({"classification": "person", "confidence": 0.6})
    watcher, store, hub, _ = setup(tmp_path, scripted)
    with trio.fail_after(10 * WITHIN_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run)
            await file(store, hub, question("q-own", from_team="iris-agent"))  # asked of iris-agent's own tell
            await file(store, hub, question("q-1"))
            await until(lambda: store.call(agent.looked_at, "q-1"))
            assert await watcher.look("q-1") is None  # one turn per question
            assert await watcher.look("q-own") is None
            nursery.cancel_scope.cancel()
    assert [prompt.split(":")[0] for _, prompt, _ in scripted.asked] == ["Pending question q-1"]
    person = await store.call(questions.get, "q-1")
    assert person is not None and person.status == "pending" and person.agent is not None
    assert person.agent.classification == "person"  # left for the person, with the verdict

    idle = Scripted()
    (tmp_path / "off").mkdir()
    off, store_off, hub_off, _ = setup(tmp_path / "off", idle, settings="  {}\n")
    with trio.fail_after(10 * WITHIN_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(off.run)
            await file(store_off, hub_off, question())
            await trio.sleep(3 * WITHIN_S)
            nursery.cancel_scope.cancel()
    assert idle.asked == [] and off.due.next_deadline() is None


async def test_a_question_answered_in_time_is_not_looked_at(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    scripted = Scripted()
    watcher, store, hub, _ = setup(tmp_path, scripted)
    with trio.fail_after(10 * WITHIN_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run)
            await file(store, hub, question())
            await trio.sleep(WITHIN_S - 1)
            answered = await store.call(questions.close, "q-1", "answered", BASE + trio.current_time(), by="alpha")
            assert answered is not None
            hub.publish(QuestionEvent(question=answered), "alpha", "beta")
            await trio.sleep(3 * WITHIN_S)
            nursery.cancel_scope.cancel()
    assert scripted.asked == []
