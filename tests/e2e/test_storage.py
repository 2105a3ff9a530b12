"""A full disk and a read-only data folder, for real (a small tmpfs mounted for the test)
and by injection (every write failing on cue, ``fakes/faults.py``), with the real claude:
irisd stays up and says what is wrong, and what it must deliver is delivered once writes
succeed again. Start-up on such a disk exits 2 with the reason."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import REPO, Iris, wait_for


@contextlib.contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A small tmpfs on ``folder`` (the tests run as root; mounting failing is a failure)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write a file until the disk is full; returns it (remove it to free the space)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # to the last byte
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full:
        (folder / "probe").write_bytes(b"x")
    assert full.value.errno == errno.ENOSPC
    return filler


def irisd_once(iris: Iris) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "irisd.main", "--log-level", "error"],
        env=iris.env, capture_output=True, text=True, timeout=60, cwd=iris.root,
    )


def test_start_up_on_a_full_disk_exits_2_with_the_reason(iris: Iris) -> None:
    iris.add_team("alpha")
    with tmpfs(iris.home, "1m"):
        iris.write_config()
        fill(iris.home)
        result = irisd_once(iris)
    assert result.returncode == 2, result.stderr
    assert "cannot be written: the disk is full; free space on that disk, then start irisd again" in result.stderr
    assert "Traceback" not in result.stderr


def test_start_up_on_a_read_only_data_folder_exits_2_with_the_reason(iris: Iris) -> None:
    iris.add_team("alpha")
    with tmpfs(iris.home, "4m"):
        iris.write_config()
        subprocess.run(["mount", "-o", "remount,ro", str(iris.home)], check=True)
        result = irisd_once(iris)
    assert result.returncode == 2, result.stderr
    assert "it is read-only (or not yours to write)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.claude
def test_on_a_full_disk_irisd_serves_on_and_delivers_a_persisted_tell_once_space_returns(iris: Iris) -> None:
    """A real full file system: what SQLite can still write depends on the room left in
    its files, so each operation either works or fails with the disk-full message."""
    iris.add_team("alpha")
    with tmpfs(iris.home, "8m"):
        iris.start()
        assert iris.cli("tell", "alpha", "warm up").returncode == 0
        filler = fill(iris.home)

        assert iris.cli("status").returncode == 0
        for args in (["tell", "alpha", "while full", "--persist"], ["tell", "alpha", "while full"]):
            result = iris.cli(*args)
            assert result.returncode == 0 or "the disk is full; free space on that disk" in result.stderr, (
                result.stderr + iris.log()[-3000:]
            )
        assert iris.process is not None and iris.process.poll() is None
        assert iris.cli("status").returncode == 0

        filler.unlink()
        stored = iris.cli_json("tell", "alpha", "after the disk was freed", "--persist")

        def delivered() -> bool:
            rows = iris.cli_json("notifications", "--all")
            return all(row["status"] == "delivered" for row in rows) and any(row["id"] == stored["id"] for row in rows)

        wait_for(delivered, 120, "every persisted tell to be delivered")
        iris.stop()
    assert "Traceback" not in iris.log()


@pytest.mark.claude
def test_injected_write_faults_hold_a_persisted_tell_back_until_writes_succeed(iris: Iris) -> None:
    """Every write fails while a switch file exists (an injected FullError)."""
    iris.add_team("alpha")
    switch = iris.root / "disk-full"
    iris.env.update(IRIS_FAULT_FILE=str(switch), PYTHONPATH=str(REPO / "tests"))
    iris.write_config()
    with iris.log_path.open("ab") as log:
        iris.process = subprocess.Popen(
            [sys.executable, "-m", "fakes.faults", "--log-level", "debug"],
            env=iris.env, stdout=subprocess.DEVNULL, stderr=log, cwd=iris.root,
        )
    iris.wait_ready()
    stored = iris.cli_json("tell", "alpha", "@slow:1500 deliver me once", "--persist")
    switch.touch()  # while its delivery starts or runs (slowly): its writes are refused
    refused = iris.cli("tell", "alpha", "now", "--persist")
    assert refused.returncode == 1 and "cannot be written: the disk is full" in refused.stderr
    status = iris.cli_json("status")
    assert status["pid"] == iris.process.pid
    wait_for(lambda: "cannot be written: the disk is full" in iris.log(), 60, "a refused write in the background")
    switch.unlink()

    def delivered() -> dict[str, object] | None:
        rows = iris.cli_json("notifications", "--all")
        return next((r for r in rows if r["id"] == stored["id"] and r["status"] == "delivered"), None)

    row = wait_for(delivered, 120, "the persisted tell to be delivered")
    tell = iris.cli_json("result", str(row["tell_id"]))
    assert tell["tell_status"] == "completed" and tell["text"].endswith("deliver me once")
    assert iris.process.poll() is None
    assert "Traceback" not in iris.log()
