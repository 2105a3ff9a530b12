"""Fixtures shared by every kind of test, and each kind's default time limit.

The suite is split by kind, one folder each, each with its own conftest:
  unit/       pure machines and small units: no processes, no sockets, no clock
  subsystem/  trio subsystems in process (fake children on the virtual clock, real sockets)
  e2e/        a real irisd, the real claude and the scripted model
  browser/    the dashboard in Debian's chromium (Playwright)
  ssh/        teams on "another host": a real sshd on loopback
  mesh/       irisds on real NATS JetStream servers (one, or a 3-node cluster)
Every test has a time limit (pytest-timeout): a hang fails that test, with its stack,
instead of stalling the run. A test that needs longer says so with ``@pytest.mark.timeout``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# An editable install maps the top-level packages it saw when it was installed: one added
# since (a redesign moves code between packages) is invisible until it is installed again.
_FIRST_PARTY = ("protocol", "iris_common", "iris_mcp", "irisd", "iris_cli", "scripted_model")
_ROOT = Path(__file__).resolve().parent.parent
_missing = [name for name in _FIRST_PARTY if (_ROOT / name).is_dir() and importlib.util.find_spec(name) is None]
if _missing:
    pytest.exit(f"this virtualenv does not know the package(s) {', '.join(_missing)}: "
                f"run {sys.prefix}/bin/pip install --no-deps -e . (then the tests again)", returncode=4)

# pytest rewrites each test module's asserts (parse, rewrite, compile: about 8 s of CPU for the
# suite, paid again by every xdist worker) and caches the result as a .pyc beside the module, but
# not where PYTHONDONTWRITEBYTECODE is set (as on many machines, this one too): write them anyway.
# Modules imported before this line (the conftests, pytest's plugins) are not affected.
sys.dont_write_bytecode = False

from harness import Iris, claude_binary  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402
from suite_order import longest_first  # noqa: E402


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return claude_binary()


@pytest.fixture(scope="session")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


@pytest.fixture
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket standing in for systemd's notification socket, at a short
    path (Unix socket paths are limited to about 100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="iris-notify-", dir="/tmp"))
    path = str(folder / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield sock, path
    sock.close()
    os.unlink(path)
    folder.rmdir()


@pytest.fixture
def iris(tmp_path: Path, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """A fresh, isolated Iris (not started: add teams, then ``iris.start()``)."""
    instance = Iris(tmp_path, model_url=model.base_url, claude=claude_bin)
    yield instance
    if instance.process is not None:
        instance.stop(timeout=30)
    shutil.rmtree(instance.socket.parent, ignore_errors=True)


# Each kind's default limit in seconds: generous for a loaded 2-core machine, far below a hang.
TIMEOUTS = {"unit": 30, "subsystem": 60, "e2e": 240, "browser": 240, "ssh": 240, "mesh": 240}
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = item.path.relative_to(HERE).parts[0]
        if kind in TIMEOUTS:
            item.add_marker(getattr(pytest.mark, kind))
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(TIMEOUTS[kind]))
    # Longest modules first (suite_order.py): xdist hands them out in this order, as
    # --no-loadscope-reorder (pyproject.toml) tells it. A module's tests keep their order.
    def module(item: pytest.Item) -> str:
        return item.path.relative_to(HERE.parent).as_posix()

    rank = {name: i for i, name in enumerate(longest_first([module(item) for item in items]))}
    items.sort(key=lambda item: rank[module(item)])


def pytest_runtest_setup(item: pytest.Item) -> None:
    """No test starts with an asyncio loop running in this thread, unless its module opened
    one (the browser tests' Playwright runs its loop here): a loop left running makes a later
    test's ``asyncio.run`` fail far from its cause, on whichever worker ran the leak first."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    if item.path.relative_to(HERE).parts[0] != "browser":
        pytest.fail(f"an asyncio loop is running in the test thread before {item.nodeid} starts ({loop!r}): "
                    "a fixture of an earlier module (a browser?) outlived it", pytrace=False)
