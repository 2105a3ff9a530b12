"""Session analytics with the real claude and the scripted model: ``iris sessions --stats``
and ``GET /api/sessions/stats`` say what the cost ledger and the pairs' histories say."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from harness import Http, Iris, wait_for

pytestmark = pytest.mark.claude


def test_the_stats_match_the_ledger_and_the_tells(iris: Iris) -> None:
    # Every answer is past 1% of a 1000-token window: Iris compacts alpha's conversation after each.
    iris.settings["sessions"] = {"compactAt": 1, "contextWindow": 1000}
    iris.add_team("alpha")
    iris.add_team("beta", sessions={"compactAt": 0})  # never
    iris.start()
    told: list[dict[str, Any]] = [iris.cli_json("tell", "alpha", message) for message in ("one", "@slow:300 two")]
    told += [iris.cli_json("tell", "beta", message, "--from", "alpha") for message in ("three", "four", "five")]
    assert all(t["status"] == "completed" for t in told), told
    wait_for(lambda: _session(iris, None, "alpha").get("compactions") == 2, what="both compactions recorded")

    stats = iris.cli_json("sessions", "--stats")
    pairs = {(p.get("from_team"), p["to_team"]): p for p in stats["pairs"]}
    assert list(pairs) == [("alpha", "beta"), (None, "alpha")]  # the most active first
    ledger = {row["key"]: row for row in iris.cli_json("costs", "--by", "pair")["rows"]}
    for (from_team, to_team), pair in pairs.items():
        row = ledger[f"{from_team or 'external'}->{to_team}"]
        for figure in ("cost_usd", "maintenance_usd", "input_tokens", "output_tokens", "cache_read_tokens",
                       "cache_creation_tokens"):
            assert pair.get(figure, 0) == pytest.approx(row.get(figure, 0), rel=1e-9), figure
        history = iris.cli_json("report", to_team, *(("--from", from_team) if from_team else ()))
        tells = [t for t in history if t.get("kind", "tell") == "tell"]
        assert pair["tells"] == len(tells) == row["tells"] - (len(history) - len(tells))  # compactions: no tells
        times = sorted(t["duration_ms"] for t in tells)
        assert pair["mean_tell_ms"] == pytest.approx(sum(times) / len(times))
        assert pair["p95_tell_ms"] == times[math.ceil(0.95 * len(times)) - 1]
        assert pair["last_used_at"] == pytest.approx(max(t["finished_at"] for t in history))
        assert pair["first_used_at"] == pytest.approx(min(t["finished_at"] - t["duration_ms"] / 1000 for t in history))
        assert pair["lifetime_s"] == pytest.approx(pair["last_used_at"] - pair["first_used_at"])
        session = _session(iris, from_team, to_team)
        assert pair["messages"] == session["message_count"] == len(tells)
        assert pair.get("compactions", 0) == session.get("compactions", 0)
    assert pairs[(None, "alpha")]["compactions"] == 2 and pairs[(None, "alpha")]["maintenance_usd"] > 0
    assert pairs[(None, "alpha")]["p95_tell_ms"] >= 300  # the slow one
    days = stats["days"]
    assert sum(d["tells"] for d in days) == len(told)
    assert sum(d["cost_usd"] for d in days) == pytest.approx(sum(p["cost_usd"] for p in pairs.values()), rel=1e-9)

    # The same over HTTP; narrowed to a team.
    status, _, body = Http(iris).request("GET", "/api/sessions/stats")
    assert status == 200 and json.loads(body) == {"type": "session_stats_reply", **stats}
    only = iris.cli_json("sessions", "beta", "--stats")
    assert [(p["from_team"], p["to_team"]) for p in only["pairs"]] == [("alpha", "beta")]
    human = iris.cli("sessions", "--stats")
    assert human.returncode == 0 and "alpha->beta" in human.stdout and "p95" in human.stdout


def _session(iris: Iris, from_team: str | None, to_team: str) -> dict[str, Any]:
    (found,) = [s for s in iris.cli_json("sessions", to_team) if s.get("from_team") == from_team]
    return found  # type: ignore[no-any-return]
