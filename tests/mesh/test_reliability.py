"""Nothing lost, nothing run twice: two irisds on a 3-node NATS cluster (streams with 3
replicas), a stream of remote tells, and kill -9 of the home irisd, of one NATS server
and of the caller irisd while they run. Every tell ends (completed, or interrupted if
it was running in the claude of an irisd that was killed), and no tell runs twice on
the home. Lean on purpose: CI has 2 cores."""

from __future__ import annotations

import collections
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, wait_for
from mesh.nats import NatsCluster
from scripted_model import ScriptedModel

pytestmark = [pytest.mark.claude, pytest.mark.timeout(600)]

TELLS = 12


@pytest.fixture
def caller_and_home(
    tmp_path: Path, nats_cluster: NatsCluster, model: ScriptedModel, claude_bin: Path
) -> Iterator[tuple[Iris, Iris]]:
    made = []
    for name in ("ws-a", "ws-b"):
        iris = Iris(tmp_path / name, model_url=model.base_url, claude=claude_bin)
        iris.settings["mesh"] = {"url": nats_cluster.urls, "name": name}
        made.append(iris)
    yield made[0], made[1]
    for iris in made:
        if iris.process is not None and iris.process.poll() is None:
            iris.stop(timeout=30)


def final(iris: Iris, tell_id: str) -> dict[str, Any]:
    return iris.cli_json("result", tell_id, "--wait", "120000", ok=False)  # type: ignore[no-any-return]


def test_kill_9_of_each_irisd_and_of_a_nats_server_loses_nothing_and_runs_nothing_twice(
    caller_and_home: tuple[Iris, Iris], nats_cluster: NatsCluster
) -> None:
    caller, home = caller_and_home
    team = f"ledger{str(time.time_ns())[-6:]}"
    home.add_team(team)
    home.start()
    caller.start()
    wait_for(lambda: any(t["name"] == team for t in caller.cli_json("teams")), timeout=30,
             what="the remote team listed")
    sent = {}
    for index in range(TELLS):
        reply = caller.cli_json("tell", team, f"@slow:100 n{index}", "--timeout", "-1")
        sent[reply["id"]] = f"n{index}"

    def taken() -> int:
        return len(home.cli_json("report", team, "--all-callers", "--limit", "100"))

    wait_for(lambda: taken() >= 2, timeout=60, what="the home to take tells")
    home.stop(signal.SIGKILL)                      # the home dies mid-run
    nats_cluster.servers[0].kill()                 # and one NATS server with it
    home.start()
    wait_for(lambda: taken() >= 6, timeout=120, what="the home to go on after its restart")
    caller.stop(signal.SIGKILL)                    # then the caller dies while tells run
    caller.start()

    def home_tells() -> list[dict[str, Any]]:
        return home.cli_json("report", team, "--all-callers", "--limit", "100")  # type: ignore[no-any-return]

    unfinished = ("queued", "running", "awaiting_approval")
    wanted = {f"@slow:100 {m}" for m in sent.values()}

    def ended_on_home() -> dict[str, dict[str, Any]] | None:
        """Each message's latest tell on the home, once every one has run and ended. (A
        tell that waited in the home's queue when it was killed ended interrupted there
        without running, and is submitted again after the restart.)"""
        latest: dict[str, dict[str, Any]] = {}
        for tell in sorted(home_tells(), key=lambda t: t["created_at"]):
            latest[tell["message"]] = tell
        done = set(latest) == wanted and all(
            t["status"] not in unfinished and t.get("started_at") for t in latest.values()
        )
        return latest if done else None

    there = wait_for(ended_on_home, timeout=180, what="the home to end every tell")
    started = collections.Counter(t["message"] for t in home_tells() if t.get("started_at"))
    assert set(there) == wanted  # nothing lost: every tell reached the home
    assert max(started.values()) == 1, started  # nothing ran twice
    print({m: (t["status"], t.get("error")) for m, t in there.items()})

    def settled() -> dict[str, dict[str, Any]] | None:
        results = {tell_id: final(caller, tell_id) for tell_id in sent}
        agree = all(r["status"] == there[f"@slow:100 {sent[i]}"]["status"] for i, r in results.items())
        return results if agree else None

    results = wait_for(settled, timeout=60, what="every final result back on the caller")
    statuses = collections.Counter(r["status"] for r in results.values())
    assert set(statuses) <= {"completed", "interrupted"}, statuses
    assert statuses["interrupted"] <= 1, statuses  # at most the one running when the home died
    for tell_id, result in results.items():
        if result["status"] == "completed":
            assert result["text"].endswith(f": {sent[tell_id]}"), result
    print(f"\nmesh reliability: {TELLS} tells, {dict(statuses)}, each run at most once on the home")
    nats_cluster.servers[0].start()
