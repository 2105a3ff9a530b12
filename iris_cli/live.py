"""The status line of ``iris tell`` on a terminal: a spinner, what the tell waits for
(its phase, as irisd computed it) and the time since the command started.

It lives on stderr and is redrawn in place by a small thread (the client blocks on the
socket between events). The answer streams to stdout; while a line of the answer is
open the status line stays hidden, so the two never overwrite each other. Lines that
must stay readable (an approval's commands) are printed once, above it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from iris_cli.table import terminal_width

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.1


def elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class StatusLine:
    def __init__(self, err: TextIO, out: TextIO, *, started: float | None = None) -> None:
        self._err = err
        self._out = out
        self._started = time.monotonic() if started is None else started
        self._text = ""
        self._frame = 0
        self._shown = False
        self._line_open = False  # the answer's current line has not ended yet
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="iris-status", daemon=True)

    def __enter__(self) -> StatusLine:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._erase()

    def set(self, text: str) -> None:
        """What the tell waits for now."""
        with self._lock:
            self._text = text
            self._draw()

    def note(self, text: str) -> None:
        """A line that stays (above the status line)."""
        with self._lock:
            self._erase()
            if self._line_open:
                self._out.write("\n")
                self._out.flush()
                self._line_open = False
            self._err.write(text + "\n")
            self._err.flush()
            self._draw()

    @contextlib.contextmanager
    def above(self) -> Iterator[None]:
        """Print something else (a fan-out's answer) above the status line meanwhile."""
        with self._lock:
            self._erase()
            if self._line_open:
                self._out.write("\n")
                self._line_open = False
            self._out.flush()
            yield
            self._draw()

    def write(self, text: str) -> None:
        """Part of the answer, to stdout."""
        if not text:
            return
        with self._lock:
            self._erase()
            self._out.write(text)
            self._out.flush()
            self._line_open = not text.endswith("\n")
            self._draw()

    @property
    def line_open(self) -> bool:
        return self._line_open

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            with self._lock:
                self._frame += 1
                self._draw()

    def _draw(self) -> None:
        if not self._text or self._line_open:
            return
        line = f"{FRAMES[self._frame % len(FRAMES)]} {self._text} · {elapsed(time.monotonic() - self._started)}"
        width = terminal_width() - 1
        if len(line) > width:
            line = line[: width - 1] + "…"
        self._err.write("\r\x1b[2K" + line)
        self._err.flush()
        self._shown = True

    def _erase(self) -> None:
        if self._shown:
            self._err.write("\r\x1b[2K")
            self._err.flush()
            self._shown = False
