"""An A2A agent as a team: the official a2a-sdk server (tests/fakes/a2a_agent.py, asyncio,
its own process) stands in for another framework's agent, configured as
``teams.NAME: {a2a: URL}``; a real irisd tells it.

Most tests share one irisd (``shared``), each through teams of its own (its own pairs, so
its own contexts at the agent); those that restart irisd or reload its config start their own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, started, wait_for
from scripted_model import ScriptedModel

AGENT = Path(__file__).parent.parent / "fakes" / "a2a_agent.py"


@dataclass
class Agent:
    url: str
    process: subprocess.Popen[str]
    drain: threading.Thread

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.drain.join(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()

    @property
    def port(self) -> str:
        return self.url.rsplit(":", 1)[1]

    @property
    def card(self) -> str:
        return self.url + "/.well-known/agent-card.json"

    def reset(self) -> None:
        """Forget what it received and its conversations' counts (``POST /_reset``)."""
        request = urllib.request.Request(self.url + "/_reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def log(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/_log", timeout=10) as response:
            result: dict[str, Any] = json.load(response)
            return result


def start_agent(*args: str) -> Agent:
    # Its stderr goes to the test's own (pytest shows it when a test fails).
    process = subprocess.Popen([sys.executable, str(AGENT), *args], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()  # its first line, once its socket accepts connections
    assert line.startswith("listening on "), f"the fake agent did not start: {line!r}"
    # Drain what else it says, so a chatty agent never blocks on a full pipe.
    drain = threading.Thread(target=process.stdout.read, daemon=True)
    drain.start()
    return Agent(url=line.split()[-1], process=process, drain=drain)


@pytest.fixture(scope="module")
def shared_agent() -> Iterator[list[Agent]]:
    """One agent for the module's tests (starting the a2a-sdk server costs 1-2 s)."""
    holder = [start_agent()]
    yield holder
    if holder[0].process.poll() is None:
        holder[0].stop()


@pytest.fixture
def agent(shared_agent: list[Agent]) -> Agent:
    """The module's agent, as if new: its log and counts reset (started again, on its port,
    if a test stopped it: the shared irisd's teams name that port)."""
    if shared_agent[0].process.poll() is not None:
        shared_agent[0] = start_agent("--port", shared_agent[0].port)
    shared_agent[0].reset()
    return shared_agent[0]


@pytest.fixture(scope="module")
def odd_agents() -> Iterator[dict[str, Agent]]:
    """The agents unlike the module's: one that does not stream, one that wants a token,
    one whose card offers no interface Iris speaks."""
    agents: dict[str, Agent] = {}
    try:
        agents["polled"] = start_agent("--no-streaming")
        agents["guarded"] = start_agent("--token", "s3cret")
        agents["bad"] = start_agent("--bad-card")
        yield agents
    finally:
        for each in agents.values():
            each.stop()


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory,
    model: ScriptedModel,
    claude_bin: Path,
    shared_agent: list[Agent],
    odd_agents: dict[str, Agent],
) -> Iterator[Iris]:
    """The irisd most tests share: each test tells teams of its own (named in its comment)."""
    card = shared_agent[0].card
    teams: dict[str, dict[str, Any]] = {
        "alpha": {},  # a claude team: fan-out, team_tell, and an asking team of its own
        "ctx": {"a2a": card},
        "streamer": {"a2a": card},
        "painter": {"a2a": card},
        "forgetful": {"a2a": card},
        "helper": {"a2a": card},
        "hanger": {"a2a": card},
        "mute": {"a2a": card, "responseTimeout": 1500},
        "polled": {"a2a": odd_agents["polled"].url},  # the base URL: the card is at the well-known path
        "guarded": {"a2a": odd_agents["guarded"].card, "headers": {"Authorization": "Bearer ${HELPER_TOKEN}"}},
        "nokey": {"a2a": odd_agents["guarded"].card},
        "gone": {"a2a": "http://127.0.0.1:9/.well-known/agent-card.json"},
        "odd": {"a2a": odd_agents["bad"].card},
        "fanned": {"a2a": card},
        "asked": {"a2a": card},
    }
    with started(tmp_path_factory.mktemp("a2a-out"), model_url=model.base_url, claude=claude_bin, teams=teams,
                 env={"HELPER_TOKEN": "s3cret"}) as iris:
        yield iris


