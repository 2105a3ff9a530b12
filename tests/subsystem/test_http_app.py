"""The HTTP face's starlette app in process, with a recording dispatcher: the gate in its
order, the route table building the socket protocol's requests, errors as JSON, the
serve path it shares with the socket (draining, counting, the catch-all); then hypercorn
serving it on a real socket under irisd's accept loop (idle connections closed, a cap)."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import resource
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
import trio.testing

from harness import wait_until
from iris_common.config import IrisConfig
from irisd.caller import OWNER, Caller
from irisd.dispatch import Dispatcher
from irisd.http import listener as http_listener
from irisd.http.api import MAX_ASK_BODY_BYTES, ROUTES
from irisd.http.app import MAX_BODY_BYTES, HttpFace
from irisd.http.gate import SECURITY_HEADERS, ActiveLimits
from irisd.http.listener import HttpServer, open_http_socket
from irisd.http.security import Allowlist, host_names
from irisd.serving import Serving
from irisd.tokens import COOKIE_NAME, Access
from protocol import errors
from protocol.errors import InvalidRequestError, IrisError
from protocol.limits import DEFAULT_TTL_DAYS
from protocol.messages import (
    AnswerQuestion,
    CountReply,
    Decide,
    Event,
    GetStatus,
    GetTell,
    ListTeams,
    ListTells,
    Reply,
    Report,
    Request,
    Tell,
    Wake,
)

PORT = 4242
HOST = f"127.0.0.1:{PORT}"


class Recorder:
    """A dispatcher that records what it is asked and answers ``CountReply``; a request
    waits while ``hold`` is set; ``GetStatus`` fails like a bug."""

    def __init__(self) -> None:
        self.seen: list[tuple[Request, Caller]] = []
        self.config = SimpleNamespace(team=lambda name: name)
        self.hold: trio.Event | None = None
        self.entered = 0
        self.raises: IrisError | None = None

    async def dispatch(self, request: Request, caller: Caller, send_event: Callable[[Event], Awaitable[None]]) -> Reply:
        self.seen.append((request, caller))
        self.entered += 1
        if self.hold is not None:
            await self.hold.wait()
        if isinstance(request, GetStatus):
            raise KeyError("a bug")
        if self.raises is not None:
            raise self.raises
        return CountReply(count=len(self.seen))


class Answer:
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        start = messages[0]
        self.status: int = start["status"]
        self.headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
        self.body = b"".join(m.get("body", b"") for m in messages[1:])
        self.websocket = start["type"].startswith("websocket.")

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def code(self) -> str:
        answer = self.json()
        assert answer["type"] == "error" and answer["message"], answer
        return str(answer["code"])


@pytest.fixture
def access(tmp_path: Path) -> Access:
    return Access.open(tmp_path)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def serving(recorder: Recorder) -> Serving:
    return Serving(cast(Dispatcher, recorder))


@pytest.fixture
def face(serving: Serving, access: Access, recorder: Recorder) -> HttpFace:
    config = cast(IrisConfig, recorder.config)
    return HttpFace(serving, access, Allowlist(host_names("127.0.0.1"), PORT), config=lambda: config)


async def call(
    face: HttpFace,
    method: str,
    target: str,
    body: bytes | dict[str, Any] = b"",
    *,
    headers: dict[str, str] | None = None,
    token: str | None = "owner",
    websocket: bool = False,
    client: str = "127.0.0.1",
) -> Answer:
    """One request through the whole app, as hypercorn would pass it (``token="owner"``:
    the owner's token; None: no Authorization header)."""
    path, _, query = target.partition("?")
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    sent_headers = {"host": HOST}
    if token is not None:
        sent_headers["authorization"] = f"Bearer {face.access.owner_token if token == 'owner' else token}"
    if data:
        sent_headers["content-length"] = str(len(data))
    sent_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    scope: dict[str, Any] = {
        "type": "websocket" if websocket else "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": method,
        "scheme": "ws" if websocket else "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in sent_headers.items()],
        "client": (client, 50000),
        "server": ("127.0.0.1", PORT),
        "extensions": {"websocket.http.response": {}} if websocket else {},
    }
    incoming: list[dict[str, Any]] = (
        [{"type": "websocket.connect"}] if websocket else [{"type": "http.request", "body": data, "more_body": False}]
    )
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: Any) -> None:
        sent.append(dict(message))

    with trio.fail_after(10):
        await face(scope, receive, send)
    return Answer(sent)


