"""irisd's HTTP face from outside: raw HTTP with hostile headers, the JSON API against
the real claude, and the events WebSocket. One daemon serves the tests that leave it as
they found it; the ones that rotate the token or trip the rate limit get their own."""

from __future__ import annotations

import json
import shutil
import socket
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from trio_websocket import open_websocket_url

from harness import Http, Iris, started
from irisd.http import api
from irisd.http.api import MAX_ASK_BODY_BYTES
from irisd.http.app import MAX_BODY_BYTES
from irisd.http.security import MAX_AUTH_FAILURES
from protocol.messages import GetStatus, StatusReply, TranscriptEntry
from protocol.transcript import steps
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    with started(tmp_path_factory.mktemp("http"), model_url=model.base_url, claude=claude_bin,
                 teams={"alpha": {}, "beta": {}}) as iris:
        yield iris


def error_code(answer: Any) -> str:
    assert answer["type"] == "error" and answer["message"], answer
    return str(answer["code"])


def daemon_fine(iris: Iris) -> None:
    assert iris.process is not None and iris.process.poll() is None
    assert isinstance(iris.request(GetStatus()), StatusReply)
    assert Http(iris).json("GET", "/health", auth=False) == (200, {"status": "ok"})


def test_the_face_is_loaded_by_its_first_client_not_at_start(tmp_path: Path, model: ScriptedModel,
                                                               claude_bin: Path) -> None:
    """The port is bound at start (a taken one stops irisd at once, children know the URL),
    the face (hypercorn, starlette: about a quarter of irisd's start-up CPU) is loaded by
    the first client, which it then serves (irisd/http/door.py)."""
    iris = Iris(tmp_path, model_url=model.base_url, claude=claude_bin)
    iris.add_team("alpha")
    iris.start()
    try:
        assert isinstance(iris.request(GetStatus()), StatusReply)
        assert "HTTP face loaded" not in iris.log()
        assert Http(iris).json("GET", "/health", auth=False) == (200, {"status": "ok"})
        assert "HTTP face loaded" in iris.log()
    finally:
        iris.stop(timeout=30)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)


# --- the gate --------------------------------------------------------------------------


def test_health_needs_no_token_and_says_nothing_else(shared: Iris) -> None:
    status, headers, body = Http(shared).request("GET", "/health", auth=False)
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    assert "access-control-allow-origin" not in headers


def test_a_foreign_host_is_refused_everywhere_dns_rebinding(shared: Iris) -> None:
    http = Http(shared)
    for host in ("evil.example", f"evil.example:{http.port}", f"127.0.0.1:{http.port + 1}", "", "127.0.0.1"):
        for path in ("/health", "/api/status", "/mcp"):
            status, answer = http.json("GET", path, headers={"Host": host})
            assert status == 403 and error_code(answer) == "permission_denied", (host, path, answer)
    assert http.json("GET", "/api/status", headers={"Host": f"localhost:{http.port}"})[0] == 200
    daemon_fine(shared)


def test_a_foreign_origin_is_refused_and_no_cors_header_is_ever_sent(shared: Iris) -> None:
    http = Http(shared)
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{http.port + 1}", "https://127.0.0.1"):
        body = {"message": "hi"}
        status, headers, data = http.request("POST", "/api/teams/alpha/tell", body, headers={"Origin": origin})
        assert status == 403 and error_code(json.loads(data)) == "permission_denied", origin
        assert "access-control-allow-origin" not in headers
    own = http.request("GET", "/api/teams", headers={"Origin": f"http://127.0.0.1:{http.port}"})
    assert own[0] == 200 and "access-control-allow-origin" not in own[1]
    # A CORS preflight gets no blessing either.
    preflight = http.request("OPTIONS", "/api/teams", headers={"Origin": "http://evil.example"}, auth=False)
    assert preflight[0] == 403 and "access-control-allow-origin" not in preflight[1]


def test_mcp_and_the_pages_files_pass_the_same_gate(shared: Iris) -> None:
    http = Http(shared)
    for path in ("/mcp", "/static/app.js", "/api/events"):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            assert http.request("POST" if path == "/mcp" else "GET", path, headers=headers, auth=False)[0] == 401
        foreign = http.request("GET", path, headers={"Origin": "http://evil.example"})
        assert foreign[0] == 403 and "access-control-allow-origin" not in foreign[1], path