def tell(iris: Iris, team: str, message: str, *extra: str) -> dict[str, Any]:
    result = iris.cli("tell", team, message, "--json", *extra)
    out: dict[str, Any] = json.loads(result.stdout or result.stderr)
    return out


def test_iris_tell_gets_the_agents_answer_and_continues_its_context(iris: Iris, agent: Agent) -> None:
    iris.teams["helper"] = {"a2a": agent.card, "description": "a foreign agent"}
    iris.start()
    first = tell(iris, "helper", "hello")
    assert first["status"] == "completed", first
    assert first["text"] == "echo #1: hello"
    second = tell(iris, "helper", "again")
    assert second["text"] == "echo #2: again"  # same contextId: the agent counts on
    received = agent.log()["received"]
    assert received[0]["contextId"] == received[1]["contextId"]
    chain = received[0]["metadata"]["iris"]
    assert chain["chainId"] == first["id"] and chain["path"] == ["external", "helper"]
    # After a restart of irisd the pair still continues the same remote context.
    iris.stop()
    iris.start()
    third = tell(iris, "helper", "after restart")
    assert third["text"] == "echo #3: after restart", third
    teams = iris.cli_json("teams")
    helper = next(t for t in teams if t["name"] == "helper")
    assert helper["kind"] == "a2a" and helper["remote"] == agent.card


def test_each_asking_team_keeps_its_own_context_with_the_agent(shared: Iris, agent: Agent) -> None:
    # team ctx
    assert tell(shared, "ctx", "from you")["text"] == "echo #1: from you"
    assert tell(shared, "ctx", "from alpha", "--from", "alpha")["text"] == "echo #1: from alpha"  # not #2
    assert tell(shared, "ctx", "you again")["text"] == "echo #2: you again"
    mine, alphas, mine_again = agent.log()["received"]
    assert mine["contextId"] != alphas["contextId"] and mine_again["contextId"] == mine["contextId"]
    assert alphas["metadata"]["iris"]["path"] == ["alpha", "ctx"]


def test_the_answer_streams_in_and_watch_sees_the_states(shared: Iris, agent: Agent) -> None:
    with shared.watch("streamer") as watcher:
        told = shared.cli_json("tell", "streamer", "@slow:700 stream me")
        watcher.until(lambda e: e.get("status") == "completed", what="the tell's end")
        events = watcher.seen[1:]
    assert told["text"] == "echo #1: @slow:700 stream me"
    states = [e["status"] for e in events if e["type"] == "tell_state"]
    assert states == ["queued", "running", "completed"]
    texts = [e["text"] for e in events if e["type"] == "tell_text"]
    assert len(texts) >= 2, events  # the pieces arrived one by one, 0.7 s apart
    assert "".join(texts) == told["text"]
    assert any(e["type"] == "tell_phase" and "is working on it" in e["phase"].get("detail", "") for e in events)


def test_a_question_of_the_agent_is_answered_in_the_same_task(shared: Iris, agent: Agent) -> None:
    # team painter
    stored = shared.cli_json("tell", "painter", "@ask paint it", "--persist")

    def pending() -> list[dict[str, Any]]:
        return [q for q in shared.cli_json("questions") if q["to_team"] == "painter"]

    (question,) = wait_for(pending, what="a pending question")
    assert question["question"] == "Which colour?", question
    assert stored["id"].startswith("n-")  # stored, and delivered when the answer came
    answered = shared.cli("answer", question["id"], "blue")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "you chose: blue\n"
    asked, reply = agent.log()["received"]
    assert reply["taskId"] == asked["taskId"] and reply["contextId"] == asked["contextId"]
    # The task is done: the pair's next tell is a new task of the same context.
    after = shared.cli_json("tell", "painter", "next")
    assert after["text"] == "echo #3: next"
    assert agent.log()["received"][-1]["taskId"] != asked["taskId"]


