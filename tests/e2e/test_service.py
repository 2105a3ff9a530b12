"""irisd as a service: draining on SIGTERM, systemd's notifications and socket
activation, the socket's guards, and what the claude children inherit."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import apsw
import pytest
import trio

from harness import Iris, claude_processes_under, wait_for
from iris_cli.client import Client
from irisd.dispatch import Dispatcher
from irisd.serving import Serving
from irisd.socket_server import Server, SocketError, open_unix_listener, peer_allowed, prepare_socket_dir
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.messages import ErrorReply, GetStatus, Hello, StatusReply, Watch, Welcome

DEADLINE_S = 60.0
STOP_WITHIN_S = 10.0  # the unit's TimeoutStopSec is 20 s


def status(iris: Iris) -> StatusReply:
    reply = iris.request(GetStatus())
    assert isinstance(reply, StatusReply)
    return reply


def tell_in_background(iris: Iris, team: str, message: str, *options: str) -> str:
    result = iris.cli("tell", team, message, "--timeout", "-1", "--json", *options)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["id"])


def read_frame(sock: socket.socket) -> object:
    (size,) = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))
    return decode_server_message(sock.recv(size, socket.MSG_WAITALL))


def stored_statuses(iris: Iris) -> dict[str, str]:
    db = apsw.Connection(str(iris.home / "data" / "iris.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(row[0]): str(row[1]) for row in db.execute("SELECT id, status FROM tells")}
    finally:
        db.close()


@pytest.mark.claude
def test_sigterm_drains_interrupts_tells_and_leaves_no_claude(iris: Iris) -> None:
    alpha = iris.add_team("alpha")
    beta = iris.add_team("beta")
    iris.start()
    watcher = socket.socket(socket.AF_UNIX)  # a watch never ends: draining must not wait for it
    watcher.settimeout(DEADLINE_S)
    watcher.connect(str(iris.socket))
    watcher.sendall(encode(Hello(protocol_version=PROTOCOL_VERSION)) + encode(Watch()))
    assert isinstance(read_frame(watcher), Welcome)
    running = [
        tell_in_background(iris, "alpha", "@hang first"),
        tell_in_background(iris, "alpha", "@hang from beta", "--from", "beta"),
    ]
    queued = tell_in_background(iris, "alpha", "behind the first")  # same pair: waits its turn
    waiting = subprocess.Popen(  # a caller still waiting for its answer
        [sys.executable, "-m", "iris_cli", "tell", "beta", "@hang waiting", "--json"],
        env=iris.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )

    def all_processing() -> bool:
        return [p.state for p in status(iris).processes].count("processing") == 3

    wait_for(all_processing, what="three claude children serving a turn")
    children = claude_processes_under([alpha, beta])
    assert len(children) == 3
    assert not isinstance(read_frame(watcher), ErrorReply)  # an event: the watch is being served

    assert iris.process is not None
    started = time.monotonic()
    iris.process.send_signal(signal.SIGTERM)
    assert iris.process.wait(timeout=STOP_WITHIN_S + 5) == 0, iris.log()
    took = time.monotonic() - started
    iris.process = None
    assert took < STOP_WITHIN_S, f"draining took {took:.1f} s"

    out, err = waiting.communicate(timeout=30)
    assert json.loads(out)["status"] == "interrupted", err  # the waiting caller got its answer
    assert claude_processes_under([alpha, beta]) == []
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)
    # Recorded by the draining daemon itself, before any restart could reconcile them.
    statuses = stored_statuses(iris)
    assert len(statuses) == 4 and set(statuses.values()) == {"interrupted"}
    assert not iris.socket.exists()
    drained = [json.loads(line) for line in iris.log().splitlines() if '"msg":"drained"' in line]
    assert drained[-1]["requests_unanswered"] == 0  # every caller got its answer, no watch waited for
    watcher.close()

    iris.start()
    for tell_id in [*running, queued]:
        answer = json.loads(iris.cli("result", tell_id, "--json").stdout)
        assert answer["status"] == "interrupted"
        assert "irisd stopped" in answer["error"]


# --- systemd ---------------------------------------------------------------------------


def receive_until(sock: socket.socket, wanted: Callable[[list[bytes]], bool]) -> list[bytes]:
    received: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while not wanted(received):
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            received.append(sock.recv(4096))
        except TimeoutError:
            raise AssertionError(f"systemd did not hear enough; got {received}") from None
    return received


def test_ready_and_watchdog_reach_the_notify_socket(
    iris: Iris, notify_socket: tuple[socket.socket, str]
) -> None:
    sock, path = notify_socket
    iris.add_team("alpha")
    iris.env.update(NOTIFY_SOCKET=path, WATCHDOG_USEC="200000")  # a heartbeat every 0.1 s
    iris.start(wait=False)

    first = receive_until(sock, lambda got: bool(got))
    assert first[0].startswith(b"READY=1\n")
    assert b"STATUS=serving 1 teams" in first[0]
    with iris.client() as client:  # READY means it answers
        assert isinstance(client.connect(), Welcome)

    beats = receive_until(sock, lambda got: got.count(b"WATCHDOG=1") >= 3)
    assert set(beats) == {b"WATCHDOG=1"}

    assert iris.stop() == 0
    rest = receive_until(sock, lambda got: any(m.startswith(b"STOPPING=1") for m in got))
    assert set(rest[:-1]) <= {b"WATCHDOG=1"}


# Puts the test's listening socket at fd 3 and sets LISTEN_PID to irisd's own pid
# (the pid survives the exec), as systemd does.
_ACTIVATE = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); "
    "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES='irisd.socket'); "
    "os.execv(sys.executable, [sys.executable, '-m', 'irisd.main', '--log-level', 'debug'])"
)


def start_socket_activated(iris: Iris) -> socket.socket:
    """Start irisd the way systemd's irisd.socket does; returns the listening socket."""
    iris.socket.parent.chmod(0o700)
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listening.bind(str(iris.socket))
    finally:
        os.umask(old_umask)
    listening.listen()
    iris.write_config()
    with iris.log_path.open("ab") as log:
        iris.process = subprocess.Popen(
            [sys.executable, "-c", _ACTIVATE, str(listening.fileno())],
            pass_fds=(listening.fileno(),),
            env=iris.env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=iris.root,
        )
    return listening


