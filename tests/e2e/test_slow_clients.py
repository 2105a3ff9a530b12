"""Clients that read nothing or say nothing, against a real irisd with the real claude and
the scripted model: stopping never waits on them, and idle connections never take the
file descriptors the children need."""

from __future__ import annotations

import base64
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from harness import Http, Iris, wait_for
from irisd.http.gate import MAX_ACTIVE_PER_CALLER
from protocol.messages import GetPair, ListTells, PairReply

SMALL_BUFFER = 4096  # the client's receive buffer: it fills at once


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def start_with_1024_files(iris: Iris) -> None:
    iris.write_config()
    with iris.log_path.open("ab") as log:
        iris.process = subprocess.Popen(
            [sys.executable, "-m", "irisd.main"], env=iris.env, stderr=log, stdout=subprocess.DEVNULL,
            cwd=iris.root, preexec_fn=_limit_open_files,
        )
    iris.wait_ready()


def open_events(iris: Iris, token: str) -> tuple[socket.socket, bytes]:
    """A WebSocket upgrade of /api/events with ``token``: the socket and irisd's answer's
    head (after which nothing is read)."""
    url = urllib.parse.urlsplit(iris.http_url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    sock.settimeout(30)
    sock.connect((url.hostname, url.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /api/events HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Bearer {token}\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)  # byte by byte: nothing past the head is read
    return sock, head


def events_client_that_reads_nothing(iris: Iris) -> socket.socket:
    """A WebSocket on /api/events (the owner's token) that, once upgraded, never reads."""
    sock, head = open_events(iris, iris.owner_token)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def stuck_watchers(iris: Iris, count: int) -> list[socket.socket]:
    """``count`` watchers that stopped reading while a long answer streamed past them."""
    clients = [events_client_that_reads_nothing(iris) for _ in range(count)]
    told = iris.cli("tell", "alpha", "@long:30000 @chunks:300 go", timeout=180)
    assert told.returncode == 0, told.stderr  # a pair never waits for its watchers
    return clients


def test_sigterm_stops_irisd_within_the_drain_while_websocket_clients_read_nothing(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    clients = stuck_watchers(iris, 3)
    assert iris.process is not None
    started = time.monotonic()
    iris.process.send_signal(signal.SIGTERM)
    try:
        code = iris.process.wait(timeout=30)
    finally:
        for client in clients:
            client.close()
    took = time.monotonic() - started
    iris.process = None
    assert code == 0
    assert took < 15  # the drain's own bound (irisd.main.DRAIN_TIMEOUT_S) and some room; it hung for good


def test_sigterm_stops_irisd_within_the_drain_while_an_a2a_stream_client_reads_nothing(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    token = iris.cli_json("a2a", "token", "--name", "sleeper")["token"]
    url = urllib.parse.urlsplit(iris.http_url)
    message = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "@long:30000 @chunks:300 go"}]}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}})
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    client.connect((url.hostname, url.port))
    client.sendall(
        f"POST /a2a/alpha HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {token}\r\n"
        f"A2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    # It reads nothing while the answer streams: wait for the tell to finish (the stream is stuck).
    wait_for(
        lambda: any(t.status == "completed" for t in iris.request(ListTells(from_team="a2a:sleeper")).tells),
        timeout=180, what="the streamed tell completed",
    )
    assert iris.process is not None
    started = time.monotonic()
    iris.process.send_signal(signal.SIGTERM)
    try:
        code = iris.process.wait(timeout=30)
    finally:
        client.close()
    iris.process = None
    assert code == 0 and time.monotonic() - started < 15


def test_a_second_sigterm_stops_irisd_at_once_whatever_its_clients_do(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    clients = stuck_watchers(iris, 3)
    process = iris.process
    assert process is not None
    process.send_signal(signal.SIGTERM)
    wait_for(lambda: "stopping" in iris.log(), timeout=30, what="the first signal taken")
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    finally:
        for client in clients:
            client.close()
    iris.process = None
    assert time.monotonic() - started < 8  # children's stop (3 s grace) at most; it hung for good


def test_idle_connections_at_a_1024_file_limit_leave_room_for_children_and_are_closed(iris: Iris) -> None:
    iris.add_team("alpha")
    start_with_1024_files(iris)
    assert iris.process is not None
    url = urllib.parse.urlsplit(iris.http_url)
    idle: list[socket.socket] = []
    try:
        for _ in range(1000):  # no token needed to connect, nothing said
            sock = socket.socket()
            idle.append(sock)
            sock.settimeout(60)
            sock.connect((url.hostname, url.port))  # one at a time: irisd takes each that it will take
            sock.setblocking(True)  # (reads below pass MSG_DONTWAIT)
        told = iris.cli("tell", "alpha", "cold start", timeout=180)  # spawns claude: its pipes need descriptors
        assert told.returncode == 0, told.stderr
        assert "echo #1: cold start" in told.stdout
        health = iris.cli("status", "--json")
        assert health.returncode == 0, health.stderr

        def closed_by_irisd(sock: socket.socket) -> bool:
            try:
                return sock.recv(1, socket.MSG_DONTWAIT) == b""
            except BlockingIOError:
                return False  # still open
            except OSError:
                return True  # reset

        wait_for(lambda: sum(map(closed_by_irisd, idle[:100])) == 100, timeout=60, what="idle connections closed")
    finally:
        for sock in idle:
            sock.close()
    assert iris.process is not None and iris.process.poll() is None
    assert "scripts/install" not in iris.log()


def test_a_childs_token_cannot_take_the_http_face_from_the_owner(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    assert iris.cli("tell", "alpha", "hello", timeout=180).returncode == 0
    pair = iris.request(GetPair(to_team="alpha"))
    assert isinstance(pair, PairReply) and pair.process.pid is not None, pair
    argv = Path(f"/proc/{pair.process.pid}/cmdline").read_bytes().split(b"\0")
    config = json.loads(Path(argv[argv.index(b"--mcp-config") + 1].decode()).read_text())
    token = config["mcpServers"]["iris"]["headers"]["Authorization"].removeprefix("Bearer ")
    opened: list[socket.socket] = []
    try:
        heads = []
        for _ in range(260):
            sock, head = open_events(iris, token)
            opened.append(sock)
            heads.append(head.split(b"\r\n", 1)[0])
        upgraded = heads.count(b"HTTP/1.1 101 ")
        # The child's own MCP session may hold a request or two of its share meanwhile.
        assert MAX_ACTIVE_PER_CALLER - 4 <= upgraded <= MAX_ACTIVE_PER_CALLER, heads
        assert heads.count(b"HTTP/1.1 503 ") == 260 - upgraded
        http = Http(iris)
        assert http.json("GET", "/api/status")[0] == 200
        assert http.json("GET", "/health", auth=False)[0] == 200
    finally:
        for sock in opened:
            sock.close()