def test_missing_and_wrong_tokens_are_refused_with_json(shared: Iris) -> None:
    http = Http(shared)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {http.token}"},
                    {"Cookie": "iris_session=forged"}):
        status, response_headers, body = http.request("GET", "/api/status", headers=headers, auth=False)
        assert status == 401 and error_code(json.loads(body)) == "unauthorized", headers
        assert response_headers["www-authenticate"].startswith("Bearer")
    assert http.json("GET", "/", auth=False)[0] == 401
    assert http.json("GET", "/api/openapi.json", auth=False)[0] == 401


def test_an_oversized_body_gets_413_and_bad_bodies_400(shared: Iris) -> None:
    http = Http(shared)
    huge = b'{"message": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'
    status, answer = http.json("POST", "/api/teams/alpha/tell", huge)  # type: ignore[arg-type]
    assert status == 413 and error_code(answer) == "too_large"
    assert error_code(http.json("POST", "/api/teams/alpha/tell", b"{not json")[1]) == "invalid_request"  # type: ignore[arg-type]
    status, answer = http.json("POST", "/api/teams/alpha/tell", {"message": "hi", "surprise": 1})
    assert status == 400 and "surprise" in answer["message"]
    status, answer = http.json("GET", "/api/tells?limit=lots")
    assert status == 400 and "limit" in answer["message"]
    daemon_fine(shared)


def test_errors_carry_the_socket_protocols_codes_and_messages(shared: Iris) -> None:
    http = Http(shared)
    status, answer = http.json("POST", "/api/teams/gamma/tell", {"message": "hi"})
    assert status == 404 and error_code(answer) == "unknown_team"
    assert "known teams: alpha, beta" in answer["message"]
    status, answer = http.json("GET", "/api/tells/nope")
    assert status == 404 and error_code(answer) == "not_found"
    status, answer = http.json("POST", "/api/teams/alpha/tell", {"message": "  "})
    assert status == 400 and answer["message"] == "the message is empty; say what the team should do"
    status, answer = http.json("POST", "/api/teams/alpha/tell", {"message": "hi", "max_budget_usd": -2})
    assert status == 400 and "positive number of dollars" in answer["message"]
    status, headers, _ = http.request("DELETE", "/api/teams")
    assert status == 405 and headers["allow"] == "GET"
    assert http.json("GET", "/api/nothing")[0] == 404


# --- the API ---------------------------------------------------------------------------


def test_the_owners_api_tell_returns_the_answer_and_the_api_shows_it(shared: Iris) -> None:
    http = Http(shared)
    status, answer = http.json("POST", "/api/teams/alpha/tell", {"message": "over http", "from_team": "beta"})
    assert status == 200, answer
    assert answer["type"] == "tell_reply" and answer["status"] == "completed"
    tell = answer["tell"]
    assert tell["text"] == "echo #1: over http" and tell["from_team"] == "beta"

    status, got = http.json("GET", f"/api/tells/{tell['id']}")
    assert status == 200 and got["tell"]["text"] == "echo #1: over http"
    listed = http.json("GET", "/api/tells?team=alpha&from_team=beta&status=completed&limit=5")[1]
    assert listed["type"] == "report_reply" and listed["tells"][0]["id"] == tell["id"]
    transcript = http.json("GET", f"/api/tells/{tell['id']}/transcript")[1]
    assert transcript["type"] == "transcript_reply" and any(e["type"] == "result" for e in transcript["entries"])
    # The dashboard's reading of the same lines: the steps, as iris cache read and the MCP tool read them.
    stepped = http.json("GET", f"/api/tells/{tell['id']}/transcript?steps=true")[1]
    lines = msgspec.convert(transcript["entries"], list[TranscriptEntry])
    assert stepped["entries"] == [] and stepped["steps"] == msgspec.to_builtins(steps(lines))
    assert stepped["steps"][-1]["kind"] == "end" and stepped["steps"][-1]["answer"] == "echo #1: over http"
    pair = http.json("GET", "/api/teams/alpha/status?from_team=beta")[1]
    assert pair["type"] == "pair_reply" and pair["process"]["state"] == "idle"
    sessions = http.json("GET", "/api/sessions?team=alpha")[1]
    assert any(s["from_team"] == "beta" for s in sessions["sessions"])
    assert http.json("POST", f"/api/tells/{tell['id']}/cancel")[1]["tell"]["status"] == "completed"

    slept = http.json("POST", "/api/teams/alpha/sleep", {"from_team": "beta"})[1]
    assert slept["process"]["state"] == "stopped"
    status, answer = http.json("POST", "/api/teams/alpha/session/reset", {"from_team": "beta"})
    assert status == 200 and answer["session"]["session_id"] != tell["session_id"]
    woken = http.json("POST", "/api/teams/alpha/wake", {"from_team": "beta"})[1]
    assert woken["process"]["state"] == "idle"
    assert http.json("POST", "/api/teams/alpha/sleep", {"from_team": "beta"})[0] == 200


