"""Fan-out tells and iris-agent end to end: real irisd, real claude, the scripted model."""

from __future__ import annotations

import shutil

import pytest

from harness import Iris
from iris_common.paths import session_file
from irisd.claude.launcher import read_stored_total

pytestmark = pytest.mark.claude


def test_fan_out_answers_every_target_and_one_failing_hides_nothing(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    gamma = iris.add_team("gamma")
    iris.start()
    shutil.rmtree(gamma)  # gamma is unavailable: its tell is refused, the others go on

    results = iris.cli_json("tell", "alpha,beta,gamma,nosuch", "hello all", ok=False)
    assert [r["to_team"] for r in results] == ["alpha", "beta", "gamma", "nosuch"]
    alpha, beta, gamma_result, nosuch = results
    assert alpha["status"] == beta["status"] == "completed"
    assert alpha["text"] == beta["text"] == "echo #1: hello all"
    assert alpha["session_id"] != beta["session_id"]  # each target is its own pair
    assert gamma_result["status"] == "refused" and gamma_result["error"]["code"] == "team_unavailable"
    assert "does not exist" in gamma_result["error"]["message"]
    assert nosuch["status"] == "refused" and nosuch["error"]["code"] == "unknown_team"

    human = iris.cli("tell", "alpha,beta", "again")
    assert human.returncode == 0, human.stderr
    assert "── alpha" in human.stdout and "── beta" in human.stdout
    for team in ("alpha", "beta"):  # each answer under its own label
        label = human.stdout.index(f"── {team}")
        assert human.stdout[label:].splitlines()[1] == "echo #2: again"


def test_iris_ask_calls_an_iris_tool_and_answers_from_its_result(iris: Iris) -> None:
    iris.add_team("alpha", description="The web app")
    iris.add_team("beta", description="The API")
    iris.start()
    reply = iris.cli_json("ask", "@tool:mcp__iris__team_teams {}")
    assert reply["tools"] == ["team_teams"]
    assert reply["text"].startswith("tool mcp__iris__team_teams said:")
    assert "alpha: The web app" in reply["text"] and "beta: The API" in reply["text"]
    # It reached Iris over irisd's own /mcp (no team's claude ran), answered there without
    # the MCP SDK, with a token of its own, gone with its run.
    calls = [line for line in iris.log().splitlines() if "a tools/call answered without the SDK" in line]
    assert len(calls) == 1 and '"tool":"team_teams"' in calls[0] and '"caller":"reader"' in calls[0], calls
    assert "MCP over HTTP ready" not in iris.log()
    assert list((iris.home / "run" / "mcp").iterdir()) == []

    # Its own persistent session, in its own folder; never a team.
    again = iris.cli_json("ask", "and now?")
    assert again["session_id"] == reply["session_id"] and again["text"] == "echo #2: and now?"
    assert (iris.home / "iris-agent").is_dir()
    assert [t["name"] for t in iris.cli_json("teams")] == ["alpha", "beta"]
    refused = iris.cli_json("tell", "iris-agent", "hi", ok=False)
    assert refused["error"]["code"] == "unknown_team"
    assert iris.cli_json("sessions") == []  # it has no pair: nothing of it shows among the teams'
    # What it cost is in the ledger, as its own kind of row: budgets count it.
    by_pair = {row["key"]: row for row in iris.cli_json("costs", "--by", "pair")["rows"]}
    assert set(by_pair) == {"iris ask"} and by_pair["iris ask"]["tells"] == 2
    assert abs(by_pair["iris ask"]["cost_usd"] - reply["cost_usd"] - again["cost_usd"]) < 1e-9
    # ... with its tokens, turns and time as a tell's (they were 0 beside its cost)
    for figure in ("input_tokens", "output_tokens", "num_turns", "duration_ms"):
        assert reply[figure] > 0 and again[figure] > 0
        assert by_pair["iris ask"][figure] == reply[figure] + again[figure], figure
    # Each ask resumed the session: it costs what it added, so the two are claude's own total of it.
    transcript = session_file(iris.claude_config, str((iris.home / "iris-agent").resolve()), reply["session_id"])
    session = read_stored_total(transcript)
    assert session is not None and abs(session.cost_usd - reply["cost_usd"] - again["cost_usd"]) < 1e-9

    # A tool that would change something only proposes it to the person (tests/e2e/test_agent_acts.py).
    tried = iris.cli_json("ask", '@tool:mcp__iris__team_wake {"team": "alpha"}', "--new")
    assert tried["session_id"] != reply["session_id"]
    assert tried["tools"] == ["team_wake"] and "iris-agent proposes to wake external->alpha [pending]" in tried["text"]
    status = iris.cli_json("status")
    assert status["processes"] == []  # nothing was woken
