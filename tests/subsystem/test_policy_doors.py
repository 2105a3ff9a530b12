"""Every cell of the README's table of who may touch which tell ("Who may see and change
what"), walked through every door a kind of caller has: the Unix socket (only the person
connects there), the HTTP API, ``/mcp`` (the tools as a token's owner uses them), A2A,
the mesh (a remote irisd's requests), and the events every face serves with a ``Watch``.

One core with fake children (tests/fakes/core.py) and a store holding, among others,
beta's tell to gamma (``t-bg``) with a question asked of beta (``q-bg``): nobody's but
the person's, beta's claude's, and what iris-agent reads. Each caller also has a tell of
its own. An answer is "ok" (served), "denied" (403 / permission_denied, the policy's
refusal), "hidden" (a list served without the other's tell, an event not delivered) or
"proposed" (iris-agent's action, filed as an approval for the person: irisd/agent/actions.py).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing

from fakes.core import no_events, running_core, teams_config
from iris_common import a2a_tokens
from irisd.caller import OWNER, Caller
from irisd.dispatch import Dispatcher
from irisd.http.app import HttpFace
from irisd.http.mcp import shim_for
from irisd.http.security import Allowlist, host_names
from irisd.serving import Serving
from irisd.socket_server import Server
from irisd.store import approvals, questions, tells
from irisd.tokens import Access
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.errors import InvalidRequestError, IrisError
from protocol.messages import (
    AnswerQuestion,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    CancelTell,
    ErrorReply,
    Event,
    GetTell,
    Hello,
    ListApprovals,
    ListQuestions,
    ListTells,
    QuestionInfo,
    QuestionsReply,
    ReadTranscript,
    ReportReply,
    Request,
    TellInfo,
    TellState,
    Watch,
    Watching,
)
from subsystem.test_http_app import PORT, call

OTHER = "t-bg"  # beta -> gamma
OWN = {"owner": "t-bg", "reader": "t-bg", "child": "t-ab", "agent": "t-crm", "remote": "t-ws2"}
ASKED_OF_OTHER, ASKED_OF_CHILD = "q-bg", "q-ag"
APPROVAL_OF_OTHER, APPROVAL_OF_CHILD = "a-bg", "a-ag"  # beta's (then alpha's) tool use answering gamma

# The table of the README, cell by cell: operation -> kind of caller -> outcome.
TABLE: dict[str, dict[str, str]] = {
    "read another's tell": {"owner": "ok", "reader": "ok", "child": "denied", "agent": "denied", "remote": "denied"},
    "read its own tell": {"owner": "ok", "reader": "ok", "child": "ok", "agent": "ok", "remote": "ok"},
    "read another's transcript": {
        "owner": "ok", "reader": "ok", "child": "denied", "agent": "denied", "remote": "denied",
    },
    "list tells": {"owner": "ok", "reader": "ok", "child": "hidden", "agent": "hidden", "remote": "denied"},
    "list questions": {"owner": "ok", "reader": "ok", "child": "hidden", "remote": "denied"},
    "list approvals": {"owner": "ok", "reader": "ok", "child": "hidden", "remote": "denied"},
    "cancel another's tell": {
        "owner": "ok", "reader": "proposed", "child": "denied", "agent": "denied", "remote": "denied",
    },
    "cancel its own tell": {"owner": "ok", "reader": "proposed", "child": "ok", "agent": "ok", "remote": "ok"},
    "answer a question asked of another": {
        "owner": "ok", "reader": "proposed", "child": "denied", "agent": "denied", "remote": "denied",
    },
    "answer a question asked of it": {"owner": "ok", "reader": "proposed", "child": "ok"},
    "events of another's tell": {
        "owner": "ok", "reader": "denied", "child": "hidden", "agent": "denied", "remote": "denied",
    },
}
# The doors each kind of caller has (the socket is the person's; A2A, outside agents' and
# the person's; the mesh, other irisds').
DOORS = {
    "owner": ("socket", "http", "mcp", "a2a"),
    "reader": ("http", "mcp"),
    "child": ("http", "mcp"),
    "agent": ("a2a",),
    "remote": ("mesh",),
}
# What a door cannot ask at all (no such method there): no cell.
NO_SUCH = {
    ("a2a", "read another's transcript"),
    ("a2a", "answer a question asked of another"),
    ("a2a", "answer a question asked of it"),
    ("mcp", "list tells"),  # team_report lists one team's tells: "read" covers it
    ("a2a", "events of another's tell"),
    ("a2a", "list questions"),
    ("a2a", "list approvals"),
    ("mcp", "events of another's tell"),
}

# Where a door answers otherwise, and why (the README says so under the table): the MCP
# tool team_answer answers as the identity of whoever calls it, and the owner's token
# there is the external caller, so it answers only what was asked of the person.
BY_DOOR = {
    ("answer a question asked of another", "owner", "mcp"): "denied",
    ("answer a question asked of it", "owner", "mcp"): "denied",
}

CELLS = [
    pytest.param(operation, kind, door, id=f"{operation}-{kind}-{door}")
    for operation, row in TABLE.items()
    for kind in row
    for door in DOORS[kind]
    if (door, operation) not in NO_SUCH
]


RECENTLY = time.time()


def _tell(tell_id: str, from_team: str | None, to_team: str) -> TellInfo:
    return TellInfo(
        id=tell_id, from_team=from_team, to_team=to_team, message="m", status="completed", text="the answer",
        # Recent: irisd's retention, which runs as the core starts, prunes ledger rows older
        # than a year (a row of 1970 was there or gone depending on which ran first).
        created_at=RECENTLY - 1.0, finished_at=RECENTLY, chain_id=tell_id,
    )


def _question(question_id: str, tell: TellInfo) -> QuestionInfo:
    return QuestionInfo(
        id=question_id, from_team=tell.from_team, to_team=tell.to_team, session_id="s", tell_id=tell.id,
        question="which one?", context="...", confidence=1.0, status="pending", created_at=1.0, expires_at=1e12,
    )


def _approval(approval_id: str, tell: TellInfo) -> ApprovalInfo:
    return ApprovalInfo(
        id=approval_id, from_team=tell.from_team, to_team=tell.to_team, tell_id=tell.id, tool_name="Bash",
        input={"command": "ls"}, status="pending", created_at=1.0, expires_at=1e12,
    )


@dataclass
class World:
    dispatcher: Dispatcher
    serving: Serving
    face: HttpFace
    tokens: dict[str, str]  # kind -> bearer token (HTTP, /mcp, A2A)
    callers: dict[str, Caller]


@pytest.fixture
async def world(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> AsyncIterator[World]:
    config = teams_config(tmp_path, teams="alpha beta gamma")
    async with running_core(tmp_path, config) as dispatcher:
        seeded = [
            _tell("t-bg", "beta", "gamma"), _tell("t-ab", "alpha", "gamma"), _tell("t-ag", "alpha", "gamma"),
            _tell("t-crm", "a2a:crm", "gamma"), _tell("t-ws2", "beta@ws2", "gamma"),
        ]
        for info in seeded:
            await dispatcher.store.call(tells.insert, info)
        await dispatcher.store.call(questions.insert, _question(ASKED_OF_OTHER, seeded[0]))
        await dispatcher.store.call(questions.insert, _question(ASKED_OF_CHILD, seeded[2]))
        await dispatcher.store.call(approvals.insert, _approval(APPROVAL_OF_OTHER, seeded[0]), "r-1")
        await dispatcher.store.call(approvals.insert, _approval(APPROVAL_OF_CHILD, seeded[2]), "r-2")
        access = Access.open(tmp_path)
        serving = Serving(dispatcher)
        face = HttpFace(serving, access, Allowlist(host_names("127.0.0.1"), PORT),
                        config=lambda: dispatcher.current.config)
        child, reader = access.grant_child("alpha", "external->alpha"), access.grant_reader()
        tokens = {
            "owner": access.owner_token,
            "child": child.token,
            "reader": reader.token,
            "agent": a2a_tokens.issue(a2a_tokens.tokens_file(tmp_path), "crm"),
        }
        callers = {
            "owner": OWNER, "reader": Caller.reader(), "child": Caller.child("alpha", "external->alpha"),
            "agent": Caller.agent("crm"), "remote": Caller.remote("ws2", "beta"),
        }
        yield World(dispatcher, serving, face, tokens, callers)


# --- the doors: each answers "ok", "denied" or "hidden" -----------------------------------


def _request(operation: str, kind: str) -> Request:
    match operation:
        case "read another's tell":
            return GetTell(tell_id=OTHER)
        case "read its own tell":
            return GetTell(tell_id=OWN[kind])
        case "read another's transcript":
            return ReadTranscript(tell_id=OTHER)
        case "list tells":
            return ListTells(to_team="gamma")
        case "list questions":
            return ListQuestions()
        case "list approvals":
            return ListApprovals()
        case "cancel another's tell":
            return CancelTell(tell_id=OTHER)
        case "cancel its own tell":
            return CancelTell(tell_id=OWN[kind])
        case "answer a question asked of another":
            return AnswerQuestion(question_id=ASKED_OF_OTHER, text="that one", timeout_ms=-1)
        case "answer a question asked of it":
            return AnswerQuestion(question_id=ASKED_OF_CHILD, text="that one", timeout_ms=-1)
    raise AssertionError(operation)


def _listed(ids: list[str]) -> str:
    """A list holds the caller's own (it is served), and another's or not."""
    assert ids, "the caller's own are listed"
    return "ok" if {OTHER, ASKED_OF_OTHER, APPROVAL_OF_OTHER} & set(ids) else "hidden"


async def through_socket(world: World, operation: str, kind: str) -> str:
    ours, theirs = socket.socketpair()
    server = Server(cast(trio.SocketListener, None), world.serving)
    buffer = b""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.handle, trio.SocketStream(trio.socket.from_stdlib_socket(theirs)))
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))

        async def receive() -> Any:
            nonlocal buffer
            while len(buffer) < 4 or len(buffer) < 4 + int.from_bytes(buffer[:4], "big"):
                buffer += await stream.receive_some(65536)
            size = int.from_bytes(buffer[:4], "big")
            body, buffer = buffer[4 : 4 + size], buffer[4 + size :]
            return decode_server_message(body)

        await stream.send_all(encode(Hello(protocol_version=PROTOCOL_VERSION)))
        await receive()
        if operation == "events of another's tell":
            await stream.send_all(encode(Watch()))
            assert isinstance(await receive(), Watching)
            outcome = await _published(world, receive)
        else:
            await stream.send_all(encode(_request(operation, kind)))
            outcome = _of_reply(await receive())
        nursery.cancel_scope.cancel()
    ours.close()
    return outcome


def _of_reply(reply: Any) -> str:
    if isinstance(reply, ApprovalReply) and reply.approval.kind == "agent":
        return "proposed"
    if isinstance(reply, ErrorReply):
        assert reply.code == "permission_denied", reply
        return "denied"
    if isinstance(reply, ReportReply):
        return _listed([t.id for t in reply.tells])
    if isinstance(reply, QuestionsReply):
        return _listed([q.id for q in reply.questions])
    if isinstance(reply, ApprovalsReply):
        return _listed([a.id for a in reply.approvals])
    return "ok"


async def _published(world: World, receive: Callable[[], Awaitable[Any]]) -> str:
    """Publish an event of another's tell, then one the subscriber sees in any case (its
    own pair's): the first it gets says whether the other reached it."""
    hub = world.dispatcher.hub
    hub.publish(TellState(tell_id=OTHER, status="running"), "beta", "gamma", OTHER)
    hub.publish(TellState(tell_id=OWN["child"], status="running"), None, "alpha", OWN["child"])
    first = await receive()
    return "ok" if first.tell_id == OTHER else "hidden"


