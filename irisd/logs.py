"""Structured logs: one JSON object per line on stderr."""

from __future__ import annotations

import collections
import logging
import sys
import time
from typing import Any

import msgspec

from protocol.messages import LogEntry

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}
_encoder = msgspec.json.Encoder()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _encoder.encode(entry).decode(errors="replace")


class RecentProblems(logging.Handler):
    """The newest warnings and errors, kept in memory for the dashboard's health view.

    A problem that stands until something settles it (a refused reload, until one works) is
    logged with ``extra={"stands": KEY}``; ``settled(KEY)`` takes its entries out, so what
    is shown is what is still true (the log file keeps them all)."""

    def __init__(self, keep: int = 50) -> None:
        super().__init__(logging.WARNING)
        self._entries: collections.deque[tuple[str, LogEntry]] = collections.deque(maxlen=keep)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the entry
            message = str(record.msg)
        entry = LogEntry(at=record.created, level=record.levelname.lower(), logger=record.name, message=message[:2000])
        self._entries.append((str(getattr(record, "stands", "")), entry))

    def settled(self, key: str) -> None:
        """The problem logged with ``stands=key`` is over: its entries go."""
        kept = [(stands, entry) for stands, entry in self._entries if stands != key]
        self._entries.clear()
        self._entries.extend(kept)

    def entries(self) -> list[LogEntry]:
        """Newest first."""
        return [entry for _, entry in reversed(self._entries)]


recent_problems = RecentProblems()


def setup_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler, recent_problems]
    root.setLevel(level.upper())
