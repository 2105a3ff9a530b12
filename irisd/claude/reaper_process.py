"""The reaper: the ancestor of every claude child of one run of irisd (stdlib only).

How it works
------------
irisd starts this program once per run (``irisd/claude/reaper.py``) as
``python -I -S reaper_process.py SOCKET_FD PATTERN GRACE``; without ``site`` it starts in
milliseconds and carries nothing of irisd's environment. It is two processes, both
subreapers (``PR_SET_CHILD_SUBREAPER``: the kernel gives a subreaper the orphans of its
descendants, at any depth, instead of PID 1):

* **the guard** (irisd's child, in a session of its own) holds the read end of a pipe
  whose write end only irisd has, and forks
* **the spawner**, which holds the socket to irisd. irisd asks it to start each claude
  (argv, folder, environment, and the three pipe ends as SCM_RIGHTS); the spawner starts
  it in a new session, reaps it, and reports ``exited`` with its status.

So whatever a claude starts stays below the spawner, whatever it does to its environment,
its process group or its session: a background job whose shell ended is re-parented to the
spawner, not to PID 1. Ancestry decides, through the kernel:

* irisd closes the socket (it stops, or dies in any way, SIGKILL included): the spawner
  stops every process below it (SIGTERM, GRACE, SIGKILL) and exits; the guard sees its
  pipe end (EOF: irisd died; ``q``: irisd stopped cleanly) and stops whatever is left below
  it, and, when irisd died, every process with the run's marker ``PATTERN`` too;
* the spawner dies (even SIGKILL): its children, claude and what claude left, go to the
  guard, which stops them all at once and exits (irisd starts a new reaper);
* the guard dies: the spawner is still the ancestor of everything and goes on.

Only both reapers killed together (and irisd with them or after) lets a process whose
environment was cleared (``env -i``) escape; the next start of irisd finds the others by
their marker. SIGINT and SIGHUP are ignored by a handler (not SIG_IGN: exec resets a handler,
so claude gets the default dispositions); SIGTERM makes either one stop its descendants and
exit.

The /proc readers here (``marker_of``, ``marked``, ``alive``) are containment's too.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterable

PR_SET_CHILD_SUBREAPER = 36
HEADER = struct.Struct("!I")  # a request's length; the header carries its three fds
MAX_REQUEST = 64 * 1024 * 1024
MARKER_KEY = b"IRIS_RUN="
SPAWNER_EXIT_S = 5.0  # how long the guard waits for the spawner's own sweep before its own


# --- /proc -----------------------------------------------------------------------------------


def marker_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            environ = file.read()
    except OSError:  # gone, or not ours to read
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(MARKER_KEY):
            return entry[len(MARKER_KEY) :].decode(errors="replace")
    return None


def matches(value: str, pattern: str) -> bool:
    """A marker matches a pattern ending in ':' by prefix, any other by equality."""
    return value.startswith(pattern) if pattern.endswith(":") else value == pattern


def _pids() -> list[int]:
    if not os.path.isdir("/proc"):
        return []
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def marked(pattern: str) -> list[int]:
    """Live processes whose marker matches ``pattern`` (never this process)."""
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid != me and (marker := marker_of(pid)) is not None and matches(marker, pattern):
            found.append(pid)
    return found


def _stat(pid: int) -> tuple[bytes, int] | None:
    """(state, parent pid), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def alive(pids: Iterable[int]) -> bool:
    """Any of ``pids`` still running (a zombie is not: it only waits to be reaped)."""
    for pid in pids:
        stat = _stat(pid)
        if stat is not None and stat[0] not in (b"Z", b"X"):
            return True
    return False