def test_a_reply_to_a_task_the_agent_lost_goes_out_anew_in_the_context(
    shared: Iris, agent: Agent, shared_agent: list[Agent]
) -> None:
    # team forgetful
    logged = len(shared.log())
    asked = shared.cli_json("tell", "forgetful", "@ask paint it")
    assert asked["text"] == "Which colour?"
    context = agent.log()["received"][0]["contextId"]
    agent.stop()  # the agent restarts and forgets its tasks
    shared_agent[0] = again = start_agent("--port", agent.port)  # the module's agent from now on
    reply = shared.cli_json("tell", "forgetful", "blue")
    assert reply["status"] == "completed" and reply["text"] == "echo #1: blue", reply
    (sent,) = again.log()["received"]  # the one that reached the agent: no taskId, same context
    assert sent["contextId"] == context
    assert "asking anew in its context" in shared.log()[logged:]


@pytest.mark.parametrize(
    ("message", "status", "error"),
    [
        ("@fail now", "failed", "the A2A agent of team 'helper' failed the task: the fake agent failed on purpose"),
        ("@reject this", "failed", "the A2A agent of team 'helper' rejected the task: not my job"),
        ("@message", "completed", ""),
    ],
)
def test_the_agents_final_state_is_the_tells(shared: Iris, agent: Agent, message: str, status: str, error: str) -> None:
    # team helper
    result = shared.cli("tell", "helper", message, "--json")
    answer = json.loads(result.stdout)
    assert answer["status"] == status, answer
    assert answer.get("error", "") == error
    assert (result.returncode == 0) == (status == "completed")
    if status == "completed":
        assert answer["text"] == "a direct message"  # an answer with no task at all


def test_cancelling_the_tell_cancels_the_task_at_the_agent(shared: Iris, agent: Agent) -> None:
    # team hanger
    started = shared.cli_json("tell", "hanger", "@hang forever", "--timeout", "-1")
    wait_for(lambda: agent.log()["received"], what="the agent got the message")
    cancelled = shared.cli("cancel", started["id"], "--json")
    assert json.loads(cancelled.stdout)["tell_status"] == "interrupted", cancelled.stdout
    (task_id,) = wait_for(lambda: agent.log()["cancelled"], what="CancelTask at the agent")
    assert task_id == agent.log()["received"][0]["taskId"]


def test_an_agent_silent_past_its_response_timeout_times_out_and_is_cancelled(shared: Iris, agent: Agent) -> None:
    # team mute (responseTimeout: 1500)
    result = shared.cli_json("tell", "mute", "@hang", ok=False)
    assert result["status"] == "timed_out", result
    assert result["error"] == "no word from the remote team for 1.5 s (responseTimeout)"
    (task_id,) = wait_for(lambda: agent.log()["cancelled"], what="CancelTask at the agent")
    assert task_id == agent.log()["received"][0]["taskId"]


def test_an_agent_that_does_not_stream_is_polled(shared: Iris) -> None:
    # team polled: the agent's base URL (the card is at the well-known path)
    first = shared.cli_json("tell", "polled", "@slow:300 poll me")
    assert first["text"] == "echo #1: @slow:300 poll me"
    assert shared.cli_json("tell", "polled", "again")["text"] == "echo #2: again"