# --- the route table ------------------------------------------------------------------------


async def test_routes_build_the_socket_protocols_requests(face: HttpFace, recorder: Recorder) -> None:
    answer = await call(face, "POST", "/api/teams/beta/tell", {"message": "hi", "from_team": "alpha", "timeout_ms": -1})
    assert answer.status == 200 and answer.json() == {"type": "count_reply", "count": 1}
    assert answer.headers["content-type"] == "application/json"
    assert recorder.seen == [(Tell(to_team="beta", message="hi", from_team="alpha", timeout_ms=-1), OWNER)]

    await call(face, "GET", "/api/tells?team=beta&from_team=external&status=running&limit=5")
    await call(face, "GET", "/api/tells?team=")
    await call(face, "POST", "/api/approvals/abc/deny")
    assert [request for request, _ in recorder.seen[1:]] == [
        ListTells(to_team="beta", from_team="external", status="running", limit=5),
        ListTells(),
        Decide(approval_id="abc", allow=False, by="owner (HTTP API)"),
    ]


async def test_a_tells_ttl_days_needs_persist_as_on_the_cli(face: HttpFace, recorder: Recorder) -> None:
    """``ttl_days`` without ``persist`` ran as a plain tell here; the CLI refuses it."""
    lone = await call(face, "POST", "/api/teams/beta/tell", {"message": "hi", "ttl_days": 3})
    assert (lone.status, lone.code) == (400, "invalid_request")
    assert lone.json()["message"] == "ttl_days only applies to a stored tell: add persist, or leave it out"
    await call(face, "POST", "/api/teams/beta/tell", {"message": "hi", "persist": True, "ttl_days": 3})
    await call(face, "POST", "/api/teams/beta/tell", {"message": "hi", "persist": True})
    assert [request for request, _ in recorder.seen] == [
        Tell(to_team="beta", message="hi", persist=True, ttl_days=3),
        Tell(to_team="beta", message="hi", persist=True, ttl_days=DEFAULT_TTL_DAYS),
    ]


async def test_no_route_and_a_wrong_method_are_json_errors(face: HttpFace, recorder: Recorder) -> None:
    missing = await call(face, "GET", "/api/elsewhere")
    assert (missing.status, missing.code) == (404, "not_found")
    assert missing.json()["message"] == "no route GET /api/elsewhere; see /api/openapi.json"
    assert (await call(face, "GET", "/api/teams/")).status == 404  # no redirect to /api/teams
    wrong = await call(face, "PUT", "/api/tells/abc")
    assert (wrong.status, wrong.code, wrong.headers["allow"]) == (405, "method_not_allowed", "GET")
    assert wrong.json()["message"] == "PUT is not allowed on /api/tells/abc; use GET"
    assert (await call(face, "HEAD", "/api/teams")).status == 405  # the API has no HEAD
    bad = await call(face, "POST", "/api/teams/beta/tell", b"{not json")
    assert (bad.status, bad.code) == (400, "invalid_request") and "not JSON" in bad.json()["message"]
    assert (await call(face, "POST", "/api/teams/beta/wake")).status == 200  # no body: the defaults
    body = await call(face, "GET", "/api/teams", b'{"a": 1}')
    assert (body.status, body.json()["message"]) == (400, "GET /api/teams takes no body")
    assert [type(request) for request, _ in recorder.seen] == [Wake]


async def test_bodies_are_capped_with_a_json_413_naming_the_routes_limit(face: HttpFace, recorder: Recorder) -> None:
    huge = await call(face, "POST", "/api/teams/beta/tell", b"x" * (MAX_BODY_BYTES + 1))
    assert (huge.status, huge.code) == (413, "too_large") and str(MAX_BODY_BYTES) in huge.json()["message"]
    ask = await call(face, "POST", "/api/ask", b"x" * (MAX_ASK_BODY_BYTES + 1))
    assert (ask.status, ask.code) == (413, "too_large") and str(MAX_ASK_BODY_BYTES) in ask.json()["message"]
    a2a_call = await call(face, "POST", "/a2a/alpha", b"x" * (MAX_BODY_BYTES + 1))
    assert a2a_call.status == 413 and a2a_call.json()["error"]["code"] == -32600
    assert str(MAX_BODY_BYTES) in a2a_call.json()["error"]["message"]
    assert recorder.seen == []


