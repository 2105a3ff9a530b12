"""A blocking client of irisd, for the CLI (and any script): encode, send, decode.

One request at a time per connection; events the daemon pushes before a reply are
handed to ``on_event``. Errors come back as the same ``IrisError`` subclasses the
daemon raised.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import cast

import msgspec

from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.errors import DaemonNotRunningError, IrisError, ProtocolError
from protocol.errors import DaemonUnreachable as DaemonUnreachable
from protocol.framing import HEADER, check_frame_size
from protocol.messages import (
    ErrorReply,
    Event,
    Hello,
    Reply,
    Request,
    Welcome,
    is_event,
)

EventHandler = Callable[[Event], None]
HELLO_TIMEOUT_S = 10.0  # connecting and the handshake; a request then waits as long as it takes


def default_socket_path() -> Path:
    from iris_common.paths import IrisPaths

    return IrisPaths.from_env().socket


def connect_error(exc: OSError, socket_path: Path) -> DaemonNotRunningError:
    """The one place OS errors of connecting become Iris errors (for both clients)."""
    if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
        return DaemonUnreachable(
            f"irisd is not running (nothing listens on {socket_path}); start it with "
            "'iris daemon start' (or run 'irisd' in a terminal)"
        )
    if isinstance(exc, PermissionError):  # a daemon is there: starting another would not help
        return DaemonNotRunningError(f"no permission to connect to {socket_path}; it belongs to another user")
    return DaemonUnreachable(f"cannot connect to irisd on {socket_path}: {exc.strerror or exc}")


class Client:
    def __init__(self, socket_path: Path | None = None, *, timeout: float | None = None) -> None:
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        self.welcome: Welcome | None = None
        self._sock: socket.socket | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def connect(self) -> Welcome:
        if self.welcome is not None:
            return self.welcome
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(HELLO_TIMEOUT_S)  # a wedged irisd that still accepts must not hang us
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while True:
            try:
                sock.connect(os.fspath(self.socket_path))
                break
            except BlockingIOError:
                # The listen queue is full (a storm of clients): irisd accepts and sheds
                # idle ones, so wait for room rather than fail at once.
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                sock.close()
                raise DaemonUnreachable(
                    f"irisd on {self.socket_path} accepts no more connections for now (its queue "
                    f"stayed full for {HELLO_TIMEOUT_S:g} s); try again, or see 'iris daemon logs'"
                ) from None
            except OSError as exc:
                sock.close()
                raise connect_error(exc, self.socket_path) from None
        self._sock = sock
        reply = self._exchange(Hello(protocol_version=PROTOCOL_VERSION, client="iris-cli"), None)
        if not isinstance(reply, Welcome):
            raise ProtocolError(f"irisd answered the hello with {type(reply).__name__}")
        sock.settimeout(self.timeout)
        self.welcome = reply
        return reply

    def request(self, request: Request, on_event: EventHandler | None = None) -> Reply:
        """Send ``request`` and return its reply; raises the daemon's IrisError on failure."""
        self.connect()
        return self._exchange(request, on_event)

    def _exchange(self, request: Request, on_event: EventHandler | None) -> Reply:
        assert self._sock is not None
        try:
            self._sock.sendall(encode(request))
            while True:
                message = self._receive()
                if is_event(message):
                    if on_event is not None:
                        on_event(message)
                    continue
                if isinstance(message, ErrorReply):
                    raise IrisError.from_wire(message.code, message.message)
                return cast(Reply, message)  # not an event: a reply
        except (BrokenPipeError, ConnectionResetError):
            self.close()
            raise DaemonNotRunningError("irisd closed the connection (did it stop?)") from None
        except TimeoutError:
            self.close()
            raise DaemonNotRunningError(
                f"irisd on {self.socket_path} accepted the connection but did not answer; "
                "see 'iris daemon logs', or restart it ('iris daemon stop', then 'start')"
            ) from None

    def _receive(self) -> Reply | Event:
        """One frame, read straight into a buffer of its size: a long transcript (megabytes)
        is copied once, not grown chunk by chunk and copied out again."""
        (size,) = HEADER.unpack(self._read_exactly(HEADER.size))
        try:
            check_frame_size(size)
        except ProtocolError:
            self.close()  # the rest of the stream cannot be read in step any more
            raise
        return decode_server_message(self._read_exactly(size))

    def _read_exactly(self, size: int) -> bytearray:
        assert self._sock is not None
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            count = self._sock.recv_into(view[got:])
            if not count:
                self.close()
                raise DaemonNotRunningError("irisd closed the connection (did it stop?)")
            got += count
        return buffer


def to_builtins(message: msgspec.Struct) -> object:
    """A message as plain JSON-able data (for ``--json`` output)."""
    return msgspec.to_builtins(message)
