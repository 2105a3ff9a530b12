"""The blocking client's failures, each an Iris error with the fix, never a traceback or a hang."""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path

import pytest

from iris_cli import client as client_module
from iris_cli.client import Client, DaemonUnreachable
from protocol.errors import DaemonNotRunningError
from protocol.framing import FrameTooLargeError


def test_an_irisd_that_accepts_but_never_answers_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "HELLO_TIMEOUT_S", 0.2)
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:  # short: Unix socket paths are limited
        path = Path(folder) / "s"
        wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        wedged.bind(str(path))
        wedged.listen(1)
        try:
            with pytest.raises(DaemonNotRunningError, match="accepted the connection but did not answer"):
                Client(path).connect()
        finally:
            wedged.close()


def test_connecting_fails_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DaemonUnreachable, match=r"irisd is not running .* 'iris daemon start'"):
        Client(tmp_path / "none.sock").connect()
    with pytest.raises(DaemonUnreachable, match="too long for a Unix socket; set a shorter IRIS_SOCKET"):
        Client(tmp_path / ("x" * 200)).connect()  # was a raw OSError, then the kernel's "AF_UNIX path too long"


@pytest.mark.parametrize(
    ("sent", "error", "match"),
    [
        (b"\x7f\xff\xff\xff", FrameTooLargeError, "over the 16777216-byte limit"),  # refused from the header
        (b"\x00\x00\x10\x00" + b"\x80" * 100, DaemonNotRunningError, "closed the connection"),  # cut short
    ],
)
def test_a_reply_that_is_too_large_or_cut_short_is_an_error(
    sent: bytes, error: type[Exception], match: str
) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        path = Path(folder) / "s"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(1)

        def answer() -> None:
            connection, _ = server.accept()
            connection.recv(65536)  # the hello
            connection.sendall(sent)
            connection.close()

        thread = threading.Thread(target=answer)
        thread.start()
        try:
            with pytest.raises(error, match=match):
                Client(path, timeout=10).connect()
        finally:
            thread.join()
            server.close()
