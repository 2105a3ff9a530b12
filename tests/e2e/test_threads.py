"""Threads with the real claude and the scripted model: each (from, to, thread) is a
conversation of its own (the model's echo counts the turns it was sent), the default thread
is the pair's conversation as before, and threads share maxProcesses and its LRU.

The tests share one irisd (``shared``), each with teams of its own, but the one that sets
maxProcesses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, started
from protocol.messages import GetStatus, ListSessions, Report, Tell
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    teams: dict[str, dict[str, Any]] = {"alpha": {}, "gamma": {}, "asker": {}, "beta": {}, "delta": {}}
    with started(tmp_path_factory.mktemp("threads"), model_url=model.base_url, claude=claude_bin,
                 teams=teams) as iris:
        yield iris


def tell(iris: Iris, team: str, message: str, *args: str) -> dict[str, Any]:
    result = iris.cli("tell", team, message, "--json", *args)
    assert result.returncode == 0, result.stderr + iris.log()[-3000:]
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_two_threads_of_one_pair_keep_separate_conversations(shared: Iris) -> None:
    iris = shared  # alpha is this test's
    first = tell(iris, "alpha", "default one")
    auth = tell(iris, "alpha", "auth one", "--thread", "auth-refactor")
    # A new conversation: the model sees its first turn, in a session of its own.
    assert auth["text"] == "echo #1: auth one" and auth["new_session"] and auth["thread"] == "auth-refactor"
    assert auth["session_id"] != first["session_id"]
    docs = tell(iris, "alpha", "docs one", "--thread", "docs")
    assert docs["text"] == "echo #1: docs one"
    # Each continues its own conversation, the default thread its own as before.
    assert tell(iris, "alpha", "auth two", "--thread", "auth-refactor")["text"] == "echo #2: auth two"
    again = tell(iris, "alpha", "default two")
    assert again["text"] == "echo #2: default two" and "thread" not in again
    assert again["session_id"] == first["session_id"]
    # The HTTP face's body and the socket take the thread too.
    reply = iris.request(Tell(to_team="alpha", message="auth three", thread="auth-refactor"))
    assert reply.tell.text == "echo #3: auth three" and reply.tell.session_id == auth["session_id"]

    listing = iris.request(ListSessions(to_team="alpha")).sessions
    assert sorted((s.thread, s.message_count) for s in listing) == [("", 2), ("auth-refactor", 3), ("docs", 1)]
    table = iris.cli("sessions").stdout
    assert "thread" in table and "auth-refactor" in table
    report = iris.cli("report", "alpha").stdout
    assert "external->alpha#auth-refactor" in report and "external->alpha#docs" in report
    costs = json.loads(iris.cli("costs", "--by", "pair", "--json").stdout)
    keys = {row["key"] for row in costs["rows"]}
    assert {"external->alpha", "external->alpha#auth-refactor", "external->alpha#docs"} <= keys
    # Session analytics (issue 31.4): a row per pair and thread, the default thread the pair's.
    stats = json.loads(iris.cli("sessions", "--stats", "--json").stdout)
    rows = {(p.get("from_team"), p["to_team"], p.get("thread", "")): p
            for p in stats["pairs"] if p["to_team"] == "alpha"}
    assert {key: (p["tells"], p["messages"]) for key, p in rows.items()} == {
        (None, "alpha", ""): (2, 2), (None, "alpha", "auth-refactor"): (3, 3), (None, "alpha", "docs"): (1, 1)}
    per_thread: dict[str, int] = {}
    for day in (d for d in stats["days"] if d["to_team"] == "alpha"):
        per_thread[day.get("thread", "")] = per_thread.get(day.get("thread", ""), 0) + day["tells"]
    assert per_thread == {"": 2, "auth-refactor": 3, "docs": 1}
    assert "external->alpha#auth-refactor" in iris.cli("sessions", "--stats").stdout


def test_a_slash_command_goes_to_the_conversation_of_its_thread(shared: Iris) -> None:
    iris = shared  # delta is this test's
    tell(iris, "delta", "default one")
    tell(iris, "delta", "work one", "--thread", "work")
    compacted = iris.cli_json("command", "delta", "compact", "--thread", "work")
    assert compacted["status"] == "completed" and compacted["kind"] == "command", compacted
    assert compacted["thread"] == "work" and compacted["message"] == "/compact"
    sessions = {s.thread: s for s in iris.request(ListSessions(to_team="delta")).sessions}
    assert (sessions["work"].compactions, sessions[""].compactions) == (1, 0)
    assert sessions["work"].compact_trigger == "manual"  # claude's word for a /compact
    # the thread's conversation goes on after it, the default one untouched
    assert tell(iris, "delta", "default two")["text"] == "echo #2: default two"
    bad = iris.cli("command", "delta", "compact", "--thread", "no such thread!")
    assert bad.returncode == 1 and "is not a thread name" in bad.stderr


def test_threads_share_max_processes_and_the_evicted_thread_resumes(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.settings["maxProcesses"] = 2
    iris.start()
    tell(iris, "alpha", "one", "--thread", "a")
    tell(iris, "alpha", "one", "--thread", "b")
    tell(iris, "alpha", "one", "--thread", "c")  # the pool is full: thread a, least recently used, goes
    processes = {p.thread: p for p in iris.request(GetStatus()).processes}
    assert processes["a"].state == "stopped" and processes["b"].pid and processes["c"].pid
    assert sum(p.pid is not None for p in processes.values()) == 2
    assert tell(iris, "alpha", "two", "--thread", "a")["text"] == "echo #2: two"  # resumed after eviction


def test_a_thread_sleeps_wakes_and_starts_anew_on_its_own(shared: Iris) -> None:
    iris = shared  # gamma is this test's
    default = tell(iris, "gamma", "one")
    threaded = tell(iris, "gamma", "one", "--thread", "side")
    slept = iris.cli("sleep", "gamma", "--thread", "side")
    assert slept.returncode == 0, slept.stderr
    processes = {p.thread: p for p in iris.request(GetStatus()).processes if p.to_team == "gamma"}
    assert processes["side"].state == "stopped" and processes[""].state == "idle"  # the default thread slept on
    reset = iris.cli_json("session", "reset", "external", "gamma", "--thread", "side")
    assert reset["thread"] == "side" and reset["session_id"] != threaded["session_id"]
    assert tell(iris, "gamma", "two", "--thread", "side")["text"] == "echo #1: two"  # a new conversation
    again = tell(iris, "gamma", "two")
    assert again["text"] == "echo #2: two" and again["session_id"] == default["session_id"]  # untouched
    woken = iris.cli("wake", "gamma", "--thread", "other")
    assert woken.returncode == 0, woken.stderr
    assert {p.thread for p in iris.request(GetStatus()).processes if p.to_team == "gamma"} == {"", "side", "other"}
    archived = iris.cli_json("session", "archive", "external", "gamma", "--thread", "side")
    assert (archived["thread"], archived["status"]) == ("side", "archived")
    statuses = {s.thread: s.status for s in iris.request(ListSessions(to_team="gamma")).sessions}
    assert statuses == {"": "active", "other": "active"}  # the archived one is listed with --archived only
    # The thread's next tell restores it and goes on with its conversation.
    assert tell(iris, "gamma", "three", "--thread", "side")["text"] == "echo #2: three"


def test_a_threads_claude_asks_with_team_tell_in_a_thread_of_its_own_chain(shared: Iris) -> None:
    iris = shared  # asker and beta are this test's
    call = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "beta", "message": "ping", "thread": "design"})
    answer = tell(iris, "asker", call, "--thread", "plan")
    assert answer["status"] == "completed" and "echo #1: ping" in answer["text"], answer
    (asked,) = [t for t in iris.request(Report(to_team="beta", from_team="asker")).tells if t.message == "ping"]
    assert asked.thread == "design"
    # Linked to the tell of asker's thread that sent it (its claude's token names that thread).
    assert (asked.chain_id, asked.hops) == (answer["id"], 1)
    again = tell(iris, "asker", call.replace("ping", "pong"), "--thread", "plan")
    assert "echo #2: pong" in again["text"], again  # beta's design thread goes on
    bad = tell(iris, "asker", call.replace('"design"', '"no good"'), "--thread", "plan")
    assert "thread" in bad["text"] and "e.g. auth-refactor" in bad["text"], bad  # the tool's error says why
