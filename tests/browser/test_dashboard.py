"""The dashboard in chromium, served by a real irisd, with the real claude and the scripted
model: one daemon and one logged-in page for the tests of this module that run in the
same process (each test starts from a view of its own, so xdist may split them).

Set IRIS_DASHBOARD_SCREENSHOT=docs/dashboard.png to refresh the README's screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from browser.chromium import PageProblems
from harness import REPO, Iris, free_port, wait_for
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
WRITE = '@tool:Bash {"command": "echo hi > made.txt"}'
LONG = 60_000  # ms: real claude processes on a loaded machine


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    instance = Iris(tmp_path_factory.mktemp("dashboard"), model_url=model.base_url, claude=claude_bin)
    instance.settings["httpPort"] = free_port()  # fixed: the page must find irisd again after a restart
    instance.add_team("backend", description=f"The API {HOSTILE}", color="#E91E63")
    instance.add_team("frontend", description="The web app", color="#2196F3")
    instance.start()
    yield instance
    if instance.process is not None:
        instance.stop(timeout=30)
    shutil.rmtree(instance.socket.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def page(browser: Browser, iris: Iris) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(LONG)
    page = context.new_page()
    printed = iris.cli("dashboard", "--print")
    assert printed.returncode == 0, printed.stderr
    page.goto(printed.stdout.strip())  # logged in: the cookie is the context's
    yield page
    context.close()


@pytest.fixture(scope="module")
def problems(page: Page) -> PageProblems:
    return PageProblems(page)


def dashboard(iris: Iris, **env: str) -> subprocess.CompletedProcess[str]:
    """``iris dashboard`` with no display (so: no browser) unless ``env`` names one."""
    saved = dict(iris.env)
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        iris.env.pop(name, None)
    iris.env.update(env)
    try:
        result = iris.cli("dashboard")
    finally:
        iris.env.clear()
        iris.env.update(saved)
    assert result.returncode == 0, result.stderr
    return result


def test_without_the_token_the_page_shows_no_data(browser: Browser, iris: Iris) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        response = page.goto(iris.http_url + "/")
        assert response is not None and response.status == 401
        api = page.goto(iris.http_url + "/api/status")
        assert api is not None and api.status == 401
        assert "backend" not in page.content()
        forged = page.goto(iris.http_url + "/login?token=not-the-token")
        assert forged is not None and forged.status == 401
        assert context.cookies() == []
    finally:
        context.close()


def test_iris_dashboard_opens_the_browser_with_a_single_use_code(
    browser: Browser, iris: Iris, tmp_path: Path
) -> None:
    seen = tmp_path / "browser-argv"
    fake_browser = tmp_path / "browser"
    fake_browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {seen}\n')
    fake_browser.chmod(0o755)
    result = dashboard(iris, BROWSER=str(fake_browser))
    assert result.stdout.strip() == f"opened {iris.http_url} in your browser"
    url = seen.read_text()
    assert url.startswith(f"{iris.http_url}/login?code=") and iris.owner_token not in url
    context = browser.new_context()
    try:
        page = context.new_page()
        first = page.goto(url)
        assert first is not None and first.status == 200 and page.url == iris.http_url + "/"
        again = context.new_page().goto(url)
        assert again is not None and again.status == 401  # the code is spent
    finally:
        context.close()


def test_the_page_lists_the_teams(page: Page, iris: Iris, problems: PageProblems) -> None:
    result = dashboard(iris)  # no display here: it prints the login URL
    assert "no browser here" in result.stderr
    page.goto(result.stdout.strip())
    assert page.url == iris.http_url + "/"
    expect(page.locator("#conn")).to_have_text("live")
    backend = page.locator('[data-team="backend"]')
    expect(backend).to_contain_text(f"The API {HOSTILE}")  # shown as text
    expect(page.locator('[data-team="frontend"]')).to_contain_text("The web app")
    assert page.evaluate("window.pwned") is None


def test_a_tell_from_the_cli_streams_in(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/teams")
    page.evaluate("window.sameDocument = true")  # gone if anything reloads the page
    page.locator("nav.side").get_by_text("Tells").click()
    started = iris.cli_json("tell", "backend", "@slow:300 @long:8", "--timeout", "-1")
    row = page.locator(f'[data-tell="{started["id"]}"] a')
    row.click()
    answer = page.locator("[data-live-answer]")
    # Seen part-way: some words there, the last one not yet.
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-live-answer]');"
        " return a && a.textContent.includes('word2') && !a.textContent.includes('word8'); }",
        timeout=LONG,
    )
    expect(answer).to_contain_text("word1")
    conversation = page.locator(f'.conversation[data-tell="{started["id"]}"]')
    expect(conversation).to_have_attribute("data-status", "completed", timeout=LONG)
    expect(conversation.locator(".answer")).to_contain_text("word1 word2 word3 word4 word5 word6 word7 word8")
    expect(conversation.locator(".note.result")).to_contain_text("done")
    assert page.evaluate("window.sameDocument") is True


def test_a_threads_tell_and_process_show_their_thread(page: Page, iris: Iris) -> None:
    told = iris.cli_json("tell", "backend", "in a thread", "--thread", "dash")
    assert told["status"] == "completed" and told["thread"] == "dash", told
    page.goto(f"{iris.http_url}/#/tells/{told['id']}")
    facts = page.locator(f'.conversation[data-tell="{told["id"]}"] dl.facts')
    expect(facts).to_contain_text("thread")
    expect(facts.locator("dd", has_text="dash")).to_have_count(1)
    page.goto(f"{iris.http_url}/#/teams")
    row = page.locator('[data-team="backend"] [data-pair="you → backend #dash"]')
    expect(row).to_contain_text("you #dash")  # a row of its own, beside the pair's default one
    # The Sessions view: the thread is a row of its own too; the map draws its pair once.
    told = iris.cli_json("tell", "backend", "in the default thread")
    assert told["status"] == "completed", told
    rows = {p.get("thread", ""): p["tells"] for p in iris.cli_json("sessions", "backend", "--stats")["pairs"]
            if p.get("from_team") is None}  # the other tests of this module may have told backend too
    assert rows["dash"] == 1 and rows[""] >= 1
    page.goto(f"{iris.http_url}/#/sessions")
    expect(page.locator('[data-stats-pair="you → backend #dash"] [data-tells]')).to_have_text("1")
    expect(page.locator('[data-stats-pair="you → backend"] [data-tells]')).to_have_text(str(rows[""]))
    expect(page.locator('[data-edge="you → backend"]')).to_have_attribute("data-tells", str(sum(rows.values())))


def test_an_approval_appears_and_approve_runs_the_tool(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/teams")
    started = iris.cli_json("tell", "backend", WRITE, "--timeout", "-1")
    expect(page).to_have_title("(1) Iris", timeout=LONG)
    expect(page.locator("#approvals-count")).to_have_text("1")
    page.locator("#approvals-badge").click()
    card = page.locator(".approval").first
    expect(card.locator("pre.cmd")).to_have_text("$ echo hi > made.txt")
    card.locator('[data-action="approve"]').click()
    folder = Path(iris.teams["backend"]["path"])
    made = folder / "made.txt"
    wait_for(lambda: made.exists() and made.read_text() == "hi\n", what="the approved tool to run")
    expect(page).to_have_title("Iris")
    page.goto(f"{iris.http_url}/#/tells/{started['id']}")
    conversation = page.locator(f'.conversation[data-tell="{started["id"]}"]')
    expect(conversation).to_have_attribute("data-status", "completed", timeout=LONG)
    bash = conversation.locator('[data-tool="Bash"]')
    expect(bash.locator("pre.cmd")).to_have_text("$ echo hi > made.txt")
    expect(bash.locator(".approval-step")).to_contain_text("allowed by owner")
    expect(conversation.locator(".answer").last).to_contain_text("tool Bash said:")


def test_an_approval_can_be_decided_in_the_conversation(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/tells")
    started = iris.cli_json("tell", "backend", WRITE.replace("hi > made", "there > more"), "--timeout", "-1")
    page.locator(f'[data-tell="{started["id"]}"] a').click()
    conversation = page.locator(f'.conversation[data-tell="{started["id"]}"]')
    bash = conversation.locator('[data-tool="Bash"]')
    expect(bash.locator("pre.cmd")).to_have_text("$ echo there > more.txt")
    card = bash.locator(".approval")
    expect(page.locator("#approvals-count")).to_have_text("1")
    expect(page.locator("main .error")).to_have_count(0)
    screenshot(page)
    card.locator('[data-action="approve"]').click()
    expect(conversation).to_have_attribute("data-status", "completed", timeout=LONG)
    expect(bash.locator(".approval-step")).to_contain_text("allowed by owner")
    assert (Path(iris.teams["backend"]["path"]) / "more.txt").read_text() == "there\n"


def screenshot(page: Page) -> None:
    """The README's picture: a conversation waiting for an approval."""
    target = os.environ.get("IRIS_DASHBOARD_SCREENSHOT")
    image = page.screenshot(full_page=False)
    assert image.startswith(b"\x89PNG")
    if target:
        (REPO / target).write_bytes(image)


