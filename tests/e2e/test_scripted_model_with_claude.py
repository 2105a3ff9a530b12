"""The real claude CLI against the scripted model: the directives do what the docs say."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import wait_for
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

JSON = dict[str, Any]
DEFAULT_CLAUDE = Path(__file__).parents[2] / ".cache/claude-cli/node_modules/.bin/claude"
TURN_TIMEOUT_S = 60.0


def claude_path() -> Path:
    path = Path(os.environ.get("IRIS_CLAUDE_BIN") or DEFAULT_CLAUDE)
    if not path.exists():
        pytest.fail(f"claude CLI not found at {path}: install it or set IRIS_CLAUDE_BIN")
    return path


class Claude:
    """One long-lived ``claude -p`` stream-json child, isolated under ``root``."""

    def __init__(self, root: Path, base_url: str, *args: str) -> None:
        (root / "config").mkdir(parents=True)
        self.cwd = root / "work"
        self.cwd.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
        env.update(
            CLAUDE_CONFIG_DIR=str(root / "config"),
            ANTHROPIC_API_KEY="test-key",
            ANTHROPIC_BASE_URL=base_url,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # else --dangerously-skip-permissions refuses to run as root
        command = [str(claude_path()), "-p", "--input-format", "stream-json"]
        command += ["--output-format", "stream-json", "--verbose", *args]
        self.process = subprocess.Popen(
            command,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[JSON | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, text: str) -> None:
        message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def turn(self, text: str, timeout: float = TURN_TIMEOUT_S) -> list[JSON]:
        """Send a prompt; every line up to and including its ``result``."""
        self.send(text)
        seen: list[JSON] = []
        deadline = time.monotonic() + timeout
        while not seen or seen[-1]["type"] != "result":
            line = self.next_line(deadline - time.monotonic())
            assert line is not None, f"claude exited with {self.process.wait()} after {seen}"
            seen.append(line)
        return seen

    def next_line(self, timeout: float) -> JSON | None:
        try:
            return self.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            raise AssertionError(f"no line from claude within the time limit ({timeout:.1f} s)") from None

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def scripted() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


@pytest.fixture
def start_claude(tmp_path: Path, scripted: ScriptedModel) -> Iterator[Any]:
    started: list[Claude] = []

    def start(*args: str) -> Claude:
        child = Claude(tmp_path / f"claude{len(started)}", scripted.base_url, *args)
        started.append(child)
        return child

    yield start
    for child in started:
        child.close()


def result_of(lines: list[JSON]) -> JSON:
    assert lines[-1]["type"] == "result"
    return lines[-1]


def test_turns_continue_the_session_also_after_an_error(start_claude: Any) -> None:
    claude = start_claude()
    assert result_of(claude.turn("hello"))["result"] == "echo #1: hello"
    assert result_of(claude.turn("again"))["result"] == "echo #2: again"
    failed = result_of(claude.turn("@error:400 boom"))
    assert failed["is_error"] is True and failed["result"] == "API Error: 400 boom"
    assert result_of(claude.turn("after"))["result"] == "echo #4: after"


def test_partial_messages_carry_exactly_the_chunks(start_claude: Any) -> None:
    claude = start_claude("--include-partial-messages")
    lines = claude.turn("@chunks:3 one two three")
    texts = [
        line["event"]["delta"]["text"]
        for line in lines
        if line["type"] == "stream_event"
        and line["event"]["type"] == "content_block_delta"
        and line["event"]["delta"]["type"] == "text_delta"
    ]
    assert len(texts) == 3
    assert "".join(texts) == result_of(lines)["result"] == "echo #1: one two three"


def test_tool_directive_runs_the_tool_once(start_claude: Any, scripted: ScriptedModel) -> None:
    claude = start_claude("--dangerously-skip-permissions")
    lines = claude.turn('@tool:Bash {"command": "echo hi > made.txt"}')
    assert (claude.cwd / "made.txt").read_text() == "hi\n"
    assert result_of(lines)["result"].startswith("tool Bash said:")
    assert result_of(lines)["num_turns"] == 2  # the call and the answer to its result, no loop
    assert len(scripted.messages_requests()) == 2


def test_hang_keeps_claude_waiting_silently(start_claude: Any, scripted: ScriptedModel) -> None:
    claude = start_claude()
    claude.send("@hang are you there?")
    wait_for(scripted.messages_requests, TURN_TIMEOUT_S, "claude to ask the model", every=0.05)
    waited_until = time.monotonic() + 3.0
    while (left := waited_until - time.monotonic()) > 0:
        try:
            line = claude.lines.get(timeout=left)
        except queue.Empty:
            break
        assert line is not None and line["type"] not in ("result", "assistant"), line
    assert claude.process.poll() is None
    assert len(scripted.messages_requests()) == 1  # no retry, no error: it just waits
    claude.process.kill()