async def through_http(world: World, operation: str, kind: str) -> str:
    token = world.tokens[kind]
    request = _request(operation, kind) if operation != "events of another's tell" else Watch()
    match request:
        case GetTell(tell_id=tell_id):
            answer = await call(world.face, "GET", f"/api/tells/{tell_id}", token=token)
        case ReadTranscript(tell_id=tell_id):
            answer = await call(world.face, "GET", f"/api/tells/{tell_id}/transcript", token=token)
        case ListTells():
            answer = await call(world.face, "GET", "/api/tells?team=gamma", token=token)
        case ListQuestions():
            answer = await call(world.face, "GET", "/api/questions", token=token)
        case ListApprovals():
            answer = await call(world.face, "GET", "/api/approvals", token=token)
        case CancelTell(tell_id=tell_id):
            answer = await call(world.face, "POST", f"/api/tells/{tell_id}/cancel", token=token)
        case AnswerQuestion(question_id=question_id):
            body = {"text": "that one", "timeout_ms": -1}
            answer = await call(world.face, "POST", f"/api/questions/{question_id}/answer", body, token=token)
        case Watch():  # /api/events serves this Watch with the token's caller
            return await _watched(world, world.callers[kind])
    if answer.status == 403:
        assert answer.code == "permission_denied"
        return "denied"
    assert answer.status == 200, answer.body
    data = answer.json()
    if data.get("approval", {}).get("kind") == "agent":
        return "proposed"
    for name in ("tells", "questions", "approvals"):
        if name in data:
            return _listed([t["id"] for t in data[name]])
    return "ok"