def descendants(root: int) -> list[int]:
    """Live (not zombie) processes below ``root``, at any depth."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[0] not in (b"Z", b"X"):
            children.setdefault(stat[1], []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        below = children.get(todo.pop(), [])
        found.extend(below)
        todo.extend(below)
    return found


# --- stopping and reaping ------------------------------------------------------------------


def _signal(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def reap() -> list[tuple[int, int]]:
    """Every child that has exited: (pid, status as Popen gives it)."""
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, os.waitstatus_to_exitcode(status)))


def stop_below(grace: float, pattern: str = "") -> list[tuple[int, int]]:
    """SIGTERM every process below this one (and, with ``pattern``, every process with that
    marker), wait up to ``grace`` reaping them, SIGKILL what is left (also what appeared
    meanwhile: orphans keep coming as their parents die), reap. Returns what was reaped."""
    me = os.getpid()

    def targets() -> list[int]:
        found = descendants(me)
        return found + [pid for pid in marked(pattern) if pid not in found] if pattern else found

    reaped: list[tuple[int, int]] = []
    first = targets()
    _signal(first, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while first and time.monotonic() < deadline:
        reaped += reap()
        if not alive(targets()):
            break
        time.sleep(0.02)
    for _ in range(100):  # bounded: something that forks as fast as it is killed
        left = targets()
        if not left:
            break
        _signal(left, signal.SIGKILL)
        time.sleep(0.01)
        reaped += reap()
    return reaped + reap()


# --- the two processes ---------------------------------------------------------------------


class _Wakeup:
    """SIGCHLD and SIGTERM wake ``select`` through a pipe; SIGINT and SIGHUP do nothing."""

    def __init__(self) -> None:
        self.fd, write = os.pipe()
        os.set_blocking(write, False)
        os.set_blocking(self.fd, False)
        signal.set_wakeup_fd(write)
        self.terminated = False
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, _ignore)
        signal.signal(signal.SIGTERM, self._terminate)

    def _terminate(self, signum: int, frame: object) -> None:
        self.terminated = True

    def drain(self) -> None:
        try:
            while os.read(self.fd, 512):
                pass
        except BlockingIOError:
            pass


def _ignore(signum: int, frame: object) -> None:
    pass


def set_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(errno)}")


def _receive(sock: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """One request and its fds; None when irisd closed its end (or died)."""
    try:
        head, fds, _, _ = socket.recv_fds(sock, HEADER.size, 3)
        while head and len(head) < HEADER.size:
            more = sock.recv(HEADER.size - len(head))
            if not more:
                return None
            head += more
        if not head:
            return None
        (length,) = HEADER.unpack(head)
        if length > MAX_REQUEST:
            return None
        body = bytearray()
        while len(body) < length:
            chunk = sock.recv(min(length - len(body), 1 << 20))
            if not chunk:
                return None
            body += chunk
    except OSError:
        return None
    request = json.loads(body)
    return (request if isinstance(request, dict) else {}), fds


def _reply(sock: socket.socket, message: dict[str, object]) -> bool:
    try:
        sock.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        return False
    return True


def _spawn(request: dict[str, object], fds: list[int]) -> tuple[subprocess.Popen[bytes] | None, dict[str, object]]:
    ident = request.get("id")
    try:
        if len(fds) != 3:
            raise OSError(0, f"expected 3 file descriptors, got {len(fds)}")
        argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
        if not (isinstance(argv, list) and isinstance(cwd, str) and isinstance(env, dict)):
            raise OSError(0, "a spawn request needs argv, cwd and env")
        process = subprocess.Popen(
            argv, stdin=fds[0], stdout=fds[1], stderr=fds[2], cwd=cwd, env=env, start_new_session=True
        )
    except OSError as exc:
        return None, {"type": "failed", "id": ident, "errno": exc.errno or 0, "message": exc.strerror or str(exc)}
    finally:
        for fd in fds:
            os.close(fd)
    return process, {"type": "spawned", "id": ident, "pid": process.pid}


def serve_spawner(sock: socket.socket, grace: float, wakeup: _Wakeup) -> None:
    """Start what irisd asks, report exits; when irisd's end closes, stop everything below."""
    children: dict[int, subprocess.Popen[bytes]] = {}
    connected = True
    while connected and not wakeup.terminated:
        ready, _, _ = select.select([sock.fileno(), wakeup.fd], [], [])
        if wakeup.fd in ready:
            wakeup.drain()
        for pid, code in reap():
            process = children.pop(pid, None)
            if process is not None:
                process.returncode = code  # reaped here: Popen must not wait for it again
                connected = _reply(sock, {"type": "exited", "pid": pid, "status": code}) and connected
        if sock.fileno() in ready:
            received = _receive(sock)
            if received is None:
                break
            process, reply = _spawn(*received)
            if process is not None:
                children[process.pid] = process
            connected = _reply(sock, reply) and connected
    sock.close()
    for pid, code in stop_below(grace):
        if (process := children.pop(pid, None)) is not None:
            process.returncode = code


def serve_guard(sock_fd: int, pattern: str, grace: float) -> None:
    """Fork the spawner; stop everything below when irisd's pipe end or the spawner goes."""
    wakeup = _Wakeup()
    try:
        set_subreaper()
    except OSError as exc:
        print(f"reaper: {exc}; orphans go to PID 1", file=sys.stderr)
    spawner = os.fork()
    if spawner == 0:
        os.close(wakeup.fd)
        own = _Wakeup()  # the guard's pipe would wake the guard, not us
        with contextlib.suppress(OSError):  # (the guard said why)
            set_subreaper()  # not inherited through fork
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # the lifeline is the guard's alone
        os.close(devnull)
        serve_spawner(socket.socket(fileno=sock_fd), grace, own)
        os._exit(0)
    os.close(sock_fd)  # irisd sees its socket close when the spawner ends
    while not wakeup.terminated:
        if spawner in (pid for pid, _ in reap()):
            break  # killed? What it held is ours now: stop it all
        ready, _, _ = select.select([0, wakeup.fd], [], [])
        if wakeup.fd in ready:
            wakeup.drain()
        if 0 in ready:
            # EOF: irisd died, and its marked processes are ours to stop too; "q": it
            # stopped cleanly and swept them. The spawner has its own EOF: it goes first.
            clean = os.read(0, 1) == b"q"
            deadline = time.monotonic() + grace + SPAWNER_EXIT_S
            while time.monotonic() < deadline and alive([spawner]):
                time.sleep(0.02)
            stop_below(grace, "" if clean else pattern)
            return
    stop_below(grace)


def main(argv: list[str]) -> None:
    serve_guard(int(argv[1]), argv[2], float(argv[3]))


if __name__ == "__main__":
    main(sys.argv)
