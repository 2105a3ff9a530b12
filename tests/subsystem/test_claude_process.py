"""Real child processes: one that never reads its input (on trio's virtual clock), and
how a child is stopped, reaped and reported (on the real clock), started by trio or, as in
irisd, by the run's reaper (``irisd/claude/reaper.py``)."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest
import trio
import trio.testing

from irisd.claude.process import STDIN_TIMEOUT_S, ChildEvent, ChildExited, ChildLine, ClaudeProcess
from irisd.claude.reaper import Reaper
from protocol.errors import ClaudeError


@pytest.fixture(params=["trio", "reaper"])
async def reaper(request: pytest.FixtureRequest, nursery: trio.Nursery) -> Reaper | None:
    """Who starts and reaps the child: trio itself, or a reaper served for the test."""
    if request.param == "trio":
        return None
    served = Reaper("000000000000:test:", grace=0.5)
    await nursery.start(served.serve)
    return served


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


async def started(
    command: str, reaper: Reaper | None, *, grace: float = 0.5
) -> tuple[ClaudeProcess, trio.MemoryReceiveChannel[ChildEvent]]:
    send, receive = trio.open_memory_channel[ChildEvent](100)
    child = ClaudeProcess(
        ["sh", "-c", command], cwd="/", env={"PATH": "/usr/bin:/bin"}, events=send, grace=grace, reaper=reaper
    )
    return child, receive


async def first_line(receive: trio.MemoryReceiveChannel[ChildEvent]) -> bytes:
    event = await receive.receive()
    assert isinstance(event, ChildLine), event
    return event.raw


async def exit_of(receive: trio.MemoryReceiveChannel[ChildEvent]) -> ChildExited:
    async for event in receive:
        if isinstance(event, ChildExited):
            return event
    raise AssertionError("no ChildExited")


async def gone(pid: int) -> bool:
    """The process no longer runs (it may stay a zombie of whoever adopted it a moment)."""
    with trio.move_on_after(5):
        while True:
            try:
                with open(f"/proc/{pid}/stat", "rb") as stat:  # noqa: ASYNC230 - a tiny read of /proc
                    state = stat.read().rsplit(b")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError):
                return True
            if state in (b"Z", b"X"):
                return True
            await trio.sleep(0.05)
    return False


async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_and_reaped(reaper: Reaper | None) -> None:
    child, receive = await started("trap '' TERM; echo ready; while :; do sleep 0.1; done", reaper, grace=0.5)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(child.run)
            assert await first_line(receive) == b"ready"
            stopped_at = trio.current_time()
            child.stop()
            ended = await exit_of(receive)
        assert ended.returncode == -signal.SIGKILL and child.exited.is_set()
        assert trio.current_time() - stopped_at >= 0.5  # SIGTERM first, SIGKILL only after the grace


async def test_stopping_a_child_stops_what_it_started_in_its_group(reaper: Reaper | None) -> None:
    child, receive = await started("sleep 600 >/dev/null 2>&1 & echo $!; wait", reaper)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(child.run)
            background = int(await first_line(receive))
            child.stop()
            ended = await exit_of(receive)
        assert ended.returncode == -signal.SIGTERM
        assert await gone(background)


async def test_a_child_that_exits_by_itself_reports_once_with_its_stderr_and_leaves_nothing_running(
    reaper: Reaper | None,
) -> None:
    child, receive = await started("sleep 600 >/dev/null 2>&1 & echo $!; echo oops >&2; exit 3", reaper)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(child.run)
            background = int(await first_line(receive))
            ended = await exit_of(receive)
        assert (ended.returncode, ended.stderr_tail) == (3, "oops")
        assert ended.describe() == f"claude (pid {child.pid}) exited with code 3: oops"
        assert await gone(background)  # its group is killed once claude is gone
        with pytest.raises(ClaudeError, match="not running"):
            await child.send(b"more\n")
    with trio.move_on_after(0.1):
        assert await receive.receive() is None, "a second event"


async def test_a_child_that_cannot_start_says_why_as_a_plain_claude_error(
    tmp_path: Path, reaper: Reaper | None
) -> None:
    send, _ = trio.open_memory_channel[ChildEvent](10)
    missing = ClaudeProcess([str(tmp_path / "no-claude")], cwd=str(tmp_path), env={}, events=send, reaper=reaper)
    gone_folder = ClaudeProcess(["sh"], cwd=str(tmp_path / "gone"), env={}, events=send, reaper=reaper)
    async with trio.open_nursery() as nursery:
        with pytest.raises(ClaudeError, match=r"cannot start '.*no-claude' in .*: No such file or directory"):
            await nursery.start(missing.run)
        with pytest.raises(ClaudeError, match=r"the team folder .*gone does not exist any more"):
            await nursery.start(gone_folder.run)
    assert missing.pid is None and not missing.exited.is_set()


async def test_a_child_that_cannot_start_for_lack_of_file_descriptors_says_so_not_install(tmp_path: Path) -> None:
    send, _ = trio.open_memory_channel[ChildEvent](10)
    child = ClaudeProcess(["sh", "-c", "exit 0"], cwd=str(tmp_path), env={}, events=send)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))  # every descriptor past stdin/out/err: none left
    try:
        async with trio.open_nursery() as nursery:
            with pytest.raises(ClaudeError) as raised:
                await nursery.start(child.run)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert raised.value.message == (
        "cannot start 'sh': irisd is out of file descriptors (its limit is 3); raise its open-file limit "
        "(LimitNOFILE= in irisd.service, or 'ulimit -n' in the shell that starts irisd) and restart it, or "
        "close programs that hold many connections to irisd"
    )


async def test_a_burst_of_lines_reaches_the_owner_without_a_wake_up_of_the_child_task_per_line() -> None:
    """Lines that arrive together go to the owner's channel in one step of the child's task
    (it waited after each line before: a wake-up more per line, 13 a warm claude turn)."""

    class Steps(trio.abc.Instrument):
        def __init__(self) -> None:
            self.count = 0

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            if task.name.endswith("ClaudeProcess.run"):
                self.count += 1

    send, receive = trio.open_memory_channel[ChildEvent](1000)
    lines = "".join(f'{{"type":"stream_event","n":{n}}}\\n' for n in range(200))
    child = ClaudeProcess(["sh", "-c", f"printf '{lines}'; exec sleep 600"], cwd="/",
                          env={"PATH": "/usr/bin:/bin"}, events=send, grace=0.5)
    steps = Steps()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(child.run)
            trio.lowlevel.add_instrument(steps)
            got = [await receive.receive() for _ in range(200)]
            trio.lowlevel.remove_instrument(steps)
            child.stop()
    assert all(isinstance(event, ChildLine) for event in got)
    assert steps.count < 50  # a step or two a read of stdout; 200 and more before


async def test_what_is_sent_reaches_the_child_whole_and_in_order(reaper: Reaper | None) -> None:
    """A small input is written at once, before any yield (irisd's warm path), one longer
    than a pipe holds the locked way; each arrives whole, in order."""
    child, receive = await started("cat", reaper)
    long = b"L" * (512 * 1024)
    async with trio.open_nursery() as nursery:
        await nursery.start(child.run)
        await child.send(b"first\n")
        await child.send(long + b"\n")
        await child.send(b"second\n")
        assert [await first_line(receive) for _ in range(3)] == [b"first", long, b"second"]
        child.stop()


async def test_a_small_send_waits_for_a_send_under_way(reaper: Reaper | None) -> None:
    """While a send holds the pipe (one longer than the pipe, waiting for claude to read), a
    small one waits its turn instead of landing in the middle of it."""
    child, receive = await started("cat", reaper)
    async with trio.open_nursery() as nursery:
        await nursery.start(child.run)
        async with child._send_lock:  # as a send under way holds it
            nursery.start_soon(child.send, b"second\n")
            await trio.testing.wait_all_tasks_blocked()  # it ran as far as it may
            assert child._stdin is not None
            await child._stdin.send_all(b"under way\n")  # what the send under way writes
        assert [await first_line(receive) for _ in range(2)] == [b"under way", b"second"]
        child.stop()


async def test_a_send_to_a_child_that_closed_its_input_is_a_claude_error(reaper: Reaper | None) -> None:
    child, receive = await started("exec 0<&-; echo closed; sleep 30", reaper)
    async with trio.open_nursery() as nursery:
        await nursery.start(child.run)
        assert await first_line(receive) == b"closed"
        with pytest.raises(ClaudeError, match="closed its input"):
            await child.send(b"a turn\n")
        child.stop()
