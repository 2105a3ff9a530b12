"""irisd itself, with every claude child replaced by an echo in irisd's own process: the
simulated irisd of the scale and memory benchmarks (``bench_scale.py``,
``bench_memory_pairs.py``), where thousands of real claude processes (~190 MiB each)
would not fit on one machine.

It is the real daemon (its socket, HTTP face, store, pool, mesh face); only the child
factory differs. An ``EchoChild`` answers each turn at once: one text delta, then the
result ``echo: MESSAGE``. It has no process (``pid`` None), so it costs irisd what a
pair costs, not what a claude costs.

Run (as ``irisd.main`` is run: the environment names IRIS_HOME and the socket):
    python bench/sim_irisd.py [irisd's options]
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable

import trio

import irisd.daemon
from irisd.claude.launcher import Child, ChildFactory
from irisd.claude.process import ChildEvent, ChildExited, ChildLine
from irisd.claude.wire import decode_line


class EchoChild:
    """A claude stand-in that answers every user message at once, until stopped."""

    def __init__(
        self, argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]
    ) -> None:
        self.events = events
        self.pid: int | None = None
        self.returncode: int | None = None
        self._scope = trio.CancelScope()
        self._turns_in, self._turns = trio.open_memory_channel[str](math.inf)

    async def run(self, *, task_status: trio.TaskStatus[Child] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started(self)
        try:
            with self._scope:
                async for text in self._turns:
                    await self._emit({"type": "stream_event", "event": {
                        "type": "content_block_delta", "delta": {"type": "text_delta", "text": "echo: "}}})
                    await self._emit({"type": "result", "subtype": "success", "is_error": False,
                                      "result": f"echo: {text}", "total_cost_usd": 0.0})
        finally:
            self.returncode = -15
            with trio.CancelScope(shield=True):
                await self.events.send(ChildExited(self, self.returncode, ""))  # type: ignore[arg-type]

    def stop(self) -> None:
        self._scope.cancel()

    async def send(self, data: bytes) -> None:
        message = json.loads(data)
        if message.get("type") != "user":
            return
        content = message.get("message", {}).get("content", "")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        self._turns_in.send_nowait(str(content))

    async def _emit(self, line: dict[str, object]) -> None:
        raw = json.dumps(line).encode()
        await self.events.send(ChildLine(self, decode_line(raw), raw))  # type: ignore[arg-type]


def echo_children(new_marker: Callable[[], str], reaper: object = None) -> ChildFactory:
    return EchoChild


if __name__ == "__main__":
    irisd.daemon.marked_claude_child = echo_children  # type: ignore[attr-defined]
    from irisd.main import main

    sys.exit(main(sys.argv[1:]))
