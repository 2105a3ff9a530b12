"""The dashboard page alone, in chromium, against a stand-in for irisd's API.

Playwright answers the page's requests from the shipped static files and from canned
replies, and plays the /api/events WebSocket, so these tests pin down what the page
does with hostile text, a transcript, and events, in about a second, without claude.
(The tests with the real irisd and claude are in tests/browser/test_dashboard.py.)"""

from __future__ import annotations

import datetime
import json
import mimetypes
import os
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
import pytest
from playwright.sync_api import Browser, Page, Route, WebSocketRoute, expect

from browser.chromium import PageProblems
from irisd.dashboard import STATIC_DIR
from irisd.http.gate import SECURITY_HEADERS
from protocol.messages import (
    ActionRow,
    AgentStatsReply,
    AgentVerdict,
    AnswerReply,
    ApprovalEvent,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    AskReply,
    ClassifiedRow,
    CostRow,
    CostsReply,
    NotificationInfo,
    NotificationsReply,
    PairDay,
    PairStats,
    ProcessEvent,
    ProcessInfo,
    QuestionEvent,
    QuestionInfo,
    QuestionReply,
    QuestionsReply,
    ReloadReply,
    ReportReply,
    SessionEvent,
    SessionInfo,
    SessionReply,
    SessionsReply,
    SessionStatsReply,
    StatusReply,
    TeamInfo,
    TellInfo,
    TellPhase,
    TellPhaseEvent,
    TellState,
    TellText,
    TranscriptEntry,
    TranscriptReply,
)
from protocol.transcript import steps

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


def pump_until(page: Page, done: Callable[[], bool], what: str) -> None:
    """Wait until ``done()``, for what a handler of the test does. Sync Playwright runs a
    route's handler only while the test is inside a Playwright call, so the page can show a
    request's effect before its handler has run: each round trip here lets it run."""
    deadline = time.monotonic() + 10
    while not done():
        assert time.monotonic() < deadline, f"waited 10 s for {what}"
        page.evaluate("0")


class FakeIris:
    """Answers the page's requests: static files, canned API replies, a scripted socket."""

    def __init__(self, page: Page) -> None:
        self.page = page
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
            kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"  # as StaticFiles does
            route.fulfill(status=200, body=file.read_bytes(), headers={**SECURITY_HEADERS, "Content-Type": kind})
            return
        if request.method == "POST":
            self.posts.append((path, request.post_data_json))
        reply = self.replies.get(f"{request.method} {path}")
        if isinstance(reply, TranscriptReply) and parse_qs(urlsplit(request.url).query).get("steps") == ["true"]:
            reply = TranscriptReply(tell=reply.tell, entries=[], steps=steps(reply.entries, reply.tell))  # as irisd
        if reply is None:
            body, status = {"type": "error", "code": "not_found", "message": f"no {path} here"}, 404
            route.fulfill(status=status, json=body)
            return
        route.fulfill(status=200, body=msgspec.json.encode(reply), headers={"Content-Type": "application/json"})

    def push(self, event: msgspec.Struct) -> None:
        """Send ``event`` on the page's event socket (once the page has opened it)."""
        pump_until(self.page, lambda: bool(self.sockets), "the page to open its event socket")
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
        "GET /api/questions": QuestionsReply(questions=[]),
        "GET /api/notifications": NotificationsReply(notifications=[]),
        "GET /api/sessions": SessionsReply(sessions=[]),
        "GET /api/sessions/stats": SessionStatsReply(pairs=[], days=[]),
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


