"""How much memory irisd and its claude processes use, read from /proc (Linux)."""

from __future__ import annotations

import os
from collections.abc import Iterable

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes(pid: int) -> int:
    """Resident memory of one process; 0 where it is gone or /proc is missing."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:  # a kernel file: never blocks
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def total_rss(pids: Iterable[int]) -> int:
    return sum(rss_bytes(pid) for pid in pids)