def test_headers_carry_the_agents_token_from_irisds_environment(shared: Iris) -> None:
    # teams guarded (headers: Bearer ${HELPER_TOKEN}, s3cret in irisd's environment) and nokey
    assert shared.cli_json("tell", "guarded", "let me in")["text"] == "echo #1: let me in"
    refused = shared.cli_json("tell", "nokey", "me too", ok=False)
    assert refused["status"] == "failed"
    assert "refused Iris at " in refused["error"] and "(HTTP 401)" in refused["error"]
    assert "'teams.nokey.headers'" in refused["error"]


def test_an_unreachable_or_foreign_agent_fails_the_tell_clearly(shared: Iris) -> None:
    # teams gone (nothing listens) and odd (a card with no interface Iris speaks)
    logged = len(shared.log())
    gone = shared.cli_json("tell", "gone", "hello?", ok=False)
    assert gone["status"] == "failed"
    assert gone["error"].startswith("cannot reach the A2A agent of team 'gone' (fetching its card at http://127.0.0.1:9/")
    assert "check that the agent runs and that 'teams.gone.a2a' in config.yaml is its card's URL" in gone["error"]
    odd = shared.cli_json("tell", "odd", "hello?", ok=False)
    assert odd["status"] == "failed"
    assert "offers no JSON-RPC interface of A2A 1.x (it offers: nothing)" in odd["error"], odd
    assert "Traceback" not in shared.log()[logged:]


def test_fan_out_reaches_an_agent_and_a_claude_team_alike(shared: Iris, agent: Agent) -> None:
    # teams alpha (its claude may be warm from another test: its turn number is not this test's) and fanned
    results = shared.cli_json("tell", "alpha,fanned", "hello all")
    assert [(r["to_team"], r["status"]) for r in results] == [("alpha", "completed"), ("fanned", "completed")]
    assert re.fullmatch(r"echo #\d+: hello all", results[0]["text"]), results
    assert results[1]["text"] == "echo #1: hello all"
    rows = {row["key"]: row for row in shared.cli_json("costs", "--by", "pair")["rows"]}
    assert rows["external->fanned"]["tells"] == 1  # in the ledger, at no cost to Iris (A2A carries none)
    assert rows["external->fanned"]["cost_usd"] == 0
    # Its pair is no claude process here: status says what it is, for the counts and the actions.
    kinds = {
        p["to_team"]: p.get("kind", "")
        for p in shared.cli_json("status")["processes"]
        if p.get("from_team") is None and p["to_team"] in ("alpha", "fanned")
    }
    assert kinds == {"alpha": "", "fanned": "a2a"}


@pytest.mark.claude
def test_a_claude_team_asks_the_agent_with_team_tell(shared: Iris, agent: Agent) -> None:
    # teams alpha (its claude may be warm from another test) and asked
    prompt = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "asked", "message": "from claude"})
    answer = shared.cli_json("tell", "alpha", prompt)
    assert answer["status"] == "completed", answer
    assert "echo #1: from claude" in answer["text"]
    (received,) = agent.log()["received"]
    chain = received["metadata"]["iris"]
    # the whole chain's teams: the person asked alpha, which asked helper
    assert chain == {"chainId": answer["id"], "hops": 1.0, "path": ["external", "alpha", "asked"]}


@pytest.fixture(scope="module")
def across(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path
) -> Iterator[tuple[Iris, Iris]]:
    """Two irisd: the far one's teams are teams of the near one through A2A, each with a
    token of its own: farback (backend over there, as 'near') and webagent (frontend, as
    'loopback'). Near, backend is a claude team that can ask."""
    root = tmp_path_factory.mktemp("a2a-across")
    far_teams: dict[str, dict[str, Any]] = {"backend": {"description": "the far API"}, "frontend": {}}
    with started(root / "far", model_url=model.base_url, claude=claude_bin, teams=far_teams) as far:
        tokens = {}
        for name in ("near", "loopback"):
            token = far.cli("a2a", "token", "--name", name)
            assert token.returncode == 0, token.stderr
            tokens[name] = token.stdout.strip().split()[-1]
        near_teams: dict[str, dict[str, Any]] = {
            "backend": {},
            "farback": {
                "a2a": f"{far.http_url}/a2a/backend/.well-known/agent-card.json",
                "headers": {"Authorization": "Bearer ${NEAR_TOKEN}"},
            },
            "webagent": {
                "a2a": f"{far.http_url}/a2a/frontend/.well-known/agent-card.json",
                "headers": {"Authorization": "Bearer ${LOOPBACK_TOKEN}"},
            },
        }
        env = {"NEAR_TOKEN": tokens["near"], "LOOPBACK_TOKEN": tokens["loopback"]}
        with started(root / "near", model_url=model.base_url, claude=claude_bin, teams=near_teams, env=env) as near:
            yield near, far


