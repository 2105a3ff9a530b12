"""A blocking client of irisd, for the CLI (and any script): encode, send, decode.

One request at a time per connection; events the daemon pushes before a reply are
handed to ``on_event``. Errors come back as the same ``IrisError`` subclasses the
daemon raised.
"""

from __future__ import annotations

# The socket type itself (C): the ``socket`` module around it builds enums of every
# constant at import, which cost ``iris status`` more than its request. The client uses
# only what ``_socket.socket`` has (connect, sendall, recv_into, timeouts) and its errors
# are the same OSError subclasses.
import _socket
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeAlias, cast

import msgspec

from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.core_messages import ErrorReply, Hello, Welcome, is_event
from protocol.errors import DaemonNotRunningError, IrisError, ProtocolError
from protocol.errors import DaemonUnreachable as DaemonUnreachable
from protocol.framing import HEADER, check_frame_size

if TYPE_CHECKING:
    from pathlib import Path

    from protocol.messages import Event, Reply, Request  # the unions: every message (not on the hot paths)

EventHandler: TypeAlias = "Callable[[Event], None]"  # a string: Event is the union of every event type
Expected = tuple[type[msgspec.Struct], ...]  # the reply and event types a request waits for
HELLO_TIMEOUT_S = 10.0  # connecting and the handshake; a request then waits as long as it takes


def default_socket_path() -> Path:
    from pathlib import Path

    from iris_common.locations import socket_path

    return Path(socket_path(os.environ))


def connect_error(exc: OSError, socket_path: str | os.PathLike[str]) -> DaemonNotRunningError:
    """The one place OS errors of connecting become Iris errors (for both clients)."""
    if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
        return DaemonUnreachable(
            f"irisd is not running (nothing listens on {socket_path}); start it with "
            "'iris daemon start' (or run 'irisd' in a terminal)"
        )
    if isinstance(exc, PermissionError):  # a daemon is there: starting another would not help
        return DaemonNotRunningError(f"no permission to connect to {socket_path}; it belongs to another user")
    from iris_common.paths import socket_path_problem  # only on the way to an error

    if (too_long := socket_path_problem(socket_path)) is not None:  # as irisd says it, refusing to start on it
        return DaemonUnreachable(too_long)
    return DaemonUnreachable(f"cannot connect to irisd on {socket_path}: {exc.strerror or exc}")


class Client:
    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *, timeout: float | None = None) -> None:
        from iris_common.locations import socket_path as from_env  # no pathlib: a short command's start-up

        self.socket_path = socket_path or from_env(os.environ)
        self.timeout = timeout
        self.welcome: Welcome | None = None
        self._sock: _socket.socket | None = None

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
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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
        reply = self._exchange(Hello(protocol_version=PROTOCOL_VERSION, client="iris-cli"), None, (Welcome,))
        if not isinstance(reply, Welcome):
            raise ProtocolError(f"irisd answered the hello with {type(reply).__name__}")
        sock.settimeout(self.timeout)
        self.welcome = reply
        return reply

    def request(
        self, request: Request, on_event: EventHandler | None = None, *, expect: Expected = ()
    ) -> Reply:
        """Send ``request`` and return its reply; raises the daemon's IrisError on failure.

        ``expect``: the reply type and the events the caller takes (e.g. ``(StatusReply,)``),
        so that only their decoder is built, a good part of a short command's start-up;
        anything else irisd sends still arrives, decoded by the whole union's decoder."""
        self.connect()
        return self._exchange(request, on_event, expect)

    def _exchange(self, request: Request, on_event: EventHandler | None, expect: Expected = ()) -> Reply:
        assert self._sock is not None
        try:
            self._sock.sendall(encode(request))
            while True:
                message = self._receive(expect)
                if is_event(message):
                    if on_event is not None:
                        on_event(cast("Event", message))
                    continue
                if isinstance(message, ErrorReply):
                    raise IrisError.from_wire(message.code, message.message)
                return cast("Reply", message)  # not an event: a reply
        except (BrokenPipeError, ConnectionResetError):
            self.close()
            raise DaemonNotRunningError("irisd closed the connection (did it stop?)") from None
        except TimeoutError:
            self.close()
            raise DaemonNotRunningError(
                f"irisd on {self.socket_path} accepted the connection but did not answer; "
                "see 'iris daemon logs', or restart it ('iris daemon stop', then 'start')"
            ) from None

    def _receive(self, expect: Expected = ()) -> Reply | Event:
        """One frame, read straight into a buffer of its size: a long transcript (megabytes)
        is copied once, not grown chunk by chunk and copied out again."""
        (size,) = HEADER.unpack(self._read_exactly(HEADER.size))
        try:
            check_frame_size(size)
        except ProtocolError:
            self.close()  # the rest of the stream cannot be read in step any more
            raise
        return decode_server_message(self._read_exactly(size), expect)

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
