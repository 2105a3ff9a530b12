"""Benchmark 18b: which warm-up of a spare claude makes its first turn cheap, and what it leaves.

A spare is started as a new conversation of its team would be, then warmed up before a pair
takes it (``irisd/pool/spares.py``). This runs the bare claude a spare runs (stream-json,
the child's settings and system prompt; no Iris MCP server, so no irisd is needed) against
the scripted model, with each warm-up below, round by round, and measures the CPU its
first turn takes against a later one. Beside the figures, what each warm-up costs the
conversation: the requests to the API it made (any path: a Messages request is a model
request, ``count_tokens`` is not but is one per category), whether it wrote the session's
file, the session id the first turn runs in, and what the model sees of it in that turn's
request (user texts other than the turn's own).

Warm-ups (steps in order; ``ctx`` is what irisd does today):
  none               nothing
  ctx                the get_context_usage control request (detail: summary)
  ctx+clear          and then ``/clear`` as a user turn (a new session, in the same process)
  ctx+cost           and then ``/cost`` (claude answers it locally: a turn, no model request)
  ctx+cost+clear     both
  ctx+turn+clear     a real turn (a paid model request) and ``/clear``: the bound of a warm-up
  ctx+init           the context usage and ``initialize`` (the Agent SDK's first control
                     request: slash commands, agents, models; 30 ms of claude's CPU)
  ctx+controls       the context usage and every other control request claude 2.1.330 answers
                     in stream-json with no model request and no trace in the conversation,
                     that reads rather than changes (10 to 45 ms of CPU each: ``initialize``,
                     ``mcp_status``, ``get_settings``, ``get_status``, ``list_models``,
                     ``get_session_cost``, ``export_conversation``, ``background_tasks``,
                     ``list_permission_rules``)
  ctx-full           the context usage with ``detail: full`` (counted with the API's
                     ``count_tokens``: one request per category, 27 here)
  ctx x3             the context usage three times (the code it runs compiled further)
  ctx+draft          and ``prompt_draft_activity`` (the SDK's "the person is typing"; claude
                     may get the next request ready meanwhile)
  ctx+reads          and seven more control requests that read: ``get_hooks_listing``,
                     ``get_skills_dialog``, ``get_memory_dialog``, ``get_usage``, ``get_plan``,
                     ``file_suggestions``, ``get_binary_version``
  ctx+block          and a prompt a ``UserPromptSubmit`` hook blocks (exit code 2): the hook
                     added to claude's flag settings (``apply_flag_settings``) before, removed
                     after; claude runs the prompt's submission, then no model request, no turn
                     (what irisd does since: ``irisd/pool/spares.py``)
  ctx+block x2       two such prompts

Run: .venv/bin/python bench/bench_spare_warm_ups.py [--rounds N] [WARM-UP ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from _common import describe, header, median, thread_cpu_seconds, wait_quiet

from harness import claude_binary
from iris_common.paths import session_file
from irisd.claude.command import child_system_prompt, claude_argv
from scripted_model import ScriptedModel

Line = dict[str, Any]


class Claude:
    """One claude in stream-json mode, as a spare is started (no MCP server)."""

    def __init__(self, model: ScriptedModel, root: Path, *, env: dict[str, str] | None = None,
                 argv: list[str] | None = None) -> None:
        self.root = root
        folder = root / "team"
        folder.mkdir()
        environment = {name: value for name, value in os.environ.items()
                       if name in ("PATH", "HOME", "LANG", "USER", "SHELL")}
        environment |= {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "bench",
                        "CLAUDE_CONFIG_DIR": str(root / "claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "IS_SANDBOX": "1", **(env or {})}
        self.session_id = str(uuid.uuid4())  # what it was started with
        command = claude_argv(str(claude_binary()), session_id=self.session_id, resume=False,
                              system_prompt=child_system_prompt("alpha"))
        self.process = subprocess.Popen([*command, *(argv or [])], cwd=folder, env=environment,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[Line] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(json.loads(raw))

    def send(self, message: Line) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def until(self, kind: str, timeout: float = 120.0) -> Line:
        """Read lines until one of type ``kind``; return it."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line.get("type") == kind:
                return line

    def turn(self, text: str) -> Line:
        self.send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
        return self.until("result")

    def context_usage(self) -> None:
        self.control("get_context_usage", detail="summary")

    def control(self, subtype: str, **fields: object) -> None:
        """A control request, answered (claude 2.1.330 answers each of those used here)."""
        self.send({"type": "control_request", "request_id": f"warm-up {subtype}",
                   "request": {"subtype": subtype, **fields}})
        answer = self.until("control_response")["response"]
        assert answer.get("subtype") == "success", answer

    def blocked_prompt(self) -> None:
        """A prompt a ``UserPromptSubmit`` hook blocks: the hook added before, removed after."""
        self.control("apply_flag_settings", settings=BLOCKING_HOOK)
        result = self.turn(WARM_UP_PROMPT)
        assert result.get("num_turns") == 0, result
        self.control("apply_flag_settings", settings={"hooks": None})

    def session_written(self) -> bool:
        """Whether claude wrote its session's file (where a turn would be kept)."""
        return session_file(self.root / "claude", str(self.root / "team"), self.session_id).exists()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


WARM_UP_PROMPT = "a spare's warm-up"
BLOCKING_HOOK = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "exit 2"}]}]}}

