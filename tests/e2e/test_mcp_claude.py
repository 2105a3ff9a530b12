"""The real claude as the MCP CLIENT: a team's claude (started by irisd, given Iris as an
MCP server) asks other teams through the shim, and the daemon links nested tells.

The scripted model makes the asking claude call ``mcp__iris__team_tell`` (``@tool:``) and
then answers ``tool mcp__iris__team_tell said: <the tool's result>`` (or ``failed:`` for a
tool error), so each answer shows what travelled back through every hop.

Needs the daemon side: irisd gives each claude child ``--mcp-config`` with
``iris mcp --team <team>``, ``IRIS_PARENT_PAIR`` and permission for the iris tools.

The tests that go through alpha, beta and gamma share one daemon and its warm pairs
(each checks its own tells, by the chain its outer tell started); the hop-limit test
has a daemon of its own (its own setting, every stored tell counted).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Iris, echoed, started, wait_for
from protocol.messages import Report, ReportReply, TellInfo
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

TOOL = "mcp__iris__team_tell"


def ask(to_team: str, message: str) -> str:
    """A prompt that makes the scripted model tell ``to_team`` ``message`` through Iris."""
    return f"@tool:{TOOL} " + json.dumps({"toTeam": to_team, "message": message})


def unwrap(answer: object) -> str:
    """What came back through one hop. The scripted model wrote ``tool X said: <result>``;
    Claude Code gives the model a successful MCP result as its structured content (JSON;
    the answer is its ``text``), older versions gave the text itself."""
    prefix = f"tool {TOOL} said: "
    assert isinstance(answer, str) and answer.startswith(prefix), answer
    result = answer.removeprefix(prefix)
    try:
        data = json.loads(result)
    except ValueError:
        return result
    assert isinstance(data, dict) and data.get("status") == "completed", data
    return str(data["text"])


def tell(iris: Iris, team: str, message: str) -> dict[str, object]:
    result = iris.cli("tell", team, message, "--json", timeout=180)
    assert result.stdout, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def latest(iris: Iris, from_team: str, to_team: str) -> TellInfo:
    report = iris.request(Report(to_team=to_team, from_team=from_team, limit=1))
    assert isinstance(report, ReportReply) and report.tells
    return report.tells[0]


@pytest.fixture(scope="module")
def three_teams(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """One daemon with alpha, beta and gamma, for the tests that only tell."""
    with started(tmp_path_factory.mktemp("mcp-claude"), model_url=model.base_url, claude=claude_bin,
                 teams={"alpha": {}, "beta": {}, "gamma": {}}) as iris:
        yield iris


def test_a_team_asks_another_through_the_shim(three_teams: Iris) -> None:
    iris = three_teams
    answer = tell(iris, "alpha", ask("beta", "ping"))
    assert answer["status"] == "completed", answer
    assert echoed(unwrap(answer["text"]))[1] == "ping"

    asked = latest(iris, "alpha", "beta")  # the shim spoke as alpha, linked to the outer tell
    assert asked.message == "ping" and asked.status == "completed"
    assert (asked.chain_id, asked.hops) == (answer["id"], 1)


def test_nested_tells_go_two_hops_deep(three_teams: Iris) -> None:
    iris = three_teams
    answer = tell(iris, "alpha", ask("beta", ask("gamma", "deep")))
    assert answer["status"] == "completed", answer
    assert echoed(unwrap(unwrap(answer["text"])))[1] == "deep"

    innermost = latest(iris, "beta", "gamma")
    assert innermost.message == "deep"
    assert (innermost.chain_id, innermost.hops) == (answer["id"], 2)


def test_the_loop_guard_refuses_a_tell_back_to_a_waiting_team(three_teams: Iris) -> None:
    iris = three_teams
    answer = tell(iris, "alpha", ask("beta", ask("alpha", "are you there?")))
    assert answer["status"] == "completed", answer  # alpha still answers, from what it knows
    from_beta = unwrap(answer["text"])  # beta's answer: its tell to alpha was refused
    assert from_beta.startswith(f"tool {TOOL} failed:"), from_beta
    assert "loop: alpha is already waiting in this chain" in from_beta

    refused = latest(iris, "beta", "alpha")  # the refusal is recorded
    assert refused.status == "failed" and "loop" in refused.error
    assert refused.chain_id == answer["id"]


def store_for(to_team: str, message: str) -> str:
    """A prompt that makes the scripted model store a tell for ``to_team`` (persist)."""
    return f"@tool:{TOOL} " + json.dumps({"toTeam": to_team, "message": message, "persist": True})


def test_two_teams_storing_tells_for_each_other_stop_at_the_hop_limit(iris: Iris) -> None:
    iris.settings["hopLimit"] = 2
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    to_itself = iris.cli("tell", "alpha", "note to self", "--from", "alpha", "--persist")
    assert to_itself.returncode == 1 and "alpha cannot store a tell for itself (persist)" in to_itself.stderr
    # A ping-pong five deep: beta stores a tell for alpha, which stores one for beta, ...
    message = "the last one"
    for team in reversed(["alpha", "beta", "alpha", "beta", "alpha"]):
        message = store_for(team, message)
    iris.cli_json("tell", "beta", message, "--from", "alpha", "--persist")
    problem = "this tell would be hop 3 of a chain of nested tells; the limit is 2"
    refused = wait_for(
        lambda: [t for t in iris.cli_json("report", "alpha", "--all-callers") if t["status"] == "failed"],
        timeout=240, what="the refusal of hop 3",
    )
    assert [(t["from_team"], t["hops"], t["error"], t["kind"]) for t in refused] == [
        ("beta", 3, problem, "notification")
    ]
    stored = wait_for(
        lambda: (found := iris.cli_json("notifications", "--all"))
        and all(n["status"] not in ("pending", "delivering") for n in found) and found,
        timeout=120, what="the last delivery's end",
    )
    assert [n["status"] for n in stored] == ["delivered"] * 3, stored  # not one more
    answers = [iris.cli_json("result", n["tell_id"]) for n in stored]
    chain = answers[0]["id"]
    hops = [(a["to_team"], a.get("hops", 0), a["chain_id"]) for a in answers]
    assert hops == [("beta", 0, chain), ("alpha", 1, chain), ("beta", 2, chain)]
    assert refused[0]["chain_id"] == chain
    assert answers[2]["text"].startswith(f"tool {TOOL} failed:") and problem in answers[2]["text"], answers[2]
