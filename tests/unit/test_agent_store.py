"""iris-agent's tables (migration 12) and its analytics, on plain rows."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from irisd.store import agent, approvals, ledger, questions, tells
from irisd.store.db import open_database
from protocol.messages import AgentVerdict, ApprovalInfo, AskReply, QuestionInfo, TellInfo


@pytest.fixture
def db(tmp_path: Path) -> apsw.Connection:
    return open_database(tmp_path / "iris.db")


def question(qid: str, status: str = "pending") -> QuestionInfo:
    return QuestionInfo(
        id=qid, from_team="alpha", to_team="beta", session_id="s", tell_id="t-" + qid, question="Shall I?",
        context="Shall I?", confidence=0.9, status=status, created_at=100.0, expires_at=1e9,  # type: ignore[arg-type]
    )


def action(aid: str, tool: str, status: str, decided_by: str = "") -> ApprovalInfo:
    return ApprovalInfo(
        id=aid, from_team="iris-agent", to_team="beta", tell_id="", tool_name=tool, input={}, status=status,  # type: ignore[arg-type]
        created_at=100.0, expires_at=700.0, kind="agent", summary=f"{tool} beta", decided_by=decided_by,
    )


def test_stats_count_detection_verdicts_against_outcomes_actions_and_cost(db: apsw.Connection) -> None:
    for n in range(4):
        tells.insert(db, TellInfo(id=f"t{n}", from_team="alpha", to_team="beta", message="m", status="completed",
                                  created_at=100.0 + n))
    for qid, status in (("q1", "answered"), ("q2", "dismissed"), ("q3", "pending")):
        questions.insert(db, question(qid))
        if status != "pending":
            questions.close(db, qid, status, 150.0, by="x")
    for qid, kind, confidence in (("q1", "team", 0.8), ("q2", "none", 0.6), ("q3", "team", 0.4)):
        verdict = AgentVerdict(classification=kind, confidence=confidence, at=120.0, cost_usd=0.01)  # type: ignore[arg-type]
        agent.record_turn(db, question(qid), session_id="s-w", now=120.0, shown="shown", said="said", verdict=verdict)
    for row in (
        action("a1", "team_wake", "allowed", "me"), action("a2", "team_wake", "allowed", "settings.agent.allow"),
        action("a3", "team_wake", "denied", "me"), action("a4", "team_tell", "expired"),
        action("a5", "team_tell", "pending"), action("a6", "team_answer", "allowed", "me"),
    ):
        approvals.insert(db, row, "")
    ledger.record_ask(db, "ask-1", 130.0, AskReply(text="x", cost_usd=0.02))
    ledger.record_ask(db, "watch-1", 130.0, AskReply(text="x", cost_usd=0.03))

    stats = agent.stats(db, 0.0)
    assert (stats.tells_completed, stats.questions, stats.looked, stats.detection_rate) == (4, 3, 3, 0.75)
    assert stats.questions_by_status == {"answered": 1, "dismissed": 1, "pending": 1}
    by_class = {row.classification: row for row in stats.classified}
    assert (by_class["team"].count, by_class["team"].answered, by_class["team"].pending) == (2, 1, 1)
    assert by_class["team"].confidence == pytest.approx(0.6)
    assert (by_class["none"].count, by_class["none"].dismissed) == (1, 1)
    by_tool = {row.tool: row for row in stats.actions}
    wake, told = by_tool["team_wake"], by_tool["team_tell"]
    assert (wake.proposed, wake.allowed, wake.denied, wake.automatic) == (2, 1, 1, 1)
    assert (told.proposed, told.expired, told.pending) == (2, 1, 1)
    assert (stats.asks, stats.ask_usd, stats.watch_usd) == (1, 0.02, 0.03)
    assert agent.stats(db, 200.0).questions == 0  # since: only what came after
    # The verdicts are shown with their questions; the pair's session and budget are known.
    assert [q.agent.classification for q in questions.listing(db, None, True) if q.agent] == ["team", "none", "team"]
    assert agent.session_of(db, "alpha", "beta") == "s-w" and agent.spent_since(db, 0.0) == pytest.approx(0.03)
    assert agent.looked_at(db, "q1") and not agent.looked_at(db, "q9")
