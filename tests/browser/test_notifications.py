"""The dashboard's browser notifications in chromium, with a real irisd, the real claude
and the scripted model: a new approval, while the page is in the background, shows a
notification (the Notification API, permission granted in the context) naming the team,
the tool and the command that decides it, once."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from harness import Iris, wait_for

pytestmark = pytest.mark.claude

WRITE = '@tool:Bash {"command": "echo hi > made.txt"}'
LONG = 60_000  # ms: real claude processes on a loaded machine

# Records what the page shows (the notification itself is the browser's) and lets the
# test put the page in the background (headless chromium's page is always visible).
RECORD = """
window.shownNotifications = [];
window.pretendHidden = false;
const Real = window.Notification;
window.Notification = class extends Real {
  constructor(title, options) {
    super(title, options);
    window.shownNotifications.push({ title, body: options.body, tag: options.tag });
  }
};
Object.defineProperty(document, "hidden", { get: () => window.pretendHidden, configurable: true });
"""


def test_a_new_approval_shows_a_browser_notification_while_the_page_is_in_the_background(
    browser: Browser, iris: Iris
) -> None:
    iris.add_team("backend")
    iris.start()
    context = browser.new_context()
    context.set_default_timeout(LONG)
    context.grant_permissions(["notifications"], origin=iris.http_url)
    context.add_init_script(RECORD)
    page = context.new_page()
    try:
        printed = iris.cli("dashboard", "--print")
        assert printed.returncode == 0, printed.stderr
        page.goto(printed.stdout.strip())
        expect(page.locator("#approvals-count")).to_have_count(1)
        assert page.evaluate("Notification.permission") == "granted"
        page.evaluate("window.pretendHidden = true")
        iris.cli_json("tell", "backend", WRITE, "--timeout", "-1")
        # (page.wait_for_function evaluates a string, which the page's CSP refuses: poll.)
        wait_for(lambda: page.evaluate("window.shownNotifications.length") > 0, 60, "the notification")
        iris.wait_for_approval(30)
        (approval,) = iris.cli_json("approvals")
        assert page.evaluate("window.shownNotifications") == [{
            "title": "backend asks to use Bash",
            "body": f"iris approve {approval['id']} (or deny it in the Inbox)",
            "tag": f"approval:{approval['id']}",
        }]
        expect(page).to_have_title("(1) Iris")
    finally:
        context.close()
