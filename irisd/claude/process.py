"""One claude child process: started in its own process group, stopped as a group.

``ClaudeProcess.run`` is the child's whole lifetime. It runs in a nursery owned by the
object the child belongs to (a pair); cancelling it (``stop()``) sends SIGTERM to the
process GROUP and to every process carrying the child's ``marker`` (see
``containment.py``: what claude started, wherever it moved), waits ``grace`` seconds,
sends SIGKILL to both, and reaps the child, so neither claude nor anything it started
(tools, their background jobs, MCP servers) outlives it. When claude exits by itself,
what it left running is stopped the same way. The child gets only stdin/stdout/stderr
(subprocess closes every other fd).

Under irisd the child is started by the run's reaper (``reaper.py``: a subreaper that is
the ancestor of everything claude starts) with ``stdin``, ``stdout`` and ``stderr`` piped;
the reaper reaps it and reports its exit. Without one (not Linux, tests) it is trio's
``run_process``, which reaps it itself. Either way, the task started in the child's
nursery, once cancelled, calls ``_deliver_cancel`` (the group and marker signals above)
and still waits for the exit. The marked processes that outlive claude, and the exit
reported once, after the reaping, are ours.

Decoded stdout lines and the final exit go to ``on_event`` (a memory channel owned by
the pair), tagged with this process, so events of a replaced child are recognisable.
"""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
from typing import Protocol

import msgspec
import trio

from iris_common.locate import not_found_fix
from irisd.claude.containment import MARKER, signal_marked, stop_marked
from irisd.claude.reaper import Reaper
from irisd.claude.wire import AnyLine, GarbageLine, decode_line
from irisd.fds import open_file_limit, out_of_descriptors
from protocol.errors import ClaudeError
from protocol.framing import FrameTooLargeError, LineFramer

MAX_LINE = 32 * 1024 * 1024
STDERR_TAIL_LINES = 30
STDERR_DRAIN_S = 1.0
STDIN_TIMEOUT_S = 30.0  # claude reads its input at once; one that does not is wedged


class ChildLine(msgspec.Struct, frozen=True):
    process: ClaudeProcess
    line: AnyLine
    raw: bytes


class ChildExited(msgspec.Struct, frozen=True):
    process: ClaudeProcess
    returncode: int | None
    stderr_tail: str

    def describe(self) -> str:
        code = self.returncode
        if code is None:
            how = "ended"
        elif code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        detail = f": {self.stderr_tail.strip()}" if self.stderr_tail.strip() else ""
        return f"claude (pid {self.process.pid}) {how}{detail}"


ChildEvent = ChildLine | ChildExited


