"""irisd's side of the reaper (``reaper_process.py``): claude children started below it.

``Reaper.serve`` starts the reaper (the guard, which forks the spawner) and reads the
spawner's replies until cancelled; ``spawn`` starts one claude below it and gives back a
``ReapedProcess``, which has what ``ClaudeProcess`` needs of ``trio.Process``: the pid,
the three pipes, ``wait()`` and ``returncode``. The spawner reaps the child and reports its
exit status.

If the spawner dies (killed), the guard stops every process it held (claude children
included: their pairs see them exit, as after a crash) and ``serve`` starts a new reaper
for the next ones. Cancelling ``serve`` closes the socket and the lifeline: the spawner
stops what is left below it (SIGTERM, grace, SIGKILL), then the guard exits; ``serve``
returns once it has (bounded).

Wire (private to the two): irisd sends a 4-byte length (with the child's stdin, stdout and
stderr as SCM_RIGHTS) and a JSON ``SpawnRequest``; the spawner answers JSON lines
(``Spawned``, ``SpawnFailed``, ``Exited``).
"""

from __future__ import annotations

import array
import contextlib
import errno
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import msgspec
import trio

from irisd.claude import reaper_process
from protocol.errors import ClaudeError
from protocol.framing import FrameTooLargeError, LineFramer

log = logging.getLogger("irisd.reaper")

PROGRAM = Path(reaper_process.__file__)
REPLY_MAX = 64 * 1024
RESTART_PAUSE_S = 1.0  # between a dead reaper and its successor (a reaper that cannot live)
SEND_TIMEOUT_S = 10.0  # the spawner reads at once; one that does not is wedged


class SpawnRequest(msgspec.Struct):
    id: int
    argv: list[str]
    cwd: str
    env: dict[str, str]


class Spawned(msgspec.Struct, tag="spawned", tag_field="type"):
    id: int
    pid: int


class SpawnFailed(msgspec.Struct, tag="failed", tag_field="type"):
    id: int
    errno: int
    message: str


class Exited(msgspec.Struct, tag="exited", tag_field="type"):
    pid: int
    status: int


Reply = Spawned | SpawnFailed | Exited
_decode = msgspec.json.Decoder(Reply).decode


def reaping_possible() -> bool:
    """Subreapers are Linux's (3.4 and later)."""
    return sys.platform == "linux"


