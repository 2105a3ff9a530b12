"""``irisd``: run the daemon in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

import trio

from irisd import __version__
from irisd.config import load_config
from irisd.daemon import Daemon
from irisd.logs import setup_logging
from irisd.paths import IrisPaths
from protocol.errors import IrisError

log = logging.getLogger("irisd")


def main(argv: list[str] | None = None) -> int:
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
        config = load_config(paths.config_file)
        try:
            trio.run(_run, Daemon(config, paths), args.pid_file)
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
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.run)
            if pid_file is not None:
                _write_pid_file(pid_file)  # tiny and local: not worth a thread

            async def stop_on_signal() -> None:
                async for signum in signals:
                    log.info("stopping", extra={"signal": signal.Signals(signum).name})
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(stop_on_signal)


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


if __name__ == "__main__":
    sys.exit(main())
