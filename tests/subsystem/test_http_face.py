"""The HTTP face's pure parts (Host/Origin allowlist, tokens, the rate limiter, the
caller rules), the whole starlette app in process (the gate, the route table, the
serve path shared with the socket), hypercorn serving it on a real socket, and the
events WebSocket on trio's virtual clock."""

from __future__ import annotations

import os
import stat
from collections.abc import MutableMapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.lowlevel
from starlette.websockets import WebSocket

import irisd.events
from irisd.caller import OWNER, Caller
from irisd.dispatch import Dispatcher
from irisd.events import EventHub, serve_watch
from irisd.http import api, events
from irisd.http.security import Allowlist, FailedAuthLimiter, bearer_token, host_names, is_loopback
from irisd.serving import Serving
from irisd.tokens import Access
from protocol.errors import PermissionDeniedError
from protocol.messages import (
    AnswerQuestion,
    Ask,
    CancelTell,
    ClearCache,
    Costs,
    Decide,
    ForgetRule,
    GetStatus,
    GetTell,
    HttpInfo,
    ListApprovals,
    ListQuestions,
    ListSessions,
    ReadTranscript,
    Reload,
    Report,
    Sleep,
    Tell,
    TellMany,
    TellState,
    TellText,
    Wake,
    WakeAll,
    Watch,
)

# --- Host and Origin --------------------------------------------------------------------


def test_only_irisds_own_names_and_port_pass() -> None:
    allow = Allowlist(host_names("127.0.0.1"), 4242)
    for good in ("127.0.0.1:4242", "localhost:4242", "[::1]:4242", "LOCALHOST:4242"):
        assert allow.host_ok(good), good
    for bad in (None, "", "127.0.0.1", "127.0.0.1:4243", "evil.example:4242", "127.0.0.1.evil.example:4242"):
        assert not allow.host_ok(bad), bad
    assert allow.origin_ok(None)  # curl, claude: no Origin
    assert allow.origin_ok("http://localhost:4242")
    for bad in ("null", "http://evil.example", "https://127.0.0.1:4242", "http://127.0.0.1:4243", ""):
        assert not allow.origin_ok(bad), bad


def test_a_configured_host_is_allowed_besides_loopback() -> None:
    assert host_names("0.0.0.0") == ("127.0.0.1", "localhost", "[::1]")
    assert host_names("192.168.1.5")[-1] == "192.168.1.5"
    assert host_names("::")[-1] == "[::1]"
    assert is_loopback("127.0.0.2") and is_loopback("[::1]") and not is_loopback("192.168.1.5")


def test_tokens_come_from_a_bearer_header_or_the_cookie() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None and bearer_token(None) is None


def test_failed_authentications_are_limited_per_address_within_a_window() -> None:
    limiter = FailedAuthLimiter(max_failures=3, window_s=10.0)
    for t in (0.0, 1.0, 2.0):
        assert not limiter.limited("a", t)
        limiter.failed("a", t)
    assert limiter.limited("a", 2.5)
    assert not limiter.limited("b", 2.5)  # another address is not affected
    assert limiter.retry_after("a", 2.5) == pytest.approx(7.5)
    assert not limiter.limited("a", 10.5)  # the first failure left the window


def test_the_auth_limiter_remembers_a_bounded_number_of_addresses() -> None:
    """A flood of failures from ever new addresses (an IPv6 range) within the window keeps
    at most ``max_addresses`` of them; the newest are limited as ever."""
    limiter = FailedAuthLimiter(max_failures=2, window_s=60.0, max_addresses=100)
    for n in range(5000):
        limiter.failed(f"2001:db8::{n:x}", 1.0)
        limiter.failed(f"2001:db8::{n:x}", 1.0)
    assert len(limiter._failures) <= 100
    assert limiter.limited("2001:db8::1387", 2.0)  # the last one: still limited


# --- tokens --------------------------------------------------------------------------------


def test_the_owner_token_is_a_0600_file_kept_across_starts_and_rotated(tmp_path: Path) -> None:
    access = Access.open(tmp_path)
    token = access.owner_token
    path = tmp_path / "http-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text().strip() == token
    assert Access.open(tmp_path).owner_token == token
    assert access.caller_for_token(token) == OWNER
    cookie_value = access.cookie
    assert token not in cookie_value and access.caller_for_cookie(cookie_value) == OWNER

    new = access.rotate_owner_token()
    assert new != token and path.read_text().strip() == new
    assert access.caller_for_token(token) is None
    assert access.caller_for_cookie(cookie_value) is None  # every browser is logged out


def test_a_token_file_others_can_read_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "http-token").write_text("sekrit\n")
    os.chmod(tmp_path / "http-token", 0o644)
    assert Access.open(tmp_path).owner_token == "sekrit"
    assert stat.S_IMODE((tmp_path / "http-token").stat().st_mode) == 0o600


