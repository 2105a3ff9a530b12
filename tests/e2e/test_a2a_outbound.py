"""An A2A agent as a team: the official a2a-sdk server (tests/fakes/a2a_agent.py, asyncio,
its own process) stands in for another framework's agent, configured as
``teams.NAME: {a2a: URL}``; a real irisd tells it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import Iris

AGENT = Path(__file__).parent.parent / "fakes" / "a2a_agent.py"


@dataclass
class Agent:
    url: str
    process: subprocess.Popen[str]

    @property
    def card(self) -> str:
        return self.url + "/.well-known/agent-card.json"

    def log(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/_log", timeout=10) as response:
            result: dict[str, Any] = json.load(response)
            return result


def start_agent(*args: str) -> Agent:
    process = subprocess.Popen(
        [sys.executable, str(AGENT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # its first line, once its socket accepts connections
    assert line.startswith("listening on "), line + (process.stderr.read() if process.stderr else "")
    # Drain what else it says, so a chatty agent never blocks on a full pipe.
    threading.Thread(target=process.stdout.read, daemon=True).start()
    threading.Thread(target=process.stderr.read, daemon=True).start()  # type: ignore[union-attr]
    return Agent(url=line.split()[-1], process=process)


@pytest.fixture
def agent() -> Iterator[Agent]:
    started = start_agent()
    yield started
    started.process.terminate()
    started.process.wait(timeout=10)


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