WARM_UPS: dict[str, list[Callable[[Claude], object]]] = {
    "none": [],
    "ctx": [Claude.context_usage],
    "ctx+clear": [Claude.context_usage, lambda c: c.turn("/clear")],
    "ctx+cost": [Claude.context_usage, lambda c: c.turn("/cost")],
    "ctx+cost+clear": [Claude.context_usage, lambda c: c.turn("/cost"), lambda c: c.turn("/clear")],
    "ctx+turn+clear": [Claude.context_usage, lambda c: c.turn("a warm-up"), lambda c: c.turn("/clear")],
    "ctx+init": [Claude.context_usage, lambda c: c.control("initialize")],
    "ctx+controls": [Claude.context_usage, *(
        partial(Claude.control, subtype=subtype) for subtype in (
            "initialize", "mcp_status", "get_settings", "get_status", "list_models", "get_session_cost",
            "export_conversation", "background_tasks", "list_permission_rules"))],
    "ctx-full": [lambda c: c.control("get_context_usage", detail="full")],
    "ctx x3": [Claude.context_usage] * 3,
    "ctx+draft": [Claude.context_usage, lambda c: c.control("prompt_draft_activity")],
    "ctx+reads": [Claude.context_usage, *(
        partial(Claude.control, subtype=subtype) for subtype in (
            "get_hooks_listing", "get_skills_dialog", "get_memory_dialog", "get_usage", "get_plan",
            "file_suggestions", "get_binary_version"))],
    "ctx+block": [Claude.context_usage, Claude.blocked_prompt],
    "ctx+block x2": [Claude.context_usage, Claude.blocked_prompt, Claude.blocked_prompt],
}
DEFAULT = ["none", "ctx", "ctx+clear", "ctx+cost", "ctx+cost+clear", "ctx+turn+clear", "ctx+init", "ctx+controls"]


@dataclass
class Figures:
    first_cpu: list[float] = field(default_factory=list)
    warm_cpu: list[float] = field(default_factory=list)
    first_wall: list[float] = field(default_factory=list)
    warm_up_requests: set[int] = field(default_factory=set)
    session_written: set[bool] = field(default_factory=set)
    new_session: set[bool] = field(default_factory=set)
    leftovers: set[str] = field(default_factory=set)


def user_texts(request: Line) -> list[str]:
    """The user texts of a Messages request, but claude's own system reminders."""
    texts = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [b["text"] for b in blocks
                  if b.get("type") == "text" and not b["text"].startswith("<system-reminder>")]
    return texts


@contextlib.contextmanager
def started(model: ScriptedModel, *, env: dict[str, str] | None = None,
            argv: list[str] | None = None) -> Iterator[Claude]:
    with tempfile.TemporaryDirectory() as root:
        claude = Claude(model, Path(root), env=env, argv=argv)
        try:
            yield claude
        finally:
            claude.close()


def measure(model: ScriptedModel, name: str, figures: Figures, round_: int) -> None:
    with started(model) as claude:
        asked = len(model.posts)
        for step in WARM_UPS[name]:
            step(claude)
        figures.warm_up_requests.add(len(model.posts) - asked)
        figures.session_written.add(claude.session_written())
        wait_quiet(claude.process.pid)
        text = f"first tell {round_}"
        before, started_at = thread_cpu_seconds(claude.process.pid), time.monotonic()
        result = claude.turn(text)
        figures.first_wall.append(time.monotonic() - started_at)
        figures.first_cpu.append(thread_cpu_seconds(claude.process.pid) - before)
        figures.new_session.add(result.get("session_id") != claude.session_id)
        extra = [t for t in user_texts(model.messages_requests()[-1]) if t != text]
        figures.leftovers.add(" | ".join(t.strip().split("\n")[0][:48] for t in extra) or "none")
        before = thread_cpu_seconds(claude.process.pid)
        claude.turn(f"warm tell {round_}")
        figures.warm_cpu.append(thread_cpu_seconds(claude.process.pid) - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("warm_ups", nargs="*", metavar="WARM-UP",
                        help=f"of {', '.join(WARM_UPS)} (default: all but ctx-full)")
    args = parser.parse_args()
    if unknown := set(args.warm_ups) - set(WARM_UPS):
        parser.error(f"unknown warm-up {', '.join(sorted(unknown))}; known: {', '.join(WARM_UPS)}")
    header("18b. a spare's warm-up: claude's CPU on its first turn, and what the warm-up leaves")
    names: list[str] = args.warm_ups or DEFAULT
    figures = {name: Figures() for name in names}
    with ScriptedModel() as model:
        for round_ in range(args.rounds):
            for name in names if round_ % 2 == 0 else names[::-1]:
                measure(model, name, figures[name], round_)
            print(".", end="", flush=True)
    print()
    print("claude's CPU, first turn / a later turn (median of each):")
    for name in names:
        f = figures[name]
        print(f"  {name:<16} {median(f.first_cpu) / median(f.warm_cpu):5.2f}x   API requests during the "
              f"warm-up {sorted(f.warm_up_requests)}, the session's file written {sorted(f.session_written)}, "
              f"a new session id {sorted(f.new_session)}")
        print(f"  {'':<16} what the model sees of it: {sorted(f.leftovers)}")
    print("absolute:")
    for name in names:
        print(describe(f"{name}: CPU, first turn", figures[name].first_cpu))
        print(describe(f"{name}: CPU, a later turn", figures[name].warm_cpu))
        print(describe(f"{name}: wall, first turn", figures[name].first_wall))


if __name__ == "__main__":
    main()
