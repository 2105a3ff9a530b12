"""Reloading config.yaml without a restart, with the real claude: what changed applies,
warm claudes of unchanged teams keep running, running tells finish, a bad file is refused
with irisd going on as it was."""

from __future__ import annotations

import signal
from typing import Any

from harness import Iris, wait_for


def pids(iris: Iris) -> dict[str, Any]:
    return {p["to_team"]: p.get("pid") for p in iris.cli_json("status")["processes"] if p.get("from_team") is None}


def test_reload_adds_changes_and_removes_teams_while_warm_claudes_and_running_tells_go_on(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    assert iris.cli_json("tell", "alpha", "warm up")["status"] == "completed"
    warm = pids(iris)["alpha"]
    running = iris.cli_json("tell", "beta", "@slow:300 @long:12", "--timeout", "-1")
    iris.wait_for_tell_status(running["id"], "running")

    iris.add_team("gamma")  # a repository added as a team
    iris.write_config()
    reloaded = iris.cli("reload")
    assert reloaded.returncode == 0, reloaded.stderr
    assert "reloaded: team gamma added" in reloaded.stdout
    assert iris.cli_json("tell", "gamma", "hello")["text"] == "echo #1: hello"
    assert pids(iris)["alpha"] == warm  # unchanged team: the same warm claude
    done = iris.cli_json("result", running["id"], "--wait", "120000")
    assert done["status"] == "completed" and done["text"].endswith("word12")  # it ran to its end

    config = iris.home / "config.yaml"
    good = config.read_text()
    config.write_text(good + "  broken: [\n")
    refused = iris.cli("reload")
    assert refused.returncode == 1 and "goes on with the config it had" in refused.stderr, refused.stderr
    status = iris.cli_json("status")
    assert "goes on with the config it had" in status["config_problem"]
    assert iris.cli_json("tell", "gamma", "still here")["text"] == "echo #2: still here"
    assert pids(iris)["alpha"] == warm

    iris.teams["alpha"]["description"] = "the API, now described"  # alpha changes, gamma goes
    del iris.teams["gamma"]
    iris.write_config()
    assert iris.process is not None
    reloads = iris.log().count("config.yaml reloaded")  # the first `iris reload` logged one already
    iris.process.send_signal(signal.SIGHUP)  # as 'systemctl --user reload irisd' does
    wait_for(lambda: iris.log().count("config.yaml reloaded") > reloads, 30, "the SIGHUP reload")
    assert "config_problem" not in iris.cli_json("status")  # a good reload clears the problem
    gone = iris.cli("tell", "gamma", "hi")
    assert gone.returncode == 1 and "team 'gamma' is not configured" in gone.stderr
    wait_for(lambda: pids(iris)["alpha"] is None, 30, "alpha's idle claude to stop for its new settings")
    again = iris.cli_json("tell", "alpha", "after the change")
    assert again["text"] == "echo #2: after the change"  # the same conversation, a new claude
    assert pids(iris)["alpha"] not in (None, warm)
    teams = {t["name"]: t for t in iris.cli_json("teams")}
    assert teams["alpha"].get("description") == "the API, now described" and "gamma" not in teams