def test_a_slash_command_over_http_runs_in_the_pairs_queue_of_its_thread(shared: Iris) -> None:
    http = Http(shared)
    told = http.json("POST", "/api/teams/beta/tell", {"message": "in a thread", "thread": "ops"})[1]
    assert told["tell"]["thread"] == "ops"
    status, ran = http.json("POST", "/api/teams/beta/command", {"command": "compact", "thread": "ops"})
    assert status == 200 and ran["type"] == "tell_reply" and ran["status"] == "completed", ran
    assert (ran["tell"]["kind"], ran["tell"]["message"], ran["tell"]["thread"]) == ("command", "/compact", "ops")
    sessions = http.json("GET", "/api/sessions?team=beta")[1]["sessions"]
    assert [s["compactions"] for s in sessions if s.get("thread") == "ops"] == [1]
    status, refused = http.json("POST", "/api/teams/beta/command", {"command": "rm -rf"})
    assert status == 400 and error_code(refused) == "invalid_request"
    assert "is not a slash command name" in refused["message"]


def test_status_teams_approvals_notifications_and_persisted_tells(shared: Iris) -> None:
    http = Http(shared)
    status = http.json("GET", "/api/status")[1]
    assert status["type"] == "status_reply" and status["http_url"] == http.url
    assert [t["name"] for t in http.json("GET", "/api/teams")[1]["teams"]] == ["alpha", "beta"]
    assert http.json("GET", "/api/approvals?team=alpha&all=true")[1] == {"type": "approvals_reply", "approvals": []}
    status_code, answer = http.json("POST", "/api/approvals/nope/approve", {"remember": True})
    assert status_code == 404 and error_code(answer) == "not_found"
    notified = http.json("POST", "/api/teams/beta/tell", {"message": "later", "persist": True, "ttl_days": 1})[1]
    assert notified["type"] == "notification_reply"
    listed = http.json("GET", "/api/notifications?team=beta&all=1")[1]
    assert notified["notification"]["id"] in [n["id"] for n in listed["notifications"]]


def test_rules_questions_and_costs_are_served_too(shared: Iris) -> None:
    http = Http(shared)
    assert http.json("GET", "/api/approvals/rules?team=alpha")[1] == {"type": "rules_reply", "rules": []}
    status_code, answer = http.json("POST", "/api/approvals/rules/nope/forget")
    assert status_code == 404 and error_code(answer) == "not_found"
    assert http.json("GET", "/api/questions?all=true")[1]["type"] == "questions_reply"
    status_code, answer = http.json("POST", "/api/questions/q-nope/answer", {"text": "yes"})
    assert status_code == 404 and error_code(answer) == "not_found"
    costs = http.json("GET", "/api/costs?by=pair")[1]
    assert costs["type"] == "costs_reply" and costs["by"] == "pair"
    status_code, answer = http.json("GET", "/api/costs?by=weekday")
    assert status_code == 400 and error_code(answer) == "invalid_request"


