"""A real child process that never reads its input, on trio's virtual clock."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from irisd.claude.process import STDIN_TIMEOUT_S, ChildEvent, ChildExited, ClaudeProcess
from protocol.errors import ClaudeError


async def test_a_child_that_reads_no_input_is_stopped_after_the_stdin_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    autojump_clock.autojump_threshold = 0.05  # real time: the pipe fills, then all waits
    send, receive = trio.open_memory_channel[ChildEvent](100)
    child = ClaudeProcess(["sleep", "600"], cwd="/", env={"PATH": "/usr/bin:/bin"}, events=send, grace=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(child.run)
        started = trio.current_time()
        with pytest.raises(ClaudeError, match="read none of its input for 30 s; stopped it"):
            await child.send(b"x" * (4 * 1024 * 1024))  # far more than a pipe holds
        assert trio.current_time() - started == pytest.approx(STDIN_TIMEOUT_S, abs=0.5)
    send.close()
    exits = [event async for event in receive if isinstance(event, ChildExited)]
    assert len(exits) == 1 and child.exited.is_set()  # stopped and reaped
