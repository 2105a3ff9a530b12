"""Bad input and too many clients against a real irisd: the CLI with bytes that are not
UTF-8 or hold NUL, a storm of idle connections under a 1024 open-file limit."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import time

from harness import Iris
from iris_cli.client import Client
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.messages import ErrorReply, GetStatus, Hello, StatusReply, Welcome


def iris_bytes(iris: Iris, *args: bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"iris_cli", *args],
        env=iris.env, input=stdin, capture_output=True, timeout=60, cwd=iris.root,
    )


def test_bytes_that_are_not_utf8_are_named_never_a_traceback(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    result = iris_bytes(iris, b"tell", b"alpha", b"caf\xe9 au lait")
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "iris: argument 3 ('caf\\xe9 au lait') is not valid UTF-8: byte 0xe9 at position 3 is not UTF-8; "
        "pass text in UTF-8 (convert it with 'iconv -t UTF-8')\n"
    )
    piped = iris_bytes(iris, b"tell", b"alpha", b"-", stdin=b"ok \xff\xfe")
    assert piped.returncode == 2
    assert b"standard input is not valid UTF-8: byte 0xff at position 3" in piped.stderr
    assert b"Traceback" not in result.stderr + piped.stderr
    assert iris.process is not None and iris.process.poll() is None


def test_a_nul_character_is_refused_clearly_not_dropped(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    result = iris_bytes(iris, b"tell", b"alpha", b"-", b"--json", stdin=b"before\x00after")
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_request"
    assert "NUL character (at position 6)" in error["message"]
    persisted = iris_bytes(iris, b"tell", b"alpha", b"-", b"--persist", stdin=b"x\x00")
    assert persisted.returncode == 1 and b"NUL character" in persisted.stderr
    assert iris.cli_json("notifications", "--all") == []  # nothing stored


def test_a_second_hello_is_refused(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(iris.socket))
        for hello in (PROTOCOL_VERSION, PROTOCOL_VERSION + 1):
            sock.sendall(encode(Hello(protocol_version=hello)))
            size = int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big")
            reply = decode_server_message(sock.recv(size, socket.MSG_WAITALL))
            if hello == PROTOCOL_VERSION:
                assert isinstance(reply, Welcome)
        assert isinstance(reply, ErrorReply) and "a second hello" in reply.message
        assert sock.recv(1) == b""


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_1100_idle_connections_under_a_1024_file_limit_do_not_lock_the_owner_out(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.write_config()
    with iris.log_path.open("ab") as log:
        iris.process = subprocess.Popen(
            [sys.executable, "-m", "irisd.main"], env=iris.env, stderr=log, stdout=subprocess.DEVNULL,
            cwd=iris.root, preexec_fn=_limit_open_files,
        )
    iris.wait_ready()
    idle: list[socket.socket] = []
    try:
        for _ in range(1100):
            sock = socket.socket(socket.AF_UNIX)
            idle.append(sock)
            sock.connect(str(iris.socket))  # blocking: waits for room in the listen queue
        started = time.monotonic()
        with Client(iris.socket, timeout=10) as client:
            reply = client.request(GetStatus())
        assert isinstance(reply, StatusReply)
        assert time.monotonic() - started < 10
        assert [team["name"] for team in iris.cli_json("teams")] == ["alpha"]
    finally:
        for sock in idle:
            sock.close()
    assert iris.process.poll() is None
    assert "Traceback" not in iris.log()
    assert iris.log().count("cannot accept clients") <= 10


def test_a_fuzzing_client_cannot_flood_the_log(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    for _ in range(300):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(10)
            sock.connect(str(iris.socket))
            sock.sendall(b"\x00\x00\x00\x03\xc1\xc1\xc1")  # not msgpack
            size = int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big")
            reply = decode_server_message(sock.recv(size, socket.MSG_WAITALL))
            assert isinstance(reply, ErrorReply) and reply.code == "protocol"  # each client still hears why
    assert iris.cli("status").returncode == 0
    logged = [line for line in iris.log().splitlines() if "client broke the protocol" in line]
    assert 1 <= len(logged) <= 20  # 10 a minute (a slow run may span two minutes), not 300