async def _watched(world: World, caller: Caller) -> str:
    send, receive = trio.open_memory_channel[Event](10)
    refused: list[IrisError] = []

    async def watch() -> None:
        async with send:
            try:
                await world.serving.dispatch(Watch(), caller, send.send)
            except IrisError as exc:
                refused.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        try:
            assert isinstance(await receive.receive(), Watching)
        except trio.EndOfChannel:
            assert refused[0].code == "permission_denied", refused
            return "denied"
        outcome = await _published(world, receive.receive)
        nursery.cancel_scope.cancel()
    return outcome


async def through_mcp(world: World, operation: str, kind: str) -> str:
    shim = shim_for(world.serving, world.callers[kind])
    request = _request(operation, kind)
    match request:
        case GetTell(tell_id=tell_id):
            output = await shim.call("team_result", {"tellId": tell_id}, _no_progress)
        case ReadTranscript(tell_id=tell_id):
            output = await shim.call("team_cache_read", {"tellId": tell_id}, _no_progress)
        case CancelTell(tell_id=tell_id):
            output = await shim.call("team_cancel", {"tellId": tell_id}, _no_progress)
        case AnswerQuestion(question_id=question_id):
            arguments = {"questionId": question_id, "text": "that one", "timeout": -1}
            output = await shim.call("team_answer", arguments, _no_progress)
        case ListQuestions():
            output = await shim.call("team_questions", {"allCallers": True}, _no_progress)
        case ListApprovals():
            output = await shim.call("team_approvals", {}, _no_progress)
        case _:
            raise AssertionError(request)
    if output.is_error:
        if kind == "reader" and "unknown tool" in output.text:
            return "denied"  # iris-agent's server has no tool that changes anything
        assert output.data["error"]["code"] == "permission_denied", output.data
        return "denied"
    if output.data.get("approval", {}).get("kind") == "agent":
        return "proposed"
    for name in ("questions", "approvals"):
        if name in output.data:
            return _listed([item["id"] for item in output.data[name]])
    return "ok"