# --- the gate -------------------------------------------------------------------------------


async def test_the_gate_checks_host_then_origin_then_the_caller(face: HttpFace, recorder: Recorder) -> None:
    for path in ("/health", "/api/teams", "/mcp", "/login", "/.well-known/agent-card.json", "/a2a/alpha"):
        foreign = await call(face, "GET", path, headers={"host": "evil.example"})
        assert (foreign.status, foreign.code) == (403, "permission_denied"), path
    origin = await call(face, "GET", "/api/teams", headers={"origin": "http://evil.example"})
    assert (origin.status, origin.code) == (403, "permission_denied")
    assert "access-control-allow-origin" not in origin.headers
    # The A2A face too, answered as JSON-RPC: an A2A client reads no other form.
    for headers in ({"origin": "http://evil.example"}, {"host": "evil.example"}):
        refused = await call(face, "POST", "/a2a/alpha", headers=headers)
        assert refused.status == 403 and "access-control-allow-origin" not in refused.headers
        assert refused.json()["jsonrpc"] == "2.0" and refused.json()["id"] is None
        assert refused.json()["error"]["code"] == -32600 and "evil.example" in refused.json()["error"]["message"]

    health = await call(face, "GET", "/health", token=None)
    assert (health.status, health.json()) == (200, {"status": "ok"})
    for token in (None, "wrong"):
        for path in ("/api/teams", "/", "/static/app.js", "/api/openapi.json", "/mcp", "/api/health", "/api/sessions"):
            refused = await call(face, "GET", path, token=token)
            assert (refused.status, refused.code) == (401, "unauthorized"), (path, token)
            assert refused.headers["www-authenticate"].startswith("Bearer")
        for n, route in enumerate(ROUTES):  # every route of the API, those added later too
            path = re.sub(r"\{\w+\}", "alpha", route.path)
            # A client of its own for each: failed authentications from one address are rate-limited.
            refused = await call(face, route.method, path, token=token, body={} if route.method == "POST" else b"",
                                 client=f"127.0.{1 if token else 2}.{n + 1}")
            assert (refused.status, refused.code) == (401, "unauthorized"), (route.method, path, token)
    for route in ROUTES:
        path = re.sub(r"\{\w+\}", "alpha", route.path)
        foreign = await call(face, route.method, path, body={} if route.method == "POST" else b"",
                             headers={"origin": "http://evil.example"})
        assert (foreign.status, foreign.code) == (403, "permission_denied"), (route.method, path)
    assert recorder.seen == []


async def test_every_answer_carries_the_security_headers(face: HttpFace) -> None:
    answers = [
        await call(face, "GET", "/health", token=None),
        await call(face, "GET", "/api/teams"),
        await call(face, "GET", "/api/teams", token=None),
        await call(face, "GET", "/"),
        await call(face, "GET", "/static/app.js"),
        await call(face, "GET", "/static/nothing.js"),
        await call(face, "GET", "/api/events", token=None, websocket=True),
    ]
    for answer in answers:
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name.lower()] == value, (answer.status, name)


async def test_the_dashboard_is_served_from_its_folder(face: HttpFace) -> None:
    page = await call(face, "GET", "/")
    assert page.status == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert b'src="/static/app.js"' in page.body
    script = await call(face, "GET", "/static/app.js")
    assert script.status == 200 and script.headers["content-type"].startswith("text/javascript")
    for path in ("/static/../__init__.py", "/static/", "/static/nothing.js"):
        assert (await call(face, "GET", path)).status == 404, path
    assert (await call(face, "POST", "/static/app.js")).status == 405