def test_socket_activation_serves_the_inherited_socket(iris: Iris) -> None:
    iris.add_team("alpha")
    listening = start_socket_activated(iris)
    try:
        # Connecting before irisd is up works: systemd's socket queues the connection.
        with iris.client(timeout=DEADLINE_S) as early:
            welcome = early.connect()
        assert iris.process is not None and welcome.pid == iris.process.pid
        assert "serving the socket systemd passed" in iris.log()
        assert iris.stop() == 0
        assert iris.socket.exists()  # systemd's, not irisd's to remove
    finally:
        listening.close()


@pytest.mark.claude
def test_children_get_only_stdio_and_none_of_the_daemon_variables(
    iris: Iris, notify_socket: tuple[socket.socket, str]
) -> None:
    alpha = iris.add_team("alpha")
    report = iris.root / "child-report.json"
    iris.settings["claudePath"] = str(_fd_reporting_claude(iris, report))
    iris.env.update(NOTIFY_SOCKET=notify_socket[1], WATCHDOG_USEC="60000000", IRIS_SECRET_TOKEN="s3cret")
    listening = start_socket_activated(iris)
    try:
        iris.wait_ready()
        result = iris.cli("tell", "alpha", "hello")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "echo #1: hello\n"

        # What irisd handed over, as seen by the child before it became claude.
        seen = json.loads(report.read_text())
        assert seen["fds"] == [0, 1, 2], seen
        # And the live claude process, from /proc.
        (pid,) = [p.pid for p in status(iris).processes if p.pid]
        assert Path(f"/proc/{pid}/cwd").resolve() == alpha.resolve()
        environ = dict(
            entry.split("=", 1) for entry in Path(f"/proc/{pid}/environ").read_text().split("\0") if entry
        )
        leaked = [k for k in environ if k == "NOTIFY_SOCKET" or k.startswith(("LISTEN_", "WATCHDOG_"))]
        assert leaked == []
        assert "IRIS_SECRET_TOKEN" not in environ
        assert environ["ANTHROPIC_BASE_URL"] == iris.env["ANTHROPIC_BASE_URL"]  # the rest is inherited
        inherited = os.fstat(listening.fileno()).st_ino
        targets = _fd_targets(pid)
        assert f"socket:[{inherited}]" not in targets.values()
        assert not any(str(iris.home) in target for target in targets.values())  # the database
    finally:
        iris.stop()
        listening.close()


def _fd_reporting_claude(iris: Iris, report: Path) -> Path:
    """A claude that writes down its fds first, then becomes the real claude (same pid)."""
    wrapper = iris.root / "claude-wrapper"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "with os.scandir('/proc/self/fd') as fds:\n"
        "    found = {int(e.name): os.readlink(e.path) for e in fds}\n"
        "listing = f'/proc/{os.getpid()}/fd'\n"
        "mine = sorted(fd for fd, target in found.items() if target != listing)\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'fds': mine, 'targets': found}}))\n"
        f"os.execv({iris.claude!r}, [{iris.claude!r}, *sys.argv[1:]])\n"
    )
    wrapper.chmod(0o755)
    return wrapper


def _fd_targets(pid: int) -> dict[int, str]:
    found = {}
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue  # closed while we looked
    return found


# --- the socket's guards ---------------------------------------------------------------


