"""The cost ledger and budgets end to end: real irisd, real claude, the scripted model.

The tests of a team's own budget or a tell's share one irisd (``shared``), each through
teams of its own; those that read the whole ledger, set a budget or limit for all, or
restart irisd start their own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, started, wait_for
from iris_common.money import usd
from protocol.messages import GetStatus, ReadTranscript, StatusReply, TranscriptReply
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    teams: dict[str, dict[str, Any]] = {
        "capped": {"budget": {"dailyUsd": 0.0001}},
        "beta": {},
        "spender": {},
        "frugal": {},
    }
    with started(tmp_path_factory.mktemp("costs"), model_url=model.base_url, claude=claude_bin, teams=teams) as iris:
        yield iris


def result_line(iris: Iris, tell_id: str) -> tuple[TranscriptReply, dict[str, Any]]:
    """A tell's transcript and its result line, as claude printed it (read over the socket:
    an ``iris cache read`` for each costs a Python start)."""
    transcript = iris.request(ReadTranscript(tell_id=tell_id))
    assert isinstance(transcript, TranscriptReply), transcript
    (result,) = [json.loads(e.raw) for e in transcript.entries if e.type == "result"]
    return transcript, result


def reported_costs(iris: Iris, tell_ids: list[str]) -> dict[str, float]:
    """What claude's result lines said, per tell: claude reports its process's running
    total, so a tell's figure is the difference from the same process's previous result."""
    costs: dict[str, float] = {}
    previous: dict[str, float] = {}  # per process (pid unknown here: per pair, one process each)
    for tell_id in tell_ids:
        transcript, result = result_line(iris, tell_id)
        pair = f"{transcript.tell.from_team}->{transcript.tell.to_team}"
        total = result["total_cost_usd"]
        costs[tell_id] = total - previous.get(pair, 0.0)
        previous[pair] = total
    return costs


def test_costs_sum_exactly_to_what_claude_reported(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    told: list[dict[str, Any]] = []
    for team, message, caller in (("alpha", "one", None), ("alpha", "two", None), ("beta", "@long:30 three", None),
                                  ("beta", "four", "alpha")):
        args = ("tell", team, message, *(("--from", caller) if caller else ()))
        told.append(iris.cli_json(*args))
    reported = reported_costs(iris, [t["id"] for t in told])
    assert all(cost > 0 for cost in reported.values())
    for tell in told:  # each tell's own figure, not the process's running total
        assert tell["cost_usd"] == pytest.approx(reported[tell["id"]], rel=1e-9)
        assert tell["input_tokens"] > 0 and tell["output_tokens"] > 0 and tell["num_turns"] == 1
        assert tell["duration_ms"] is not None

    by_team = iris.cli_json("costs", "--by", "team")
    teams = {row["key"]: row for row in by_team["rows"]}
    alpha_ids = [t["id"] for t in told if t["to_team"] == "alpha"]
    assert teams["alpha"]["tells"] == 2
    assert teams["alpha"]["cost_usd"] == pytest.approx(sum(reported[i] for i in alpha_ids), rel=1e-9)
    assert by_team["total"]["cost_usd"] == pytest.approx(sum(reported.values()), rel=1e-9)
    assert by_team["total"]["tells"] == 4
    assert by_team["total"]["input_tokens"] == sum(t["input_tokens"] for t in told)
    assert by_team["total"]["output_tokens"] == sum(t["output_tokens"] for t in told)

    pairs = {row["key"]: row["tells"] for row in iris.cli_json("costs", "--by", "pair")["rows"]}
    assert pairs == {"external->alpha": 2, "external->beta": 1, "alpha->beta": 1}
    days = iris.cli_json("costs", "--by", "day", "--since", "today")["rows"]
    assert len(days) == 1 and days[0]["tells"] == 4
    sessions = {(s.get("from_team"), s["to_team"]): s["cost_usd"] for s in iris.cli_json("sessions")}
    assert sessions[(None, "alpha")] == pytest.approx(teams["alpha"]["cost_usd"], rel=1e-9)

    human = iris.cli("costs", "--by", "pair")
    assert human.returncode == 0 and "external->alpha" in human.stdout and "total" in human.stdout


def test_a_tell_over_the_daily_budget_is_refused_before_any_model_request(iris: Iris, model: ScriptedModel) -> None:
    iris.add_team("alpha")
    iris.settings["budget"] = {"dailyUsd": 0.0001}  # one scripted tell costs more than this
    iris.start()
    first = iris.cli_json("tell", "alpha", "hello")
    assert first["status"] == "completed" and first["cost_usd"] > 0.0001
    requests_before = len(model.messages_requests())

    refused = iris.cli("tell", "alpha", "hello again")
    assert refused.returncode == 1
    assert "settings.budget.dailyUsd: $0.0001" in refused.stderr and "spent $0.000" in refused.stderr
    assert "raise it in config.yaml" in refused.stderr
    assert len(model.messages_requests()) == requests_before  # no claude turn, not even a request


def test_a_team_budget_refuses_only_that_team(shared: Iris) -> None:
    # teams capped (budget.dailyUsd: 0.0001) and beta
    assert shared.cli_json("tell", "capped", "hello")["status"] == "completed"
    refused = shared.cli_json("tell", "capped", "again", ok=False)
    assert refused["error"]["code"] == "budget" and "teams.capped.budget.dailyUsd" in refused["error"]["message"]
    assert shared.cli_json("tell", "beta", "hello")["status"] == "completed"


def test_a_chain_over_its_budget_stops_at_its_next_hop(iris: Iris, model: ScriptedModel) -> None:
    iris.add_team("alpha", permissions="skip")
    iris.add_team("beta")
    iris.settings["budget"] = {"chainUsd": 0.0001}
    iris.env["IS_SANDBOX"] = "1"  # permissions: skip as root
    iris.start()
    # alpha asks beta twice in one turn: the first hop is paid, the chain is then over budget.
    hop = json.dumps({"toTeam": "beta", "message": "hop", "timeout": 0})
    answer = iris.cli_json("tell", "alpha", f"@again:2 @tool:mcp__iris__team_tell {hop}")
    assert answer["status"] == "completed"
    assert "settings.budget.chainUsd" in answer["text"] and "chain stops here" in answer["text"]
    to_beta = [t for t in iris.cli_json("report", "beta", "--from", "alpha") if t["status"] == "completed"]
    assert len(to_beta) == 1  # the second hop never reached beta
    # beta's claude was asked "hop" once: however many requests it sent (a retry, a request of
    # its own in the background), none carries a second "hop" prompt
    def hop_prompts(body: dict[str, Any]) -> int:
        return sum(
            1
            for m in body.get("messages", [])
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for block in m["content"]
            if block.get("type") == "text" and block.get("text", "").strip() == "hop"
        )

    beta = [b for b in model.messages_requests() if "agent of team 'beta'" in json.dumps(b.get("system", ""))]
    assert beta and max(hop_prompts(b) for b in beta) == 1
    chain = iris.cli_json("costs", "--by", "chain")["rows"]
    assert [row["tells"] for row in chain] == [2]  # alpha's tell and beta's, one chain


def test_rate_limit_per_pair(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.settings["rateLimit"] = 2
    iris.start()
    for n in range(2):
        assert iris.cli_json("tell", "alpha", f"hi {n}")["status"] == "completed"
    refused = iris.cli_json("tell", "alpha", "hi 3", ok=False)
    assert refused["error"]["code"] == "rate_limited" and "settings.rateLimit" in refused["error"]["message"]
    assert iris.cli_json("tell", "alpha", "hi", "--from", "alpha")["status"] == "completed"  # another pair


def pair_pid(iris: Iris, team: str) -> int | None:
    """The pid of the claude of external->``team`` (asked over the socket: cheap to poll)."""
    status = iris.request(GetStatus())
    assert isinstance(status, StatusReply), status
    (process,) = [p for p in status.processes if p.to_team == team and p.from_team is None]
    return process.pid


def test_a_tell_s_own_budget_runs_on_a_claude_of_its_own_in_the_same_conversation(shared: Iris) -> None:
    # team spender
    assert shared.cli_json("tell", "spender", "hello")["text"] == "echo #1: hello"
    warm_pid = pair_pid(shared, "spender")

    # One scripted turn costs more than $0.0001: claude stops the tell at its budget.
    stopped = shared.cli_json("tell", "spender", "spend", "--max-budget-usd", "0.0001", ok=False)
    assert stopped["status"] == "failed" and stopped["max_budget_usd"] == 0.0001
    assert "Reached maximum budget ($0.0001)" in stopped["error"] and "--max-budget-usd" in stopped["error"]
    assert stopped["text"] == "echo #2: spend"  # what it wrote before the budget stopped it is kept
    assert stopped["cost_usd"] > 0.0001
    human = shared.cli("tell", "spender", "again", "--max-budget-usd", "0.0001")
    assert human.returncode == 1 and "Send it again with a higher --max-budget-usd" in human.stderr

    # The warm claude made way for the budgeted ones, and the tell after them gets one
    # with no budget: the same conversation all along.
    after = shared.cli_json("tell", "spender", "after")
    assert after["status"] == "completed" and after["text"] == "echo #4: after"
    assert pair_pid(shared, "spender") not in (None, warm_pid)
    assert shared.cli_json("tell", "spender", "roomy", "--max-budget-usd", "5")["status"] == "completed"
    costs = {row["key"]: row for row in shared.cli_json("costs", "--by", "pair")["rows"]}["external->spender"]
    assert costs["tells"] == 5 and costs["cost_usd"] > 0


def test_a_max_budget_that_is_no_budget_is_refused_with_what_to_give(shared: Iris) -> None:
    # team frugal
    for budget in ("0", "-1", "nan", "inf", "20000"):
        refused = shared.cli_json("tell", "frugal", "hi", "--max-budget-usd", budget, ok=False)
        assert refused["error"]["code"] == "invalid_request", budget
        assert f"--max-budget-usd {float(budget):g} is out of range; use more than 0, up to 10000" in (
            refused["error"]["message"]
        ), budget
    stored = shared.cli_json("tell", "frugal", "hi", "--persist", "--max-budget-usd", "1", ok=False)
    assert "persist" in stored["error"]["message"]
    assert shared.cli_json("report", "frugal") == []  # nothing was stored or run


def session_total(iris: Iris, tell_id: str) -> float:
    """claude's running total of the session, as the tell's result line says."""
    total: float = result_line(iris, tell_id)[1]["total_cost_usd"]
    return total


def alpha_pid(iris: Iris) -> int | None:
    return pair_pid(iris, "alpha")


def test_every_way_a_claude_restarts_books_only_the_tells_own_turns(iris: Iris) -> None:
    """claude's result lines carry the SESSION's running total (a resumed claude starts
    from what the session had spent): each tell is booked at the difference it made, so
    the ledger is claude's own total for the session, however often its claude restarted."""
    iris.add_team("alpha")
    iris.add_team("beta", idleTimeout=1000)
    iris.start()
    told: dict[str, list[dict[str, Any]]] = {"alpha": [], "beta": []}

    def tell(team: str, message: str, *options: str) -> dict[str, Any]:
        reply: dict[str, Any] = iris.cli_json("tell", team, message, *options)
        assert reply["status"] == "completed", reply
        told[team].append(reply)
        return reply

    tell("alpha", "warm one")
    tell("alpha", "warm two")
    assert iris.cli("sleep", "alpha").returncode == 0
    resumed = tell("alpha", "after sleep")  # a resumed claude: its first result holds the session so far
    iris.teams["alpha"]["description"] = "changed, so the reload restarts alpha's claude"
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    wait_for(lambda: alpha_pid(iris) is None, 30, "alpha's claude to stop for its new settings")
    tell("alpha", "after reload")
    iris.stop()
    iris.start()
    compact = tell("alpha", "/compact")  # the first turn of a claude resumed after irisd restarted
    tell("alpha", "after compact")
    budgeted = tell("alpha", "on a budget", "--max-budget-usd", "0.01")  # the session spent more than that
    tell("beta", "one")
    wait_for(lambda: pair_pid(iris, "beta") is None, 30, "beta's idle claude to be reaped")
    tell("beta", "after idle")

    for team, tells in told.items():  # the ledger is claude's own total of each session
        last = session_total(iris, tells[-1]["id"])
        assert sum(t["cost_usd"] for t in tells) == pytest.approx(last, rel=1e-9), team
    rows = {row["key"]: row for row in iris.cli_json("costs", "--by", "team")["rows"]}
    assert rows["alpha"]["cost_usd"] == pytest.approx(session_total(iris, told["alpha"][-1]["id"]), rel=1e-9)
    assert rows["alpha"]["output_tokens"] == sum(t["output_tokens"] for t in told["alpha"])

    assert resumed["cost_usd"] < session_total(iris, resumed["id"]) / 2  # not the session's history
    assert compact["cost_usd"] > 0 and compact["output_tokens"] > 0  # its model call, with its tokens
    assert budgeted["cost_usd"] < 0.01  # recorded at what it cost, within its own budget

    # One figure for one tell: the transcript's end says what the ledger says.
    shown = iris.cli("cache", "read", resumed["id"])
    assert f"${resumed['cost_usd']:.4f})" in shown.stdout, shown.stdout
    assert f"${session_total(iris, resumed['id']):.4f}" not in shown.stdout
    steps = iris.request(ReadTranscript(tell_id=resumed["id"], steps=True)).steps  # the dashboard's reading
    (end,) = [step for step in steps if step.kind == "end"]
    assert end.cost_usd == pytest.approx(resumed["cost_usd"]) and end.input_tokens == resumed["input_tokens"]

    # The daily budget acts on the true figures: what the sessions cost, not their histories again.
    spent = iris.cli_json("costs", "--since", "today")["total"]["cost_usd"]
    iris.settings["budget"] = {"dailyUsd": spent}
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    refused = iris.cli("tell", "beta", "over budget")
    assert refused.returncode == 1 and f"spent {usd(spent)} today" in refused.stderr, refused.stderr
    iris.settings["budget"] = {"dailyUsd": spent * 1.5}  # the histories counted again would be about twice
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    assert iris.cli_json("tell", "beta", "within budget")["status"] == "completed"