async def _no_progress(progress: float, message: str) -> None:
    pass


async def through_a2a(world: World, operation: str, kind: str) -> str:
    request = _request(operation, kind)
    match request:
        case GetTell(tell_id=tell_id):
            method, params = "GetTask", {"id": tell_id}
        case ListTells():
            method, params = "ListTasks", {}
        case CancelTell(tell_id=tell_id):
            method, params = "CancelTask", {"id": tell_id}
        case _:
            raise AssertionError(request)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    answer = await call(
        world.face, "POST", "/a2a/gamma", body, token=world.tokens[kind],
        headers={"a2a-version": "1.0", "content-type": "application/json"},
    )
    data = answer.json()
    if answer.status == 403:
        assert data["error"]["code"] == -32600 and "may not" in data["error"]["message"], data
        return "denied"
    assert answer.status == 200 and data["jsonrpc"] == "2.0", data
    if "error" in data:  # served, and answered on its own terms (a finished task is not cancelable)
        assert data["error"]["code"] == -32002, data
        return "ok"
    if method == "ListTasks":
        return _listed([t["id"] for t in data["result"]["tasks"]])
    return "ok"


async def through_mesh(world: World, operation: str, kind: str) -> str:
    """The mesh home (irisd/mesh/home.py) hands a remote irisd's requests to the dispatcher
    as ``Caller.remote``."""
    caller = world.callers[kind]
    if operation == "events of another's tell":
        request: Request = Watch()
    else:
        request = _request(operation, kind)
    try:
        reply = await world.dispatcher.dispatch(request, caller, _drop)
    except IrisError as exc:
        assert exc.code == "permission_denied", exc
        return "denied"
    return _of_reply(reply)


