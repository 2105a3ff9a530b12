"""The dashboard page alone, in chromium, against a stand-in for irisd's API.

Playwright answers the page's requests from the shipped static files and from canned
replies, and plays the /api/events WebSocket, so these tests pin down what the page
does with hostile text, a transcript, and events, in about a second, without claude.
(The tests with the real irisd and claude are in tests/integration/test_dashboard.py.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from playwright.sync_api import Browser, Page, Route, WebSocketRoute, expect

from browser import PageProblems
from irisd.dashboard import SECURITY_HEADERS, STATIC_DIR, content_type
from protocol.messages import (
    ApprovalEvent,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    NotificationsReply,
    ProcessInfo,
    ReportReply,
    StatusReply,
    TeamInfo,
    TellInfo,
    TellState,
    TellText,
    TranscriptEntry,
    TranscriptReply,
)

BASE = "http://iris.test"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
NOW = time.time()


def tell(**fields: Any) -> TellInfo:
    values: dict[str, Any] = dict(
        id="t1", from_team=None, to_team="backend", message="What does GET /users return?",
        status="completed", text="A list of users.", created_at=NOW - 60, started_at=NOW - 59,
        finished_at=NOW - 55, cost_usd=0.0123,
    )
    values.update(fields)
    return TellInfo(**values)


def line(**fields: Any) -> str:
    return json.dumps(fields)


TRANSCRIPT = [
    TranscriptEntry(at=NOW - 58.5, type="system", raw=line(type="system", subtype="init", model="claude-x")),
    TranscriptEntry(at=NOW - 58, type="assistant", raw=line(type="assistant", message={"content": [
        {"type": "text", "text": f"Let me check. {HOSTILE}"},
        {"type": "tool_use", "id": "u1", "name": "Bash", "input": {"command": "grep -n users api.py"}},
    ]})),
    TranscriptEntry(at=NOW - 57, type="user", raw=line(type="user", message={"content": [
        {"type": "tool_result", "tool_use_id": "u1", "content": f"12: def users(): {HOSTILE}"},
    ]})),
    TranscriptEntry(at=NOW - 56.5, type="assistant", raw=line(type="assistant", message={"content": [
        {"type": "tool_use", "id": "u2", "name": "Edit", "input": {
            "file_path": "/src/api.py", "old_string": "a = 1\nb = 2\nc = 3", "new_string": "a = 1\nb = 20\nc = 3"}},
    ]})),
    TranscriptEntry(at=NOW - 56, type="user", raw=line(type="user", message={"content": [
        {"type": "tool_result", "tool_use_id": "u2", "content": "edited", "is_error": True},
    ]})),
    TranscriptEntry(at=NOW - 55.5, type="assistant", raw=line(type="assistant", message={"content": [
        {"type": "text", "text": "A list of users."}]})),
    TranscriptEntry(at=NOW - 55, type="result", raw=line(
        type="result", subtype="success", result="A list of users.", duration_ms=3500, num_turns=3,
        total_cost_usd=0.0123)),
    TranscriptEntry(at=NOW - 55, type="garbage", raw="not json <b>at all</b>"),
]


class FakeIris:
    """Answers the page's requests: static files, canned API replies, a scripted socket."""

    def __init__(self, page: Page) -> None:
        self.replies: dict[str, msgspec.Struct] = {}
        self.posts: list[tuple[str, Any]] = []
        self.sockets: list[WebSocketRoute] = []
        page.route(f"{BASE}/**", self._serve)
        page.route_web_socket("ws://iris.test/api/events", self._socket)

    def _socket(self, socket: WebSocketRoute) -> None:
        self.sockets.append(socket)

    def _serve(self, route: Route) -> None:
        request = route.request
        path = request.url.removeprefix(BASE).split("?")[0]
        if path == "/":
            path = "/static/index.html"
        if path.startswith("/static/"):
            file = STATIC_DIR / path.removeprefix("/static/")
            kind = content_type(file.name)
            route.fulfill(status=200, body=file.read_bytes(), headers={**SECURITY_HEADERS, "Content-Type": kind})
            return
        if request.method == "POST":
            self.posts.append((path, request.post_data_json))
        reply = self.replies.get(f"{request.method} {path}")
        if reply is None:
            body, status = {"type": "error", "code": "not_found", "message": f"no {path} here"}, 404
            route.fulfill(status=status, json=body)
            return
        route.fulfill(status=200, body=msgspec.json.encode(reply), headers={"Content-Type": "application/json"})

    def push(self, event: msgspec.Struct) -> None:
        self.sockets[-1].send(msgspec.json.encode(event).decode())


def status(**fields: Any) -> StatusReply:
    values: dict[str, Any] = dict(
        pid=4242, daemon_version="0.1.0", started_at=NOW - 3600, socket_path="/run/iris.sock",
        config_path="/home/me/.iris/config.yaml", max_processes=10,
        teams=[
            TeamInfo(name="backend", path="/src/api", description=HOSTILE, color="#E91E63"),
            TeamInfo(name="frontend", path="/src/web", description="The web app", color="red; background: url(x)"),
        ],
        processes=[ProcessInfo(from_team=None, to_team="backend", state="idle", pid=777, session_id="s-1234567890")],
    )
    values.update(fields)
    return StatusReply(**values)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def fake(page: Page) -> FakeIris:
    fake = FakeIris(page)
    hostile = tell(id="t2", message=HOSTILE, text=HOSTILE, status="failed", error=HOSTILE)
    fake.replies.update({
        "GET /api/status": status(),
        "GET /api/tells": ReportReply(tells=[tell(), hostile]),
        "GET /api/approvals": ApprovalsReply(approvals=[]),
        "GET /api/notifications": NotificationsReply(notifications=[]),
        "GET /api/tells/t1/transcript": TranscriptReply(tell=tell(), entries=TRANSCRIPT),
        "GET /api/tells/t2/transcript": TranscriptReply(tell=hostile, entries=[]),
    })
    return fake


