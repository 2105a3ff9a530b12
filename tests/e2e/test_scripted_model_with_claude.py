"""The real claude CLI against the scripted model: the directives do what the docs say."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.stream_claude import JSON, TURN_TIMEOUT_S, Claude
from harness import wait_for
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


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
