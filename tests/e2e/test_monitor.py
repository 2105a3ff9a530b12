"""``iris monitor`` in a pseudo-terminal against a real irisd, the real claude and the
scripted model: a pair changes state on screen, a tell streams, an approval shows the
commands to decide it; Ctrl-C and irisd stopping both end it cleanly."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from harness import Iris

pytestmark = pytest.mark.claude

ANSI = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>78])")


class Terminal:
    """``iris monitor`` on a pty of 40 x 150, its screen read as plain text."""

    def __init__(self, iris: Iris) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 150, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "iris_cli", "monitor"],
            stdin=slave, stdout=slave, stderr=slave, cwd=iris.root,
            # rich takes COLUMNS / LINES over the pty's size, and pytest may have set them.
            env={**iris.env, "TERM": "xterm-256color", "COLUMNS": "150", "LINES": "40"},
            start_new_session=True,
            # The pty becomes its controlling terminal, so Ctrl-C there is a SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.master = master
        self.raw = b""
        self.seen = 0  # wait_for searches after what an earlier wait matched

    def read(self, timeout: float) -> bool:
        """Read what the monitor wrote within ``timeout``; False once it closed the pty."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every end of the slave side is closed
            return False
        self.raw += data
        return bool(data)

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.compile(pattern).search(self.text, self.seen)
            if found:
                self.seen = found.end()
                return found
            if self.process.poll() is not None:
                self.read(0.1)
                break
            self.read(0.2)
        raise AssertionError(f"{pattern!r} not on screen; it showed:\n{self.text[-4000:]}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.read(0.1)
        code = self.process.wait(timeout=1)
        drained = time.monotonic() + 5
        while self.read(0.5) and time.monotonic() < drained:  # the rest of what it wrote
            pass
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


def test_the_monitor_shows_pairs_change_state_tells_stream_and_approvals_wait(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    screen = Terminal(iris)
    try:
        screen.wait_for(r"iris monitor · irisd pid \d+")
        screen.wait_for(r"no pair used yet")
        assert iris.cli("wake", "alpha").returncode == 0
        screen.wait_for(r"external->alpha\s+idle\s+\d+")

        started = iris.cli_json("tell", "alpha", '@tool:Bash {"command": "echo hi > made.txt"}', "--timeout", "-1")
        screen.wait_for(rf"{started['id']}\s+external->alpha\s+awaiting_approval")
        brief = screen.wait_for(r"(a-[0-9a-f]{8}) external->alpha wants Bash").group(1)  # any unique prefix does
        screen.wait_for(r"\$ echo hi > made.txt")
        screen.wait_for(rf"iris approve {brief} \[--remember\]\s+\|\s+iris deny {brief}")
        assert iris.cli("deny", brief, "--reason", "not today").returncode == 0
        screen.wait_for(rf"{started['id']}\s+external->alpha\s+completed")

        told = iris.cli_json("tell", "alpha", "@chunks:3 streamed to the monitor")
        screen.wait_for(rf"{told['id']} external->alpha completed")
        screen.wait_for(r"echo #2: streamed to the monitor")  # its answer, on the line under it

        assert iris.cli("sleep", "alpha").returncode == 0
        screen.wait_for(r"external->alpha\s+stopped")
        os.write(screen.master, b"\x03")  # Ctrl-C, as typed
        assert screen.wait_exit() == 0
        assert "monitor stopped" in screen.text
        assert "Traceback" not in screen.text
    finally:
        screen.close()


def test_the_monitor_ends_when_irisd_stops(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    screen = Terminal(iris)
    try:
        screen.wait_for(r"iris monitor · irisd pid \d+")
        iris.stop(signal.SIGTERM)
        assert screen.wait_exit() == 0
        assert re.search(r"irisd (is stopping|closed the connection)", screen.text), screen.text[-2000:]
        assert "Traceback" not in screen.text
    finally:
        screen.close()


def test_without_a_terminal_the_monitor_says_what_to_use(iris: Iris) -> None:
    iris.add_team("alpha")
    done = iris.cli("monitor")
    assert done.returncode == 2 and "iris watch --json" in done.stderr
