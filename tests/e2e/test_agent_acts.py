"""iris-agent acts with the person's consent: real irisd, real claude, the scripted model.

The scripted model calls the tool the question names (``@tool:NAME {json}``); irisd files
the call as an approval of kind ``agent`` (irisd/agent/actions.py), unless
settings.agent.allow allows it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import Http, Iris, wait_for

pytestmark = pytest.mark.claude

WAKE_ALPHA = '@tool:mcp__iris__team_wake {"team": "alpha"}'


def awake(iris: Iris) -> list[str]:
    return [f"{p.get('from_team') or 'external'}->{p['to_team']}" for p in iris.cli_json("status")["processes"]]


def agent_approvals(iris: Iris, *args: str) -> list[dict[str, Any]]:
    return [a for a in iris.cli_json("approvals", *args) if a.get("kind") == "agent"]


def test_iris_ask_proposes_a_wake_the_person_approves_and_the_team_wakes(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    with iris.watch() as watcher:
        reply = iris.cli_json("ask", WAKE_ALPHA)
        event = watcher.until(lambda e: e["type"] == "approval_event", what="the proposal's event")["approval"]
    assert reply["tools"] == ["team_wake"]
    (proposal,) = agent_approvals(iris)
    assert event["id"] == proposal["id"] and proposal["status"] == "pending"
    assert proposal["tool_name"] == "team_wake" and proposal["from_team"] == "iris-agent"
    assert proposal["to_team"] == "alpha" and proposal["summary"] == "wake external->alpha"
    assert proposal["input"]["to_team"] == "alpha"  # the exact request irisd will serve
    # iris-agent was told it only proposed, with the id the person decides
    assert f"{proposal['id']}: iris-agent proposes to wake external->alpha [pending]" in reply["text"]
    assert awake(iris) == []  # nothing happened yet
    human = iris.cli("approvals")
    assert proposal["id"] in human.stdout and "wake external->alpha" in human.stdout, human.stdout

    decided = iris.cli_json("approve", proposal["id"])
    assert decided["status"] == "allowed" and decided["reason"].startswith("done:")
    assert awake(iris) == ["external->alpha"]
    (after,) = agent_approvals(iris, "--all")
    assert after["status"] == "allowed" and after["decided_by"]
    again = iris.cli_json("approve", proposal["id"], ok=False)
    assert again["error"]["code"] == "invalid_request" and "already allowed" in again["error"]["message"]


def test_a_denied_action_is_not_taken(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    iris.cli_json("ask", '@tool:mcp__iris__team_tell {"toTeam": "alpha", "message": "delete the branch"}')
    (proposal,) = agent_approvals(iris)
    assert proposal["summary"] == "tell alpha (as iris-agent): 'delete the branch'"
    denied = iris.cli_json("deny", proposal["id"], "--reason", "not now")
    assert denied["status"] == "denied" and denied["reason"] == "not now"
    assert awake(iris) == [] and iris.cli_json("report", "alpha", "--all-callers") == []  # no tell was sent
    (row,) = iris.cli_json("questions", "--stats")["actions"]
    assert (row["tool"], row["proposed"], row["denied"], row["allowed"]) == ("team_tell", 1, 1, 0)
    assert iris.cli_json("costs", "--by", "pair")["rows"][0]["key"] == "iris ask"  # only the ask cost


def test_an_allowed_action_is_taken_without_an_approval_and_its_tell_is_iris_agents(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.settings["agent"] = {"allow": ["team_wake", "team_tell"]}
    iris.start()
    reply = iris.cli_json("ask", WAKE_ALPHA)
    assert "woke" in reply["text"] or "awake" in reply["text"], reply["text"]
    assert awake(iris) == ["external->alpha"]
    (done,) = agent_approvals(iris, "--all")  # recorded, as allowed by the settings
    assert done["status"] == "allowed" and done["decided_by"] == "settings.agent.allow"
    assert agent_approvals(iris) == []  # nothing waits for the person

    told = iris.cli_json("ask", '@tool:mcp__iris__team_tell {"toTeam": "alpha", "message": "hello"}')
    assert "echo #1: hello" in told["text"], told["text"]
    (tell,) = iris.cli_json("report", "alpha", "--all-callers")
    assert tell["from_team"] == "iris-agent" and tell.get("hops", 0) == 0 and tell["chain_id"]
    by_team = {row["key"]: row for row in iris.cli_json("costs", "--by", "pair")["rows"]}
    assert by_team["iris-agent->alpha"]["tells"] == 1  # its tells' cost is booked under iris-agent
    stats = iris.cli_json("questions", "--stats")
    assert [(a["tool"], a["proposed"], a["automatic"]) for a in stats["actions"]] == [
        ("team_tell", 0, 1), ("team_wake", 0, 1)
    ]
    assert stats["asks"] == 2 and abs(stats["ask_usd"] - reply["cost_usd"] - told["cost_usd"]) < 1e-9
    assert stats["tells_usd"] == by_team["iris-agent->alpha"]["cost_usd"] > 0


def test_a_watched_conversation_is_classified_stored_and_its_suggested_answer_sent_once_approved(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.settings["agent"] = {"watch": True}
    iris.settings["questions"] = {"answerWithin": 1000}
    iris.start()
    # The team's answer asks its caller; the scripted model's iris-agent says what the text it is
    # shown ends with: this verdict.
    verdict = {"classification": "team", "confidence": 0.8, "reason": "the caller asked for it", "suggestion": "yes"}
    iris.cli_json("tell", "alpha", f"@ask deploy the fix {json.dumps(verdict)}", "--persist")

    def looked() -> dict[str, Any] | None:
        found = [q for q in iris.cli_json("questions", "--all") if q.get("agent", {}).get("approval_id")]
        return found[0] if found else None

    question = wait_for(looked, what="iris-agent's verdict on the question", timeout=90)
    assert question["status"] == "pending"  # the person decides
    seen = question["agent"]
    assert (seen["classification"], seen["confidence"], seen["suggestion"]) == ("team", 0.8, "yes")
    (proposal,) = agent_approvals(iris)
    assert proposal["id"] == seen["approval_id"] and proposal["tool_name"] == "team_answer"
    assert proposal["summary"] == f"answer question {question['id']} of alpha with: 'yes'"
    human = iris.cli("questions")
    line = (
        f"{question['id']} iris-agent: team, 80%: the caller asked for it; suggests 'yes' "
        f"(iris approve {proposal['id']})"
    )
    assert line in human.stdout, human.stdout
    # Its own conversation for the pair, stored; its cost in the ledger under iris-agent.
    costs = {row["key"]: row for row in iris.cli_json("costs", "--by", "pair")["rows"]}
    assert costs["iris ask"]["tells"] == 1 and costs["iris ask"]["cost_usd"] == seen["cost_usd"]

    iris.cli_json("approve", proposal["id"])
    answered = wait_for(
        lambda: [q for q in iris.cli_json("questions", "--all") if q["status"] == "answered"], what="the answer"
    )
    assert answered[0]["answer"] == "yes" and "proposed by iris-agent" in answered[0]["closed_by"]
    tell = iris.cli_json("result", answered[0]["answer_tell_id"], "--wait", "60000")
    assert tell["text"] == "echo #2: yes"  # the same conversation of alpha went on

    # The analytics say the same: one question in two completed tells, classified "team" and
    # answered with its suggestion, which the person allowed; the watcher's cost.
    stats = iris.cli_json("questions", "--stats")
    assert (stats["tells_completed"], stats["questions"], stats["looked"]) == (2, 1, 1)
    assert stats["detection_rate"] == 0.5 and stats["questions_by_status"] == {"answered": 1}
    (row,) = stats["classified"]
    assert (row["classification"], row["count"], row["confidence"], row["answered"]) == ("team", 1, 0.8, 1)
    assert stats["actions"] == [
        {"tool": "team_answer", "proposed": 1, "allowed": 1, "denied": 0, "expired": 0, "pending": 0, "automatic": 0}
    ]
    assert stats["watch_usd"] == seen["cost_usd"] and stats.get("asks", 0) == 0 and stats.get("ask_usd", 0) == 0
    status, same = Http(iris).json("GET", "/api/agent/stats")
    assert status == 200 and same["classified"] == stats["classified"] and same["actions"] == stats["actions"]
    human = iris.cli("questions", "--stats")
    assert "questions: 1 of 2 completed tells (50%): 1 answered" in human.stdout, human.stdout
    assert "team_answer" in human.stdout and "watching" in human.stdout
