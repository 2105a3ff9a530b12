"""The shim's policies with a scripted daemon link: retries, identity, parent pair, cancel."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from fakes.links import ScriptedLink
from iris_cli.mcp_stdio import DaemonLink
from iris_mcp.shim import Shim
from protocol.errors import ConnectionLost, DaemonUnreachable, UnknownTeamError
from protocol.messages import (
    CancelTell,
    Event,
    GetStatus,
    ListTeams,
    Reply,
    Request,
    TeamInfo,
    TeamsReply,
    Tell,
    TellInfo,
    TellReply,
    TellState,
    TellText,
)

OnEvent = Callable[[Event], Awaitable[None]] | None


TEAMS = TeamsReply(teams=[TeamInfo(name="alpha", path="/")])


async def test_an_unreachable_daemon_is_started_and_the_request_sent_once_more() -> None:
    link = ScriptedLink(DaemonUnreachable("down"), TEAMS)
    assert await link.call(ListTeams(), idempotent=False) == TEAMS
    assert link.started == 1 and len(link.sent) == 2


async def test_a_dropped_connection_is_retried_only_for_idempotent_requests() -> None:
    link = ScriptedLink(ConnectionLost("cut"), TEAMS)
    assert await link.call(ListTeams(), idempotent=True) == TEAMS
    assert link.started == 1

    tell = Tell(to_team="alpha", message="hi")
    link = ScriptedLink(ConnectionLost("cut"), TEAMS)
    with pytest.raises(ConnectionLost):
        await link.call(tell, idempotent=False)
    assert link.sent == [tell] and link.started == 0

    link = ScriptedLink(ConnectionLost("cut"), ConnectionLost("again"))
    with pytest.raises(ConnectionLost, match="again"):  # one retry, not a loop
        await link.call(GetStatus(), idempotent=True)


class TellLink(DaemonLink):
    """Answers a Tell after pushing events; records what was sent."""

    def __init__(self, events: list[Event], reply: TellReply, *, hang: bool = False) -> None:
        super().__init__()
        self.events, self.reply, self.hang = events, reply, hang
        self.sent: list[Request] = []

    async def call(
        self, request: Request, *, idempotent: bool, on_event: OnEvent = None, start_daemon: bool = True
    ) -> Reply:
        self.sent.append(request)
        if isinstance(request, ListTeams):
            return TEAMS
        if isinstance(request, Tell):
            for event in self.events:
                assert on_event is not None
                await on_event(event)
            if self.hang:
                await trio.sleep_forever()
            if isinstance(self.reply, Exception):
                raise self.reply
        return self.reply


def reply(text: str) -> TellReply:
    info = TellInfo(id="t1", from_team="alpha", to_team="beta", message="hi", status="completed", text=text)
    return TellReply(status="completed", tell=info)


async def no_progress(progress: float, message: str) -> None:
    pass


async def test_a_tell_goes_out_as_the_derived_team_with_the_parent_pair() -> None:
    link = TellLink([TellState(tell_id="t1", status="running"), TellText(tell_id="t1", text="pong")],
                    reply("pong"))
    shim = Shim(link, team=None, cwd="/work", env={"IRIS_PARENT_PAIR": "external->alpha"})
    reports: list[tuple[float, str]] = []

    async def report(progress: float, message: str) -> None:
        reports.append((progress, message))

    output = await shim.call("team_tell", {"toTeam": "beta", "message": "ping"}, report)
    assert output.text == "pong" and not output.is_error
    sent = link.sent[-1]
    assert isinstance(sent, Tell)
    assert (sent.from_team, sent.parent_pair, sent.stream, sent.timeout_ms) == (
        "alpha", "external->alpha", True, 50_000
    )
    # Answered within the call's first progress interval: no notification, the answer says more.
    assert reports == []
    assert isinstance(link.sent[0], ListTeams)  # identity: asked once...
    await shim.call("team_tell", {"toTeam": "beta", "message": "again"}, report)
    assert sum(isinstance(r, ListTeams) for r in link.sent) == 1  # ...and remembered

    refused = await shim.call("team_tell", {"toTeam": "beta", "message": "x", "fromTeam": "beta"}, report)
    assert refused.is_error and "fromTeam 'beta' is refused" in refused.text


async def test_irisd_streams_a_tell_only_for_a_client_that_wants_progress() -> None:
    link = TellLink([TellState(tell_id="t1", status="running"), TellText(tell_id="t1", text="pong")],
                    reply("pong"))
    shim = Shim(link, team="alpha", cwd="/", env={})
    output = await shim.call("team_tell", {"toTeam": "beta", "message": "ping"}, None)  # no progress token
    assert output.text == "pong" and not output.is_error
    sent = link.sent[-1]
    assert isinstance(sent, Tell) and sent.stream is False
    await shim.call("team_tell", {"toTeam": "beta", "message": "ping"}, no_progress)  # a progress token
    sent = link.sent[-1]
    assert isinstance(sent, Tell) and sent.stream is True


async def test_a_tell_cut_off_is_not_resent() -> None:
    link = TellLink([TellState(tell_id="t7", status="running")], reply(""))
    link.reply = ConnectionLost("cut")  # type: ignore[assignment]
    shim = Shim(link, team="alpha", cwd="/", env={})
    output = await shim.call("team_tell", {"toTeam": "beta", "message": "ping"}, no_progress)
    assert output.is_error and output.data["error"]["code"] == "daemon_not_running"
    assert "was not sent again" in output.text and '"tellId": "t7"' in output.text
    assert sum(isinstance(r, Tell) for r in link.sent) == 1


async def test_an_approval_cut_off_is_not_sent_again() -> None:
    link = ScriptedLink(ConnectionLost("cut after sending"))
    shim = Shim(link, team="alpha", cwd="/", env={})
    output = await shim.call("team_approve", {"approvalId": "a-1"}, no_progress)
    assert output.is_error and [type(r).__name__ for r in link.sent] == ["Decide"]  # a second would fail


async def test_cancelling_a_tell_never_starts_a_daemon_just_for_that() -> None:
    link = ScriptedLink(DaemonUnreachable("down"))
    await Shim(link, team="alpha", cwd="/", env={}).cancel_quietly("t1")
    assert link.started == 0 and [type(r).__name__ for r in link.sent] == ["CancelTell"]


async def test_a_cancelled_call_cancels_its_tell() -> None:
    link = TellLink([TellState(tell_id="t5", status="running")], reply(""), hang=True)
    shim = Shim(link, team="alpha", cwd="/", env={})
    with trio.move_on_after(0.5):
        await shim.call("team_tell", {"toTeam": "beta", "message": "long"}, no_progress)
    assert link.sent[-1] == CancelTell(tell_id="t5")


async def test_daemon_errors_and_bad_calls_become_tool_errors() -> None:
    unknown = UnknownTeamError.for_name("bogus", ["alpha", "beta"])
    link = TellLink([], unknown)  # type: ignore[arg-type]
    shim = Shim(link, team="alpha", cwd="/", env={})
    output = await shim.call("team_tell", {"toTeam": "bogus", "message": "hi"}, no_progress)
    assert output.is_error and "known teams: alpha, beta" in output.text
    assert output.data == {"error": {"code": "unknown_team", "message": unknown.message}}

    lone_ttl = await shim.call("team_tell", {"toTeam": "beta", "message": "hi", "ttlDays": 3}, no_progress)
    assert lone_ttl.is_error and "ttlDays only applies to a stored tell: add persist" in lone_ttl.text

    nameless = await shim.call("team_bogus", {}, no_progress)
    assert nameless.is_error and "the Iris tools are: team_tell" in nameless.text

    class Broken(DaemonLink):
        async def call(self, request: Request, **kwargs: Any) -> Reply:
            raise RuntimeError("boom")

    crashed = await Shim(Broken(), team="alpha", cwd="/", env={}).call("team_teams", {}, no_progress)
    assert crashed.is_error and "RuntimeError: boom" in crashed.text


def test_serving_imports_nothing_it_can_do_without() -> None:
    """Claude Code starts the shim for every session: no rich, msgspec or protocol/ until a
    tool is called (the SDK's own imports are the floor; Typer, ~25 ms, parses its options)."""
    import subprocess
    import sys

    probe = (
        "import sys, iris_cli.entry, iris_cli.mcp_stdio; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'msgspec', 'protocol', 'irisd'}))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