async def test_login_sets_the_cookie_that_then_names_the_owner(face: HttpFace, recorder: Recorder) -> None:
    login = await call(face, "GET", f"/login?token={face.access.owner_token}", token=None)
    assert login.status == 303 and login.headers["location"] == "/"
    cookie = login.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert face.access.owner_token not in cookie
    session = cookie.split(";")[0]
    assert session == f"{COOKIE_NAME}={face.access.cookie}"
    answer = await call(face, "GET", "/api/teams", token=None, headers={"cookie": f"a=1; {session}"})
    assert answer.status == 200 and recorder.seen == [(ListTeams(), OWNER)]
    forged = await call(face, "GET", "/api/teams", token=None, headers={"cookie": f"{COOKIE_NAME}=forged"})
    assert (forged.status, forged.code) == (401, "unauthorized")
    assert (await call(face, "GET", "/login?token=wrong", token=None)).status == 401


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (None, 415),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("multipart/form-data; boundary=x", 415),
        ("application/json", 200),
        ("Application/JSON; charset=utf-8", 200),
    ],
)
async def test_a_post_with_the_cookie_must_be_json(
    face: HttpFace, recorder: Recorder, content_type: str | None, status: int
) -> None:
    """A web page can make the browser POST a form or text/plain with its cookies (no
    preflight, no Origin from some browsers): only JSON is served."""
    headers = {"cookie": f"{COOKIE_NAME}={face.access.cookie}"}
    if content_type is not None:
        headers["content-type"] = content_type
    answer = await call(face, "POST", "/api/teams/alpha/wake", b'{"from_team": null}', token=None, headers=headers)
    assert answer.status == status, answer.body
    if status == 415:
        assert answer.code == "unsupported_media_type" and "application/json" in answer.json()["message"]
        assert recorder.seen == []
    # The token in Authorization is no browser's: any body type is read as before.
    scripted = await call(face, "POST", "/api/teams/alpha/wake", b"{}", headers={"content-type": "text/plain"})
    assert scripted.status == 200


@pytest.mark.parametrize("error", [errors._BY_CODE[c] for c in sorted(errors._BY_CODE)], ids=sorted(errors._BY_CODE))
async def test_every_error_is_answered_with_the_status_its_class_carries(
    face: HttpFace, recorder: Recorder, error: type[IrisError]
) -> None:
    """One mapping: a budget refusal of a tell was a 500 when the API kept its own table."""
    recorder.raises = error("what went wrong, and the fix")
    answer = await call(face, "POST", "/api/teams/alpha/tell", {"message": "hi"})
    assert (answer.status, answer.code) == (error.http_status, error.code)
    assert answer.json()["message"] == "what went wrong, and the fix"
    assert errors.BudgetError.http_status == 402 and errors.IrisError.http_status == 500


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (Report(to_team="alpha", limit=5000), "`$.limit`; use 1 to 1000"),
        (ListTells(limit=0), "`$.limit`; use 1 to 1000"),
        (GetTell(tell_id="t-1", wait_ms=-5), "`$.wait_ms`; use 0 (answer at once)"),
        (AnswerQuestion(question_id="q-1", text="x" * 1_000_001), "`$.text`; point the team at a file"),
        (AnswerQuestion(question_id="q-1", text="x", timeout_ms=-2), "`$.timeout_ms`; use -1"),
    ],
)
async def test_the_limits_on_the_types_hold_for_requests_built_in_process(
    serving: Serving, recorder: Recorder, request_: Request, words: str
) -> None:
    """The serve path checks every request against its type once, whichever face built it
    (the socket's decoder checked only the socket's): the dispatcher never sees it."""
    with pytest.raises(InvalidRequestError, match=re.escape(words)):
        await serving.dispatch(request_, OWNER)
    assert recorder.seen == []


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"message": "\xff"}', "not valid UTF-8"),
        (b'{"message": "\xed\xa0\x80"}', "not valid UTF-8"),  # a surrogate, encoded
        (rb'{"message": "\ud800"}', "half of a UTF-16 surrogate pair"),  # msgspec: "Input data was truncated"
        (rb'{"message": "a\ud800\u0041"}', "half of a UTF-16 surrogate pair"),
    ],
)
async def test_a_body_that_is_not_valid_unicode_is_a_400_with_its_reason(
    face: HttpFace, recorder: Recorder, caplog: pytest.LogCaptureFixture, body: bytes, words: str
) -> None:
    answer = await call(face, "POST", "/api/teams/alpha/tell", body)
    assert (answer.status, answer.code) == (400, "invalid_request") and words in answer.json()["message"]
    assert recorder.seen == [] and not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_too_many_failures_from_one_address_get_429_but_a_valid_token_gets_in(face: HttpFace) -> None:
    statuses = [(await call(face, "GET", "/api/teams", token=f"guess{i}")).status for i in range(25)]
    assert statuses[:20] == [401] * 20 and set(statuses[20:]) == {429}
    limited = await call(face, "GET", "/login?token=again", token=None)
    assert limited.status == 429 and limited.headers["retry-after"] == "60"
    assert (await call(face, "GET", "/api/teams")).status == 200