def test_ask_needs_the_owners_token_a_small_body_and_valid_json(shared: Iris) -> None:
    http = Http(shared)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        status, _, body = http.request("POST", "/api/ask", {"question": "hi"}, headers=headers, auth=False)
        assert status == 401 and error_code(json.loads(body)) == "unauthorized"
    # Its own cap, far under the tells' (a question is at most 20,000 characters).
    big = b'{"question": "' + b"x" * MAX_ASK_BODY_BYTES + b'"}'
    assert len(big) < MAX_BODY_BYTES
    status, answer = http.json("POST", "/api/ask", big)  # type: ignore[arg-type]
    assert status == 413 and error_code(answer) == "too_large" and str(MAX_ASK_BODY_BYTES) in answer["message"]
    status, answer = http.json("POST", "/api/ask", b"{not json")  # type: ignore[arg-type]
    assert status == 400 and error_code(answer) == "invalid_request" and "not JSON" in answer["message"]
    status, answer = http.json("POST", "/api/ask")
    assert status == 400 and "question" in answer["message"]
    status, answer = http.json("POST", "/api/teams/alpha/tell")  # no body: no required field either
    assert status == 400 and "message" in answer["message"]
    status, answer = http.json("POST", "/api/ask", {"question": "hi", "model": "opus"})
    assert status == 400 and "model" in answer["message"]
    status, answer = http.json("POST", "/api/ask", {"question": "hi", "new_session": "yes"})
    assert status == 400 and "new_session" in answer["message"]
    status, answer = http.json("POST", "/api/ask", {"question": "   "})
    assert status == 400 and answer["message"] == "the question is empty; ask iris-agent something"
    status, answer = http.json("POST", "/api/ask", {"question": "x" * 20_001})
    assert status == 400 and "over 20000 characters" in answer["message"]
    assert http.request("GET", "/api/ask")[0] == 405
    assert not (shared.home / "iris-agent").exists()  # nothing above reached iris-agent
    daemon_fine(shared)


def test_openapi_describes_every_route_from_the_structs(shared: Iris) -> None:
    spec = Http(shared).json("GET", "/api/openapi.json")[1]
    assert spec["openapi"].startswith("3.")
    assert "post" in spec["paths"]["/api/teams/{team}/tell"]
    body = spec["paths"]["/api/teams/{team}/tell"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/TellBody"}
    assert spec["components"]["schemas"]["TellReply"]["properties"]["type"] == {"enum": ["tell_reply"]}
    ask = spec["paths"]["/api/ask"]["post"]
    assert ask["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AskBody"}
    assert ask["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AskReply"}
    assert "process_state" in json.dumps(spec["components"]["schemas"]["Event"]) or "ProcessEvent" in json.dumps(
        spec["components"]["schemas"]["Event"]
    )


def test_iris_status_shows_the_url_and_dashboard_print_logs_in(shared: Iris) -> None:
    http = Http(shared)
    shown = shared.cli("status")
    assert shown.returncode == 0 and http.url in shown.stdout
    printed = shared.cli("dashboard", "--print")
    assert printed.returncode == 0, printed.stderr
    login = urllib.parse.urlsplit(printed.stdout.strip())
    assert login.path == "/login" and urllib.parse.parse_qs(login.query) == {"token": [http.token]}

    status, headers, _ = http.request("GET", f"/login?{login.query}", auth=False)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and http.token not in cookie
    session = cookie.split(";")[0]
    assert http.request("GET", "/", headers={"Cookie": session}, auth=False)[0] == 200
    assert http.json("GET", "/api/teams", headers={"Cookie": session}, auth=False)[0] == 200
    assert http.json("GET", "/login?token=wrong", auth=False)[0] == 401


# --- the events WebSocket ------------------------------------------------------------------


async def test_a_websocket_client_sees_a_tells_text_stream_in(shared: Iris) -> None:
    http = Http(shared)
    url = http.url.replace("http://", "ws://") + "/api/events?team=beta"
    events: list[dict[str, Any]] = []
    answer: list[Any] = []

    def tell() -> None:
        message = {"message": "@chunks:6 @slow:200 one two three", "from_team": "alpha"}  # a pair of its own
        answer.append(http.json("POST", "/api/teams/beta/tell", message))

    with trio.fail_after(120):
        headers = [(b"Authorization", f"Bearer {http.token}".encode())]
        async with open_websocket_url(url, extra_headers=headers) as ws, trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, tell)
            while True:
                event = json.loads(await ws.get_message())
                events.append(event)
                mine = event.get("from_team") == "alpha"
                if event["type"] == "tell_state" and event["status"] == "completed" and mine:
                    break
    assert answer[0][0] == 200
    tell_id = answer[0][1]["tell"]["id"]
    texts = [e["text"] for e in events if e["type"] == "tell_text" and e["tell_id"] == tell_id]
    # It streams in: over 1.2 s, in batches (at most one every 0.25 s), not at the end only.
    assert len(texts) >= 2 and "".join(texts) == "echo #1: one two three", events
    assert any(e["type"] == "process_state" and e["process"]["to_team"] == "beta" for e in events)
    states = [e["status"] for e in events if e["type"] == "tell_state" and e["tell_id"] == tell_id]
    assert states[0] in ("queued", "running") and states[-1] == "completed"


