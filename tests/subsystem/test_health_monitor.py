"""The health monitor's trio side (irisd/health/monitor.py) in the core, with fake
children on trio's autojump clock: exact virtual times for the checks and the
crash-loop backoff of settings.health.recover; and its findings reaching the webhook
through the notifier's gate."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import msgspec
import pytest
import trio
import trio.testing

from fakes.child import FakeChild
from fakes.core import no_events, running_core, teams_config
from fakes.faults import WriteFaults
from harness import wait_until
from iris_common.config import NotifyConfig
from iris_mcp.render import render_status
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.events import EventHub
from irisd.notify.service import Notifier
from irisd.store.db import StoreError, open_database
from protocol.health import Finding
from protocol.messages import (
    ApprovalEvent,
    ApprovalInfo,
    GetHealth,
    GetStatus,
    HealthReply,
    QuestionEvent,
    QuestionInfo,
    StatusReply,
    Tell,
)

SETTINGS = "  healthCheckInterval: 1000\n  health:\n    recoverAfter: 60000\n"


@pytest.fixture
async def core(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Dispatcher]:
    marker = request.node.get_closest_marker("settings")
    config = teams_config(tmp_path, SETTINGS + (marker.args[0] if marker else ""))
    async with running_core(tmp_path, config) as dispatcher:
        assert dispatcher.health is not None
        dispatcher.health.clock = trio.current_time  # the virtual clock stands for the wall clock
        yield dispatcher


async def crash_on_start(nursery: trio.Nursery, core: Dispatcher) -> None:
    """A tell whose claude dies before its first line, three times: the pair is failed."""
    nursery.start_soon(core.tells.tell, Tell(to_team="alpha", message="hi"), no_events)
    for attempt in range(3):
        await wait_until(lambda n=attempt: len(FakeChild.instances) > n, every=0.01)
        FakeChild.instances[attempt].exit(1)


def kinds(findings: list[Finding]) -> list[str]:
    """The findings' kinds but the claude's version: under IRIS_CLAUDE_VERSION (a newer claude
    than the tested one, README "A new claude") that is a finding of its own, rightly."""
    return [f.kind for f in findings if f.kind != "claude_version"]


async def finding_of(core: Dispatcher, kind: str) -> Finding:
    assert core.health is not None
    health = core.health
    found: list[Finding] = await wait_until(lambda: [f for f in health.findings if f.kind == kind], every=0.01)
    return found[0]


async def test_a_crash_loop_is_found_and_shown_but_left_alone_without_recover(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        await crash_on_start(nursery, core)
        finding = await finding_of(core, "crash_loop")
        assert (finding.severity, finding.subject, finding.fix) == (
            "error", "external->alpha", "iris doctor; then iris wake alpha")
        assert "keeps crashing on start (3 times)" in finding.evidence
        status = await core.dispatch(GetStatus(), OWNER, no_events)
        assert isinstance(status, StatusReply) and kinds(status.findings) == ["crash_loop"]
        health = await core.dispatch(GetHealth(), OWNER, no_events)
        assert isinstance(health, HealthReply)
        assert (health.status, health.worst, health.findings) == ("ok", "error", status.findings)
        await trio.sleep(200)  # long past recoverAfter: nobody restarts it
        assert len(FakeChild.instances) == 3 and status.recoveries == []
        nursery.cancel_scope.cancel()


@pytest.mark.settings("    recover: true\n")
async def test_recover_restarts_a_crash_looping_pair_after_the_backoff_then_twice_as_late(
    core: Dispatcher, autojump_clock: trio.testing.MockClock
) -> None:
    assert core.health is not None
    async with trio.open_nursery() as nursery:
        await crash_on_start(nursery, core)
        seen = (await finding_of(core, "crash_loop")).since
        await wait_until(lambda: not (len(FakeChild.instances) < 4), every=0.01)
        assert FakeChild.instances[3].created_at == pytest.approx(seen + 60, abs=0.01)
        (recovery,) = core.health.recoveries
        assert (recovery.action, recovery.subject) == ("restart_pair", "external->alpha")
        assert recovery.at == pytest.approx(seen + 60, abs=0.01)
        # A tell comes; the restarted claude dies at once, and so do its two retries: the
        # pair is failed again, and the next restart waits twice as long.
        nursery.start_soon(core.tells.tell, Tell(to_team="alpha", message="again"), no_events)
        for attempt in range(3, 6):
            await wait_until(lambda n=attempt: len(FakeChild.instances) > n, every=0.01)
            FakeChild.instances[attempt].exit(1)
        failed_again = trio.current_time()
        await wait_until(lambda: not (len(FakeChild.instances) < 7), every=0.01)
        assert failed_again < seen + 180
        assert FakeChild.instances[6].created_at == pytest.approx(seen + 60 + 120, abs=0.01)
        status = await core.dispatch(GetStatus(), OWNER, no_events)
        assert isinstance(status, StatusReply) and len(status.recoveries) == 2
        nursery.cancel_scope.cancel()


async def test_a_database_refusing_writes_is_a_finding_while_it_refuses(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    connection = open_database(tmp_path / "iris.db")
    faults = WriteFaults().install(connection)
    async with running_core(tmp_path, teams_config(tmp_path, SETTINGS), connection=connection) as core:
        assert core.health is not None
        core.health.clock = trio.current_time
        faults.failing = True
        with pytest.raises(StoreError):
            await core.dispatch(Tell(to_team="alpha", message="hi", persist=True), OWNER, no_events)
        found = await finding_of(core, "database")
        assert found.severity == "error" and "disk is full" in found.evidence
        faults.failing = False
        await trio.sleep(3)  # two checks with no refusal
        assert kinds(core.health.findings) == []


async def test_a_flapping_health_warning_reaches_the_webhook_once(autojump_clock: trio.testing.MockClock) -> None:
    posted: list[dict[str, object]] = []

    def receive(request: httpx2.Request) -> httpx2.Response:
        posted.append(json.loads(request.content))
        return httpx2.Response(200)

    hub = EventHub()
    notifier = Notifier(settings=lambda: NotifyConfig(webhook="http://hook.test/x"), hub=hub,
                        transport=httpx2.MockTransport(receive), desktop_bus="")
    stuck = Finding(kind="stuck_tell", severity="warning", subject="t1", summary="tell t1 is silent",
                    fix="iris cancel t1")
    with trio.fail_after(2000):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            for _ in range(5):  # found, gone, found...
                notifier.on_findings([stuck])
                await trio.sleep(30)
                notifier.on_findings([])
                await trio.sleep(30)
            assert [(p["kind"], p["id"], p["command"]) for p in posted] == [
                ("health", "stuck_tell:t1", "iris cancel t1")]
            await trio.sleep(600)  # settings.notify.every later it may be said again
            notifier.on_findings([stuck])
            await trio.sleep(1)
            assert len(posted) == 2
            nursery.cancel_scope.cancel()
    hub.close()


async def test_new_approvals_and_questions_on_the_hub_reach_the_webhook_decided_ones_do_not(
    autojump_clock: trio.testing.MockClock,
) -> None:
    posted: list[dict[str, object]] = []

    def receive(request: httpx2.Request) -> httpx2.Response:
        posted.append(json.loads(request.content))
        return httpx2.Response(200)

    hub = EventHub()
    notifier = Notifier(settings=lambda: NotifyConfig(webhook="http://hook.test/x"), hub=hub,
                        transport=httpx2.MockTransport(receive), desktop_bus="")
    approval = ApprovalInfo(id="ap1", from_team="a", to_team="web", tell_id="t", tool_name="Bash",
                            input={"command": "make"}, status="pending", created_at=0, expires_at=1)
    question = QuestionInfo(id="q1", from_team="a", to_team="web", session_id="s", tell_id="t",
                            question="Which port?", context="", confidence=1, status="pending", created_at=0,
                            expires_at=1)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            await wait_until(lambda: hub.kind_watchers, every=0.01)  # subscribed
            hub.publish(ApprovalEvent(approval=approval), "a", "web")
            hub.publish(ApprovalEvent(approval=msgspec.structs.replace(approval, status="allowed")), "a", "web")
            hub.publish(QuestionEvent(question=question), "a", "web")
            await wait_until(lambda: not (len(posted) < 2), every=0.1)
            await trio.sleep(5)
            nursery.cancel_scope.cancel()
    hub.close()
    assert sorted((p["kind"], p["id"], p["command"]) for p in posted) == [
        ("approval", "ap1", "iris approve ap1  (or: iris deny ap1)"), ("question", "q1", 'iris answer q1 "TEXT"')]


def test_team_status_names_each_finding_with_its_fix() -> None:
    status = StatusReply(pid=1, daemon_version="x", started_at=0, socket_path="s", config_path="c", teams=[],
                         processes=[], max_processes=1, findings=[
                             Finding(kind="stuck_tell", severity="warning", subject="t1",
                                     summary="tell t1 (external->a) has printed nothing for 5 min",
                                     fix="iris cancel t1")])
    out = render_status(status)
    assert "health warning: tell t1 (external->a) has printed nothing for 5 min (fix: iris cancel t1)" in out.text
    assert out.data["findings"][0]["fix"] == "iris cancel t1"