async def test_websocket_upgrades_are_refused_with_an_http_answer(face: HttpFace) -> None:
    for target, token, status in [
        ("/api/events", None, 401),
        ("/api/elsewhere", "owner", 404),
        ("/static/app.js", "owner", 404),
        ("/a2a/beta", "owner", 404),
        ("/mcp", "owner", 404),
    ]:
        answer = await call(face, "GET", target, token=token, websocket=True)
        assert answer.websocket and answer.status == status and answer.json()["type"] == "error", target


async def test_a_childs_requests_at_once_are_limited_and_the_owner_and_health_still_get_in(
    face: HttpFace, recorder: Recorder
) -> None:
    limits = ActiveLimits(total=4, per_caller=2, owner_room=1)
    face = HttpFace(face.serving, face.access, Allowlist(host_names("127.0.0.1"), PORT), config=face.config,
                    limits=limits)
    child = face.access.mint(Caller.child("alpha", "alpha->beta"))
    recorder.hold = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(functools.partial(call, face, "GET", "/api/teams", token=child))
        await wait_until(lambda: recorder.entered >= 2, every=0.001)
        busy = await call(face, "GET", "/api/teams", token=child)
        assert (busy.status, busy.code) == (503, "busy")
        assert "already has 2 HTTP requests or WebSockets open at once" in busy.json()["message"]
        events = await call(face, "GET", "/api/events", token=child, websocket=True)
        assert (events.status, events.code) == (503, "busy")  # a WebSocket counts the same
        nursery.start_soon(call, face, "GET", "/api/teams")  # the owner's: served
        await wait_until(lambda: recorder.entered >= 3, every=0.001)
        assert (await call(face, "GET", "/health", token=None)).status == 200  # never counted
        recorder.hold.set()
    assert (await call(face, "GET", "/api/teams", token=child)).status == 200


# --- the serve path shared with the socket -----------------------------------------------------


async def test_a_bug_is_a_500_with_a_message_never_a_traceback(
    face: HttpFace, caplog: pytest.LogCaptureFixture
) -> None:
    answer = await call(face, "GET", "/api/status")
    assert (answer.status, answer.code) == (500, "internal")
    assert answer.json()["message"] == "irisd failed on this request (KeyError: 'a bug'); see the irisd log"
    assert "Traceback" not in answer.body.decode()
    assert [r.message for r in caplog.records if r.exc_info] == ["request failed"]


