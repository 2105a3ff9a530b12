"""Containment: nothing a claude starts outlives it, its pair, or irisd.

How it works
------------
* **Ancestry.** Every claude child is started by the run's reaper (``reaper.py``,
  ``reaper_process.py``): two small processes per run of irisd, both subreapers
  (``PR_SET_CHILD_SUBREAPER``), so that whatever claude starts, in any process group or
  session, with any environment, re-parents to the reaper when its own parent ends, never
  to PID 1. When irisd stops or dies in any way (SIGKILL included) the reaper stops every
  process below it (SIGTERM, 1 s, SIGKILL); when one of the two reapers is killed, the
  other one still holds everything (see ``reaper_process.py``).
* **A marker.** Every claude child also gets ``IRIS_RUN=<home>:<run>:<child>`` in its
  environment: ``<home>`` names the ``IRIS_HOME`` (a hash of its path), ``<run>`` this run
  of irisd, ``<child>`` the child. Whatever claude starts inherits the variable (unless it
  clears its environment, ``env -i``); ``/proc/PID/environ`` shows it. It tells which
  claude a process belongs to, which ancestry cannot once the process was re-parented.
* **Stopping a child** signals its process group AND every process carrying its marker:
  SIGTERM, the grace period, SIGKILL. That happens whenever the child ends: its pair
  stops it (sleep, eviction, idle reaping, response timeout, drain) or it exits by
  itself (what it left running in the background is stopped then).
* **A sweep at start-up.** Holding the home's lock (so no other irisd of this home is
  alive), irisd stops every process with its home's marker, any run, before a pair
  starts: what escaped the reaper (both reapers killed) does not share a session with a
  new claude.

Why two processes and not irisd as the subreaper: re-parented orphans would be irisd's
children, and reaping them must not take the exit statuses of trio's own children; and when
irisd died, its orphans would go to PID 1. Why not ``PR_SET_PDEATHSIG``: trio starts
processes from worker threads, and the signal fires when that thread exits, not irisd; it
would not reach grandchildren either. Why not a cgroup: not delegated to an ordinary user
everywhere (containers, no systemd). Without Linux (no subreaper, no ``/proc``) only
claude's process group is stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import signal
import time
from pathlib import Path

import trio

from irisd.claude import reaper_process
from irisd.claude.reaper import Reaper, reaping_possible

log = logging.getLogger("irisd.containment")

MARKER = "IRIS_RUN"
SWEEP_GRACE_S = 3.0
REAPER_GRACE_S = 1.0
matches = reaper_process.matches


def home_id(home: Path) -> str:
    return hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:12]


def marked_processes(pattern: str) -> list[int]:
    """Live processes whose marker matches ``pattern`` (never this process). Without
    ``/proc`` (not Linux) there is nothing to find: only process groups are stopped."""
    return reaper_process.marked(pattern)


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
    while time.monotonic() < deadline and reaper_process.alive(found):
        time.sleep(0.05)
    if reaper_process.alive(found):
        signal_marked(pattern, signal.SIGKILL)
    return found


class Containment:
    """The markers of one run of irisd, its reaper, and its sweeps.

    ``new_marker`` gives each child its own marker and ``reaper`` starts it
    (``launcher.marked_claude_child``: a ClaudeProcess whose stop also stops everything
    that holds the marker). ``serve`` sweeps what earlier runs left, starts the reaper, and
    on the way out (cancelled) stops whatever of this run is still marked, then closes the
    reaper, which stops whatever is still below it.
    """

    def __init__(self, home: Path, *, run_id: str | None = None) -> None:
        self.home_pattern = f"{home_id(home)}:"
        self.run_pattern = f"{self.home_pattern}{run_id or secrets.token_hex(4)}:"
        self._serial = 0
        self.reaper = Reaper(self.run_pattern, grace=REAPER_GRACE_S) if reaping_possible() else None

    def new_marker(self) -> str:
        self._serial += 1
        return f"{self.run_pattern}{self._serial}"

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep leftovers, start the reaper, report started; until cancelled, then stop
        what is left of this run (shielded, bounded) and close the reaper."""
        leftovers = await trio.to_thread.run_sync(stop_marked, self.home_pattern)
        if leftovers:
            log.warning("stopped processes an earlier irisd left running", extra={"pids": leftovers})
        async with trio.open_nursery() as nursery:
            if self.reaper is not None:
                await nursery.start(self.reaper.serve)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    left = await trio.to_thread.run_sync(stop_marked, self.run_pattern)
                    if left:
                        log.warning("stopped processes left by stopped claude children", extra={"pids": left})
                nursery.cancel_scope.cancel()  # the reaper closes: what is below it stops

    @property
    def reaper_pid(self) -> int | None:
        """The guard's pid (the spawner is its child)."""
        return self.reaper.guard_pid if self.reaper else None
