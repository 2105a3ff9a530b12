"""systemd's handshake: pure parsing, real datagrams, a real inherited listening socket."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import trio
import trio.testing

from irisd.systemd import (
    Notifier,
    SystemdEnv,
    SystemdError,
    inherited_listener,
    listen_fds,
    notify_address,
    notify_message,
    serve_watchdog,
    socket_path_of,
    watchdog_interval,
)

PID = 4242


def test_notify_address_paths_and_abstract_names() -> None:
    assert notify_address("/run/user/1000/systemd/notify") == "/run/user/1000/systemd/notify"
    assert notify_address("@/org/systemd/notify/123") == b"\0/org/systemd/notify/123"
    assert notify_address(None) is None
    assert notify_address("") is None
    assert notify_address("vsock:2:1234") is None


def test_notify_message_is_one_line_per_field() -> None:
    assert notify_message(READY=1, STATUS="serving 2 teams") == b"READY=1\nSTATUS=serving 2 teams"
    assert notify_message(STATUS="two\nlines") == b"STATUS=two lines"


def test_watchdog_interval_honours_watchdog_pid() -> None:
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}, PID) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(PID)}, PID) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, PID) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}, PID) is None
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}, PID) is None
    assert watchdog_interval({}, PID) is None


def test_listen_fds_only_when_listen_pid_is_ours() -> None:
    assert listen_fds({"LISTEN_FDS": "1", "LISTEN_PID": str(PID)}, PID) == 1
    assert listen_fds({"LISTEN_FDS": "1", "LISTEN_PID": "1"}, PID) == 0  # our parent's
    assert listen_fds({"LISTEN_FDS": "1"}, PID) == 0  # LISTEN_PID is mandatory
    assert listen_fds({"LISTEN_FDS": "x", "LISTEN_PID": str(PID)}, PID) == 0
    assert listen_fds({}, PID) == 0


def test_take_reads_the_handshake_and_removes_it() -> None:
    environ = {
        "NOTIFY_SOCKET": "@notify",
        "WATCHDOG_USEC": "2000000",
        "WATCHDOG_PID": str(os.getpid()),
        "LISTEN_FDS": "1",
        "LISTEN_PID": str(os.getpid()),
        "LISTEN_FDNAMES": "irisd.socket",
        "HOME": "/home/me",
    }
    found = SystemdEnv.take(environ)
    assert found == SystemdEnv(notify_socket="@notify", watchdog_s=2.0, listen_fds=1)
    assert environ == {"HOME": "/home/me"}


def test_notifier_sends_to_a_path(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    notifier = Notifier(path)
    assert notifier.ready("serving 1 teams")
    assert notifier.watchdog()
    assert notifier.stopping("draining")
    assert sock.recv(4096) == b"READY=1\nSTATUS=serving 1 teams"
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert sock.recv(4096) == b"STOPPING=1\nSTATUS=draining"
    notifier.close()


def test_notifier_sends_to_an_abstract_name() -> None:
    name = f"iris-test-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(5)
        notifier = Notifier(f"@{name}")
        assert notifier.ready("up")
        assert sock.recv(4096) == b"READY=1\nSTATUS=up"
        notifier.close()


def test_notifier_without_systemd_does_nothing_and_a_dead_socket_never_raises() -> None:
    assert not Notifier(None).enabled
    assert not Notifier(None).ready("up")
    gone = Notifier("/nonexistent/notify")
    assert gone.enabled and not gone.watchdog() and not gone.watchdog()
    gone.close()


async def test_watchdog_pings_at_half_the_timeout(
    notify_socket: tuple[socket.socket, str], autojump_clock: trio.testing.MockClock
) -> None:
    sock, path = notify_socket
    sock.setblocking(False)
    notifier = Notifier(path)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            await nursery.start(serve_watchdog, notifier, 10.0)
            await trio.sleep(21)  # pings at 0, 5, 10, 15, 20 s
            nursery.cancel_scope.cancel()
    assert trio.current_time() - start == pytest.approx(21)
    pings = []
    while True:
        try:
            pings.append(sock.recv(64))
        except BlockingIOError:
            break
    assert pings == [b"WATCHDOG=1"] * 5
    notifier.close()


async def test_inherited_listener_accepts_a_listening_unix_socket(tmp_path: Path) -> None:
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(tmp_path / "s"))
    listening.listen()
    fd = os.dup(listening.fileno())
    listening.close()
    listener = inherited_listener(fd)
    assert socket_path_of(listener) == str(tmp_path / "s")
    assert not os.get_inheritable(fd)  # no claude child can get it
    with trio.fail_after(5):
        client = await trio.open_unix_socket(str(tmp_path / "s"))
        async with client, await listener.accept() as server:
            await client.send_all(b"hi")
            assert await server.receive_some(2) == b"hi"
    await listener.aclose()


def test_inherited_listener_refuses_what_systemd_should_not_have_passed(tmp_path: Path) -> None:
    with pytest.raises(SystemdError, match="not open"):
        inherited_listener(_closed_fd())
    with open(tmp_path / "file", "w") as file, pytest.raises(SystemdError, match="not a socket"):
        inherited_listener(file.fileno())
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        with pytest.raises(SystemdError, match="not a Unix stream socket"):
            inherited_listener(tcp.fileno())
        assert tcp.fileno() >= 0  # left open for its owner
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as quiet:
        quiet.bind(str(tmp_path / "quiet"))
        with pytest.raises(SystemdError, match="not listening"):
            inherited_listener(quiet.fileno())


def _closed_fd() -> int:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    return fd