async def test_draining_refuses_new_requests_and_waits_for_answers_in_flight(
    face: HttpFace, serving: Serving, recorder: Recorder
) -> None:
    recorder.hold = trio.Event()
    answers: list[Answer] = []

    async def in_flight() -> None:
        answers.append(await call(face, "GET", "/api/teams"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(in_flight)
        await wait_until(lambda: recorder.entered, every=0.001)
        serving.stop_accepting()
        refused = await call(face, "GET", "/api/teams")
        assert (refused.status, refused.code) == (503, "shutting_down")
        assert serving.in_flight == 1
        idle = False

        async def wait() -> None:
            nonlocal idle
            await serving.wait_idle()
            idle = True

        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()  # everything that could finish has
        assert not idle
        recorder.hold.set()
    assert idle and serving.in_flight == 0
    assert answers[0].status == 200  # its answer was sent before the drain saw it idle


# --- hypercorn on a real socket ----------------------------------------------------------------


async def test_hypercorn_serves_the_face_on_a_duplicate_that_no_child_inherits(face: HttpFace) -> None:
    with open_http_socket("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
        face = HttpFace(face.serving, face.access, Allowlist(host_names("127.0.0.1"), port), config=face.config)
        server = HttpServer(face, sock, max_connections=64)
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(server.run)
                assert [fd for fd in _sockets() if os.get_inheritable(fd)] == []
                answer = await trio.to_thread.run_sync(_get, port, "/health")
                assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"status":"ok"}')
                server.stop_accepting()
                nursery.cancel_scope.cancel()  # as the daemon does once drained
        assert face.serving.draining
    with pytest.raises(ConnectionRefusedError):  # hypercorn closed its duplicate, the daemon its own
        _get(port, "/health")


async def test_a_connection_that_sends_no_request_is_closed_after_the_idle_timeout(
    face: HttpFace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_listener, "IDLE_TIMEOUT_S", 0.5)
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        server = HttpServer(face, sock, max_connections=64)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            client = await trio.open_tcp_stream("127.0.0.1", sock.getsockname()[1])
            started = trio.current_time()
            assert await client.receive_some(1024) == b""  # closed by irisd: it said nothing
            assert 0.5 <= trio.current_time() - started < 10
            await client.aclose()
            nursery.cancel_scope.cancel()


async def test_connections_past_the_limit_wait_in_the_listen_queue_until_one_closes(
    face: HttpFace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_listener, "IDLE_TIMEOUT_S", 60.0)
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        port = sock.getsockname()[1]
        face = HttpFace(face.serving, face.access, Allowlist(host_names("127.0.0.1"), port), config=face.config)
        server = HttpServer(face, sock, max_connections=2)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            idle = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(2)]
            await wait_until(lambda: server.connections >= 2, every=0.01)
            answer: list[bytes] = []

            async def get_health() -> None:
                answer.append(await trio.to_thread.run_sync(_get, port, "/health"))

            nursery.start_soon(get_health)
            await trio.sleep(0.2)  # it is connected (the kernel's queue), not served
            assert not answer and server.connections == 2
            await idle[0].aclose()
            await wait_until(lambda: answer, every=0.01)
            assert answer[0].startswith(b"HTTP/1.1 200")
            await idle[1].aclose()
            nursery.cancel_scope.cancel()


async def test_out_of_file_descriptors_accepting_backs_off_and_says_so_once_without_a_traceback(
    face: HttpFace, caplog: pytest.LogCaptureFixture
) -> None:
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        port = sock.getsockname()[1]
        face = HttpFace(face.serving, face.access, Allowlist(host_names("127.0.0.1"), port), config=face.config)
        server = HttpServer(face, sock, max_connections=1000)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
            await wait_until(lambda: server.connections >= 20, every=0.01)
            late = [socket.socket() for _ in range(5)]  # their descriptors (this process's too) first
            clients += late
            fillers = []  # every free descriptor below the highest taken, so that none is left
            highest = max(int(n) for n in os.listdir("/proc/self/fd"))
            while (fd := os.dup(0)) < highest:
                fillers.append(fd)
            os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd, hard))  # none left for accept()
            try:
                for client in late:
                    client.setblocking(False)
                    client.connect_ex(("127.0.0.1", port))
                await wait_until(lambda: any("cannot accept HTTP clients" in r.message for r in caplog.records),
                                 every=0.01)
                await trio.sleep(0.3)  # several more failed accepts, backing off
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
                for fd in fillers:
                    os.close(fd)
            for client in clients[:10]:
                client.close()
            answer = await trio.to_thread.run_sync(_get, port, "/health")  # served again
            assert answer.startswith(b"HTTP/1.1 200")
            for client in clients[10:]:
                client.close()
            nursery.cancel_scope.cancel()
    warnings = [r for r in caplog.records if "cannot accept HTTP clients" in r.message]
    assert len(warnings) == 1 and warnings[0].exc_info is None  # one a minute, no traceback
    assert "irisd is out of file descriptors" in warnings[0].message and "LimitNOFILE=" in warnings[0].message


def _sockets() -> list[int]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                found.append(int(name))
        except FileNotFoundError:
            pass  # the listing's own descriptor
    return found


def _get(port: int, path: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := client.recv(65536):
            data += chunk
        return data
