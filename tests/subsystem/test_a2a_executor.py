"""The A2A executor in process, on trio's autojump clock: an agent answering through
httpx2's MockTransport, a report that records what the tell was told, exact virtual times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
import trio
import trio.testing

from iris_common.config import Team
from irisd.a2a.executor import A2AExecutor
from irisd.pool.remote import RemoteTell, TellReport
from irisd.store import a2a_contexts
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.errors import A2AAgentError
from protocol.messages import TellStatus

URL = "http://agent.test/.well-known/agent-card.json"
CARD = {
    "name": "Polled agent", "description": "", "version": "1", "capabilities": {"streaming": False},
    "supportedInterfaces": [{"url": "http://agent.test/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
    "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
}


class Report:
    """What the tell was told, with the virtual time of each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.accepted_at: float | None = None  # when the agent first held a task for it

    async def accepted(self) -> None:
        if self.accepted_at is None:
            self.accepted_at = trio.current_time()

    async def started(self, *, silence_s: float | None = None) -> None:
        self.calls.append(("started", trio.current_time()))

    async def text(self, text: str) -> None:
        self.calls.append(("text", text))

    def phase(self, detail: str, *, queued: bool = False) -> None:
        self.calls.append(("phase", detail, queued))

    async def finished(
        self, status: TellStatus, text: str = "", error: str = "", *, cost_usd: float | None = None
    ) -> None:
        self.calls.append(("finished", status, text, error, trio.current_time()))


class Agent:
    """An agent that keeps its task WORKING for ``working_polls`` GetTasks, then completes it."""

    def __init__(self, working_polls: int) -> None:
        self.working_polls = working_polls
        self.requests: list[tuple[str, float]] = []  # (method, virtual time)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            return httpx2.Response(200, json=CARD)
        body = json.loads(request.content)
        method = body["method"]
        self.requests.append((method, trio.current_time()))
        polls = sum(1 for m, _ in self.requests if m == "GetTask")
        state, artifacts = "TASK_STATE_SUBMITTED", []
        if method == "GetTask":
            state = "TASK_STATE_WORKING" if polls <= self.working_polls else "TASK_STATE_COMPLETED"
            if state == "TASK_STATE_COMPLETED":
                artifacts = [{"artifactId": "a", "parts": [{"text": "done"}]}]
        elif method == "CancelTask":
            state = "TASK_STATE_CANCELED"
        task = {"id": "task-1", "contextId": "ctx-1", "status": {"state": state}, "artifacts": artifacts}
        result = {"task": task} if method == "SendMessage" else task
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})


def executor(tmp_path: Path, agent: Agent) -> tuple[A2AExecutor, Store]:
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    team = Team(name="far", path="", a2a=URL, idle_timeout_ms=1000, response_timeout_ms=1000)
    return A2AExecutor(team, store=store, environ={}, transport=httpx2.MockTransport(agent.handle)), store


def tell() -> RemoteTell:
    return RemoteTell(
        id="t-1", from_team="web", to_team="far", message="hi", chain_id="", hops=0, kind="tell",
        max_budget_usd=None, created_at=0.0,
    )


async def test_a_polled_task_is_asked_again_soon_after_a_change_then_less_often(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    agent = Agent(working_polls=5)
    run, store = executor(tmp_path, agent)
    report = Report()
    t0 = trio.current_time()
    with trio.fail_after(60):
        await run.run(tell(), cast(TellReport, report))
    polls = [at - t0 for method, at in agent.requests if method == "GetTask"]
    # 0.25 s after the send; SUBMITTED -> WORKING is a change (0.25 s again); then it stands
    # still: 0.5, 1, 2 s, and 2 s at most; the sixth poll finds it COMPLETED.
    assert polls == [0.25, 0.5, 1.0, 2.0, 4.0, 6.0]
    assert report.calls[-1] == ("finished", "completed", "done", "", t0 + 6.0)
    assert ("started", t0 + 0.25) in report.calls
    saved = await store.call(a2a_contexts.get, "web", "far", URL)
    assert saved == a2a_contexts.A2AContext(context_id="ctx-1")  # the pair's next tell continues it


async def test_a_cancelled_tell_cancels_the_task_at_the_agent(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    agent = Agent(working_polls=1_000_000)
    run, store = executor(tmp_path, agent)
    report = Report()
    t0 = trio.current_time()
    with trio.move_on_after(30):
        await run.run(tell(), cast(TellReport, report))
    assert agent.requests[-1] == ("CancelTask", t0 + 30)  # at once, shielded from the cancellation
    assert report.accepted_at == t0  # the agent named its task at once: the caller may hear of it
    assert not any(call[0] == "finished" for call in report.calls)  # the pair records the end
    assert (await store.call(a2a_contexts.get, "web", "far", URL)).context_id == "ctx-1"


async def test_an_agent_that_cannot_be_reached_is_remembered_for_the_health_monitor_until_a_tell_works(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    agent = Agent(working_polls=0)
    down = True

    def handle(request: httpx2.Request) -> httpx2.Response:
        if down:
            raise httpx2.ConnectError("connection refused", request=request)
        return agent.handle(request)

    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    team = Team(name="far", path="", a2a=URL, idle_timeout_ms=1000, response_timeout_ms=1000)
    run = A2AExecutor(team, store=store, environ={}, transport=httpx2.MockTransport(handle))
    with trio.fail_after(60):
        with pytest.raises(A2AAgentError, match="cannot reach"):
            await run.run(tell(), cast(TellReport, Report()))
        assert run.unreachable.startswith("cannot reach") and "connection refused" in run.unreachable
        down = False
        await run.run(tell(), cast(TellReport, Report()))
    assert run.unreachable == ""


async def test_one_http_client_serves_every_tell_of_an_agent(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client (and the keep-alive connections of its pool) is made once, not per tell."""
    made: list[httpx2.AsyncClient] = []

    class Counted(httpx2.AsyncClient):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            made.append(self)

    monkeypatch.setattr(httpx2, "AsyncClient", Counted)
    run, _ = executor(tmp_path, Agent(working_polls=0))
    with trio.fail_after(60):
        for _ in range(3):
            report = Report()
            await run.run(tell(), cast(TellReport, report))
            assert report.calls[-1][:3] == ("finished", "completed", "done")
    assert len(made) == 1
