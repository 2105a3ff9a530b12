"""Containment: nothing a claude starts outlives it, its pair, or irisd.

How it works
------------
* **A marker.** Every claude child gets ``IRIS_RUN=<home>:<run>:<child>`` in its
  environment: ``<home>`` names the ``IRIS_HOME`` (a hash of its path), ``<run>`` this run
  of irisd, ``<child>`` the child. Whatever claude starts (its tools' shells, their
  background jobs, its MCP servers) inherits the variable, also after ``setsid``, a new
  process group, or a double fork that re-parents it to PID 1; ``/proc/PID/environ``
  shows it. A process is found by its marker, wherever it moved.
* **Stopping a child** signals its process group AND every process carrying its marker:
  SIGTERM, the grace period, SIGKILL. That happens whenever the child ends: its pair
  stops it (sleep, eviction, idle reaping, response timeout, drain) or it exits by
  itself (what it left running in the background is stopped then).
* **A lifeline.** One small watcher process per run of irisd (stdlib Python, started
  once at start-up, so it costs a spawn nothing) holds the read end of a pipe whose
  write end only irisd has. When irisd dies in any way, even SIGKILL, the kernel closes
  that end; the watcher reads EOF and stops every process of the run's marker (SIGTERM,
  1 s, SIGKILL), then exits. It runs in its own session and ignores SIGINT and SIGHUP,
  so a Ctrl-C in irisd's terminal does not take it first.
* **A sweep at start-up.** Holding the home's lock (so no other irisd of this home is
  alive), irisd stops every process with its home's marker, any run, before a pair
  starts: nothing of a previous run survives to share a session with a new claude.

Why not a subreaper (``PR_SET_CHILD_SUBREAPER``): re-parented orphans would need a
reaper that must not take the exit statuses of trio's own children, and the marker finds
them anyway. Why not ``PR_SET_PDEATHSIG``: trio starts processes from worker threads,
and the signal fires when that thread exits, not irisd; it would not reach grandchildren
either. Not contained: a process that both clears its environment and leaves the
process group (``env -i setsid ...``); a cgroup would catch it, but is not delegated to
an ordinary user everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import trio

log = logging.getLogger("irisd.containment")

MARKER = "IRIS_RUN"
_MARKER_BYTES = MARKER.encode() + b"="
SWEEP_GRACE_S = 3.0
LIFELINE_GRACE_S = 1.0


def home_id(home: Path) -> str:
    return hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:12]


def matches(value: str, pattern: str) -> bool:
    """A marker matches a pattern ending in ':' by prefix, any other by equality."""
    return value.startswith(pattern) if pattern.endswith(":") else value == pattern


def _marker_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            environ = file.read()
    except OSError:  # gone, or not ours to read
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(_MARKER_BYTES):
            return entry[len(_MARKER_BYTES) :].decode(errors="replace")
    return None


def marked_processes(pattern: str) -> list[int]:
    """Live processes whose marker matches ``pattern`` (never this process). Without
    ``/proc`` (not Linux) there is nothing to find: only process groups are stopped."""
    if not os.path.isdir("/proc"):
        return []
    me = os.getpid()
    found = []
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            marker = _marker_of(int(entry.name))
            if marker is not None and matches(marker, pattern):
                found.append(int(entry.name))
    return found


def signal_marked(pattern: str, sig: signal.Signals) -> list[int]:
    """Send ``sig`` to every process matching ``pattern``; returns their pids."""
    pids = marked_processes(pattern)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return pids


def stop_marked(pattern: str, grace: float = SWEEP_GRACE_S) -> list[int]:
    """SIGTERM every process matching ``pattern``, wait up to ``grace``, SIGKILL what is
    left. Blocking (run it in a thread). Returns the pids that were found."""
    found = signal_marked(pattern, signal.SIGTERM)
    if not found:
        return []
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(found):
        time.sleep(0.05)
    if _alive(found):
        signal_marked(pattern, signal.SIGKILL)
    return found


def _alive(pids: list[int]) -> bool:
    """Any of ``pids`` still running (a zombie is not: it only waits to be reaped)."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                state = file.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            return True
    return False


# The watcher: stdlib only, no site, so it starts in a few milliseconds. argv[1] is the
# run's pattern. It waits for EOF on stdin (irisd gone); "q" means irisd stopped cleanly
# and swept already.
_LIFELINE = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if os.read(0, 1) == b"q":
    sys.exit(0)
pattern, key = sys.argv[1], b"IRIS_RUN="
def marked():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open("/proc/" + name + "/environ", "rb") as f:
                    env = f.read().split(b"\\0")
            except OSError:
                continue
            for entry in env:
                if entry.startswith(key) and entry[len(key):].decode(errors="replace").startswith(pattern):
                    found.append(int(name))
    return found
def kill(sig):
    pids = marked()
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    return pids
if kill(signal.SIGTERM):
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline and marked():
        time.sleep(0.05)
    kill(signal.SIGKILL)
"""


class Containment:
    """The markers of one run of irisd, its lifeline, and its sweeps.

    ``new_marker`` gives each child its own marker (``launcher.marked_claude_child``: a
    ClaudeProcess whose stop also stops everything holding that marker).
    ``serve`` sweeps what earlier runs left, starts the lifeline, and on the way out
    (cancelled) stops whatever of this run is still marked.
    """

    def __init__(self, home: Path, *, run_id: str | None = None) -> None:
        self.home_pattern = f"{home_id(home)}:"
        self.run_pattern = f"{self.home_pattern}{run_id or secrets.token_hex(4)}:"
        self._serial = 0
        self._lifeline: subprocess.Popen[bytes] | None = None

    def new_marker(self) -> str:
        self._serial += 1
        return f"{self.run_pattern}{self._serial}"

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep leftovers, start the lifeline, report started; until cancelled, then stop
        what is left of this run (shielded, bounded) and release the lifeline."""
        leftovers = await trio.to_thread.run_sync(stop_marked, self.home_pattern)
        if leftovers:
            log.warning("stopped processes an earlier irisd left running", extra={"pids": leftovers})
        self._lifeline = await trio.to_thread.run_sync(self._start_lifeline)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                left = await trio.to_thread.run_sync(stop_marked, self.run_pattern)
                if left:
                    log.warning("stopped processes left by stopped claude children", extra={"pids": left})
                await trio.to_thread.run_sync(self._release_lifeline)

    def _start_lifeline(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LIFELINE, self.run_pattern, str(LIFELINE_GRACE_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to irisd's terminal or group does not reach it
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},  # no marker: it must not stop itself
            cwd="/",
        )

    def _release_lifeline(self) -> None:
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is None or lifeline.stdin is None:
            return
        with contextlib.suppress(OSError):
            lifeline.stdin.write(b"q")
            lifeline.stdin.close()
        try:
            lifeline.wait(timeout=5)
        except subprocess.TimeoutExpired:
            lifeline.kill()
            lifeline.wait()

    @property
    def lifeline_pid(self) -> int | None:
        return self._lifeline.pid if self._lifeline else None

