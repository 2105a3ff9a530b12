"""Browser tests: the dashboard in Debian's chromium, driven by Playwright (no browser
download). One chromium per test module; keep each scenario lean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from browser.chromium import open_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless chromium for the module's tests. Not one per session: Playwright's sync
    API keeps its asyncio loop running in this thread (greenlets) while it is open, so a
    session-wide browser left a running loop under every later test of the worker, and their
    ``asyncio.run`` failed ("cannot be called from a running event loop")."""
    with open_browser() as instance:
        yield instance
