"""irisd's side of the reaper's wire, against a stand-in spawner (this test, on the other
end of a socket pair): a spawn whose caller is cancelled before the child started leaves
nothing running; a spawner that goes away fails what waits with a reason."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest
import trio
import trio.testing

from irisd.claude import reaper_process
from irisd.claude.reaper import Reaper, _Run
from protocol.errors import ClaudeError


def sleeper() -> subprocess.Popen[bytes]:
    """What the spawner would have started: a process in a group of its own."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


class StandIn:
    """The spawner's end of the wire, played by the test."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.raw = theirs
        self.socket = trio.socket.from_stdlib_socket(theirs)  # (non-blocking now)
        self.guard = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        self.run = _Run(self.guard, trio.socket.from_stdlib_socket(mine))

    def attach(self, reaper: Reaper) -> None:
        reaper._run = self.run
        reaper._ready.set()

    async def request(self) -> dict[str, object]:
        """One spawn request (its three fds closed at once)."""
        await trio.lowlevel.wait_readable(self.raw)
        head, fds, _, _ = socket.recv_fds(self.raw, reaper_process.HEADER.size, 3)
        for fd in fds:
            socket.close(fd)
        (length,) = reaper_process.HEADER.unpack(head)
        body = b""
        while len(body) < length:
            body += await self.socket.recv(length - len(body))
        request = json.loads(body)
        assert isinstance(request, dict)
        return request

    async def say(self, **message: object) -> None:
        await self.socket.send(json.dumps(message).encode() + b"\n")

    def close(self) -> None:
        self.socket.close()
        self.guard.kill()
        self.guard.wait()
        if self.guard.stdin is not None:
            self.guard.stdin.close()


@pytest.fixture
def stand_in() -> StandIn:
    return StandIn()


async def test_a_spawn_whose_caller_is_cancelled_leaves_nothing_running(stand_in: StandIn) -> None:
    reaper = Reaper("000000000000:test:")
    stand_in.attach(reaper)
    started = sleeper()
    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reaper._read, stand_in.run, nursery)
                caller = trio.CancelScope()
                nursery.start_soon(_spawn_in, reaper, caller)
                request = await stand_in.request()
                caller.cancel()
                await trio.testing.wait_all_tasks_blocked()  # the cancelled spawn has given up
                await stand_in.say(type="spawned", id=request["id"], pid=started.pid)  # then it starts
                assert await trio.to_thread.run_sync(started.wait, abandon_on_cancel=True) == -signal.SIGKILL
                nursery.cancel_scope.cancel()
    finally:
        started.kill()
        started.wait()
        stand_in.close()


async def _spawn_in(reaper: Reaper, scope: trio.CancelScope) -> None:
    with scope:
        await reaper.spawn(["claude"], cwd="/", env={})
        raise AssertionError("the spawn returned though its caller was cancelled")


async def test_a_spawner_that_goes_away_fails_the_spawn_with_a_reason(stand_in: StandIn) -> None:
    reaper = Reaper("000000000000:test:")
    stand_in.attach(reaper)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reaper._read, stand_in.run, nursery)
            failed: list[ClaudeError] = []

            async def spawn() -> None:
                with pytest.raises(ClaudeError, match="the reaper process ended; try again") as info:
                    await reaper.spawn(["claude"], cwd="/", env={})
                failed.append(info.value)

            nursery.start_soon(spawn)
            await stand_in.request()
            stand_in.close()  # the spawner dies before it answers
    assert len(failed) == 1