async def _drop(event: Event) -> None:
    pass


THROUGH = {"socket": through_socket, "http": through_http, "mcp": through_mcp, "a2a": through_a2a,
           "mesh": through_mesh}


@pytest.mark.parametrize(("operation", "kind", "door"), CELLS)
async def test_every_cell_of_the_table_through_every_door(world: World, operation: str, kind: str, door: str) -> None:
    expected = BY_DOOR.get((operation, kind, door), TABLE[operation][kind])
    assert await THROUGH[door](world, operation, kind) == expected


def test_the_readme_table_is_this_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for operation, row in TABLE.items():
        words = {"ok": "yes", "denied": "403", "hidden": "not shown", "proposed": "asks the person"}
        kinds = ("owner", "reader", "child", "agent", "remote")
        cells = " | ".join(words[row[kind]] if kind in row else "—" for kind in kinds)
        assert f"| {operation} | {cells} |" in readme, operation


async def test_a_childs_status_sessions_and_costs_show_only_its_own(tmp_path: Path) -> None:
    """Beyond the table: a team's claude sees its own pairs' processes, conversations and its
    own team's costs, not the conversations and spending of pairs it is no part of."""
    from irisd.store import ledger, sessions
    from protocol.messages import Costs, CostsReply, GetStatus, ListSessions, SessionsReply, StatusReply

    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha beta gamma")) as core:
        for from_team, to_team in ((None, "beta"), ("alpha", "beta"), ("beta", "gamma")):
            await core.store.call(sessions.get_or_create, from_team, to_team, 1.0)
            spent = _tell(f"t-{from_team}-{to_team}", from_team, to_team)
            await core.store.call(ledger.record, msgspec.structs.replace(spent, cost_usd=0.5))
        child = Caller.child("alpha", "external->alpha")
        listed = await core.dispatch(ListSessions(), child, no_events)
        assert isinstance(listed, SessionsReply)
        assert {(s.from_team, s.to_team) for s in listed.sessions} == {("alpha", "beta")}
        everything = await core.dispatch(ListSessions(), OWNER, no_events)
        assert isinstance(everything, SessionsReply) and len(everything.sessions) == 3
        costs = await core.dispatch(Costs(by="pair"), child, no_events)
        assert isinstance(costs, CostsReply)
        assert [row.key for row in costs.rows] == ["alpha->beta"] and costs.total.cost_usd == 0.5
        status = await core.dispatch(GetStatus(), child, no_events)
        assert isinstance(status, StatusReply)
        assert all("alpha" in (p.from_team, p.to_team) for p in status.processes)


async def test_an_ambiguous_id_prefix_names_the_ids_only_to_a_caller_who_sees_every_tell(tmp_path: Path) -> None:
    from irisd.store import tells
    from protocol.messages import GetTell

    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha beta gamma")) as core:
        for tell_id, from_team, to_team in (("abcd0001", "gamma", "beta"), ("abcd0002", "beta", "gamma")):
            await core.store.call(tells.insert, _tell(tell_id, from_team, to_team))
        child = Caller.child("alpha", "external->alpha")
        with pytest.raises(InvalidRequestError) as refused:
            await core.dispatch(GetTell(tell_id="abcd"), child, no_events)
        assert "abcd0001" not in refused.value.message and "more than one id" in refused.value.message
        with pytest.raises(InvalidRequestError, match="it starts abcd0001, abcd0002"):
            await core.dispatch(GetTell(tell_id="abcd"), OWNER, no_events)


async def test_an_id_prefix_that_stands_for_anothers_tell_is_no_tell_to_its_caller(tmp_path: Path) -> None:
    """Else a caller could list other pairs' tells prefix by prefix: the refusal of a tell it
    may not read names the whole id and whose it is."""
    from irisd.store import tells
    from protocol.errors import NotFoundError, PermissionDeniedError
    from protocol.messages import CancelTell, GetTell, TellReply

    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha beta gamma")) as core:
        await core.store.call(tells.insert, _tell("feed0001beef", "gamma", "beta"))
        for caller in (Caller.child("alpha", "external->alpha"), Caller.agent("crm")):
            for request in (GetTell(tell_id="feed0"), CancelTell(tell_id="feed0")):
                with pytest.raises(NotFoundError) as unknown:
                    await core.dispatch(request, caller, no_events)
                assert unknown.value.message == "no tell with id 'feed0'"
            with pytest.raises(PermissionDeniedError, match="it is gamma's tell to beta"):  # its whole id: as before
                await core.dispatch(GetTell(tell_id="feed0001beef"), caller, no_events)
        owned = await core.dispatch(GetTell(tell_id="feed0"), OWNER, no_events)
        assert isinstance(owned, TellReply) and owned.tell.id == "feed0001beef"


