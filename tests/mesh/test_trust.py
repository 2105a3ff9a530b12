"""The mesh trusts each irisd with its own only: a NATS server whose users are the
README's permission template (written as it stands in README.md), two irisds (`ws4`
tells, `ws5` is the home) with the real claude and the scripted model, and `ws6`, a
member with valid credentials that attacks them with a plain NATS client: it cannot
read their tells, cancel or answer a tell it did not send or run, or take over a team's
name. Also: a tell sent while NATS is away is "not sent" only when it truly was not,
and one whose fate is unknown is settled by the home's result (run once)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import signal
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import nats
import nats.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from harness import Iris, wait_for
from iris_common.mesh import TeamEntry
from irisd.mesh.wire import CancelMsg, FinalMsg, LiveMsg
from mesh.nats import NatsServer, users_of_readme
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

T = TypeVar("T")


def on_mesh(root: Path, name: str, url: str, model: ScriptedModel, claude: Path, **mesh: Any) -> Iris:
    iris = Iris(root / name, model_url=model.base_url, claude=claude)
    iris.settings["mesh"] = {"url": url, "name": name, **mesh}
    return iris


def teams_of(iris: Iris) -> dict[str, dict[str, Any]]:
    return {team["name"]: team for team in iris.cli_json("teams")}


def as_irisd(server: NatsServer, name: str, work: Callable[[Client, list[str]], Awaitable[T]]) -> T:
    """Run ``work`` with a NATS connection made with irisd ``name``'s credentials (and its
    inboxes, as irisd makes them); ``work`` gets the errors the server sent so far."""

    async def run() -> T:
        errors: list[str] = []

        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        client = await nats.connect(server.url, user=name, password=f"pw-{name}", inbox_prefix=f"_INBOX.{name}",
                                    error_cb=on_error, allow_reconnect=False)
        try:
            return await work(client, errors)
        finally:
            await client.close()

    # nats-py leaves its socket and transport to the garbage collector when the server drops a
    # connection it refused (the attacks here): collect them now, quietly, instead of letting
    # their ResourceWarnings surface in whichever test runs next in this worker.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:  # in a thread of its own: no event loop of the test's may be running there
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                return pool.submit(lambda: asyncio.run(run())).result()
        finally:
            gc.collect()


def publish(server: NatsServer, name: str, subject: str, message: msgspec.Struct, msg_id: str) -> None:
    """Store ``message`` in JetStream as irisd ``name`` (on a subject its credentials may use)."""

    async def work(client: Client, errors: list[str]) -> None:
        ack = await client.jetstream(timeout=5).publish(subject, msgspec.json.encode(message),
                                                        headers={"Nats-Msg-Id": msg_id})
        assert not ack.duplicate

    as_irisd(server, name, work)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats-secured"), config=users_of_readme("ws4", "ws5", "ws6"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ws4_and_ws5(
    tmp_path_factory: pytest.TempPathFactory, secured: NatsServer, model: ScriptedModel, claude_bin: Path
) -> Iterator[tuple[Iris, Iris, str]]:
    """``ws4`` (a caller) and ``ws5`` (home of the team ``books``), each with its own user."""
    root = tmp_path_factory.mktemp("irisds")
    caller = on_mesh(root, "ws4", secured.url, model, claude_bin, user="ws4", password="pw-ws4")
    home = on_mesh(root, "ws5", secured.url, model, claude_bin, user="ws5", password="pw-ws5")
    home.add_team("books")
    home.add_team("ops", permissions="ask")
    home.start()
    caller.start()
    wait_for(lambda: {"books", "ops"} <= set(teams_of(caller)), timeout=30, what="ws5's teams listed on ws4")
    yield caller, home, "books"
    for iris in (caller, home):
        if iris.process is not None and iris.process.poll() is None:
            iris.stop(timeout=30)


def running_on_home(caller: Iris, home: Iris, team: str, message: str) -> tuple[str, dict[str, Any]]:
    """Send ``message`` (one that hangs) from ws4; its id there and its tell on ws5, running."""
    sent = caller.cli_json("tell", team, message, "--timeout", "-1")
    there = wait_for(
        lambda: next((t for t in home.cli_json("report", team, "--all-callers", "--limit", "50")
                      if t["message"] == message and t["status"] == "running"), None),
        timeout=60, what="the home running the tell",
    )
    return sent["id"], there


def test_an_irisd_reads_no_other_irisds_tells(ws4_and_ws5: tuple[Iris, Iris, str], secured: NatsServer) -> None:
    caller, _, team = ws4_and_ws5
    seen: list[str] = []

    async def note(message: Msg) -> None:
        seen.append(message.subject)

    async def spy(client: Client, errors: list[str]) -> list[str]:
        for subject in ("iris.live.ws4.*", "iris.>", "_INBOX.>", ">"):
            await client.subscribe(subject, cb=note)
        # ... and the stream of tells itself, and ws5's consumer of them
        for subject in ("$JS.API.STREAM.MSG.GET.IRIS_TELLS", "$JS.API.CONSUMER.MSG.NEXT.IRIS_TELLS.home-ws5"):
            await client.publish(subject, b'{"seq": 1}', reply=client.new_inbox())
        await client.flush()
        # ... nor a consumer of its own name reading ws5's tells (the filter is bound in the subject)
        config = {"durable_name": "home-ws6", "name": "home-ws6", "filter_subject": "iris.tell.ws5.>",
                  "ack_policy": "explicit", "deliver_policy": "all"}
        created = await client.request("$JS.API.CONSUMER.CREATE.IRIS_TELLS.home-ws6.iris.tell.ws6.>",
                                       json.dumps({"stream_name": "IRIS_TELLS", "config": config}).encode(), timeout=5)
        assert b'"error"' in created.data and b"filter" in created.data.lower(), created.data
        answer = await asyncio.to_thread(caller.cli_json, "tell", team, "@chunks:3 our secret plans")
        assert answer["status"] == "completed", answer
        await client.flush()  # whatever the server sent it before this round trip is in
        return errors

    errors = as_irisd(secured, "ws6", spy)
    assert seen == []
    for subject in ("iris.live.ws4.*", "iris.>", "_INBOX.>", ">"):
        assert f'permissions violation for subscription to "{subject.lower()}"' in " ".join(errors).lower(), errors
    for subject in ("$JS.API.STREAM.MSG.GET.IRIS_TELLS", "$JS.API.CONSUMER.MSG.NEXT.IRIS_TELLS.home-ws5"):
        assert f'permissions violation for publish to "{subject.lower()}"' in " ".join(errors).lower(), errors


def test_only_the_irisd_that_sent_a_tell_can_cancel_it(
    ws4_and_ws5: tuple[Iris, Iris, str], secured: NatsServer
) -> None:
    caller, home, team = ws4_and_ws5
    tell_id, there = running_on_home(caller, home, team, "@hang cancel me if you can")
    # ws6 learned the id somehow, and sends a cancel on its own subject (which it may)
    publish(secured, "ws6", "iris.tell.ws5.ws6", CancelMsg(id=tell_id), f"{tell_id}.cancel")
    wait_for(lambda: "dropped a cancel from an irisd that did not send the tell" in home.log(), timeout=30,
             what="ws5 to drop the cancel")
    assert home.cli_json("result", there["id"])["tell_status"] == "running"
    assert caller.cli_json("result", tell_id)["status"] == "in_progress"
    # its sender still can
    assert caller.cli_json("cancel", tell_id)["status"] == "interrupted"
    wait_for(lambda: home.cli_json("result", there["id"], ok=False)["status"] == "interrupted", timeout=30,
             what="the home's tell interrupted by its sender")


def test_only_the_home_of_a_tell_can_answer_it(ws4_and_ws5: tuple[Iris, Iris, str], secured: NatsServer) -> None:
    caller, home, _ = ws4_and_ws5
    sent = caller.cli_json("tell", "ops", '@tool:Bash {"command": "echo real > answer.txt"}', "--timeout", "-1")
    tell_id = sent["id"]
    approval = wait_for(lambda: (a := home.cli_json("approvals")) and a[0], timeout=60, what="an approval on ws5")
    # ws6 answers it first, on its own subject (which it may), under the message id the
    # home used to give a result
    forged = FinalMsg(id=tell_id, status="completed", text="FORGED ANSWER from ws6")
    publish(secured, "ws6", "iris.reply.ws4.ws6", forged, f"{tell_id}.final")
    wait_for(lambda: "dropped a result from an irisd that is not the tell's home" in caller.log(), timeout=30,
             what="ws4 to drop the forged result")

    async def live(client: Client, errors: list[str]) -> None:
        await client.publish("iris.live.ws4.ws6", msgspec.json.encode(LiveMsg(id=tell_id, text="FORGED TEXT")))
        await client.flush()

    as_irisd(secured, "ws6", live)
    wait_for(lambda: "dropped a live message from an irisd that is not the tell's home" in caller.log(),
             timeout=30, what="ws4 to drop the forged live text")
    result = caller.cli_json("result", tell_id)
    assert result["status"] == "in_progress" and "FORGED" not in result.get("text", ""), result
    # the home's own answer still comes through
    home.cli_json("approve", approval["id"])
    done = caller.cli_json("result", tell_id, "--wait", "60000")
    assert done["status"] == "completed" and done["text"].startswith("tool Bash said:"), done
    assert "FORGED" not in done["text"]


def test_no_irisd_can_take_over_another_irisds_team(
    ws4_and_ws5: tuple[Iris, Iris, str], secured: NatsServer
) -> None:
    caller, _, team = ws4_and_ws5
    marker = f"marker{str(time.time_ns())[-6:]}"
    forged = msgspec.json.encode(TeamEntry(name=team, home="ws6"))

    async def take_over(client: Client, errors: list[str]) -> list[str]:
        kv = await client.jetstream(timeout=2).key_value("iris-teams")
        refused = []
        for key in (team, f"ws5.{team}"):  # the team's key (as it was), ws5's own claim
            try:
                await kv.put(key, forged)
            except nats.errors.TimeoutError:
                refused.append(key)
        await kv.put(f"ws6.{team}", forged)  # a claim of its own: a later one
        await kv.put(f"ws6.{marker}", msgspec.json.encode(TeamEntry(name=marker, home="ws6")))
        return refused

    refused = as_irisd(secured, "ws6", take_over)
    # ws4 read ws6's claims (the marker is its last one, and the watch keeps their order)
    wait_for(lambda: teams_of(caller).get(marker), timeout=30, what="ws6's claims read on ws4")
    assert teams_of(caller)[team]["remote"] == "irisd ws5"
    answer = caller.cli_json("tell", team, "still yours?", "--timeout", "60000", ok=False)
    assert answer["status"] == "completed" and answer["text"].startswith("echo #"), answer
    assert refused == [team, f"ws5.{team}"]  # the server let ws6 write neither
    homes = {t["name"]: t["home"] for t in caller.cli_json("mesh", "status")["teams"]}  # read with ws4's user
    assert homes[team] == "ws5" and homes[marker] == "ws6"

    async def leave(client: Client, errors: list[str]) -> None:
        kv = await client.jetstream(timeout=2).key_value("iris-teams")
        for key in (f"ws6.{team}", f"ws6.{marker}"):
            await kv.delete(key)

    as_irisd(secured, "ws6", leave)


@pytest.fixture
def on_one_server(tmp_path: Path, model: ScriptedModel, claude_bin: Path) -> Iterator[tuple[NatsServer, Iris, Iris]]:
    """A NATS server of its own (the test stops it), ``ws-a`` and ``ws-b`` (home of ``ledger``)."""
    server = NatsServer(tmp_path / "nats").start()
    caller = on_mesh(tmp_path, "ws-a", server.url, model, claude_bin)
    # A tell not stored within this is "not sent" (sent, unconfirmed: in progress): 30 s by
    # default, which these tests would wait out twice; a healthy publish takes milliseconds.
    caller.settings["handoffTimeout"] = 5000
    home = on_mesh(tmp_path, "ws-b", server.url, model, claude_bin)
    home.add_team("ledger")
    try:
        home.start()
        caller.start()
        wait_for(lambda: teams_of(caller).get("ledger", {}).get("remote") == "irisd ws-b", timeout=30,
                 what="the team listed")
        yield server, caller, home
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.send_signal(signal.SIGCONT)
        for iris in (caller, home):
            if iris.process is not None and iris.process.poll() is None:
                iris.stop(timeout=30)
        server.stop()


def ran_on(home: Iris) -> list[str]:
    return sorted(t["message"] for t in home.cli_json("report", "ledger", "--all-callers", "--limit", "50"))


def test_a_tell_not_sent_while_nats_is_down_never_runs(on_one_server: tuple[NatsServer, Iris, Iris]) -> None:
    server, caller, home = on_one_server
    server.stop()
    wait_for(lambda: "unreachable" in teams_of(caller)["ledger"]["remote"], timeout=30, what="ws-a to see NATS gone")
    failed = caller.cli_json("tell", "ledger", "sent while NATS was down", ok=False)
    assert failed["status"] == "failed" and failed["error"].startswith("not sent:"), failed
    server.start()
    wait_for(lambda: teams_of(caller)["ledger"]["remote"] == "irisd ws-b", timeout=60, what="both back on NATS")
    # the next tell goes after anything ws-a had left to send, in the same stream and pair
    after = caller.cli_json("tell", "ledger", "after NATS is back")
    assert after["status"] == "completed", after
    assert ran_on(home) == ["after NATS is back"]  # "not sent" was true: sending it again runs it once


def test_a_tell_whose_fate_is_unknown_is_settled_by_its_home(on_one_server: tuple[NatsServer, Iris, Iris]) -> None:
    server, caller, home = on_one_server
    assert server.process is not None
    server.process.send_signal(signal.SIGSTOP)  # NATS stops answering while the tell goes out
    try:
        unknown = caller.cli_json("tell", "ledger", "sent as NATS froze", "--timeout", "-1", ok=False)
    finally:
        server.process.send_signal(signal.SIGCONT)
    assert unknown["status"] == "in_progress", unknown  # not "not sent": it may be stored
    assert unknown["phase"]["detail"].startswith("sent, not confirmed yet"), unknown
    assert "do not send it again" in unknown["phase"]["detail"]
    settled = caller.cli_json("result", unknown["id"], "--wait", "60000")
    assert settled["status"] == "completed" and settled["text"].endswith(": sent as NATS froze"), settled
    assert ran_on(home) == ["sent as NATS froze"]  # once
