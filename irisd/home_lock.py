"""One irisd per Iris home: an exclusive lock on ``data/irisd.lock`` while it runs.

Two daemons on one database would each reset the other's process states and mark its
running tells interrupted. They can meet when started at once (before either socket
answers) or on different sockets (a systemd service and a hand-started ``irisd``). The
kernel drops the lock when the process exits, however it exits, so it never goes stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from irisd.store.db import store_error
from protocol.errors import IrisError


class HomeInUseError(IrisError):
    """Another irisd runs on the same Iris home (database)."""

    code = "home_in_use"


@contextlib.contextmanager
def hold_home_lock(data_dir: Path) -> Iterator[None]:
    """Hold the lock of ``data_dir`` for the ``with`` block; raises HomeInUseError if taken,
    StoreError (with the fix) if the folder cannot be written (full, read-only)."""
    path = data_dir / "irisd.lock"
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise store_error(exc, path, fix="then start irisd again", what="the lock file") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            raise HomeInUseError(
                f"another irisd (pid {holder}) is using {data_dir}; stop it first ('iris daemon stop', "
                "or kill that pid), or give this one its own IRIS_HOME"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:
            raise store_error(exc, path, fix="then start irisd again", what="the lock file") from None
        yield
    finally:
        os.close(fd)  # releases the lock