def test_socket_folder_of_another_user_or_open_to_others_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SocketError, match=r"writable by other users.*folder only you can write") as refused:
        prepare_socket_dir(shared)
    assert "chmod" not in str(refused.value)  # the folder may be one the machine shares
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o770)
    with pytest.raises(SocketError, match="writable by other users"):
        prepare_socket_dir(group)

    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(foreign, 65534, -1)  # nobody's
    else:
        foreign = Path("/")  # root's
    with pytest.raises(SocketError, match=r"belongs to uid .* set IRIS_SOCKET"):
        prepare_socket_dir(foreign)

    fresh = tmp_path / "fresh" / "run"
    prepare_socket_dir(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_irisd_refuses_to_start_on_a_shared_socket_folder(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.socket.parent.chmod(0o777)
    iris.write_config()
    result = subprocess.run(
        [sys.executable, "-m", "irisd.main", "--log-level", "error"],
        env=iris.env, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "is writable by other users" in result.stderr
    assert "set IRIS_SOCKET to a path in a folder only you can write" in result.stderr
    assert "chmod" not in result.stderr
    assert not iris.socket.exists()


def test_a_socket_in_tmp_gets_a_safe_suggestion(iris: Iris) -> None:
    """IRIS_SOCKET=/tmp/x.sock used to suggest 'chmod 700 /tmp', which breaks the machine."""
    iris.add_team("alpha")
    iris.write_config()
    result = subprocess.run(
        [sys.executable, "-m", "irisd.main", "--log-level", "error"],
        env={**iris.env, "IRIS_SOCKET": "/tmp/iris-test-x.sock"}, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "socket folder /tmp is writable by other users" in result.stderr
    assert "chmod" not in result.stderr and "folder only you can write" in result.stderr
    assert not Path("/tmp/iris-test-x.sock").exists()


def test_a_second_irisd_on_the_same_home_is_refused_even_on_another_socket(iris: Iris) -> None:
    iris.add_team("alpha")
    first = iris.start()
    other_socket = iris.socket.parent / "second.sock"
    result = subprocess.run(
        [sys.executable, "-m", "irisd.main", "--log-level", "error"],
        env={**iris.env, "IRIS_SOCKET": str(other_socket)}, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert f"another irisd (pid {first.pid}) is using {iris.home / 'data'}" in result.stderr
    assert not other_socket.exists()
    with iris.client() as client:  # the first one serves on, untouched
        assert isinstance(client.request(GetStatus()), StatusReply)


def test_peer_allowed_only_for_the_daemons_own_user() -> None:
    assert peer_allowed(1000, 1000)
    assert not peer_allowed(1001, 1000)
    assert not peer_allowed(0, 1000)  # not even root drives a user's agents


class _FakeDispatcher:
    async def dispatch(self, request: Any, caller: Any, send_event: Any) -> Welcome:
        return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version="test", pid=os.getpid())


async def _exchange_hello(path: Path, *, until_eof: bool) -> tuple[object, bytes]:
    """Send a hello on a fresh connection: the reply, and (``until_eof``) what follows it
    until the daemon closes the connection."""
    stream = await trio.open_unix_socket(str(path))
    async with stream:
        await stream.send_all(encode(Hello(protocol_version=PROTOCOL_VERSION)))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            data += await stream.receive_some(65536)
        while until_eof and (chunk := await stream.receive_some(65536)):
            data += chunk
    size = int.from_bytes(data[:4], "big")
    return decode_server_message(data[4 : 4 + size]), data[4 + size :]


@pytest.mark.parametrize("same_user", [True, False])
async def test_clients_of_another_user_are_refused(tmp_path: Path, same_user: bool) -> None:
    path = Path(tempfile.mkdtemp(prefix="iris-peer-", dir="/tmp")) / "irisd.sock"
    listener = await open_unix_listener(path)
    # Tests run as one user: make the daemon belong to another one instead.
    allowed = os.getuid() if same_user else os.getuid() + 1
    server = Server(listener, Serving(cast(Dispatcher, _FakeDispatcher())), allowed_uid=allowed)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            reply, rest = await _exchange_hello(path, until_eof=not same_user)
            nursery.cancel_scope.cancel()
    if same_user:
        assert isinstance(reply, Welcome)
        return
    assert isinstance(reply, ErrorReply) and reply.code == "permission_denied"
    assert f"belongs to uid {allowed}" in reply.message and "start an irisd of your own" in reply.message
    assert rest == b""  # and the connection was closed


def test_the_cli_shows_a_refusal_as_an_error(tmp_path: Path) -> None:
    """The blocking client (CLI, MCP shim) turns the refusal into an IrisError."""
    folder = Path(tempfile.mkdtemp(prefix="iris-peer-", dir="/tmp"))
    path = folder / "irisd.sock"

    async def serve_once() -> None:
        listener = await open_unix_listener(path)
        server = Server(listener, Serving(cast(Dispatcher, _FakeDispatcher())), allowed_uid=os.getuid() + 1)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await trio.to_thread.run_sync(_connect_and_expect_refusal, path)
            nursery.cancel_scope.cancel()

    trio.run(serve_once)
    path.unlink()
    folder.rmdir()


def _connect_and_expect_refusal(path: Path) -> None:
    from protocol.errors import IrisError

    with pytest.raises(IrisError, match="serves only that user"), Client(path, timeout=10) as client:
        client.connect()
