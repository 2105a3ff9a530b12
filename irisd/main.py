"""``irisd``: run the daemon in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NoReturn

import trio

from iris_common.paths import IrisPaths
from irisd import __version__
from irisd.daemon import Daemon
from irisd.logs import setup_logging
from irisd.reload import read_config
from irisd.systemd import SystemdEnv
from protocol.errors import IrisError

log = logging.getLogger("irisd")

# Draining waits for claude children to exit (3 s grace each, in parallel); the unit's
# TimeoutStopSec leaves room above this.
DRAIN_TIMEOUT_S = 10.0


# glibc's mallopt parameters: buffers up to MMAP_THRESHOLD come from the heap, and up to
# TRIM_THRESHOLD of freed memory at its top is kept for the next ones (see keep_freed_memory).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 1024 * 1024
TRIM_THRESHOLD = 2 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep the memory of large buffers for the next ones. By default
    a buffer over 128 KiB (a page of a transcript, its frame: 256 KiB) is mapped fresh from
    the kernel and unmapped when freed, and freed memory at the heap's top goes back at once:
    each page of a long transcript faulted its memory in again (measured: 643 page faults
    and about 3 ms of irisd's 22 ms of CPU per read of 10,000 lines; 3 faults with this).
    irisd keeps at most TRIM_THRESHOLD more than it uses. False where the C library has no
    ``mallopt`` (musl, macOS): nothing changes there."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def main(argv: list[str] | None = None) -> int:
    keep_freed_memory()
    parser = argparse.ArgumentParser(prog="irisd", description="The Iris daemon (runs in the foreground).")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--version", action="version", version=f"irisd {__version__}")
    parser.add_argument(
        "--pid-file", type=Path, help="Write irisd's pid here once it answers; removed when it stops."
    )
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    paths = IrisPaths.from_env()
    failed = False
    try:
        config, paths = read_config(paths)
        daemon = Daemon(config, paths, systemd=SystemdEnv.take())
        try:
            trio.run(_run, daemon, args.pid_file)
        finally:
            if args.pid_file is not None:
                _remove_pid_file(args.pid_file)
    except* IrisError as group:  # bad config, socket in use, database unreadable, ...
        failed = True
        for exc in _leaves(group):
            log.error("irisd cannot run", extra={"error": str(exc)})
            print(f"irisd: {exc}", file=sys.stderr)
    if failed:
        return 2
    log.info("irisd stopped")
    return 0


def _leaves(group: BaseExceptionGroup[IrisError]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


async def _run(daemon: Daemon, pid_file: Path | None) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_handle_signals, daemon, signals, nursery.cancel_scope)

            async def serve_then_stop(*, task_status: trio.TaskStatus[None]) -> None:
                await daemon.run(task_status=task_status)
                nursery.cancel_scope.cancel()  # drained: nothing left to wait for

            await nursery.start(serve_then_stop)
            if pid_file is not None:
                try:
                    _write_pid_file(pid_file)  # tiny and local: not worth a thread
                except OSError as exc:
                    raise IrisError(f"cannot write the pid file {pid_file}: {exc.strerror}; free space or "
                                    "fix the folder's permissions, then start irisd again") from None


async def _handle_signals(
    daemon: Daemon, signals: AsyncIterator[int], everything: trio.CancelScope
) -> None:
    """First signal: drain, within DRAIN_TIMEOUT_S. Second: stop at once (children are
    still stopped and tells recorded; only waiting callers get no answer)."""
    async for signum in signals:
        name = signal.Signals(signum).name
        if signum == signal.SIGHUP:  # reload config.yaml, in the background of the signal loop
            log.info("reloading config.yaml", extra={"signal": name})
            await daemon.reload()
            continue
        if not daemon.stop_requested:
            log.info("stopping", extra={"signal": name})
            daemon.request_stop()
            everything.deadline = min(everything.deadline, trio.current_time() + DRAIN_TIMEOUT_S)
        else:
            log.warning("stopping at once", extra={"signal": name})
            everything.cancel()


def _write_pid_file(path: Path) -> None:
    """Atomically, so a reader never sees a half-written pid."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(f"{os.getpid()}\n")
    partial.replace(path)


def _remove_pid_file(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text()) == os.getpid():  # not a successor's
            path.unlink()


def run() -> NoReturn:
    """The ``irisd`` command: ``main``, then the process ends at once with its code.

    Everything irisd owns is closed by then (children stopped, the database closed, the pid
    file removed, the log flushed here), so the interpreter's teardown of its modules and
    heap has nothing left to do; it took 0.6-1 s of every stop (measured on a loaded 2-core
    machine: 0.7-0.9 s from SIGTERM to exit, 0.13-0.25 s without it), which a systemd stop, a
    restart and every test of a real irisd wait for. An unexpected exception still ends
    the normal way, with its traceback."""
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
