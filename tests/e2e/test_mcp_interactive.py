"""The person's interactive Claude Code (``claude`` in a terminal, driven here on a
pseudo-terminal) with Iris as its MCP server: when the tell it started waits for an
approval, claude's TUI shows Iris's form, and keys answer it (→ opens the choices, Enter
picks one, ↓ moves to Accept, Enter sends it). The real claude against the scripted model.

What claude shows is read from a terminal emulator's screen (pyte), not from the bytes it
wrote: its TUI redraws only what changed, so moving the cursor to ``Accept`` writes a ``❯``
and nothing else (a test reading the byte stream failed on CI that way)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyte
import pytest

from e2e.test_mcp_elicitation import TELL_TOOL, WRITE, tell_through_claude
from harness import Iris
from protocol.messages import ApprovalsReply, ListApprovals

pytestmark = pytest.mark.claude

COLUMNS, LINES = 120, 40
WHITE_SPACE = re.compile(r"\s")
RIGHT, DOWN, ENTER = b"\x1b[C", b"\x1b[B", b"\r"
KEY_SETTLE_S = 1.0


class Terminal:
    """A program on a pseudo-terminal (120 x 40): what its screen shows now, keys to it."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path) -> None:
        import fcntl
        import pty
        import struct
        import termios

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                        close_fds=True, start_new_session=True)
        os.close(slave)
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)

    def shows(self) -> str:
        """The screen's text, white space removed (the TUI draws spaces as cursor moves)."""
        return WHITE_SPACE.sub("", "".join(self.screen.display))

    def read(self, wait_s: float = 0.2) -> None:
        """Take what it drew within ``wait_s``."""
        import select

        ready, _, _ = select.select([self.master], [], [], wait_s)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the program ended
                return
            if b"\x1b[6n" in data:  # where is the cursor? (claude asks at start)
                os.write(self.master, b"\x1b[1;1R")
            self.stream.feed(data)

    def expect(self, text: str, timeout: float = 120.0) -> None:
        """Wait until the screen shows ``text`` (white space ignored)."""
        wanted = WHITE_SPACE.sub("", text)
        deadline = time.monotonic() + timeout
        while wanted not in self.shows():
            if time.monotonic() > deadline or self.process.poll() is not None:
                screen = "\n".join(line.rstrip() for line in self.screen.display)
                raise AssertionError(f"the terminal never showed {text!r}; it shows:\n{screen}")
            self.read()

    def read_until(self, condition: Callable[[], bool], what: str, detail: Callable[[], str],
                   timeout: float = 120.0) -> None:
        """Read on (a terminal nobody reads fills up, and claude stops drawing) until ``condition``."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{detail()}")
            self.read()

    def press(self, key: bytes) -> None:
        """Send ``key`` once the TUI had a moment with the frame ``expect`` saw. Measured: keys
        sent the instant a frame appears are lost (the form took the Accept, then never sent
        its answer: claude's own input handler re-binds after drawing, and nothing on the
        screen says when); a second of reading (the terminal is read on meanwhile) is enough."""
        settle = time.monotonic() + KEY_SETTLE_S
        while time.monotonic() < settle:
            self.read(0.1)
        os.write(self.master, key)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        os.close(self.master)


@contextmanager
def interactive_claude(iris: Iris, cwd: Path, prompt: str) -> Iterator[Terminal]:
    """``claude PROMPT`` in ``cwd`` with Iris (``iris mcp``) as its only MCP server, set up as a
    person's would be after its first run (onboarding done, the folder trusted, the API key
    the environment gives accepted: else claude asks about each first)."""
    from e2e.test_mcp_shim import iris_command

    command, *prefix = iris_command()
    import shlex

    # its log kept (claude hides its MCP servers' stderr in interactive mode)
    shim = shlex.join([command, *prefix, "mcp", "--log-level", "debug"]) + f" 2>>{iris.root / 'shim.log'}"
    config = {"mcpServers": {"iris": {"type": "stdio", "command": "/bin/sh", "args": ["-c", "exec " + shim]}}}
    person = iris.root / "person-claude"
    person.mkdir(exist_ok=True)
    (person / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [iris.env.get("ANTHROPIC_API_KEY", "")[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
    }))
    # The prompt first: after --allowedTools claude would read it as one more tool to allow.
    argv = [str(iris.claude), prompt, "--strict-mcp-config", "--mcp-config", json.dumps(config),
            "--allowedTools", TELL_TOOL]
    terminal = Terminal(argv, env={**iris.env, "CLAUDE_CONFIG_DIR": str(person)}, cwd=cwd)
    try:
        yield terminal
    finally:
        terminal.close()


def test_the_interactive_claude_shows_the_form_and_keys_answer_it(iris: Iris) -> None:
    alpha, beta = iris.add_team("alpha"), iris.add_team("beta")
    iris.start()
    with interactive_claude(iris, alpha, tell_through_claude("beta", WRITE)) as terminal:
        terminal.expect('MCP server "iris" requests your input'.replace('"', "“", 1).replace('"', "”", 1))
        terminal.expect("Iris: beta wants to run Bash `echo hi > made.txt` in beta's folder")
        terminal.expect("Decision: ▸ not set")
        terminal.press(RIGHT)  # the choices
        terminal.expect("◯ approve")
        terminal.press(ENTER)  # the first: approve
        terminal.expect("✔ Decision: approve")
        terminal.press(DOWN)  # past the reason, to Accept
        terminal.expect("❯ Accept")
        terminal.press(ENTER)

        def detail() -> str:
            shim_log = iris.root / "shim.log"
            return (f"{iris.request(ListApprovals(include_decided=True))}\n{iris.log()[-3000:]}\n"
                    f"{shim_log.read_text() if shim_log.exists() else ''}")

        made = beta / "made.txt"
        # Its whole line: the shell creates the file, then writes to it.
        terminal.read_until(lambda: made.exists() and made.read_text().endswith("\n"), "the approved tool to run",
                            detail)
    assert made.read_text() == "hi\n"
    reply = iris.request(ListApprovals(include_decided=True))
    assert isinstance(reply, ApprovalsReply)
    assert [(a.status, a.decided_by) for a in reply.approvals] == [("allowed", "alpha (Claude Code)")]
