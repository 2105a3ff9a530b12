"""One team, one home; who may ask: a second home claiming a name is refused loudly,
credentials the server refuses are named, a home refuses irisds it does not allow."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, wait_for
from mesh.nats import NatsServer
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture
def irisds(tmp_path: Path, model: ScriptedModel, claude_bin: Path) -> Iterator[list[Iris]]:
    made: list[Iris] = []
    yield made
    for iris in made:
        if iris.process is not None and iris.process.poll() is None:
            iris.stop(timeout=30)


def irisd(made: list[Iris], root: Path, name: str, url: str, model: ScriptedModel, claude: Path,
          **mesh: Any) -> Iris:
    iris = Iris(root / name, model_url=model.base_url, claude=claude)
    iris.settings["mesh"] = {"url": url, "name": name, **mesh}
    made.append(iris)
    return iris


def problems(iris: Iris) -> str:
    return " ".join(entry.get("message", "") for entry in iris.cli_json("status").get("recent_errors", []))


def test_a_second_home_claiming_a_name_is_refused_loudly(
    irisds: list[Iris], tmp_path: Path, nats_server: NatsServer, model: ScriptedModel, claude_bin: Path
) -> None:
    team = f"api{str(time.time_ns())[-6:]}"
    first = irisd(irisds, tmp_path, "ws-1", nats_server.url, model, claude_bin)
    second = irisd(irisds, tmp_path, "ws-2", nats_server.url, model, claude_bin)
    third = irisd(irisds, tmp_path, "ws-3", nats_server.url, model, claude_bin)
    first.add_team(team)
    second.add_team(team)
    first.start()
    third.start()
    wait_for(lambda: team_of(third, team), timeout=30, what="the team listed on ws-3")
    second.start()
    said = wait_for(lambda: "already homed on irisd `ws-1`" in (p := problems(second)) and p, timeout=30,
                    what="ws-2 refusing the name")
    assert f"team '{team}' is already homed on irisd `ws-1`; this irisd (`ws-2`) does not offer it" in said
    assert said.count("already homed") == 1, said  # said once, not again at each announcement
    # Never silently shadowed: the others still see ws-1 as its home.
    listed = team_of(third, team)
    assert listed is not None and listed["remote"] == "irisd ws-1"
    seen = third.cli_json("mesh", "status")
    assert {h["name"]: h.get("teams") for h in seen["irisds"]}["ws-1"] == [team], seen
    assert {t["name"]: t["home"] for t in seen["teams"]}[team] == "ws-1"
    assert all(h["reachable"] for h in seen["irisds"] if h["name"] in ("ws-1", "ws-2", "ws-3"))
    doctor = third.cli("doctor")
    assert "mesh" in doctor.stdout and "this irisd is `ws-3`" in doctor.stdout, doctor.stdout
    answer = third.cli_json("tell", team, "who are you")
    assert answer["text"] == "echo #1: who are you"
    assert first.cli_json("report", team, "--all-callers")[0]["from_team"] == "external@ws-3"


def test_a_second_irisd_of_the_same_name_stays_off_the_mesh(
    irisds: list[Iris], tmp_path: Path, nats_server: NatsServer, model: ScriptedModel, claude_bin: Path
) -> None:
    # Two irisds of one name would share its tells' consumer: each would take tells for the
    # other's teams and answer them "does not offer team".
    team = f"own{str(time.time_ns())[-6:]}"
    first = irisd(irisds, tmp_path, "ws-8", nats_server.url, model, claude_bin)
    second = irisd(irisds, tmp_path / "again", "ws-8", nats_server.url, model, claude_bin)
    caller = irisd(irisds, tmp_path, "ws-9", nats_server.url, model, claude_bin)
    first.add_team(team)
    second.add_team("other")
    first.start()
    caller.start()
    wait_for(lambda: team_of(caller, team), timeout=30, what="the team listed")
    second.start()
    said = wait_for(lambda: "is taken by another irisd" in (p := problems(second)) and p, timeout=30,
                    what="the second ws-8 refused")
    assert "irisd name `ws-8` is taken by another irisd" in said and "settings.mesh.name" in said
    for i in range(3):  # every tell reaches the first ws-8
        answer = caller.cli_json("tell", team, f"hi {i}")
        assert answer["status"] == "completed", answer
    homes = {h["name"]: h for h in caller.cli_json("mesh", "status")["irisds"]}
    assert homes["ws-8"]["teams"] == [team] and homes["ws-8"]["pid"] == first.process.pid  # type: ignore[union-attr]


def test_credentials_the_server_refuses_are_named(
    irisds: list[Iris], tmp_path: Path, model: ScriptedModel, claude_bin: Path
) -> None:
    server = NatsServer(tmp_path / "auth", config="authorization { user: ws-1, password: right }\n").start()
    try:
        iris = irisd(irisds, tmp_path, "ws-1", server.url, model, claude_bin, user="ws-1", password="wrong")
        iris.add_team("web")
        iris.start()  # irisd runs on without the mesh, and says why
        said = wait_for(lambda: "refused this irisd's credentials" in (p := problems(iris)) and p, timeout=30,
                        what="the refusal in iris status")
        assert "check settings.mesh.user/password" in said
        assert iris.cli_json("tell", "web", "still works here")["status"] == "completed"
    finally:
        server.stop()


def test_a_home_refuses_an_irisd_it_does_not_allow(
    irisds: list[Iris], tmp_path: Path, nats_server: NatsServer, model: ScriptedModel, claude_bin: Path
) -> None:
    team = f"vault{str(time.time_ns())[-6:]}"
    home = irisd(irisds, tmp_path, "ws-5", nats_server.url, model, claude_bin, allow=["ws-7"])
    caller = irisd(irisds, tmp_path, "ws-6", nats_server.url, model, claude_bin)
    home.add_team(team)
    home.start()
    caller.start()
    wait_for(lambda: team_of(caller, team), timeout=30, what="the team listed")
    refused = caller.cli_json("tell", team, "let me in", ok=False)
    assert refused["status"] == "failed"
    assert refused["error"] == "irisd `ws-5` does not take tells from irisd `ws-6` (its settings.mesh.allow)"
    assert home.cli_json("report", team, "--all-callers") == []  # nothing ran there
    # iris reload applies a changed settings.mesh at once (it reconnects with it).
    home.settings["mesh"]["allow"] = ["ws-6", "ws-7"]
    home.write_config()
    reloaded = home.cli_json("reload")
    assert "settings.mesh changed: in effect now" in reloaded["changes"]
    wait_for(lambda: team_of(caller, team), timeout=30, what="the team listed again after the reconnect")
    allowed = caller.cli_json("tell", team, "now?")
    assert allowed["status"] == "completed" and allowed["text"] == "echo #1: now?"


def team_of(iris: Iris, name: str) -> dict[str, Any] | None:
    teams: list[dict[str, Any]] = iris.cli_json("teams")
    return next((t for t in teams if t["name"] == name), None)
