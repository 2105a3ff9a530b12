"""Browser tests: the dashboard in Debian's chromium, driven by Playwright (no browser
download). One chromium per test process; keep each scenario lean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from browser.chromium import open_browser


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless chromium for every browser test of this process."""
    with open_browser() as instance:
        yield instance
