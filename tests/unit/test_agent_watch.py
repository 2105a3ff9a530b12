"""iris-agent's watcher, its pure decisions: what it reads from a turn, when it looks, when
a question is due."""

from __future__ import annotations

from typing import Any

from irisd.agent.watch import Due, parse_verdict, prompt_for, skip_reason
from protocol.messages import AgentVerdict, QuestionInfo


def question(**fields: Any) -> QuestionInfo:
    values: dict[str, Any] = dict(
        id="q-1", from_team="alpha", to_team="beta", session_id="s", tell_id="t-1", question="Shall I deploy?",
        context="I fixed the bug. Shall I deploy?", confidence=0.9, status="pending", created_at=100.0,
        expires_at=1000.0,
    )
    values.update(fields)
    return QuestionInfo(**values)


def test_the_last_json_object_with_a_known_classification_is_the_verdict() -> None:
    said = (
        'Example: {"classification": "person"}. My answer:\n'
        '{"classification": "team", "confidence": 0.8, "reason": "alpha asked for it", "suggestion": "yes, deploy"}'
    )
    assert parse_verdict(said, at=5.0, cost_usd=0.01) == AgentVerdict(
        classification="team", confidence=0.8, reason="alpha asked for it", suggestion="yes, deploy", at=5.0,
        cost_usd=0.01, said=said,
    )


def test_a_verdict_keeps_a_suggestion_only_for_the_team_and_its_confidence_in_range() -> None:
    verdict = parse_verdict('{"classification": "none", "confidence": 7, "suggestion": "x"}', at=1.0, cost_usd=None)
    assert verdict is not None and (verdict.confidence, verdict.suggestion) == (1.0, "")
    odd = parse_verdict('{"classification": "person", "confidence": "high"}', at=1.0, cost_usd=None)
    assert odd is not None and odd.confidence == 0.5


def test_no_verdict_in_prose_broken_json_or_an_unknown_classification() -> None:
    for said in ("I think the person should decide.", '{"classification": "maybe"}', '{"classification": "team"',
                 "[1, 2]", ""):
        assert parse_verdict(said, at=1.0, cost_usd=None) is None, said


def test_the_prompt_ends_with_the_answer_it_judges() -> None:
    shown = prompt_for(question(from_team=None))
    assert shown.startswith("Pending question q-1: team beta answered the person (external)")
    assert shown.endswith("The end of the answer:\nI fixed the bug. Shall I deploy?")


def test_it_looks_only_at_a_watched_pending_question_of_another_sender_once_within_budget() -> None:
    ok: dict[str, Any] = dict(watch=True, looked=False, spent_usd=0.5, budget_usd=1.0)
    assert skip_reason(question(), **ok) is None
    assert skip_reason(question(), **{**ok, "budget_usd": None, "spent_usd": 99.0}) is None
    cases: list[tuple[QuestionInfo | None, dict[str, Any], str]] = [
        (question(), {"watch": False}, "settings.agent.watch is off"),
        (None, {}, "no longer pending"),
        (question(status="answered"), {}, "no longer pending"),
        (question(from_team="iris-agent"), {}, "never acts on events it caused"),
        (question(), {"looked": True}, "one turn per question"),
        (question(), {"spent_usd": 1.0}, "daily budget (settings.agent.dailyUsd: 1 USD) is spent"),
    ]
    for asked, change, why in cases:
        reason = skip_reason(asked, **{**ok, **change})
        assert reason is not None and why in reason, (change, reason)


def test_due_questions_come_out_in_order_once() -> None:
    due = Due()
    due.add("q-2", 20.0)
    due.add("q-1", 10.0)
    due.add("q-1", 99.0)  # filed once: the first time counts
    due.add("q-3", 30.0)
    due.drop("q-3")
    assert due.next_deadline() == 10.0
    assert due.pop_due(9.9) == []
    assert due.pop_due(25.0) == ["q-1", "q-2"]
    assert due.pop_due(100.0) == [] and due.next_deadline() is None