def never_ran(page: Page) -> None:
    assert page.evaluate("window.pwned") is None
    assert page.locator("main img, main script").count() == 0


def test_text_from_teams_and_models_is_shown_never_run(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    page.goto(f"{BASE}/")
    card = page.locator('[data-team="backend"]')
    expect(card).to_contain_text(HOSTILE)  # the description, as text
    # A color that is not one is ignored; the page itself breaks no rule of its CSP.
    assert page.locator('[data-team="frontend"]').evaluate("e => e.style.getPropertyValue('--team')") == ""
    assert card.evaluate("e => e.style.getPropertyValue('--team')") == "#E91E63"
    page.goto(f"{BASE}/#/tells")
    expect(page.locator('[data-tell="t2"]')).to_contain_text(HOSTILE)
    page.goto(f"{BASE}/#/tells/t2")
    expect(page.locator(".conversation .question")).to_contain_text(HOSTILE)
    expect(page.locator(".conversation .answer")).to_contain_text(HOSTILE)
    never_ran(page)
    assert problems.unexpected("404") == []


def test_a_transcript_reads_as_a_conversation(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    page.goto(f"{BASE}/#/tells/t1")
    conversation = page.locator('.conversation[data-tell="t1"]')
    expect(conversation.locator(".question")).to_have_text("youWhat does GET /users return?")
    bash = conversation.locator('[data-tool="Bash"]')
    expect(bash.locator("pre.cmd")).to_have_text("$ grep -n users api.py")
    expect(bash.locator(".tool-result")).to_contain_text(f"12: def users(): {HOSTILE}")
    edit = conversation.locator('[data-tool="Edit"]')
    expect(edit.locator(".del")).to_have_text("- b = 2\n")
    expect(edit.locator(".add")).to_have_text("+ b = 20\n")
    expect(edit.locator(".tool-result.error")).to_contain_text("failed")
    expect(conversation.locator(".note.result")).to_contain_text("3.5 s · 3 turns · $0.01")
    expect(conversation.locator(".answer").first).to_contain_text(f"Let me check. {HOSTILE}")
    never_ran(page)
    assert problems.unexpected("404") == []


def test_events_stream_text_and_count_approvals(page: Page, fake: FakeIris) -> None:
    running = tell(id="t3", status="running", text="", finished_at=None, cost_usd=None, message="Count to three")
    fake.replies["GET /api/tells/t3/transcript"] = TranscriptReply(tell=running, entries=[])
    page.goto(f"{BASE}/#/tells")
    expect(page.locator("#conn")).to_have_text("live")
    fake.push(TellState(tell_id="t3", status="running", to_team="backend", message="Count to three"))
    page.locator('[data-tell="t3"] a').click()
    answer = page.locator("[data-live-answer]")
    expect(answer).to_have_text("")
    fake.push(TellText(tell_id="t3", text="one, "))
    expect(answer).to_have_text("one, ")
    fake.push(TellText(tell_id="t3", text="two <b>"))
    expect(answer).to_have_text("one, two <b>")
    approval = ApprovalInfo(
        id="a1", from_team=None, to_team="backend", tell_id="t3", tool_name="Bash",
        input={"command": "rm -rf build"}, status="pending", created_at=NOW, expires_at=NOW + 600,
    )
    fake.push(ApprovalEvent(approval=approval))
    expect(page).to_have_title("(1) Iris")
    expect(page.locator("#approvals-count")).to_have_text("1")
    fake.replies["POST /api/approvals/a1/deny"] = ApprovalReply(approval=approval)
    page.goto(f"{BASE}/#/approvals")
    card = page.locator('[data-approval="a1"]')
    expect(card.locator("pre.cmd")).to_have_text("$ rm -rf build")
    card.get_by_label("Reason for denying").fill("not today")
    card.locator('[data-action="deny"]').click()
    expect(page.locator("#flash")).to_have_text("denied")
    assert fake.posts[-1] == ("/api/approvals/a1/deny", {"reason": "not today"})
    decided = msgspec.structs.replace(approval, status="denied", reason="not today", decided_by="dashboard")
    fake.push(ApprovalEvent(approval=decided))
    expect(page).to_have_title("Iris")
    expect(page.locator(".decided")).to_contain_text("denied by dashboard: not today")


def test_a_page_without_login_says_how_to_log_in(page: Page, fake: FakeIris) -> None:
    fake.replies.clear()  # every API route answers 401 below
    page.route(f"{BASE}/api/**", lambda route: route.fulfill(
        status=401, json={"type": "error", "code": "unauthorized", "message": "log in"}))
    page.goto(f"{BASE}/")
    expect(page.locator("main")).to_contain_text("Not logged in")
    expect(page.locator("#banner")).to_contain_text("iris dashboard")
    assert page.locator("[data-team]").count() == 0


def test_narrow_window(page: Page, fake: FakeIris) -> None:
    page.set_viewport_size({"width": 420, "height": 800})
    page.goto(f"{BASE}/#/tells/t1")
    expect(page.locator('[data-tool="Bash"]')).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, f"the page scrolls sideways: {width} px wide"