class Started(Protocol):
    """What a started child is to us: a ``trio.Process``, or a ``reaper.ReapedProcess``."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdin(self) -> trio.abc.SendStream | None: ...
    @property
    def stdout(self) -> trio.abc.ReceiveStream | None: ...
    @property
    def stderr(self) -> trio.abc.ReceiveStream | None: ...
    async def wait(self) -> int | None: ...


class ClaudeProcess:
    def __init__(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        events: trio.MemorySendChannel[ChildEvent],
        grace: float = 3.0,
        marker: str = "",
        reaper: Reaper | None = None,
    ) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = {**env, MARKER: marker} if marker else env
        self.grace = grace
        self.marker = marker
        self.reaper = reaper
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exited = trio.Event()
        self._events = events
        self._cancel_scope = trio.CancelScope()
        self._stdin: trio.abc.SendStream | None = None
        self._send_lock = trio.Lock()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_closed = trio.Event()
        self._stopping = False  # stop() (or the owner's cancel) reached the child

    async def run(self, *, task_status: trio.TaskStatus[ClaudeProcess] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the child, pump its output until it exits or ``stop()`` is called.

        Reports ``started`` once the process exists (not once claude is ready); raises
        ClaudeError if it cannot be started at all. Cancellation (``stop()`` or the
        owner's scope) terminates the group and reaps the child under a shielded scope.
        Once started, it always ends by sending one ChildExited.
        """
        process: Started | None = None
        failed: OSError | ClaudeError | None = None
        try:
            with self._cancel_scope:
                async with trio.open_nursery() as nursery:
                    try:
                        process = await nursery.start(self._run_process)
                    except (OSError, ClaudeError) as exc:  # raised here, it would leave the nursery in a group
                        failed = exc
                    else:
                        self.pid = process.pid
                        self._stdin = process.stdin
                        task_status.started(self)
                        await self._pump(process, nursery)
        finally:
            if process is not None:
                with trio.CancelScope(shield=True):
                    await self._exited(process)
        if isinstance(failed, ClaudeError):  # the reaper's own trouble
            raise failed
        if failed is not None:
            raise self._start_error(failed)

    def stop(self) -> None:
        """Terminate the child (group SIGTERM, grace, SIGKILL); ``run`` returns once reaped."""
        self._cancel_scope.cancel()

    async def send(self, data: bytes) -> None:
        """Write to the child's stdin; raises ClaudeError if it is gone."""
        if self._stdin is None or self.exited.is_set():
            raise ClaudeError("the claude process is not running")
        written = self._write_at_once(data)
        if written == len(data):
            await trio.lowlevel.checkpoint()  # a send is a checkpoint: once the turn has left
            return
        data = data[written:]  # the rest (all of it, as a rule) the locked way
        try:
            async with self._send_lock:
                with trio.move_on_after(STDIN_TIMEOUT_S) as writing:
                    await self._stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ClaudeError("the claude process closed its input (it is exiting)") from None
        if writing.cancelled_caught:  # its pair would wait here, deaf to cancels and timers
            self.stop()
            raise ClaudeError(f"claude read none of its input for {STDIN_TIMEOUT_S:g} s; stopped it")

    def _write_at_once(self, data: bytes) -> int:
        """Write what the pipe takes of ``data`` now, before any yield to the scheduler
        (trio's ``send_all`` yields first, and its lock once more: about 0.1 ms on the
        path of every warm tell); how many bytes. Only while no other send is under way,
        and only up to PIPE_BUF, which a pipe writes whole or not at all; the rest goes
        the locked way (no yield in between: nothing else can write first)."""
        fileno = getattr(self._stdin, "fileno", None)
        if fileno is None or len(data) > select.PIPE_BUF or self._send_lock.locked():
            return 0
        try:
            return os.write(fileno(), data)
        except BlockingIOError:  # the pipe is full: claude has not read its last input yet
            return 0
        except OSError:  # gone (EPIPE), or closed under us: said as the locked path says it
            raise ClaudeError("the claude process closed its input (it is exiting)") from None

    async def _run_process(self, *, task_status: trio.TaskStatus[Started]) -> None:
        """The reaper (or trio) reaps the child; cancelled, this runs ``_deliver_cancel`` and
        still waits for the exit."""
        if self.reaper is not None:
            await self._run_reaped(self.reaper, task_status)
            return
        await trio.run_process(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            check=False,
            deliver_cancel=self._deliver_cancel,
            task_status=task_status,
        )

    async def _run_reaped(self, reaper: Reaper, task_status: trio.TaskStatus[Started]) -> None:
        """``trio.run_process``'s contract, for a child the reaper started."""
        process = await reaper.spawn(self.argv, cwd=self.cwd, env=self.env)
        task_status.started(process)
        try:
            await process.wait()
        except BaseException:
            with trio.CancelScope(shield=True):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._deliver_cancel, process)
                    await process.wait()
                    nursery.cancel_scope.cancel()
            raise

    async def _deliver_cancel(self, process: Started) -> None:
        """SIGTERM the group and the marked processes, ``grace``, SIGKILL them. trio stops
        this the moment claude exits (``_exited`` then SIGKILLs what is left)."""
        self._stopping = True
        await self._signal_all(signal.SIGTERM)
        await trio.sleep(self.grace)
        await self._signal_all(signal.SIGKILL)

    async def _pump(self, process: Started, nursery: trio.Nursery) -> None:
        """Until stdout closes: the child is exiting. Then wait for it, and for its last
        words on stderr (bounded: a grandchild may hold stderr open)."""
        assert process.stdout is not None and process.stderr is not None
        stderr_scope = trio.CancelScope()
        nursery.start_soon(self._pump_stderr, process.stderr, stderr_scope)
        await self._pump_stdout(process.stdout)
        await process.wait()
        with trio.move_on_after(STDERR_DRAIN_S):
            await self._stderr_closed.wait()
        stderr_scope.cancel()

    async def _exited(self, process: Started) -> None:
        """Reaped: stop what claude left running (in its group, or anywhere by its marker:
        SIGTERM, ``grace``, SIGKILL), then report the exit, once."""
        if self._stopping:
            await self._signal_all(signal.SIGKILL)
        else:
            self._kill_group(signal.SIGKILL)
        await process.wait()
        if self.marker:  # /proc is read in a thread: it must not stall the event loop
            await trio.to_thread.run_sync(stop_marked, self.marker, self.grace)
        self.returncode = process.returncode
        self.exited.set()
        try:
            await self._events.send(ChildExited(self, self.returncode, "\n".join(self._stderr_tail)))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()

    def _start_error(self, exc: OSError) -> ClaudeError:
        if not os.path.isdir(self.cwd):
            return ClaudeError(
                f"the team folder {self.cwd} does not exist any more; restore it, or fix the "
                "team's path in config.yaml and run 'iris reload'"
            )
        if out_of_fds := out_of_descriptors(exc.errno, open_file_limit()):  # not a missing claude
            return ClaudeError(f"cannot start {self.argv[0]!r}: {out_of_fds}")
        return ClaudeError(f"cannot start {self.argv[0]!r} in {self.cwd}: {exc.strerror}; {not_found_fix()}")

    async def _pump_stdout(self, stdout: trio.abc.ReceiveStream) -> None:
        framer = LineFramer(MAX_LINE)
        async for chunk in stdout:
            framer.receive_data(chunk)
            while True:
                try:
                    raw = framer.next_frame()
                except FrameTooLargeError as exc:
                    raw = None
                    await self._events.send(ChildLine(self, GarbageLine(error=str(exc)), b""))
                    framer = LineFramer(MAX_LINE)
                if raw is None:
                    break
                await self._deliver(ChildLine(self, decode_line(raw), raw))
        tail = framer.tail()
        if tail.strip():
            await self._events.send(ChildLine(self, decode_line(tail), tail))

    async def _deliver(self, line: ChildLine) -> None:
        """To the owner's channel; waits only while it is full. (The next read of stdout
        lets the owner run: a checkpoint after each line, as ``send`` takes, was a
        wake-up of this task more per line, thirteen a warm turn.)"""
        try:
            self._events.send_nowait(line)
        except trio.WouldBlock:
            await self._events.send(line)

    async def _pump_stderr(self, stderr: trio.abc.ReceiveStream, scope: trio.CancelScope) -> None:
        framer = LineFramer(MAX_LINE)
        with scope:
            async for chunk in stderr:
                framer.receive_data(chunk)
                try:
                    while (line := framer.next_frame()) is not None:
                        self._stderr_tail.append(line.decode(errors="replace")[:2000])
                except FrameTooLargeError:
                    framer = LineFramer(MAX_LINE)
            if framer.tail().strip():
                self._stderr_tail.append(framer.tail().decode(errors="replace")[:2000])
            self._stderr_closed.set()

    async def _signal_all(self, sig: signal.Signals) -> None:
        self._kill_group(sig)
        if self.marker:
            await trio.to_thread.run_sync(signal_marked, self.marker, sig)

    def _kill_group(self, sig: signal.Signals) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
