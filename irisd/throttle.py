"""A log line budget: at most ``burst`` lines per ``window_s``, then one summary.

Pure (time is an argument). Used where a misbehaving peer decides how often we log: a
fuzzer's 20,000 malformed connections must not become 20,000 log lines.
"""

from __future__ import annotations

import msgspec


class LogThrottle(msgspec.Struct):
    burst: int = 10
    window_s: float = 60.0
    _window_start: float = float("-inf")
    _count: int = 0
    _suppressed: int = 0

    def allow(self, now: float) -> tuple[bool, int]:
        """Whether to log one more line now, and how many lines were suppressed since the
        last one logged (to say so in that line)."""
        if now - self._window_start >= self.window_s:
            self._window_start, self._count = now, 0
        if self._count >= self.burst:
            self._suppressed += 1
            return False, 0
        self._count += 1
        suppressed, self._suppressed = self._suppressed, 0
        return True, suppressed