def test_an_mcp_servers_input_request_is_a_form_built_from_its_schema(page: Page, fake: FakeIris) -> None:
    """One of a team's MCP servers asks for input: the Inbox shows its form (a text, a choice,
    a number, a yes/no field); Answer posts the typed values, Decline declines."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Database"},
            "engine": {"type": "string", "enum": ["postgres", "sqlite"]},
            "size": {"type": "integer"},
            "backup": {"type": "boolean"},
        },
        "required": ["name"],
    }
    asked = ApprovalInfo(
        id="a2", from_team=None, to_team="backend", tell_id="t3", tool_name="asker", input={}, status="pending",
        created_at=NOW, expires_at=NOW + 600, kind="input", message="Which database? <b>", schema=schema,
    )
    fake.replies["GET /api/approvals"] = ApprovalsReply(approvals=[asked])
    page.goto(f"{BASE}/#/approvals")
    expect(page.locator("#approvals-count")).to_have_text("1")
    card = page.locator('[data-approval="a2"]')
    expect(card.locator("h3")).to_have_text("asker asks for your input")
    expect(card.locator("[data-input-message]")).to_have_text("Which database? <b>")
    card.get_by_label("Database *").fill("main")
    card.get_by_label("engine").select_option("sqlite")
    card.get_by_label("size").fill("3")
    card.get_by_label("backup").check()
    fake.replies["POST /api/approvals/a2/approve"] = ApprovalReply(approval=asked)
    card.locator('[data-action="answer"]').click()
    expect(page.locator("#flash")).to_have_text("answered")
    content = {"name": "main", "engine": "sqlite", "size": 3, "backup": True}
    assert fake.posts[-1] == ("/api/approvals/a2/approve", {"content": content})
    fake.replies["POST /api/approvals/a2/deny"] = ApprovalReply(approval=asked)
    card.locator('[data-action="decline"]').click()
    expect(page.locator("#flash")).to_have_text("declined")
    assert fake.posts[-1] == ("/api/approvals/a2/deny", {})


def test_a_chains_budget_question_says_what_continuing_allows(page: Page, fake: FakeIris) -> None:
    """settings.budget.askToExceed: the card says in words how much more the chain may spend
    and where it goes next (no JSON, no "Approve & remember": it is decided once)."""
    asked = ApprovalInfo(
        id="a3", from_team="frontend", to_team="backend", tell_id="t3", tool_name="chainUsd",
        input={"chain_id": "c1", "more_usd": 0.5, "next_team": "db"}, status="pending", created_at=NOW,
        expires_at=NOW + 600, kind="budget", message="The chain spent $1.00 of its $1.00 budget: continue?",
    )
    fake.replies["GET /api/approvals"] = ApprovalsReply(approvals=[asked])
    page.goto(f"{BASE}/#/approvals")
    card = page.locator('[data-approval="a3"]')
    expect(card.locator("h3")).to_have_text("A chain reached its budget")
    expect(card.locator("[data-budget-message]")).to_have_text("The chain spent $1.00 of its $1.00 budget: continue?")
    expect(card.locator("[data-budget-allows]")).to_have_text(
        "Continue lets the chain spend up to $0.50 more (its next tell goes to db); Stop refuses its next tell."
    )
    expect(card.locator('[data-action="remember"]')).to_have_count(0)
    expect(card).not_to_contain_text("chain_id")
    fake.replies["POST /api/approvals/a3/approve"] = ApprovalReply(approval=asked)
    card.locator('[data-action="approve"]').click()
    expect(page.locator("#flash")).to_have_text("the chain goes on")
    assert fake.posts[-1] == ("/api/approvals/a3/approve", {})


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


JSON = {"Content-Type": "application/json"}


def question(**fields: Any) -> QuestionInfo:
    values: dict[str, Any] = dict(
        id="q1", from_team=None, to_team="backend", session_id="s-1234567890", tell_id="t1",
        question=f"Shall I deploy {HOSTILE}?", context=f"I fixed it. Shall I deploy {HOSTILE}?", confidence=0.95,
        status="pending", created_at=NOW - 30, expires_at=NOW + 86400,
    )
    values.update(fields)
    return QuestionInfo(**values)


def test_each_pair_shows_its_cost_so_far(page: Page, fake: FakeIris) -> None:
    process = ProcessInfo(from_team=None, to_team="backend", state="idle", pid=777, session_id="s-1", cost_usd=0.0421)
    fake.replies["GET /api/status"] = status(processes=[process])
    page.goto(f"{BASE}/#/teams")
    cost = page.locator('[data-pair="you → backend"] [data-cost-usd]')
    expect(cost).to_have_text("$0.04")
    expect(cost).to_have_attribute("data-cost-usd", "0.0421")
    expect(page.locator('[data-team="backend"] footer')).to_contain_text("$0.04 spent by these pairs")
    # A process event carries the pair's cost so far: the page shows it at once.
    fake.push(ProcessEvent(process=msgspec.structs.replace(process, state="processing", cost_usd=0.0537)))
    expect(page.locator('[data-pair="you → backend"] .pill')).to_have_text("processing")
    expect(cost).to_have_text("$0.05")
    expect(cost).to_have_attribute("data-cost-usd", "0.0537")


def test_each_pair_shows_how_full_its_conversation_is_and_its_archive(page: Page, fake: FakeIris) -> None:
    session = SessionInfo(from_team=None, to_team="backend", session_id="s-1234567890", created_at=NOW - 100,
                          last_used_at=NOW - 10, status="compact_pending", context_tokens=150_000,
                          context_window=200_000, compactions=2)
    fake.replies["GET /api/sessions"] = SessionsReply(sessions=[session])
    page.goto(f"{BASE}/#/teams")
    line = page.locator('[data-pair="you → backend"] [data-session-status]')
    expect(line).to_have_text("compacting next · context 75% · 2 compactions")
    expect(line).to_have_attribute("title", "150000 of 200000 tokens")
    # Archived by the sweep: the event makes the page read the sessions again.
    archived = msgspec.structs.replace(session, status="archived", archived_at=NOW)
    fake.replies["GET /api/sessions"] = SessionsReply(sessions=[archived])
    fake.push(SessionEvent(session=archived, change="archived", detail="unused for 90 days"))
    expect(line).to_have_text("archived · context 75% · 2 compactions")


def test_the_inbox_shows_questions_beside_approvals_and_answers_them(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    fake.replies["GET /api/questions"] = QuestionsReply(questions=[question()])
    page.goto(f"{BASE}/#/teams")
    expect(page).to_have_title("(1) Iris")
    expect(page.locator("#approvals-badge")).to_have_text("1 waiting for you: 1 question")
    approval = ApprovalInfo(
        id="a1", from_team=None, to_team="backend", tell_id="t3", tool_name="Bash",
        input={"command": "make"}, status="pending", created_at=NOW, expires_at=NOW + 600,
    )
    fake.push(ApprovalEvent(approval=approval))
    expect(page).to_have_title("(2) Iris")
    expect(page.locator("#approvals-badge")).to_have_text("2 waiting for you: 1 approval, 1 question")
    page.locator("#approvals-badge").click()
    expect(page.locator("[data-inbox-label]")).to_have_text("1 approval, 1 question waiting")
    card = page.locator('[data-question="q1"]')
    expect(card).to_contain_text("backend asks you")
    expect(card.locator(".question-text")).to_have_text(f"Shall I deploy {HOSTILE}?")
    never_ran(page)

    # Live: another one appears without a reload.
    fake.push(QuestionEvent(question=question(id="q2", question="Which branch?", created_at=NOW)))
    expect(page.locator('[data-question="q2"]')).to_contain_text("Which branch?")
    expect(page).to_have_title("(3) Iris")

    answered = question(status="answered", answer="yes", answer_tell_id="t9", closed_at=NOW, closed_by="owner")
    answer_tell = tell(id="t9", message="yes", status="running", text="", finished_at=None, cost_usd=None)
    reply = AnswerReply(question=answered, status="in_progress", tell=answer_tell)
    fake.replies["POST /api/questions/q1/answer"] = reply
    card.get_by_label("Answer").fill("yes")
    card.locator('[data-action="answer"]').click()
    expect(page.locator("#flash")).to_have_text("answered: backend goes on in the same conversation")
    assert fake.posts[-1] == ("/api/questions/q1/answer", {"text": "yes", "timeout_ms": -1})
    expect(page.locator('[data-question="q1"]')).to_have_count(0)
    expect(page.locator('[data-closed-question="q1"] [data-answer-tell="t9"]')).to_have_attribute("href", "#/tells/t9")

    fake.replies["POST /api/questions/q2/dismiss"] = QuestionReply(question=question(id="q2", status="dismissed"))
    page.locator('[data-question="q2"] [data-action="dismiss"]').click()
    expect(page.locator('[data-question="q2"]')).to_have_count(0)
    expect(page).to_have_title("(1) Iris")  # the approval still waits
    assert problems.unexpected("404") == []


class HeldRoutes:
    """Requests to one route, held until the test answers them."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.routes: list[Route] = []
        page.route(url, self._hold)

    def _hold(self, route: Route) -> None:
        self.routes.append(route)

    def taken(self, count: int) -> Route:
        pump_until(self.page, lambda: len(self.routes) >= count, f"request {count} to reach the route")
        assert len(self.routes) == count, f"{len(self.routes)} requests, {count} expected"
        return self.routes[count - 1]


