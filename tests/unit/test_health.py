"""What the dashboard's health view reads: memory from /proc, the newest log problems."""

from __future__ import annotations

import logging
import os

from irisd.health import rss_bytes, total_rss
from irisd.logs import RecentProblems


def test_memory_of_a_live_process_and_of_none() -> None:
    mine = rss_bytes(os.getpid())
    assert 10 * 2**20 < mine < 4 * 2**30
    assert rss_bytes(2**22 + 12345) == 0  # no such pid
    assert total_rss([os.getpid(), os.getpid()]) >= 2 * mine * 0.9


def test_recent_problems_keeps_the_newest_warnings_and_errors_first() -> None:
    handler = RecentProblems(keep=3)
    log = logging.getLogger("test.recent")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.setLevel(logging.DEBUG)
        log.info("fine")
        for n in range(5):
            log.warning("problem %d", n)
        log.error("bad %s %s", "only-one-arg")  # a broken format string is kept, not lost
    finally:
        log.removeHandler(handler)
    entries = handler.entries()
    assert [e.message for e in entries] == ["bad %s %s", "problem 4", "problem 3"]
    assert [e.level for e in entries] == ["error", "warning", "warning"]
    assert entries[0].logger == "test.recent" and entries[0].at > 0
