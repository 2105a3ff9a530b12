"""One long-lived ``claude -p`` in stream-json, driven line by line from a test: its turns,
and its control requests answered (each wait bounded)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

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

    def control(self, line: bytes, request_id: str, timeout: float = TURN_TIMEOUT_S) -> JSON:
        """Write a control request (``line``, as irisd writes it); claude's answer to it, a success."""
        assert self.process.stdin is not None
        self.process.stdin.write(line.decode())
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            answer = self.next_line(deadline - time.monotonic())
            assert answer is not None, f"claude exited with {self.process.wait()} before answering {request_id}"
            if answer["type"] == "control_response" and answer["response"].get("request_id") == request_id:
                response: JSON = answer["response"]
                assert response["subtype"] == "success", response
                return response

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