@pytest.mark.claude
def test_a_team_of_another_iris_is_a_team_here_through_a2a(across: tuple[Iris, Iris]) -> None:
    iris, far = across  # team farback here: backend over there, for the token 'near'
    first = iris.cli_json("tell", "farback", "hello")
    assert first["status"] == "completed" and first["text"] == "echo #1: hello", first
    second = iris.cli_json("tell", "farback", "again")
    assert second["text"] == "echo #2: again"  # the same claude session over there
    asked = far.cli_json("report", "backend", "--from", "a2a:near")
    assert [t["message"] for t in asked][:2] == ["again", "hello"], asked
    # Its claude asks back: INPUT_REQUIRED there, the question as the answer here; the
    # next tell is the reply to that task, answering the question over there.
    question = iris.cli_json("tell", "farback", "@ask deploy")
    assert question["text"] == "Do you want me to go ahead? (echo #3: deploy)", question
    reply = iris.cli_json("tell", "farback", "yes")
    assert reply["text"] == "echo #4: yes", reply
    (answered,) = [q for q in far.cli_json("questions", "--all") if q["to_team"] == "backend"]
    assert answered["status"] == "answered" and answered["answer"] == "yes"


@pytest.mark.claude
def test_another_iris_keeps_each_asking_team_and_thread_apart(across: tuple[Iris, Iris]) -> None:
    """Issue 28.3: two asking teams here used to land in one conversation over there."""
    iris, far = across  # team webagent here: frontend over there, for the token 'loopback'
    assert iris.cli_json("tell", "webagent", "mine")["text"] == "echo #1: mine"
    theirs = iris.cli_json("tell", "webagent", "theirs", "--from", "backend")
    assert theirs["text"] == "echo #1: theirs", theirs  # a conversation of its own over there
    threaded = iris.cli_json("tell", "webagent", "side", "--thread", "side")
    assert threaded["text"] == "echo #1: side", threaded  # a thread here is one there too
    assert iris.cli_json("tell", "webagent", "mine again")["text"] == "echo #2: mine again"
    assert iris.cli_json("tell", "webagent", "theirs again", "--from", "backend")["text"] == (
        "echo #2: theirs again"
    )
    # Over there: one pair (the token's), three threads, each with its own claude session.
    told = far.cli_json("report", "frontend", "--from", "a2a:loopback", "--limit", "10")
    sessions = {t["session_id"] for t in told}
    assert len(told) == 5 and len(sessions) == 3, told


def test_reload_adds_changes_and_removes_an_agent_team(iris: Iris, agent: Agent) -> None:
    iris.add_team("alpha")
    iris.start()
    iris.teams["helper"] = {"a2a": "http://127.0.0.1:9/.well-known/agent-card.json"}
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    assert "cannot reach" in iris.cli_json("tell", "helper", "hi", ok=False)["error"]
    iris.teams["helper"] = {"a2a": agent.card}  # moved: the new URL from the next tell on
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    assert iris.cli_json("tell", "helper", "hi")["text"] == "echo #1: hi"
    del iris.teams["helper"]
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    gone = iris.cli_json("tell", "helper", "still there?", ok=False)
    assert gone["error"]["code"] == "unknown_team", gone