async def test_a_childs_health_findings_are_irisds_and_its_teams_without_other_pairs_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The health monitor's findings name tells, approvals and questions of every pair, and
    irisd's log and recoveries are of every pair: a team's claude gets irisd's own findings
    and its team's (status and health alike), the person everything."""
    from irisd.logs import recent_problems
    from protocol.health import Finding, Recovery
    from protocol.messages import GetHealth, GetStatus, HealthReply, StatusReply
    from protocol.status_messages import LogEntry

    found = [
        Finding(kind="stuck_tell", severity="warning", subject="t-gamma", team="alpha", summary="tell t-gamma"),
        Finding(kind="crash_loop", severity="error", subject="gamma->beta", team="beta", summary="beta failed"),
        Finding(kind="budget", severity="warning", subject="alpha", team="alpha", summary="alpha spent 90%"),
        Finding(kind="claude_version", severity="info", subject="claude", summary="claude 9.9.9"),
    ]
    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha beta gamma")) as core:
        health = core.status.health
        assert health is not None

        async def look() -> list[Finding]:
            return found

        monkeypatch.setattr(health, "look", look)
        health.recoveries.appendleft(Recovery(at=1.0, action="cancel_tell", subject="t-gamma", reason="stuck",
                                              outcome="cancelled"))
        monkeypatch.setattr(recent_problems, "entries", lambda: [LogEntry(at=1.0, level="WARNING", logger="irisd",
                                                                          message="gamma->beta failed")])
        child = Caller.child("alpha", "external->alpha")
        status = await core.dispatch(GetStatus(), child, no_events)
        assert isinstance(status, StatusReply)
        assert [f.kind for f in status.findings] == ["budget", "claude_version"]
        assert status.recoveries == [] and status.recent_errors == []
        seen = await core.dispatch(GetHealth(), child, no_events)
        assert isinstance(seen, HealthReply)
        assert [f.kind for f in seen.findings] == ["budget", "claude_version"]
        assert seen.worst == "warning" and seen.recoveries == []
        everything = await core.dispatch(GetHealth(), OWNER, no_events)
        assert isinstance(everything, HealthReply)
        assert everything.findings == found and everything.worst == "error" and len(everything.recoveries) == 1


async def test_a_childs_session_stats_show_only_its_own_pairs(tmp_path: Path) -> None:
    """The analytics are lists of pairs and of pairs' days: a child sees its own pairs' only."""
    from irisd.store import ledger, sessions
    from protocol.messages import SessionStats, SessionStatsReply

    async with running_core(tmp_path, teams_config(tmp_path, teams="alpha beta gamma")) as core:
        for from_team, to_team in ((None, "beta"), ("alpha", "beta"), ("beta", "gamma")):
            await core.store.call(sessions.get_or_create, from_team, to_team, 1.0)
            spent = _tell(f"t-{from_team}-{to_team}", from_team, to_team)
            await core.store.call(ledger.record, msgspec.structs.replace(spent, cost_usd=0.5, duration_ms=10))
        child = Caller.child("alpha", "external->alpha")
        seen = await core.dispatch(SessionStats(), child, no_events)
        assert isinstance(seen, SessionStatsReply)
        assert [(p.from_team, p.to_team) for p in seen.pairs] == [("alpha", "beta")]
        assert [(d.from_team, d.to_team) for d in seen.days] == [("alpha", "beta")]
        everything = await core.dispatch(SessionStats(), Caller.reader(), no_events)
        assert isinstance(everything, SessionStatsReply)
        assert {(p.from_team, p.to_team) for p in everything.pairs} == {
            (None, "beta"), ("alpha", "beta"), ("beta", "gamma")}
        assert everything == await core.dispatch(SessionStats(), OWNER, no_events)
