"""Teams that are not a local claude (irisd/pool/remote.py): a scripted executor stands in
for an A2A agent or another irisd; the daemon's services run on trio's autojump clock."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.lowlevel
import trio.testing

from fakes.core import running_core, teams_config
from iris_common.config import Team
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.pool.remote import HANDOFF_TIMEOUT_S, RemoteTell, TellReport
from protocol.errors import InvalidRequestError, UnknownTeamError
from protocol.messages import (
    ArchiveSession,
    CancelTell,
    ClearCache,
    Command,
    Event,
    GetTell,
    ListApprovals,
    ListNotifications,
    ListRules,
    ListSessions,
    ListTells,
    Report,
    Request,
    RestoreSession,
    Tell,
    TellPhaseEvent,
    TellReply,
    TellText,
    Wake,
)


class ScriptedExecutor:
    """Runs each tell by the script named by its message."""

    kind = "a2a"
    where = "http://agent.example/"

    def __init__(self) -> None:
        self.team = Team(
            name="far", path="", description="an agent elsewhere", idle_timeout_ms=1, response_timeout_ms=1
        )
        self.seen: list[RemoteTell] = []
        self.cancelled: list[str] = []

    async def run(self, tell: RemoteTell, report: TellReport) -> None:
        self.seen.append(tell)
        try:
            match tell.message:
                case "answer":
                    report.phase("home unreachable since 12:00", queued=True)
                    await trio.sleep(5)
                    await report.started()
                    await report.text("hel")
                    await trio.sleep(1)
                    await report.text("hello")
                    await report.finished("completed", "hello there", cost_usd=0.25)
                case "silent":
                    await report.started(silence_s=30)
                    await trio.sleep_forever()
                case "ask":
                    await report.started()
                    await report.awaiting_input("which branch?")
                    await trio.sleep(10)
                    await report.resumed()
                    await report.finished("completed", "main")
                case "stored late":  # a durable queue on the way takes it after 4 s
                    report.phase("waiting for the mesh to store it", queued=True)
                    await trio.sleep(4)
                    await report.accepted()
                    await trio.sleep_forever()
                case "sent unconfirmed":  # published; the ack is late, and its own timer later still
                    await report.sent(lambda: "sent, not confirmed yet: do not send it again")
                    await trio.sleep(HANDOFF_TIMEOUT_S + 5)
                    report.phase("no ack from the mesh", queued=True)
                    await trio.sleep(10)
                    await report.accepted()
                    await report.finished("completed", "ran once")
                case "never stored":
                    report.phase("waiting for the mesh to store it", queued=True)
                    await trio.sleep_forever()
                case "broken":
                    raise InvalidRequestError("the agent's card has no JSON-RPC interface; fix teams.far.a2a")
                case _:
                    await report.started()
                    await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled.append(tell.id)
            raise


async def ignore(event: Event) -> None:
    """A caller that does not stream."""


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, ScriptedExecutor]]:
    executor = ScriptedExecutor()
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha")) as dispatcher:
        dispatcher.supervisor.remote_teams.register(executor)
        yield dispatcher, executor


async def test_a_remote_tell_runs_through_the_executor_like_a_local_one(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, executor = core
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    start = trio.current_time()
    reply = await dispatcher.tells.tell(Tell(to_team="far", from_team="alpha", message="answer", stream=True), on_event)
    assert trio.current_time() - start == 6
    assert reply.status == "completed" and reply.tell.text == "hello there" and reply.tell.cost_usd == 0.25
    assert reply.tell.finished_at is not None and reply.tell.started_at is not None  # the reply's figures are whole
    assert [e.text for e in events if isinstance(e, TellText)] == ["hel", "lo", " there"]
    phases = [e.phase for e in events if isinstance(e, TellPhaseEvent)]
    assert phases[1].name == "queued" and phases[1].detail == "home unreachable since 12:00"
    assert executor.seen[0].from_team == "alpha" and executor.seen[0].id == reply.tell.id
    stored = await dispatcher.dispatch(GetTell(tell_id=reply.tell.id), OWNER, on_event)
    assert isinstance(stored, TellReply) and stored.tell.status == "completed" and stored.tell.text == "hello there"
    far = next(t for t in dispatcher.status.team_infos() if t.name == "far")
    assert (far.kind, far.remote) == ("a2a", "http://agent.example/")


async def test_cancel_reaches_the_executor_and_ends_the_tell_interrupted(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, executor = core
    first = await dispatcher.tells.tell(Tell(to_team="far", message="forever", timeout_ms=-1), ignore)
    assert first.status == "in_progress"
    await trio.testing.wait_all_tasks_blocked()
    cancelled = await dispatcher.dispatch(CancelTell(tell_id=first.tell.id), OWNER, ignore)
    assert isinstance(cancelled, TellReply) and cancelled.status == "interrupted"
    assert executor.cancelled == [first.tell.id]
    assert dispatcher.supervisor.find_tell(first.tell.id) is None


async def test_a_silent_far_side_times_out_at_exactly_its_silence(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, executor = core
    start = trio.current_time()
    reply = await dispatcher.tells.tell(Tell(to_team="far", message="silent"), ignore)
    assert trio.current_time() - start == 30
    assert reply.status == "timed_out" and "no word from the remote team for 30 s" in reply.tell.error
    await trio.testing.wait_all_tasks_blocked()
    assert executor.cancelled == [reply.tell.id]


async def test_input_awaited_on_the_far_side_shows_and_the_caller_patience_holds(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, _ = core
    early = await dispatcher.tells.tell(Tell(to_team="far", message="ask", timeout_ms=2000), ignore)
    assert early.status == "in_progress" and early.tell.status == "awaiting_approval"
    assert early.tell.phase is not None and early.tell.phase.name == "awaiting_input"
    assert early.tell.phase.detail == "which branch?"
    done = await dispatcher.tells.get(early.tell.id, 60_000)
    assert done.status == "completed" and done.tell.text == "main"


async def test_a_far_side_that_cannot_be_reached_fails_the_tell_with_its_reason(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, _ = core
    reply = await dispatcher.tells.tell(Tell(to_team="far", message="broken"), ignore)
    assert reply.status == "failed" and "no JSON-RPC interface" in reply.tell.error
    with pytest.raises(InvalidRequestError, match="remote team"):
        await dispatcher.dispatch(Wake(to_team="far"), OWNER, ignore)


async def test_a_remote_teams_tells_are_reported_and_watched_like_a_local_teams(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    # 'iris report TEAM' and 'iris watch TEAM' on a team of the mesh (or an A2A agent not in
    # this config) said "team ... is not configured; add it under 'teams:'".
    dispatcher, _ = core
    reply = await dispatcher.tells.tell(Tell(to_team="far", message="answer"), ignore)
    report = await dispatcher.records.report(Report(to_team="far"))
    assert [t.id for t in report.tells] == [reply.tell.id]
    listed = await dispatcher.records.list_tells(ListTells(to_team="far"))
    assert [t.id for t in listed.tells] == [reply.tell.id]
    with trio.move_on_after(1):
        await dispatcher.watch("far", ignore)  # follows the team until the client leaves
    # the lists that name a team take a remote one too (empty here: it lives elsewhere)
    for request in (ListNotifications(to_team="far"), ListApprovals(team="far"), ListRules(team="far"),
                    ListSessions(to_team="far")):
        await dispatcher.dispatch(request, OWNER, ignore)
    with pytest.raises(InvalidRequestError, match=r"far is a remote team .* kept where it lives"):
        await dispatcher.dispatch(ClearCache(to_team="far"), OWNER, ignore)


async def test_a_caller_that_does_not_wait_hears_of_the_tell_only_once_the_far_side_holds_it(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, executor = core
    start = trio.current_time()
    late = await dispatcher.tells.tell(Tell(to_team="far", message="stored late", timeout_ms=-1), ignore)
    assert trio.current_time() - start == 4  # not at once: only when it was stored
    assert late.status == "in_progress" and late.tell.status == "queued"
    start = trio.current_time()
    lost = await dispatcher.tells.tell(Tell(to_team="far", message="never stored", timeout_ms=-1), ignore)
    assert trio.current_time() - start == HANDOFF_TIMEOUT_S
    assert lost.status == "failed" and "not sent: the remote team did not take it within 30 s" in lost.tell.error
    await trio.testing.wait_all_tasks_blocked()
    assert lost.tell.id in executor.cancelled  # it stopped trying


async def test_a_sent_tell_unconfirmed_at_the_handoff_time_is_heard_in_progress_saying_why(
    core: tuple[Dispatcher, ScriptedExecutor], autojump_clock: trio.testing.MockClock
) -> None:
    dispatcher, _ = core
    start = trio.current_time()
    unknown = await dispatcher.tells.tell(Tell(to_team="far", message="sent unconfirmed", timeout_ms=-1), ignore)
    assert trio.current_time() - start == HANDOFF_TIMEOUT_S  # the handoff time, not the executor's own timer
    assert unknown.status == "in_progress" and unknown.tell.status == "queued", unknown
    assert unknown.tell.phase is not None
    assert unknown.tell.phase.detail == "sent, not confirmed yet: do not send it again"
    settled = await dispatcher.dispatch(GetTell(tell_id=unknown.tell.id, wait_ms=60_000), OWNER, ignore)
    assert isinstance(settled, TellReply) and settled.tell.status == "completed" and settled.tell.text == "ran once"


async def test_a_misspelt_remote_team_gets_its_did_you_mean(core: tuple[Dispatcher, ScriptedExecutor]) -> None:
    dispatcher, _ = core
    for request in (Tell(to_team="fra", message="hi"), Report(to_team="fra")):
        with pytest.raises(UnknownTeamError, match="did you mean 'far'\\? known teams: alpha, far"):
            await dispatcher.dispatch(request, OWNER, ignore)


async def test_what_only_a_local_team_has_is_refused_for_a_remote_team_saying_where_it_is(
    core: tuple[Dispatcher, ScriptedExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    dispatcher, executor = core
    where = r"far is a remote team \(a2a: http://agent\.example/\): "
    refused: list[tuple[Request, str]] = [
        (Command(to_team="far", command="compact"),
         "a slash command reaches only the claude of a team of this irisd; an agent has no slash commands"),
        (ArchiveSession(to_team="far"), "its conversations are kept where it lives, not here"),
        (RestoreSession(to_team="far"), "its conversations are kept where it lives, not here"),
        (ClearCache(to_team="far"), "its conversations are kept where it lives, not here"),
        (Wake(to_team="far"), "it has no claude process here to wake, stop, reset or decide for"),
    ]
    for request, why in refused:
        with pytest.raises(InvalidRequestError, match=where + re.escape(why)):
            await dispatcher.dispatch(request, OWNER, ignore)
    monkeypatch.setattr(executor, "kind", "mesh")
    monkeypatch.setattr(executor, "where", "irisd ws-2")
    with pytest.raises(InvalidRequestError, match=r"\(mesh: irisd ws-2\): .*; its home compacts its conversations"):
        await dispatcher.dispatch(Command(to_team="far", command="compact"), OWNER, ignore)
    assert executor.seen == []  # nothing sent on


async def test_the_handoff_timeout_is_the_settings_and_a_reload_changes_it(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    executor = ScriptedExecutor()
    config = teams_config(tmp_path, "  handoffTimeout: 5000\n", teams="alpha")
    async with running_core(tmp_path, config) as dispatcher:
        dispatcher.supervisor.remote_teams.register(executor)
        start = trio.current_time()
        lost = await dispatcher.tells.tell(Tell(to_team="far", message="never stored", timeout_ms=-1), ignore)
        assert trio.current_time() - start == 5
        assert lost.status == "failed" and "did not take it within 5 s" in lost.tell.error
        dispatcher.supervisor.config = teams_config(tmp_path, "  handoffTimeout: 2000\n", teams="alpha")
        start = trio.current_time()
        again = await dispatcher.tells.tell(Tell(to_team="far", message="never stored", timeout_ms=-1), ignore)
        assert trio.current_time() - start == 2  # the same pair, the setting as reloaded
        assert again.status == "failed" and "within 2 s" in again.tell.error