def test_ask_iris_shows_it_thinking_then_the_answer_as_text_and_errors(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    held = HeldRoutes(page, f"{BASE}/api/ask")  # answered below, when the test says so
    page.goto(f"{BASE}/#/ask")
    box = page.get_by_label("Question for Iris")
    box.fill("which teams are busy?")
    page.locator("main button[type=submit]").click()
    view = page.locator("[data-ask]")
    expect(view).to_have_attribute("data-ask", "thinking")
    expect(view.locator(".thinking-now")).to_have_text("thinking…")
    expect(view.locator(".question")).to_contain_text("which teams are busy?")
    first = held.taken(1)
    assert first.request.post_data_json == {"question": "which teams are busy?", "new_session": False}
    reply = AskReply(text=f"backend is idle. {HOSTILE}", session_id="s-a", tools=["team_status", "team_status"])
    first.fulfill(status=200, body=msgspec.json.encode(reply), headers=JSON)
    expect(view).to_have_attribute("data-ask", "idle")
    answer = view.locator("[data-ask-answer]")
    expect(answer.locator(".text")).to_have_text(f"backend is idle. {HOSTILE}")
    expect(answer.locator("[data-ask-tools]")).to_have_text("looked at: team_status")
    never_ran(page)

    box.fill("and now?")
    box.press("Control+Enter")
    expect(view).to_have_attribute("data-ask", "thinking")
    error = {"type": "error", "code": "claude_failed", "message": "iris-agent ended without an answer: exit code 1"}
    held.taken(2).fulfill(status=502, json=error)
    expect(view.locator("[data-ask-answer].failed")).to_contain_text("iris-agent ended without an answer")
    view.get_by_role("button", name="New conversation").click()
    expect(view.locator("[data-ask-answer]")).to_have_count(0)
    box.fill("hello")
    page.locator("main button[type=submit]").click()
    expect(view).to_have_attribute("data-ask", "thinking")
    third = held.taken(3)
    assert third.request.post_data_json == {"question": "hello", "new_session": True}
    third.fulfill(status=200, body=msgspec.json.encode(AskReply(text="hi")), headers=JSON)
    expect(view.locator("[data-ask-answer] .text")).to_have_text("hi")
    assert problems.unexpected("404", "502") == []


def test_the_costs_view_sums_the_ledger_by_what_you_choose(page: Page, fake: FakeIris) -> None:
    backend = CostRow(key="backend", tells=3, cost_usd=0.0421, input_tokens=12345, output_tokens=678, num_turns=4,
                      duration_ms=5300)
    fake.replies["GET /api/costs"] = CostsReply(by="team", since=0, rows=[backend], total=backend)
    page.goto(f"{BASE}/#/costs")
    row = page.locator('[data-cost-key="backend"] td')
    expect(row).to_have_text(["backend", "3", "$0.04", "12,345", "678", "0", "0", "4", "5.3 s"])
    expect(page.locator('[data-cost-key="total"] td').first).to_have_text("total")
    pair = msgspec.structs.replace(backend, key="external->backend")
    fake.replies["GET /api/costs"] = CostsReply(by="pair", since=0, rows=[pair], total=pair)
    with page.expect_request(lambda r: "/api/costs?" in r.url and "by=pair" in r.url):
        page.select_option("#costs-by", "pair")
    expect(page.locator('[data-cost-key="external->backend"] td').nth(2)).to_have_text("$0.04")
    expect(page.locator("table.costs th").first).to_have_text("pair")
    with page.expect_request(lambda r: "/api/costs?" in r.url) as asked:
        page.select_option("#costs-since", "today")
    since = float(parse_qs(urlsplit(asked.value.url).query)["since"][0])
    assert NOW - 86400 < since <= NOW


VIEWS = ["teams", "tells", "tells/t1", "approvals", "notifications", "costs", "sessions", "ask", "health"]


@pytest.mark.parametrize("size", [(390, 844), (1280, 800)], ids=["phone", "desktop"])
def test_every_view_fits_the_window_and_shows_where_you_are(page: Page, fake: FakeIris, size: tuple[int, int]) -> None:
    width, height = size
    row = CostRow(key="external->backend-with-a-long-name", tells=3, cost_usd=0.0421, input_tokens=12345678,
                  output_tokens=678901, cache_read_tokens=1234567, num_turns=40, duration_ms=5300)
    fake.replies["GET /api/costs"] = CostsReply(by="pair", since=0, rows=[row], total=row)
    fake.replies["GET /api/sessions/stats"] = stats_reply()
    busy = [  # every pair state, with its buttons: Wake, Sleep, Force sleep, Reset
        ProcessInfo(from_team=sender, to_team=team, state=state, pid=70000 + n, queued=n,  # type: ignore[arg-type]
                    session_id=f"s-{n}" * 6,
                    last_used_at=NOW - 90, cost_usd=1.2345,
                    reason="claude exited with 1: a long reason" if n == 3 else "")
        for n, (sender, team, state) in enumerate([
            (None, "backend", "processing"), ("frontend", "backend", "idle"), (None, "frontend", "spawning"),
            ("backend", "frontend", "failed"), ("frontend-with-a-long-name", "backend", "stopped"),
        ])
    ]
    fake.replies["GET /api/status"] = status(processes=busy)
    fake.replies["GET /api/notifications"] = NotificationsReply(notifications=[NotificationInfo(
        id="n-0123456789abcdef0123456789abcdef", from_team="frontend-with-a-long-name", to_team="backend",
        message="deploy " * 40, status="pending", created_at=NOW - 60, expires_at=NOW + 86400 * 30, attempts=3,
        error="the database at /home/someone/.iris/iris.db cannot be written: the disk is full",
    )])
    page.set_viewport_size({"width": width, "height": height})
    for view in VIEWS:
        page.goto(f"{BASE}/#/{view}")
        expect(page.locator("main h1").first).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth")
        if os.environ.get("IRIS_SCREENSHOTS"):  # for a person to look at
            shot = f"{os.environ['IRIS_SCREENSHOTS']}/{width}-{view.replace('/', '-')}.png"
            page.screenshot(path=shot, full_page=True)
        assert wide <= width, f"#/{view} scrolls sideways at {width}x{height}: {wide} px wide"
        here = page.locator(f'nav.side a[data-view="{view.split("/")[0]}"]')
        expect(here).to_have_attribute("aria-current", "page")
        box = here.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, f"#/{view}: nav item hidden"
        # Read in the page as it settles: a view renders again when its data comes (#/tells/t1
        # replaced its heading between two reads from here, and a read in between saw none).
        top = page.evaluate("""() => new Promise(done => {
            const end = performance.now() + 5000;
            const look = () => {
                const box = document.querySelector("main h1")?.getBoundingClientRect();
                if ((box && box.height > 0 && box.top < 260) || performance.now() > end) done(box ? box.top : null);
                else requestAnimationFrame(look);
            };
            look();
        })""")
        assert top is not None and top < 260, f"#/{view}: an empty band above the view (its heading at {top})"
        for button in page.locator("main button").all():
            edge = button.bounding_box()
            assert edge is None or edge["x"] + edge["width"] <= width, f"#/{view}: a button sticks out: {button}"
        for card in page.locator("main .card").all():  # nothing sticks out of a card
            assert card.evaluate("c => c.scrollWidth <= c.clientWidth"), f"#/{view}: something sticks out of a card"


def test_a_pair_waiting_for_an_approval_says_so_where_it_would_say_processing(page: Page, fake: FakeIris) -> None:
    waiting = tell(status="awaiting_approval", text="", finished_at=None, approval_id="a-1")
    fake.replies["GET /api/status"] = status(processes=[
        ProcessInfo(from_team=None, to_team="backend", state="processing", pid=777, current_tell="t1"),
    ])
    fake.replies["GET /api/tells"] = ReportReply(tells=[waiting])
    fake.replies["GET /api/tells/t1/transcript"] = TranscriptReply(tell=waiting, entries=[])
    fake.replies["GET /api/approvals"] = ApprovalsReply(approvals=[ApprovalInfo(
        id="a-1", from_team=None, to_team="backend", tell_id="t1", tool_name="Bash", input={"command": "touch x"},
        status="pending", created_at=NOW, expires_at=NOW + 600,
    )])
    page.goto(f"{BASE}/#/teams")
    expect(page.locator('[data-pair="you → backend"] [data-pair-state]')).to_have_text("waiting for your approval")
    page.goto(f"{BASE}/#/tells/t1")
    expect(page.locator("[data-waiting-approval]")).to_have_text("waiting for your approval")
    expect(page.locator(".typing")).to_have_count(0)


def test_a_tell_shows_one_cost_in_its_header_and_footer(page: Page, fake: FakeIris) -> None:
    # claude's result says the session's running total ($0.0012); the tell cost $0.0007 of it.
    resumed = tell(cost_usd=0.0007, input_tokens=61, output_tokens=4)
    entries = [TranscriptEntry(at=NOW - 55, type="result", raw=line(
        type="result", subtype="success", result="A list of users.", duration_ms=3500, num_turns=1,
        total_cost_usd=0.0012, usage={"input_tokens": 4433, "output_tokens": 9}))]
    fake.replies["GET /api/tells/t1/transcript"] = TranscriptReply(tell=resumed, entries=entries)
    page.goto(f"{BASE}/#/tells/t1")
    footer = page.locator('.conversation[data-tell="t1"] .note.result')
    expect(footer).to_contain_text("$0.0007")
    expect(footer).to_contain_text("61 in / 4 out tokens")
    expect(page.locator("main")).not_to_contain_text("$0.0012")


def test_a_queued_tell_says_what_it_waits_behind_and_it_took_from_submission(page: Page, fake: FakeIris) -> None:
    approval = TellPhase(name="awaiting_approval", tool="Bash", detail="touch x", approval_id="a-1")
    words = "queued behind 1 tell; tell t0 ahead awaits your approval of Bash `touch x`: run 'iris approve a-1'"
    queued = tell(status="queued", text="", started_at=None, finished_at=None, cost_usd=None, created_at=NOW - 460,
                  phase=TellPhase(name="queued", ahead=1, head=approval, head_id="t0", text=words))
    done = tell(id="t4", created_at=NOW - 460, started_at=NOW - 0.2, finished_at=NOW - 0.1)
    fake.replies["GET /api/tells"] = ReportReply(tells=[queued, done])
    fake.replies["GET /api/tells/t1/transcript"] = TranscriptReply(tell=queued, entries=[])
    page.goto(f"{BASE}/#/tells")
    expect(page.locator('[data-tell="t1"] [data-phase="queued"]')).to_have_text(words)
    expect(page.locator('[data-tell="t4"]')).to_contain_text("queued")  # it took 7 min, not 0.1 s
    expect(page.locator("#conn")).to_have_text("live")
    writing = "queued behind 1 tell (the model is writing)"
    fake.push(TellPhaseEvent(tell_id="t1", phase=TellPhase(name="queued", ahead=1, head_id="t0", text=writing)))
    expect(page.locator('[data-tell="t1"] [data-phase="queued"]')).to_have_text(writing)
    page.goto(f"{BASE}/#/tells/t1")
    expect(page.locator("main")).to_contain_text("waits for")


def test_the_health_bar_says_what_it_measures(page: Page, fake: FakeIris) -> None:
    page.goto(f"{BASE}/#/health")
    label = page.locator("#meter-label")
    expect(label).to_have_text("claude processes running: 1 of 10 (maxProcesses)")
    expect(page.get_by_role("meter", name="claude processes running: 1 of 10 (maxProcesses)")).to_be_visible()


def test_health_reloads_the_config_and_shows_a_refused_one(page: Page, fake: FakeIris) -> None:
    fake.replies["GET /api/status"] = status(claude_version="2.1.330", claude_tested="2.1.330",
                                             config_problem="config.yaml: key 'teams.a.path' is missing")
    changes = ["team web added", "settings.maxProcesses changed: in effect now"]
    fake.replies["POST /api/reload"] = ReloadReply(changes=changes)
    page.goto(f"{BASE}/#/health")
    expect(page.locator("[data-config-problem]")).to_contain_text("key 'teams.a.path' is missing")
    expect(page.locator("main")).to_contain_text("2.1.330 (the version Iris is tested with)")
    with page.expect_request(lambda r: r.url.endswith("/api/reload") and r.method == "POST"):
        page.locator('[data-action="reload"]').click()
    expect(page.locator("#flash")).to_have_text("team web added; settings.maxProcesses changed: in effect now")


def test_an_a2a_team_shows_its_agent_and_no_wake(page: Page, fake: FakeIris) -> None:
    agent = TeamInfo(name="researcher", path="", description="far", kind="a2a", remote="https://agents.example/card.json")
    fake.replies["GET /api/status"] = status(teams=[agent], processes=[])
    page.goto(f"{BASE}/#/teams")
    card = page.locator('[data-team="researcher"]')
    expect(card.locator('[data-kind="a2a"]')).to_have_text("A2A agent: https://agents.example/card.json")
    expect(card.get_by_role("button", name="Wake")).to_have_count(0)  # no claude here to wake
    expect(card.get_by_role("link", name="Tell…")).to_have_count(1)


def test_an_event_during_a_click_does_not_eat_the_click(page: Page, fake: FakeIris) -> None:
    # Every event rebuilds the view; rebuilt between press and release, the link pressed
    # would be gone and the click lost (seen under CI on a busy dashboard).
    page.goto(f"{BASE}/#/tells")
    expect(page.locator("#conn")).to_have_text("live")
    link = page.locator('[data-tell="t1"] a')
    box = link.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    approval = ApprovalInfo(
        id="a1", from_team=None, to_team="backend", tell_id="t1", tool_name="Bash",
        input={"command": "ls"}, status="pending", created_at=NOW, expires_at=NOW + 600,
    )
    fake.push(ApprovalEvent(approval=approval))
    expect(page).to_have_title("(1) Iris")  # the event is in, and the page has rendered it
    page.mouse.up()
    expect(page).to_have_url(f"{BASE}/#/tells/t1")
    expect(page.locator('.conversation[data-tell="t1"]')).to_be_visible()


def test_a_press_holds_the_view_for_three_seconds_at_most(page: Page, fake: FakeIris) -> None:
    start = datetime.datetime.now(datetime.UTC)
    page.clock.install(time=start)  # the page's timers on a clock this test moves
    page.goto(f"{BASE}/#/tells")
    expect(page.locator("#conn")).to_have_text("live")
    # An installed clock still runs with the wall clock; stopped, only run_for moves it
    # (a loaded machine takes no time off the 3 s below).
    page.clock.pause_at(start + datetime.timedelta(seconds=30))
    link = page.locator('[data-tell="t1"] a')
    box = link.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    pressed = link.element_handle()  # after the press: the page may render its first data before
    approval = ApprovalInfo(
        id="a1", from_team=None, to_team="backend", tell_id="t1", tool_name="Bash",
        input={"command": "ls"}, status="pending", created_at=NOW, expires_at=NOW + 600,
    )
    fake.push(ApprovalEvent(approval=approval))
    expect(page).to_have_title("(1) Iris")  # the event is in; the view waits for the release
    page.clock.run_for(2900)
    assert pressed.evaluate("e => e.isConnected")  # held while pressed
    page.clock.run_for(200)  # a release the page never saw: it renders anyway
    page.wait_for_function("e => !e.isConnected", arg=pressed)


# Lines a text takes on the page: a name that wraps inside a word takes two.
LINES_OF = """el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
}"""
# A control cut off by a box that hides what overflows it (a card, a scrolled table).
CLIPPED = """el => {
  const box = el.getBoundingClientRect();
  if (el.scrollWidth > el.clientWidth + 1) return "its text overflows it";
  for (let up = el.parentElement; up; up = up.parentElement) {
    const style = getComputedStyle(up);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const edge = up.getBoundingClientRect();
    if (box.left < edge.left - 1 || box.right > edge.right + 1) return `cut by ${up.className || up.tagName}`;
  }
  return "";
}"""


def test_teams_cards_at_1280x800_keep_names_and_ids_whole_and_every_control_visible(
    page: Page, fake: FakeIris
) -> None:
    teams = [TeamInfo(name=name, path=f"/src/{name}", description="d") for name in
             ["backend", "docs", "frontend", "webagent"]]
    teams[3] = TeamInfo(name="webagent", path="", description="far", kind="a2a",
                        remote="http://127.0.0.1:1615/a2a/frontend/.well-known/agent-card.json")
    session = "0f4c1e5a-8f5b-4d3c-9a8e-2b7c6d5e4f3a"
    pairs = [
        ProcessInfo(from_team=sender, to_team=team, state=state, pid=pid, queued=2,  # type: ignore[arg-type]
                    session_id=session, last_used_at=NOW - 90, cost_usd=0.0123, kind=kind,
                    host="http://127.0.0.1:1615/a2a/frontend/.well-known/agent-card.json" if kind else "")
        for sender, team, state, pid, kind in [
            (None, "backend", "processing", 70001, ""), ("frontend", "backend", "idle", 70002, ""),
            ("external@ws-b", "backend", "stopped", None, ""), ("backend", "frontend", "failed", None, ""),
            ("docs", "frontend", "processing", 70003, ""), (None, "webagent", "idle", None, "a2a"),
            ("backend", "webagent", "processing", None, "a2a"),
        ]
    ]
    # docs->frontend serves a tell that waits for your approval: its state and message are the widest
    pairs[4] = msgspec.structs.replace(pairs[4], current_tell="t-asks")
    asking = tell(id="t-asks", from_team="docs", to_team="frontend", status="awaiting_approval", text="",
                  message='@tool:Bash {"command": "rm -rf build"}', finished_at=None, cost_usd=None)
    fake.replies["GET /api/tells"] = ReportReply(tells=[asking])
    fake.replies["GET /api/status"] = status(teams=teams, processes=pairs)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{BASE}/#/teams")
    expect(page.locator('[data-team="webagent"]')).to_be_visible()
    expect(page.locator('[data-pair-state="awaiting_approval"]')).to_be_visible()
    if os.environ.get("IRIS_SCREENSHOTS"):
        page.screenshot(path=f"{os.environ['IRIS_SCREENSHOTS']}/1280-teams-cards.png", full_page=True)
    names = page.locator(".card header h3, .pairs .name")
    assert names.count() == 4 + len(pairs)
    for name in names.all():
        assert name.evaluate(LINES_OF) == 1, f"the name {name.inner_text()!r} breaks inside a word"
    for held in page.locator("[data-session]").all():
        assert held.evaluate(LINES_OF) == 1, f"{held.inner_text()!r} is split over lines"
    controls = page.locator("main .card button, main .card a.button")
    assert controls.count() > 0
    for control in controls.all():
        assert control.evaluate(CLIPPED) == "", f"{control.inner_text()!r}: {control.evaluate(CLIPPED)}"
    # Remote pairs are no claude processes: neither counted nor offered Sleep or Reset.
    expect(page.locator(".view-head .muted")).to_have_text("3 of 10 claude processes running")
    for remote in page.locator('[data-pair$="→ webagent"]').all():
        expect(remote.get_by_role("button")).to_have_count(0)
        expect(remote.locator("[data-remote-pair]")).to_have_text("no claude here")
    page.goto(f"{BASE}/#/health")
    expect(page.locator("#meter-label")).to_have_text("claude processes running: 3 of 10 (maxProcesses)")


def test_a_running_tells_duration_counts_up(page: Page, fake: FakeIris) -> None:
    now = float(int(NOW))  # whole seconds: the page's clock counts milliseconds exactly
    page.clock.install(time=now - 1)
    page.clock.pause_at(now)  # time moves only when the test says
    # Submitted 2.25 s ago, running for the last 0.25 s: durations count from submission.
    running = tell(status="running", text="", created_at=now - 2.25, started_at=now - 0.25, finished_at=None,
                   cost_usd=None)
    fake.replies["GET /api/tells"] = ReportReply(tells=[running])
    fake.replies["GET /api/tells/t1/transcript"] = TranscriptReply(tell=running, entries=[])
    page.goto(f"{BASE}/#/tells/t1")
    took = page.locator(".facts dt:text-is('running for') + dd")
    expect(took).to_have_text("2.3 s, 2.0 s queued")
    page.clock.run_for(5000)
    expect(took).to_have_text("7.3 s, 2.0 s queued")  # 7.25 s, ticking every second
    page.clock.run_for(60_000)
    expect(took).to_have_text("1 min 7 s, 2.0 s queued")


def stats_reply() -> SessionStatsReply:
    pairs = [
        PairStats(from_team=None, to_team="backend", tells=4, messages=4, cost_usd=0.08, input_tokens=4000,
                  output_tokens=400, first_used_at=NOW - 3 * 86400, last_used_at=NOW - 60, lifetime_s=3 * 86400 - 60,
                  compactions=1, mean_tell_ms=2500, p95_tell_ms=4100, status="active"),
        PairStats(from_team="backend", to_team="crm", tells=2, cost_usd=0.5, first_used_at=NOW - 86400,
                  last_used_at=NOW - 600, lifetime_s=86400 - 600, mean_tell_ms=900, p95_tell_ms=1000),
        PairStats(from_team="frontend", to_team="backend", tells=1, cost_usd=0.01, first_used_at=NOW - 30,
                  last_used_at=NOW - 30, mean_tell_ms=700, p95_tell_ms=700, status="archived"),
    ]
    days = [
        PairDay(from_team=None, to_team="backend", day="2026-11-20", tells=3, cost_usd=0.06),
        PairDay(from_team="backend", to_team="crm", day="2026-11-22", tells=2, cost_usd=0.5),
        PairDay(from_team=None, to_team="backend", day="2026-11-23", tells=1, cost_usd=0.02),
        PairDay(from_team="frontend", to_team="backend", day="2026-11-23", tells=1, cost_usd=0.01),
    ]
    return SessionStatsReply(pairs=pairs, days=days)


def test_the_sessions_view_draws_the_figures_it_reads(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    fake.replies["GET /api/sessions/stats"] = stats_reply()
    fake.replies["GET /api/status"] = status(teams=[
        TeamInfo(name="backend", path="/src/api"), TeamInfo(name="frontend", path="/src/web"),
        TeamInfo(name="crm", path="", kind="a2a", remote="https://crm.example/a2a"),
    ])
    page.goto(f"{BASE}/#/sessions")
    # The chart: a bar a day from the first to the last, as high as the day's figure.
    tells = page.locator('[data-chart="tells"] rect.bar')
    expect(tells).to_have_count(4)
    days = [tells.nth(i).get_attribute("data-day") for i in range(4)]
    assert days == ["2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"]
    assert [tells.nth(i).get_attribute("data-tells") for i in range(4)] == ["3", "0", "2", "2"]
    heights = [float(tells.nth(i).get_attribute("height") or "nan") for i in range(4)]
    assert heights[1] == 0 and heights[2] == heights[3] == pytest.approx(heights[0] * 2 / 3, abs=0.01)
    cost = page.locator('[data-chart="cost"] rect.bar')
    assert [float(cost.nth(i).get_attribute("data-cost") or "nan") for i in range(4)] == pytest.approx(
        [0.06, 0, 0.5, 0.03])
    # The map: an arrow a pair, as thick as its tells; the A2A agent is marked.
    edges = page.locator("[data-edge]")
    expect(edges).to_have_count(3)
    width = {e.get_attribute("data-edge"): float(e.get_attribute("stroke-width") or "nan") for e in edges.all()}
    assert width["you → backend"] > width["backend → crm"] > width["frontend → backend"]
    assert page.locator('[data-edge="backend → crm"]').get_attribute("data-tells") == "2"
    expect(page.locator('[data-node="crm"]')).to_have_class("node remote")
    expect(page.locator('[data-node="crm"] text')).to_have_text("crm (A2A)")
    expect(page.locator('[data-node="you"]')).to_have_attribute("data-kind", "person")
    # The table, the most active first.
    rows = page.locator("[data-stats-pair]")
    expect(rows).to_have_count(3)
    assert [r.get_attribute("data-stats-pair") for r in rows.all()] == [
        "you → backend", "backend → crm", "frontend → backend"]
    expect(rows.first.locator("td").nth(3)).to_have_text("$0.08")
    expect(rows.first.locator("td").nth(11)).to_have_text("4.1 s")
    assert problems.unexpected("404") == []


def test_an_edge_is_lit_while_a_tell_runs_on_it(page: Page, fake: FakeIris) -> None:
    fake.replies["GET /api/sessions/stats"] = stats_reply()
    page.goto(f"{BASE}/#/sessions")
    expect(page.locator("#conn")).to_have_text("live")
    edge = page.locator('[data-edge="frontend → backend"]')
    expect(edge).to_have_attribute("data-lit", "false")
    fake.push(TellState(tell_id="t9", status="running", from_team="frontend", to_team="backend", message="hi"))
    expect(edge).to_have_attribute("data-lit", "true")
    expect(edge).to_have_class("edge lit")
    expect(page.locator('[data-edge="you → backend"]')).to_have_attribute("data-lit", "false")
    more = stats_reply()
    more.pairs[2] = msgspec.structs.replace(more.pairs[2], tells=2)
    fake.replies["GET /api/sessions/stats"] = more
    with page.expect_request(lambda r: r.url.endswith("/api/sessions/stats")):  # its figures changed
        fake.push(TellState(tell_id="t9", status="completed", from_team="frontend", to_team="backend"))
    expect(edge).to_have_attribute("data-lit", "false")
    expect(edge).to_have_attribute("data-tells", "2")


def test_a_pair_is_archived_and_restored_from_the_sessions_view(page: Page, fake: FakeIris) -> None:
    active = SessionInfo(from_team=None, to_team="backend", session_id="s-1", created_at=NOW - 100,
                         last_used_at=NOW - 10)
    archived = SessionInfo(from_team="frontend", to_team="backend", session_id="s-2", created_at=NOW - 100,
                           last_used_at=NOW - 10, status="archived", archived_at=NOW - 5)
    fake.replies["GET /api/sessions"] = SessionsReply(sessions=[active, archived])
    fake.replies["GET /api/sessions/stats"] = stats_reply()
    fake.replies["POST /api/teams/backend/session/archive"] = SessionReply(session=active)
    fake.replies["POST /api/teams/backend/session/restore"] = SessionReply(session=archived)
    page.goto(f"{BASE}/#/sessions")
    archive = page.locator('[data-archive="you → backend"]')
    archive.click()
    expect(archive).to_have_text("Archive it?")  # a second press archives
    archive.click()
    expect(page.locator("#flash")).to_have_text("you → backend is archived")
    assert fake.posts[-1] == ("/api/teams/backend/session/archive", {})
    expect(page.locator('[data-stats-pair="frontend → backend"] [data-stats-status]')).to_have_text("archived")
    page.locator('[data-restore="frontend → backend"]').click()
    expect(page.locator("#flash")).to_have_text("frontend → backend is restored")
    assert fake.posts[-1] == ("/api/teams/backend/session/restore", {"from_team": "frontend"})
    expect(page.locator('[data-archive="backend → crm"]')).to_have_count(0)  # no conversation: no button
def test_iris_agents_proposals_verdicts_and_analytics(page: Page, fake: FakeIris) -> None:
    problems = PageProblems(page)
    verdict = AgentVerdict(classification="team", confidence=0.8, reason=HOSTILE, suggestion="yes", approval_id="ag-1",
                           said=f'{{"classification": "team"}} {HOSTILE}')
    fake.replies["GET /api/questions"] = QuestionsReply(questions=[question(agent=verdict)])
    proposal = ApprovalInfo(
        id="ag-1", from_team="iris-agent", to_team="backend", tell_id="", tool_name="team_answer",
        input={"type": "answer_question", "question_id": "q1", "text": "yes"}, status="pending", created_at=NOW,
        expires_at=NOW + 600, kind="agent", summary=f"answer question q1 of backend with: {HOSTILE}",
    )
    fake.replies["GET /api/approvals"] = ApprovalsReply(approvals=[proposal])
    fake.replies["GET /api/agent/stats"] = AgentStatsReply(
        since=0, tells_completed=4, questions=1, questions_by_status={"pending": 1}, looked=1,
        classified=[ClassifiedRow(classification="team", count=1, confidence=0.8, pending=1)],
        actions=[ActionRow(tool="team_answer", proposed=1, pending=1), ActionRow(tool="team_wake", automatic=2)],
        asks=3, ask_usd=0.03, watch_usd=0.004,
    )
    page.goto(f"{BASE}/#/approvals")
    card = page.locator('[data-approval="ag-1"]')
    said = f"iris-agent proposes to answer question q1 of backend with: {HOSTILE}"
    expect(card.locator("[data-agent-proposal]")).to_contain_text(said)
    expect(card.locator('[data-action="remember"]')).to_have_count(0)  # an action is decided once
    expect(card.locator('[data-action="approve"]')).to_be_visible()
    shown = page.locator('[data-question="q1"] [data-agent-verdict="team"]')
    expect(shown).to_contain_text("iris-agent: one you can answer (80%)")
    expect(shown).to_contain_text("suggests: yes (approval ag-1 in the inbox)")
    shown.locator("summary").click()
    expect(shown.locator("pre")).to_have_text(f'{{"classification": "team"}} {HOSTILE}')
    never_ran(page)

    page.goto(f"{BASE}/#/ask")
    panel = page.locator("[data-agent-stats=loaded]")
    expect(panel.locator("[data-detection]")).to_have_text("1 questions in 4 completed tells (25%)")
    expect(panel.locator("table").first.locator("tbody tr")).to_have_text("team180%0001")
    expect(panel.locator("table").nth(1).locator("tbody tr").nth(1)).to_have_text("team_wake000002")
    cost = "cost: $0.03 for 3 asks · $0.0040 watching · $0 for its tells"
    expect(panel.locator("[data-agent-cost]")).to_have_text(cost)
    assert problems.unexpected("404") == []