def test_websocket_upgrades_pass_the_same_gate(shared: Iris) -> None:
    http = Http(shared)
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }
    cases: list[tuple[str, dict[str, str], bool, int]] = [
        ("/api/events", {"Origin": "http://evil.example"}, True, 403),
        ("/api/events", {"Host": "evil.example"}, True, 403),
        ("/api/events", {}, False, 401),
        ("/api/events", {"Authorization": "Bearer wrong"}, False, 401),
        ("/api/events?team=nobody", {}, True, 404),
        ("/api/elsewhere", {}, True, 404),
    ]
    for path, headers, auth, expected in cases:
        status, _, body = http.request("GET", path, headers={**upgrade, **headers}, auth=auth)
        assert status == expected, (path, headers, body)
        assert json.loads(body)["type"] == "error"
    status, response_headers, _ = http.request("GET", "/api/events", headers=upgrade)
    assert status == 101 and response_headers["upgrade"].lower() == "websocket"
    daemon_fine(shared)


# --- tests that change the daemon's state: their own daemon ---------------------------------


def test_every_api_route_is_behind_the_gate(iris: Iris) -> None:
    """No token, a wrong token, a foreign Origin: every route of the table is refused
    before it runs (its own daemon: the refusals count towards the 429 limit)."""
    iris.add_team("alpha")
    iris.start()
    http = Http(iris)
    for route in api.ROUTES:
        path = route.path.replace("{team}", "alpha").replace("{id}", "x")
        body = {"message": "hi", "text": "yes", "question": "who?"} if route.method == "POST" else None
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            status, answer = http.json(route.method, path, body, headers=headers, auth=False)
            assert (status, error_code(answer)) in ((401, "unauthorized"), (429, "rate_limited")), (path, headers)
        status, response_headers, _ = http.request(route.method, path, body, headers={"Origin": "http://evil.example"})
        assert status == 403 and "access-control-allow-origin" not in response_headers, path
    # Refused before any of them ran: nothing was told, woken or asked.
    assert http.json("GET", "/api/tells")[1]["tells"] == []
    assert http.json("GET", "/api/status")[1]["processes"] == []


def test_repeated_bad_tokens_are_rate_limited_but_the_owner_still_gets_in(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    http = Http(iris)
    codes = [http.json("GET", "/api/status", headers={"Authorization": f"Bearer guess{i}"}, auth=False)[0]
             for i in range(MAX_AUTH_FAILURES + 5)]
    assert codes[:MAX_AUTH_FAILURES] == [401] * MAX_AUTH_FAILURES
    assert set(codes[MAX_AUTH_FAILURES:]) == {429}
    status, headers, _ = http.request("GET", "/api/status", headers={"Authorization": "Bearer again"}, auth=False)
    assert status == 429 and "retry-after" in headers
    assert http.json("GET", "/api/status")[0] == 200  # a valid token is never locked out
    daemon_fine(iris)


def test_rotating_the_token_invalidates_the_old_one_and_every_cookie(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    http = Http(iris)
    old = http.token
    printed = iris.cli("http", "token")
    assert printed.returncode == 0 and printed.stdout.strip() == old
    cookie = http.request("GET", f"/login?token={old}", auth=False)[1]["set-cookie"].split(";")[0]
    rotated = iris.cli("http", "token", "--rotate")
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert new != old and iris.owner_token == new
    assert (iris.home / "http-token").stat().st_mode & 0o777 == 0o600
    assert http.json("GET", "/api/status")[0] == 401  # http still holds the old token
    assert http.json("GET", "/api/status", headers={"Cookie": cookie}, auth=False)[0] == 401
    assert http.json("GET", "/api/status", headers={"Authorization": f"Bearer {new}"}, auth=False)[0] == 200


def test_a_taken_port_is_a_clear_startup_error(iris: Iris) -> None:
    iris.add_team("alpha")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        iris.settings["httpPort"] = port
        iris.start(wait=False)
        assert iris.process is not None
        assert iris.process.wait(timeout=30) == 2
    iris.process = None
    log = iris.log()
    assert f"settings.httpPort {port} is already in use" in log
    assert "Traceback" not in log