class ReapedProcess:
    """A child started by the spawner: what ``ClaudeProcess`` uses of a ``trio.Process``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stdin: trio.abc.SendStream | None = None
        self.stdout: trio.abc.ReceiveStream | None = None
        self.stderr: trio.abc.ReceiveStream | None = None
        self.returncode: int | None = None
        self._exited = trio.Event()

    def attach(
        self, stdin: trio.abc.SendStream, stdout: trio.abc.ReceiveStream, stderr: trio.abc.ReceiveStream
    ) -> None:
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    async def wait(self) -> int | None:
        """Until the process has exited; its status (None: the reaper died, so nobody knows)."""
        await self._exited.wait()
        return self.returncode

    def set_exited(self, status: int | None) -> None:
        if not self._exited.is_set():
            self.returncode = status
            self._exited.set()


class _Run:
    """One reaper: the guard process, the socket to its spawner, and what waits on it."""

    def __init__(self, guard: subprocess.Popen[bytes], sock: trio.socket.SocketType) -> None:
        self.guard = guard
        self.socket = sock
        self.send_lock = trio.Lock()
        self.pending: dict[int, trio.MemorySendChannel[ReapedProcess | SpawnFailed]] = {}
        self.children: dict[int, ReapedProcess] = {}
        self.abandoned: set[int] = set()  # requests whose caller was cancelled meanwhile
        self.lost = False


class Reaper:
    def __init__(self, run_pattern: str, *, grace: float = 1.0) -> None:
        self.run_pattern = run_pattern
        self.grace = grace
        self._ids = itertools.count(1)
        self._run: _Run | None = None
        self._ready = trio.Event()

    @property
    def guard_pid(self) -> int | None:
        return self._run.guard.pid if self._run else None

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the reaper, read its replies; start a new one when it dies. Cancelled: close
        it (what it still holds is stopped) and wait for it, shielded and bounded."""
        started = False
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    run = await trio.to_thread.run_sync(self._start)
                    self._run = run
                    self._ready.set()
                    if not started:
                        task_status.started()
                        started = True
                    await self._read(run, nursery)
                    self._ready = trio.Event()
                    log.warning(
                        "the reaper ended; it stopped its claude children and what they started, "
                        "and a new reaper takes the next ones", extra={"pid": run.guard.pid},
                    )
                    nursery.start_soon(trio.to_thread.run_sync, self._wait_guard, run.guard)  # stopping all
                    await trio.sleep(RESTART_PAUSE_S)
        finally:
            with trio.CancelScope(shield=True):
                if self._run is not None:
                    await self._close(self._run)

    async def spawn(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> ReapedProcess:
        """Start ``argv`` below the reaper, in a new session, with three new pipes. Raises
        OSError as Popen would (no such program or folder), ClaudeError when the reaper died
        or hung meanwhile. Cancelled while the reaper starts it: it is killed once started."""
        await self._ready.wait()
        run = self._run
        assert run is not None
        ident = next(self._ids)
        send_reply, receive_reply = trio.open_memory_channel[ReapedProcess | SpawnFailed](1)
        ours: list[int] = []
        theirs: list[int] = []
        try:
            for _ in range(3):
                read, write = os.pipe2(os.O_CLOEXEC)
                ours.append(write if not ours else read)  # we write its stdin, read the rest
                theirs.append(read if not theirs else write)
            run.pending[ident] = send_reply
            await self._send(run, msgspec.json.encode(SpawnRequest(id=ident, argv=argv, cwd=cwd, env=env)), theirs)
            reply = await receive_reply.receive()
        except BaseException:
            run.pending.pop(ident, None)
            try:
                arrived = receive_reply.receive_nowait()
            except trio.WouldBlock:  # not started yet (or never): kill it when it is
                if not run.lost:
                    run.abandoned.add(ident)
            else:
                if isinstance(arrived, ReapedProcess):
                    _kill_group(arrived.pid)
            for fd in ours:
                os.close(fd)
            raise
        finally:
            run.pending.pop(ident, None)
            for fd in theirs:
                os.close(fd)
        if isinstance(reply, SpawnFailed):
            for fd in ours:
                os.close(fd)
            if reply.errno == errno.ECHILD:
                raise ClaudeError(f"cannot start claude: {reply.message}; try again")
            raise OSError(reply.errno or errno.EIO, reply.message)
        reply.attach(*(trio.lowlevel.FdStream(fd) for fd in ours))
        return reply

    # --- the reaper's life ---------------------------------------------------------------

    def _start(self) -> _Run:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            guard = subprocess.Popen(
                [sys.executable, "-I", "-S", str(PROGRAM), str(theirs.fileno()), self.run_pattern, str(self.grace)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=None,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a signal to irisd's terminal or group does not reach it
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},  # no marker: it must not stop itself
                cwd="/",
            )
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        return _Run(guard, trio.socket.from_stdlib_socket(mine))

    async def _send(self, run: _Run, body: bytes, fds: list[int]) -> None:
        """The header with the fds, then the body, whole (shielded: half a request would
        wedge the wire) and bounded."""
        header = reaper_process.HEADER.pack(len(body))
        with trio.CancelScope(shield=True):
            async with run.send_lock:
                with trio.move_on_after(SEND_TIMEOUT_S) as sending:
                    try:
                        rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))
                        await run.socket.sendmsg([header], [rights])
                        view = memoryview(body)
                        while view:
                            view = view[await run.socket.send(view) :]
                    except (OSError, trio.ClosedResourceError) as exc:
                        gone = f"cannot start claude: the reaper process is gone ({exc}); try again"
                        raise ClaudeError(gone) from None
        if sending.cancelled_caught:
            raise ClaudeError(f"cannot start claude: the reaper process took no request for {SEND_TIMEOUT_S:g} s")

    async def _read(self, run: _Run, nursery: trio.Nursery) -> None:
        """Replies until the spawner's end closes (it died); then what waited learns it."""
        framer = LineFramer(REPLY_MAX)
        try:
            while data := await run.socket.recv(REPLY_MAX):
                framer.receive_data(data)
                while (line := framer.next_frame()) is not None:
                    try:
                        reply = _decode(line)
                    except msgspec.DecodeError as exc:
                        log.error("the reaper sent what irisd cannot read", extra={"error": str(exc)})
                        continue
                    self._dispatch(run, reply)
        except (OSError, FrameTooLargeError):
            pass
        finally:
            run.lost = True
            run.socket.close()
            for waiting in run.pending.values():
                with contextlib.suppress(trio.WouldBlock):  # (its answer came)
                    waiting.send_nowait(SpawnFailed(id=0, errno=errno.ECHILD, message="the reaper process ended"))
            for process in run.children.values():
                nursery.start_soon(_wait_gone, process)

    def _dispatch(self, run: _Run, reply: Reply) -> None:
        match reply:
            case Exited(pid=pid, status=status):
                if (process := run.children.pop(pid, None)) is not None:
                    process.set_exited(status)
            case Spawned(id=ident, pid=pid):
                # Registered now: its exit may be in the same read, before spawn() resumes.
                process = run.children[pid] = ReapedProcess(pid)
                if ident in run.abandoned:  # its caller was cancelled: nobody will stop it
                    run.abandoned.discard(ident)
                    _kill_group(pid)
                elif (waiting := run.pending.get(ident)) is not None:
                    waiting.send_nowait(process)
            case SpawnFailed(id=ident):
                run.abandoned.discard(ident)
                if (waiting := run.pending.get(ident)) is not None:
                    waiting.send_nowait(reply)

    async def _close(self, run: _Run) -> None:
        run.socket.close()  # the spawner stops what is below it and exits
        await trio.to_thread.run_sync(self._release, run.guard)

    def _release(self, guard: subprocess.Popen[bytes]) -> None:
        if guard.stdin is not None:
            with contextlib.suppress(OSError):
                guard.stdin.write(b"q")
                guard.stdin.close()
        self._wait_guard(guard)

    def _wait_guard(self, guard: subprocess.Popen[bytes]) -> None:
        if guard.stdin is not None:
            with contextlib.suppress(OSError):
                guard.stdin.close()
        try:
            guard.wait(timeout=3 * self.grace + reaper_process.SPAWNER_EXIT_S + 5)
        except subprocess.TimeoutExpired:
            guard.kill()
            guard.wait()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


async def _wait_gone(process: ReapedProcess) -> None:
    """The reaper died before this child: the guard is stopping it; it is gone once its
    pidfd says so (nobody can tell its status now)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:
        process.set_exited(None)
        return
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)
        process.set_exited(None)
