"""A fake claude child for trio-level tests on the autojump clock: the test decides
every line it prints and when it exits. (Real processes would let the clock jump.)"""

from __future__ import annotations

import json
import math
from typing import Any

import trio

from irisd.claude.process import ChildEvent, ChildExited, ChildLine
from irisd.claude.wire import decode_line


async def child_got_turn(index: int = 0) -> FakeChild:
    """The ``index``-th child started, once it has been written a user turn."""
    from harness import wait_until

    await wait_until(lambda: len(FakeChild.instances) > index and FakeChild.instances[index].sent, every=0.001)
    return FakeChild.instances[index]


class FakeChild:
    instances: list[FakeChild] = []
    next_pid = 1000
    answers_context_usage = True  # as claude does: a get_context_usage control request is answered at once
    answers_flag_settings = True  # and apply_flag_settings (a UserPromptSubmit hook then blocks every prompt)
    settings: dict[str, Any] = {}  # and get_settings: these, with its flag settings, are its effective settings

    def __init__(
        self, argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]
    ) -> None:
        self.argv, self.cwd, self.env, self.events = argv, cwd, env, events
        FakeChild.next_pid += 1
        self.pid: int | None = FakeChild.next_pid
        self.sent: list[dict[str, object]] = []
        self.flag_settings: dict[str, Any] = {}
        self.returncode: int | None = None
        self._scope = trio.CancelScope()
        self._exit = trio.Event()
        self.stopped_at = math.inf
        self.created_at = trio.current_time()
        FakeChild.instances.append(self)

    async def run(self, *, task_status: trio.TaskStatus[FakeChild] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started(self)
        try:
            with self._scope:
                await self._exit.wait()
        finally:
            if self._scope.cancelled_caught or self._scope.cancel_called:
                self.stopped_at = trio.current_time()
                self.returncode = -15
            with trio.CancelScope(shield=True):
                await self.events.send(ChildExited(self, self.returncode, ""))  # type: ignore[arg-type]

    def stop(self) -> None:
        self._scope.cancel()

    async def send(self, data: bytes) -> None:
        message = json.loads(data)
        self.sent.append(message)
        request = message.get("request") or {}
        if message.get("type") == "control_request" and request.get("subtype") == "get_context_usage" \
                and self.answers_context_usage:
            await self.emit({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"], "response": {"categories": []}}})
        if message.get("type") == "control_request" and request.get("subtype") == "apply_flag_settings" \
                and self.answers_flag_settings:
            self.flag_settings = {**self.flag_settings, **request["settings"]}  # shallow, as claude merges
            self.flag_settings = {k: v for k, v in self.flag_settings.items() if v is not None}
            await self.emit({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"]}})
        if message.get("type") == "control_request" and request.get("subtype") == "get_settings":
            await self.emit({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"],
                "response": {"effective": {**self.settings, **self.flag_settings}}}})
        if message.get("type") == "user" and "UserPromptSubmit" in self.flag_settings.get("hooks", {}) \
                and not self.settings.get("disableAllHooks"):
            # as claude with a hook that exits 2: the prompt blocked, no model request, no turn
            await self.emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 0, "result": ""})

    # --- driven by the test ---------------------------------------------------------

    async def emit(self, line: dict[str, object]) -> None:
        raw = json.dumps(line).encode()
        await self.events.send(ChildLine(self, decode_line(raw), raw))  # type: ignore[arg-type]

    async def text(self, text: str) -> None:
        await self.emit(
            {"type": "stream_event", "event": {"type": "content_block_delta",
                                               "delta": {"type": "text_delta", "text": text}}}
        )

    async def result(self, text: str, *, is_error: bool = False, subtype: str = "success") -> None:
        await self.emit({"type": "result", "subtype": subtype, "is_error": is_error, "result": text})

    def exit(self, code: int) -> None:
        self.returncode = code
        self._exit.set()