def test_a_reply_holding_html_is_shown_as_text(page: Page, iris: Iris, problems: PageProblems) -> None:
    page.goto(f"{iris.http_url}/#/tells")
    form = page.locator("form.send")
    form.locator("select[name=to]").select_option("frontend")
    form.get_by_label("Message").fill(HOSTILE)
    form.locator("button[type=submit]").click()
    conversation = page.locator(".conversation")
    expect(conversation).to_have_attribute("data-status", "completed", timeout=LONG)
    expect(conversation.locator(".question")).to_contain_text(HOSTILE)
    expect(conversation.locator(".answer")).to_contain_text(f"echo #1: {HOSTILE}")
    assert page.evaluate("window.pwned") is None
    assert page.locator("main img, main script").count() == 0
    assert problems.unexpected("404") == []


def money(usd: float) -> str:
    """The page's way of showing dollars (dom.js's money)."""
    return f"${usd:.4f}" if usd < 0.01 else f"${usd:.2f}"


def test_each_pair_shows_what_it_cost_as_the_ledger_says(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/teams")
    told = iris.cli_json("tell", "frontend", "count the cost")
    assert told["status"] == "completed" and told["cost_usd"] > 0
    (row,) = [r for r in iris.cli_json("costs", "--by", "pair")["rows"] if r["key"] == "external->frontend"]
    cell = page.locator('[data-team="frontend"] [data-pair="you → frontend"] [data-cost-usd]')
    expect(cell).to_have_text(money(row["cost_usd"]), timeout=LONG)  # refetched when the tell ended
    assert float(cell.get_attribute("data-cost-usd") or "nan") == pytest.approx(row["cost_usd"], rel=1e-12)
    status = iris.cli_json("status")
    (pair,) = [p for p in status["processes"] if p["to_team"] == "frontend" and p.get("from_team") is None]
    assert pair["cost_usd"] == pytest.approx(row["cost_usd"], rel=1e-12)
    page.goto(f"{iris.http_url}/#/costs")
    page.select_option("#costs-by", "pair")
    expect(page.locator('[data-cost-key="external->frontend"] td').nth(2)).to_have_text(money(row["cost_usd"]))


def test_a_question_appears_live_and_the_page_answers_it_in_the_same_pair(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/approvals")
    page.evaluate("window.sameDocument = true")
    iris.cli_json("tell", "frontend", "@ask ship the fix", "--persist")  # nobody waits for its answer
    card = page.locator("[data-question]")
    expect(card.locator(".question-text")).to_contain_text("Do you want me to go ahead?", timeout=LONG)
    expect(page).to_have_title("(1) Iris")
    expect(page.locator("#approvals-badge")).to_have_text("1 waiting for you: 1 question")
    (question,) = iris.cli_json("questions")
    assert card.get_attribute("data-question") == question["id"]
    card.get_by_label("Answer").fill("yes, ship it")
    card.locator('[data-action="answer"]').click()
    link = page.locator(f'[data-closed-question="{question["id"]}"] [data-answer-tell]')
    expect(link).to_be_visible()
    expect(page).to_have_title("Iris")
    expect(card).to_have_count(0)  # the inbox has settled: nothing moves under the click below
    answer_tell = link.get_attribute("data-answer-tell")
    link.click()
    conversation = page.locator(f'.conversation[data-tell="{answer_tell}"]')
    expect(conversation).to_have_attribute("data-status", "completed", timeout=LONG)
    expect(conversation.locator(".answer").last).to_contain_text(": yes, ship it")
    asked, answered = iris.cli_json("result", question["tell_id"]), iris.cli_json("result", str(answer_tell))
    assert answered["message"] == "yes, ship it" and answered["to_team"] == "frontend"
    assert answered.get("from_team") is None and answered["session_id"] == asked["session_id"]
    assert page.evaluate("window.sameDocument") is True


def test_the_ask_box_answers_from_iris_own_data(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/ask")
    page.get_by_label("Question for Iris").fill("@tool:mcp__iris__team_teams {}")
    page.locator("main form button[type=submit]").click()
    view = page.locator("[data-ask]")
    expect(view.locator(".thinking-now")).to_have_text("thinking…")
    expect(view).to_have_attribute("data-ask", "idle", timeout=LONG)
    answer = view.locator("[data-ask-answer]")
    expect(answer.locator(".text")).to_contain_text("tool mcp__iris__team_teams said:")
    expect(answer.locator(".text")).to_contain_text("- backend: The API <script>window.pwned = 1</script>")  # text
    expect(answer.locator("[data-ask-tools]")).to_have_text("looked at: team_teams")
    assert page.evaluate("window.pwned") is None


def test_after_irisd_restarts_the_page_reconnects(page: Page, iris: Iris) -> None:
    page.goto(f"{iris.http_url}/#/tells")
    expect(page.locator("#conn")).to_have_text("live")
    iris.stop()
    expect(page.locator("#conn")).to_have_text("reconnecting…")
    expect(page.locator("#banner")).to_contain_text("irisd is not answering")
    expect(page).to_have_title("Iris (offline)")
    iris.start()
    expect(page.locator("#conn")).to_have_text("live", timeout=LONG)
    expect(page.locator("#banner")).to_be_hidden()
    started = iris.cli_json("tell", "frontend", "after the restart", "--timeout", "-1")
    expect(page.locator(f'[data-tell="{started["id"]}"]')).to_contain_text("after the restart")


def test_the_sessions_view_draws_what_the_stats_say_and_lights_a_running_pair(page: Page, iris: Iris) -> None:
    for message, caller in (("one", None), ("two", None), ("three", "backend")):
        told = iris.cli_json("tell", "frontend", message, *(("--from", caller) if caller else ()))
        assert told["status"] == "completed", told
    page.goto(f"{iris.http_url}/#/teams")
    expect(page.locator("#conn")).to_have_text("live")
    page.locator("nav.side").get_by_text("Sessions").click()
    stats = iris.cli_json("sessions", "--stats")
    tells_per_day: dict[str, int] = {}
    cost_per_day: dict[str, float] = {}
    for day in stats["days"]:
        tells_per_day[day["day"]] = tells_per_day.get(day["day"], 0) + day.get("tells", 0)
        cost_per_day[day["day"]] = cost_per_day.get(day["day"], 0.0) + day.get("cost_usd", 0.0)
    bars = page.locator('[data-chart="tells"] rect.bar')
    expect(bars).to_have_count(len(tells_per_day))
    assert {b.get_attribute("data-day"): int(b.get_attribute("data-tells") or -1) for b in bars.all()} == tells_per_day
    costs = page.locator('[data-chart="cost"] rect.bar').all()
    assert {b.get_attribute("data-day"): float(b.get_attribute("data-cost") or "nan") for b in costs} == pytest.approx(
        cost_per_day)
    # An arrow a pair: the rows of its threads (other tests of this module may have made some) summed.
    wanted: dict[str, int] = {}
    for p in stats["pairs"]:
        label = f"{p.get('from_team') or 'you'} → {p['to_team']}"
        wanted[label] = wanted.get(label, 0) + p.get("tells", 0)
    edges = page.locator("[data-edge]")
    expect(edges).to_have_count(len(wanted))
    assert {e.get_attribute("data-edge"): int(e.get_attribute("data-tells") or -1) for e in edges.all()} == wanted
    # A tell running on a pair lights its arrow until it ends; then the figures are read again.
    edge = page.locator('[data-edge="backend → frontend"]')
    expect(edge).to_have_attribute("data-lit", "false")
    started = iris.cli_json("tell", "frontend", "@slow:400 @chunks:10 four", "--from", "backend", "--timeout", "-1")
    expect(edge).to_have_attribute("data-lit", "true", timeout=LONG)
    expect(edge).to_have_attribute("data-lit", "false", timeout=LONG)
    assert iris.cli_json("result", started["id"])["status"] == "completed"
    expect(edge).to_have_attribute("data-tells", str(wanted["backend → frontend"] + 1), timeout=LONG)
