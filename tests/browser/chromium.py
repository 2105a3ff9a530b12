"""Driving Debian's chromium with Playwright's sync API (no ``playwright install``).

The sync API runs its asyncio loop in the caller's thread (on greenlets): while a browser is
open, ``asyncio.get_running_loop()`` finds that loop there. The tests that use it are plain
(non-trio) functions, and the browser lives no longer than its module."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def open_browser() -> Iterator[Browser]:
    # A home of its own: chromium writes its crash-report database and dconf settings
    # under the user's ~/.config and ~/.cache, which no test may touch.
    with tempfile.TemporaryDirectory(prefix="iris-chromium-") as home, sync_playwright() as playwright:
        env: dict[str, str | float | bool] = {
            **os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache",
        }
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=env)
        try:
            yield browser
        finally:
            browser.close()


class PageProblems:
    """Console errors and uncaught exceptions of a page (a CSP violation is one)."""

    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.seen.append(f"uncaught: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(message.text)

    def unexpected(self, *allowed: str) -> list[str]:
        return [p for p in self.seen if not any(a in p for a in allowed)]
