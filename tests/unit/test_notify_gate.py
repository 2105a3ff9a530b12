"""Which notices go out (irisd/notify/gate.py): once per key per interval, a bounded
number per minute, with explicit times; and what each kind of notice says."""

from __future__ import annotations

import json

from irisd.notify.gate import Notice, NoticeGate, of_approval, of_findings, of_question
from irisd.notify.webhook import body
from protocol.health import Finding
from protocol.messages import ApprovalInfo, QuestionInfo


def notice(n: str = "a1") -> Notice:
    return Notice(kind="approval", id=n, team="web", title="t", message="m", command=f"iris approve {n}")


def test_the_same_notice_goes_out_once_per_interval_so_a_flapping_finding_does_not_spam() -> None:
    gate = NoticeGate(every_s=600)
    assert gate.admit(notice(), 0.0)
    assert not gate.admit(notice(), 1.0)  # the event seen again
    assert not gate.admit(notice(), 599.0)  # the finding gone and back
    assert gate.admit(notice(), 600.0)
    assert gate.admit(notice("a2"), 600.0)  # another one is another key


def test_at_most_per_minute_in_any_minute_the_rest_dropped_and_counted() -> None:
    gate = NoticeGate(every_s=600, per_minute=3)
    assert [gate.admit(notice(f"a{n}"), float(n)) for n in range(5)] == [True, True, True, False, False]
    assert gate.dropped == 2
    assert not gate.admit(notice("late"), 59.9)
    assert gate.admit(notice("late"), 60.0)  # the first one left the window
    assert gate.admit(notice("a3"), 61.0)  # a dropped one was not recorded as said


def test_forget_keeps_memory_bounded_to_what_is_still_within_the_interval() -> None:
    gate = NoticeGate(every_s=10, per_minute=100)
    for n in range(5):
        gate.admit(notice(f"a{n}"), float(n))
    gate.forget(12.0)
    assert gate.admit(notice("a0"), 12.0) and not gate.admit(notice("a4"), 12.0)


def test_notices_name_kind_id_team_and_the_deciding_command() -> None:
    approval = ApprovalInfo(id="ap1", from_team=None, to_team="web", tell_id="t", tool_name="Bash",
                            input={"command": "rm -rf build"}, status="pending", created_at=0, expires_at=1)
    said = of_approval(approval)
    assert (said.kind, said.id, said.team, said.command) == ("approval", "ap1", "web",
                                                             "iris approve ap1  (or: iris deny ap1)")
    assert said.message == "external->web wants to run Bash: rm -rf build"
    asked = ApprovalInfo(id="ap2", from_team=None, to_team="web", tell_id="t", tool_name="asker", input={},
                         status="pending", created_at=0, expires_at=1, kind="input", message="Which database?")
    input_said = of_approval(asked)
    assert input_said.title == "web's MCP server asker asks for your input"
    assert (input_said.message, input_said.command) == ("external->web: Which database?",
                                            "iris approve ap2 --field NAME=VALUE  (or: iris deny ap2)")
    proposed = of_approval(ApprovalInfo(
        id="ag-1", from_team="iris-agent", to_team="web", tell_id="", tool_name="team_wake", input={},
        status="pending", created_at=0, expires_at=1, kind="agent", summary="wake external->web",
    ))
    assert proposed.title == "iris-agent proposes to wake web"
    assert proposed.message == "iris-agent proposes to wake external->web"
    assert proposed.command == "iris approve ag-1  (or: iris deny ag-1)"
    budget = of_approval(ApprovalInfo(
        id="ap3", from_team="a", to_team="web", tell_id="t", tool_name="chainUsd", input={}, status="pending",
        created_at=0, expires_at=1, kind="budget", message="Chain c1 spent $1.00 of $1.00: continue for $0.50 more?",
    ))
    assert budget.title == "a chain through a->web reached its budget"
    assert (budget.message, budget.command) == ("Chain c1 spent $1.00 of $1.00: continue for $0.50 more?",
                                                "iris approve ap3  (or: iris deny ap3)")
    question = QuestionInfo(id="q1", from_team="a", to_team="web", session_id="s", tell_id="t",
                            question="Which port?", context="", confidence=1, status="pending", created_at=0,
                            expires_at=1)
    assert of_question(question).command == 'iris answer q1 "TEXT"'
    findings = [
        Finding(kind="crash_loop", severity="error", subject="a->b", summary="s", fix="iris wake b --from a"),
        Finding(kind="question_waiting", severity="info", subject="q1", summary="s"),
    ]
    (health,) = of_findings(findings)  # info is not worth a notification
    assert (health.kind, health.id, health.command, health.severity) == ("health", "crash_loop:a->b",
                                                                         "iris wake b --from a", "error")
    sent = json.loads(body(said))
    assert {k: sent[k] for k in ("kind", "id", "team", "command")} == {
        "kind": "approval", "id": "ap1", "team": "web", "command": "iris approve ap1  (or: iris deny ap1)"}
    assert sent["text"].startswith("web asks to use Bash: ")