def test_a_childs_token_names_its_pair_until_revoked_and_its_config_file_is_private(tmp_path: Path) -> None:
    access = Access.open(tmp_path)
    access.child_url = "http://127.0.0.1:4242"
    grant = access.grant_child("beta", "alpha->beta")
    assert access.caller_for_token(grant.token) == Caller.child("beta", "alpha->beta")
    assert stat.S_IMODE(grant.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(grant.path.parent.stat().st_mode) == 0o700
    config = msgspec.json.decode(grant.path.read_bytes())
    server = config["mcpServers"]["iris"]
    assert server == {
        "type": "http",
        "url": "http://127.0.0.1:4242/mcp",
        "headers": {"Authorization": f"Bearer {grant.token}"},
    }
    grant.revoke()
    assert access.caller_for_token(grant.token) is None and not grant.path.exists()
    grant.revoke()  # twice is harmless


def test_a_login_code_works_once(tmp_path: Path) -> None:
    access = Access.open(tmp_path)
    code = access.mint_login_code()
    assert access.use_login_code(code)
    assert not access.use_login_code(code)
    assert not access.use_login_code("") and not access.use_login_code("made-up")


# --- callers -------------------------------------------------------------------------------


def test_the_owner_may_speak_as_any_team() -> None:
    tell = Tell(to_team="beta", message="hi", from_team="gamma", parent_pair="x->y")
    assert OWNER.apply(tell) is tell


def test_a_child_speaks_as_its_own_team_only_and_its_tells_are_linked_to_its_pair() -> None:
    child = Caller.child("beta", "alpha->beta")
    sent = child.apply(Tell(to_team="gamma", message="hi"))
    assert isinstance(sent, Tell)
    assert (sent.from_team, sent.parent_pair) == ("beta", "alpha->beta")
    assert child.apply(Tell(to_team="gamma", message="hi", from_team="beta", parent_pair="forged")).parent_pair == (  # type: ignore[union-attr]
        "alpha->beta"
    )
    for request in (
        Tell(to_team="gamma", message="hi", from_team="alpha"),
        Sleep(to_team="gamma", from_team="alpha"),
        Report(to_team="gamma", from_team="gamma"),
        WakeAll(from_team="alpha"),
        ClearCache(to_team="gamma", from_team="alpha"),
    ):
        with pytest.raises(PermissionDeniedError, match="a team can speak only as itself"):
            child.apply(request)
    for owners in (Decide(approval_id="a", allow=True), HttpInfo()):
        with pytest.raises(PermissionDeniedError, match="only the person"):
            child.apply(owners)
    assert child.apply(GetTell(tell_id="x")) == GetTell(tell_id="x")


def test_iris_agent_s_token_reads_everything_and_only_proposes_changes(tmp_path: Path) -> None:
    access = Access.open(tmp_path)
    grant = access.grant_reader()
    reader = access.caller_for_token(grant.token)
    assert reader == Caller.reader() and reader is not None and not reader.is_owner
    for reads in (GetStatus(), Report(to_team="gamma", all_callers=True), GetTell(tell_id="x"), ListQuestions(),
                  Costs(by="pair"), ListApprovals(), ListSessions(), ReadTranscript(tell_id="x")):
        assert reader.apply(reads) is reads  # as the owner sees it
    for changes in (Decide(approval_id="a", allow=True), Ask(question="again?"), HttpInfo(), ClearCache(to_team="beta"),
                    Reload(), ForgetRule(rule_id="a"), TellMany(to_teams=["beta"], message="hi")):
        with pytest.raises(PermissionDeniedError, match=r"iris-agent \(it reads, .*\) may not send"):
            reader.apply(changes)
    # What it may do it only proposes (the dispatcher files an approval), its tells as itself.
    for proposes in (Wake(to_team="beta"), CancelTell(tell_id="t")):
        assert reader.apply(proposes) is proposes and reader.proposes(proposes)
    answer = reader.apply(AnswerQuestion(question_id="q", text="yes", as_team="external"))
    assert isinstance(answer, AnswerQuestion) and (answer.as_team, answer.by) == ("", "iris-agent")  # never a team's
    assert reader.proposes(answer)
    told = reader.apply(Tell(to_team="beta", message="hi", from_team="alpha", parent_pair="alpha->beta"))
    assert isinstance(told, Tell) and (told.from_team, told.parent_pair) == ("iris-agent", "") and reader.proposes(told)
    with pytest.raises(PermissionDeniedError, match="persist"):
        reader.apply(Tell(to_team="beta", message="hi", persist=True))
    assert not Caller().proposes(Wake(to_team="beta"))  # the person just does it
    grant.revoke()
    assert access.caller_for_token(grant.token) is None


# --- the route table (the app in process: tests/subsystem/test_http_app.py) -------------------


def test_every_route_is_in_the_openapi_document() -> None:
    spec = api.openapi()
    for route in api.ROUTES:
        assert route.method.lower() in spec["paths"][route.path]
    ids = [op["operationId"] for path in spec["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    params = {p["name"] for p in spec["paths"]["/api/tells"]["get"]["parameters"]}
    assert params == {"team", "from_team", "status", "limit"}
    msgspec.json.encode(spec)  # plain JSON all the way down


# --- the events WebSocket, on the virtual clock ---------------------------------------------


class FakeClient:
    """The ASGI side of one WebSocket client; ``delay`` is how long each send takes."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.sent: list[MutableMapping[str, Any]] = []
        self.connected = False
        self.leave = trio.Event()

    async def receive(self) -> dict[str, Any]:
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        await self.leave.wait()
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "websocket.send":
            await trio.sleep(self.delay)
        self.sent.append(message)

    @property
    def texts(self) -> list[str]:
        return [m["text"] for m in self.sent if m["type"] == "websocket.send"]

    @property
    def close_code(self) -> int | None:
        return next((m["code"] for m in self.sent if m["type"] == "websocket.close"), None)


def serving(hub: EventHub) -> Serving:
    """Serving with a dispatcher that answers Watch as irisd's does (irisd.events.serve_watch)."""
    config = SimpleNamespace(team=lambda name: name)

    async def dispatch(request: Watch, caller: Caller, send_event: Any) -> None:
        await serve_watch(hub, request.team, send_event)

    return Serving(cast(Dispatcher, SimpleNamespace(config=config, hub=hub, dispatch=dispatch)))


async def serve(hub: EventHub, client: FakeClient, nursery: trio.Nursery) -> None:
    websocket = WebSocket({"type": "websocket", "query_string": b"", "headers": []}, client.receive, client.send)
    nursery.start_soon(events.serve_events, serving(hub), websocket, OWNER)
    await trio.sleep(0.001)  # it runs until it waits for events: subscribed


WATCHING = '{"type":"watching"}'  # the first event of every watch: subscribed


async def test_a_tells_deltas_reach_a_watcher_in_a_few_frames_and_never_wait(autojump_clock: trio.abc.Clock) -> None:
    hub, client = EventHub(), FakeClient(delay=0.01)
    async with trio.open_nursery() as nursery:
        await serve(hub, client, nursery)
        started = trio.current_time()
        for i in range(200):
            hub.publish(TellText(tell_id="t", text=f"{i} "), None, "beta")  # never waits
            await trio.sleep(0.005)  # 200 deltas a second
        assert trio.current_time() == pytest.approx(started + 1.0)
        await trio.sleep(1)
        client.leave.set()
    frames = [msgspec.json.decode(text) for text in client.texts[1:]]
    assert client.texts[0] == WATCHING
    assert "".join(frame["text"] for frame in frames) == "".join(f"{i} " for i in range(200))
    # A frame a batch (a burst, then at most one every FLUSH_INTERVAL_S, and the last), not a frame a delta.
    assert 2 <= len(frames) <= irisd.events.FLUSH_BURST + 1.0 / irisd.events.FLUSH_INTERVAL_S + 1


async def test_a_slow_events_client_is_closed_and_never_slows_the_publisher(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(irisd.events, "LOG_EVENTS", 8)
    hub, slow, fast = EventHub(), FakeClient(delay=1.0), FakeClient()
    states = [TellState(tell_id=str(i), status="running", to_team="beta") for i in range(20)]
    async with trio.open_nursery() as nursery:
        await serve(hub, slow, nursery)
        await serve(hub, fast, nursery)
        started = trio.current_time()
        for state in states:
            hub.publish(state, None, "beta")  # never waits
            await trio.sleep(0.05)  # a fast client keeps up (a batch every FLUSH_INTERVAL_S)
        assert trio.current_time() == pytest.approx(started + 1.0)
        await trio.sleep(30)
        fast.leave.set()
    assert slow.close_code == events.CLOSE_TOO_SLOW
    assert len(slow.texts) < 20
    assert fast.texts == [WATCHING, *(msgspec.json.encode(state).decode() for state in states)]
    assert fast.close_code is None  # it left on its own


async def test_a_client_that_reads_nothing_is_dropped_and_irisd_stopping_closes_with_1001(
    autojump_clock: trio.abc.Clock,
) -> None:
    hub, stuck, waiting = EventHub(), FakeClient(delay=float("inf")), FakeClient()
    async with trio.open_nursery() as nursery:
        await serve(hub, stuck, nursery)
        await serve(hub, waiting, nursery)
        hub.publish(TellText(tell_id="t", text="x"), None, "beta")
        await trio.sleep(events.SEND_TIMEOUT_S + 1)
        hub.close()
    assert stuck.close_code is None and waiting.close_code == events.CLOSE_GOING_AWAY
    assert waiting.texts == [WATCHING, '{"type":"tell_text","tell_id":"t","text":"x"}']
