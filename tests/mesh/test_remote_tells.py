"""Two isolated irisds (own homes, sockets, databases, CLAUDE_CONFIG_DIR) on one NATS
server, the real claude and the scripted model: a team homed on one is told from the
other through the CLI, with its answer streaming, its cancel crossing the mesh, and a
home that is down getting its tells when it is back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from harness import Http, Iris, wait_for
from iris_common.mesh import Mesh
from irisd.mesh.bridge import open_bridge
from irisd.mesh.engine import open_link
from irisd.mesh.wire import FINAL, FinalMsg, reply_subject, tell_subject
from mesh.nats import NatsServer
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


def on_mesh(root: Path, name: str, url: str, model: ScriptedModel, claude: Path, **mesh: Any) -> Iris:
    iris = Iris(root / name, model_url=model.base_url, claude=claude)
    iris.settings["mesh"] = {"url": url, "name": name, **mesh}
    return iris


@pytest.fixture
def pair_of_irisds(
    tmp_path: Path, nats_server: NatsServer, model: ScriptedModel, claude_bin: Path
) -> Iterator[tuple[Iris, Iris]]:
    caller = on_mesh(tmp_path, "ws-1", nats_server.url, model, claude_bin)
    home = on_mesh(tmp_path, "ws-2", nats_server.url, model, claude_bin)
    yield caller, home
    for iris in (caller, home):
        if iris.process is not None and iris.process.poll() is None:
            iris.stop(timeout=30)


def teams_of(iris: Iris) -> dict[str, dict[str, Any]]:
    return {team["name"]: team for team in iris.cli_json("teams")}


def test_a_tell_to_a_team_of_another_irisd_streams_its_answer(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    suffix = str(time.time_ns())[-6:]  # the module's server is shared: names of this test's own
    backend, frontend = f"backend{suffix}", f"frontend{suffix}"
    home.add_team(backend, description="The API")
    caller.add_team(frontend)
    home.start()
    caller.start()
    listed = wait_for(lambda: teams_of(caller).get(backend), timeout=30, what="the remote team listed")
    assert listed["kind"] == "mesh" and listed["remote"] == "irisd ws-2"
    assert listed["description"] == "The API"

    with caller.watch() as watcher:
        answer = caller.cli_json("tell", backend, "@chunks:3 @slow:400 hello over there", "--from", frontend)
        assert answer["status"] == "completed", answer
        assert answer["text"] == "echo #1: hello over there"
        texts: list[str] = []
        while "".join(texts) != answer["text"]:
            event = watcher.until(lambda e: e.get("type") == "tell_text" and e["tell_id"] == answer["id"])
            texts.append(event["text"])
        assert len(texts) >= 2  # it streamed, not one block at the end

    # The home ran it in the pair frontend@ws-1 -> backend, as a tell of its own.
    run_there = home.cli_json("report", backend, "--all-callers")
    assert [t["from_team"] for t in run_there] == [f"{frontend}@ws-1"]
    # The same conversation goes on with the next tell of that pair.
    again = caller.cli_json("tell", backend, "and again", "--from", frontend)
    assert again["text"] == "echo #2: and again"
    # The HTTP API tells a remote team as it tells a local one.
    status, answer = Http(caller).json("POST", f"/api/teams/{backend}/tell",
                                       {"message": "over http", "from_team": frontend})
    assert status == 200 and "echo #3: over http" in json.dumps(answer), answer
    # A thread here is the same thread over there: a conversation of its own.
    threaded = caller.cli_json("tell", backend, "aside", "--from", frontend, "--thread", "aside")
    assert threaded["text"] == "echo #1: aside", threaded
    assert home.cli_json("report", backend, "--all-callers")[0]["thread"] == "aside"  # the newest first


def test_a_home_that_is_down_gets_its_tells_when_it_is_back(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    suffix = str(time.time_ns())[-6:]
    team = f"api{suffix}"
    home.add_team(team)
    home.start()
    caller.start()
    wait_for(lambda: teams_of(caller).get(team), timeout=30, what="the remote team listed")
    home.stop(timeout=30)
    queued = caller.cli_json("tell", team, "while you were away", "--timeout", "-1")
    assert queued["status"] == "in_progress"
    info = wait_for(
        lambda: (t := caller.cli_json("result", queued["id"]))["phase"]["detail"].startswith(
            "home irisd `ws-2` stopped since") and t,
        timeout=30, what="the phase saying the home is down",
    )
    assert info["status"] == "in_progress"
    home.start()
    done = caller.cli_json("result", queued["id"], "--wait", "60000")
    assert done["status"] == "completed" and done["text"] == "echo #1: while you were away"


def test_cancel_crosses_the_mesh(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    team = f"slow{str(time.time_ns())[-6:]}"
    home.add_team(team)
    home.start()
    caller.start()
    wait_for(lambda: teams_of(caller).get(team), timeout=30, what="the remote team listed")
    started = caller.cli_json("tell", team, "@hang never answers", "--timeout", "-1")
    wait_for(lambda: home.cli_json("report", team, "--all-callers"), timeout=30,
             what="the home to take the tell")
    cancelled = caller.cli_json("cancel", started["id"])
    assert cancelled["status"] == "interrupted"
    there = wait_for(
        lambda: (t := home.cli_json("report", team, "--all-callers")[0])["status"] == "interrupted" and t,
        timeout=30, what="the home's tell interrupted",
    )
    assert there["from_team"] == "external@ws-1"  # the home's own record says who asked


def test_approvals_are_decided_on_the_home_and_the_caller_sees_where(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    team = f"ops{str(time.time_ns())[-6:]}"
    folder = home.add_team(team, permissions="ask")
    home.start()
    caller.start()
    wait_for(lambda: teams_of(caller).get(team), timeout=30, what="the remote team listed")
    started = caller.cli_json("tell", team, '@tool:Bash {"command": "echo hi > made.txt"}', "--timeout", "-1")
    approval = wait_for(lambda: (a := home.cli_json("approvals")) and a[0], timeout=60, what="an approval on the home")
    assert caller.cli_json("approvals") == []  # decided where the team lives, not here
    waiting = wait_for(
        lambda: (t := caller.cli_json("result", started["id"]))["tell_status"] == "awaiting_approval" and t,
        timeout=30, what="the caller to see the approval awaited",
    )
    assert waiting["phase"]["detail"].startswith("approval on home irisd `ws-2`")
    home.cli_json("approve", approval["id"])
    done = caller.cli_json("result", started["id"], "--wait", "60000")
    assert done["status"] == "completed" and done["text"].startswith("tool Bash said:")
    assert (folder / "made.txt").read_text() == "hi\n"


def test_a_persisted_tell_to_a_remote_team_is_delivered(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    team = f"inbox{str(time.time_ns())[-6:]}"
    home.add_team(team)
    home.start()
    caller.start()
    wait_for(lambda: teams_of(caller).get(team), timeout=30, what="the remote team listed")
    caller.cli_json("tell", team, "remember this", "--persist")
    delivered = wait_for(
        lambda: [t for t in home.cli_json("report", team, "--all-callers") if t["status"] == "completed"],
        timeout=60, what="the notification delivered on the home",
    )
    assert delivered[0]["message"].endswith("remember this")
    assert delivered[0]["from_team"] == "external@ws-1"


def test_a_nested_tell_hops_back_to_the_callers_irisd(pair_of_irisds: tuple[Iris, Iris]) -> None:
    caller, home = pair_of_irisds
    suffix = str(time.time_ns())[-6:]
    backend, docs = f"backend{suffix}", f"docs{suffix}"
    home.add_team(backend)
    caller.add_team(docs)
    home.start()
    caller.start()
    wait_for(lambda: teams_of(caller).get(backend), timeout=30, what="backend listed on ws-1")
    wait_for(lambda: teams_of(home).get(docs), timeout=30, what="docs listed on ws-2")
    prompt = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": docs, "message": "from backend"})
    answer = caller.cli_json("tell", backend, prompt)
    assert answer["status"] == "completed", answer
    assert "echo #1: from backend" in answer["text"]  # backend's claude got docs' answer, from ws-1
    (nested,) = caller.cli_json("report", docs, "--all-callers")
    assert nested["from_team"] == f"{backend}@ws-2" and nested["status"] == "completed"
    # one chain across both irisds: ws-1's tell (hop 0), backend's on ws-2 (1), its nested tell (2),
    # docs' on ws-1 (3); the hop limit counts the whole chain, not each irisd's part of it
    assert nested["chain_id"] == answer["chain_id"] and nested["hops"] == 3


async def exchange(url: str, home: str, tells: list[bytes]) -> dict[str, FinalMsg]:
    """Publish ``tells`` to ``home`` as irisd ws-1 would (raw bytes: values no Iris sends) and
    collect the final result the home answers each with."""
    async with open_bridge() as bridge:
        link = await open_link(bridge, Mesh(servers=(url,), name="ws-1"))
        try:
            replies = await bridge.call(link.client.subscribe, reply_subject("ws-1", home))
            for data in tells:
                once = {"Nats-Msg-Id": msgspec.json.decode(data)["id"]}
                await bridge.call(link.js.publish, tell_subject(home, "ws-1"), data, headers=once)
            finals: dict[str, FinalMsg] = {}
            with trio.fail_after(90):
                while len(finals) < len(tells):
                    final = FINAL.decode((await bridge.call(replies.next_msg, 90)).data)
                    finals[final.id] = final
            return finals
        finally:
            await link.close()


def test_the_home_refuses_negative_hops_an_endless_path_and_a_loop_and_answers_each(
    pair_of_irisds: tuple[Iris, Iris], nats_server: NatsServer
) -> None:
    _, home = pair_of_irisds
    suffix = str(time.time_ns())[-6:]
    backend = f"backend{suffix}"
    home.add_team(backend)
    home.start()

    def tell(name: str, **fields: Any) -> bytes:
        sent = {"type": "tell", "id": f"{name}-{suffix}", "from_team": "web", "to_team": backend, "message": "hi"}
        return msgspec.json.encode({**sent, **fields})

    finals = trio.run(exchange, nats_server.url, "ws-2", [
        tell("negative", hops=-1),
        tell("endless", path=["web@ws-1"] * 65),
        tell("loop", chain_id="c-1", hops=1, path=[f"{backend}@ws-2", "web@ws-1"]),
    ])
    refused = {name: finals[f"{name}-{suffix}"] for name in ("negative", "endless", "loop")}
    assert all(final.status == "failed" for final in refused.values()), refused
    assert refused["negative"].error == "irisd `ws-2` refuses this tell: Expected `int` >= 0 - at `$.hops`"
    assert refused["endless"].error == "irisd `ws-2` refuses this tell: Expected `array` of length <= 64 - at `$.path`"
    # The loop is found by the one check every tell passes (admission), in the home's names.
    assert refused["loop"].error == (
        f"loop: {backend} is already waiting in this chain ({backend} -> web@ws-1 -> {backend}); "
        f"answer from what you know instead of asking {backend}"
    )
    assert [t["status"] for t in home.cli_json("report", backend, "--all-callers")] == ["failed"]  # the loop's record
