"""The NATS client protocol as the fast lane speaks it (``irisd/mesh/lane.py``): bytes
from the server in, operations out; operations to the server as bytes. No I/O here.

The server sends ``INFO {json}``, ``MSG <subject> <sid> [reply] <size>`` and ``HMSG
<subject> <sid> [reply] <header size> <total size>`` (each followed by its payload),
``PING``, ``PONG``, ``+OK`` and ``-ERR '<words>'``, each line ending in CRLF. A message's
headers start with ``NATS/1.0``, then a status and its words for JetStream's own notes
(``NATS/1.0 408 Request Timeout``: a pull request expired; ``100``: a heartbeat).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import msgspec

MAX_LINE = 64 * 1024  # a control line longer than this is not NATS
MAX_PAYLOAD = 64 * 1024 * 1024  # whatever the server's max_payload: a message larger is not taken


class ProtocolViolation(Exception):
    """The bytes are not the NATS protocol (or break its limits): the connection is dropped."""


class Info(msgspec.Struct, frozen=True):
    fields: dict[str, object]


class Message(msgspec.Struct, frozen=True):
    """A message for subscription ``sid``; ``status`` is JetStream's note (0: none)."""

    subject: str
    sid: int
    reply: str
    data: bytes
    status: int = 0
    description: str = ""


class Ping(msgspec.Struct, frozen=True):
    pass


class Pong(msgspec.Struct, frozen=True):
    pass


class Ok(msgspec.Struct, frozen=True):
    pass


class Err(msgspec.Struct, frozen=True):
    words: str


Op = Info | Message | Ping | Pong | Ok | Err


class Reader:
    """Splits what the server sends into operations. ``receive_data`` then
    ``next_ops``; a half-received operation waits for the rest."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._head: tuple[str, int, str, int, int] | None = None  # (subject, sid, reply, header size, size)

    def receive_data(self, data: bytes | bytearray) -> None:
        self._buffer += data

    def next_ops(self) -> list[Op]:
        ops: list[Op] = []
        buffer = self._buffer
        start = 0
        while True:
            if self._head is not None:
                subject, sid, reply, header_size, size = self._head
                if len(buffer) - start < size + 2:
                    break
                raw = bytes(buffer[start : start + size])
                start += size + 2
                self._head = None
                ops.append(_message(subject, sid, reply, raw, header_size))
                continue
            end = buffer.find(b"\r\n", start)
            if end < 0:
                if len(buffer) - start > MAX_LINE:
                    raise ProtocolViolation("a control line longer than 64 KiB")
                break
            line = bytes(buffer[start:end])
            start = end + 2
            try:
                op = self._control(line)
            except (ValueError, IndexError):  # a size or sid that is no number, a subject not UTF-8
                raise ProtocolViolation(f"a malformed line {line[:64]!r}") from None
            if op is not None:
                ops.append(op)
        del buffer[:start]
        return ops

    def _control(self, line: bytes) -> Op | None:
        verb, _, rest = line.partition(b" ")
        match verb.upper():
            case b"MSG":
                parts = rest.split()
                if len(parts) not in (3, 4):
                    raise ProtocolViolation(f"a MSG line with {len(parts)} fields")
                self._head = (parts[0].decode(), int(parts[1]), parts[2].decode() if len(parts) == 4 else "", 0,
                              _size(parts[-1]))
                return None
            case b"HMSG":
                parts = rest.split()
                if len(parts) not in (4, 5):
                    raise ProtocolViolation(f"an HMSG line with {len(parts)} fields")
                header_size, size = _size(parts[-2]), _size(parts[-1])
                if header_size > size:
                    raise ProtocolViolation("an HMSG whose headers are larger than the message")
                self._head = (parts[0].decode(), int(parts[1]), parts[2].decode() if len(parts) == 5 else "",
                              header_size, size)
                return None
            case b"PING":
                return Ping()
            case b"PONG":
                return Pong()
            case b"+OK":
                return Ok()
            case b"-ERR":
                return Err(rest.decode(errors="replace").strip().strip("'"))
            case b"INFO":
                try:
                    fields = json.loads(rest)
                except ValueError:
                    raise ProtocolViolation("an INFO that is not JSON") from None
                return Info(fields if isinstance(fields, dict) else {})
        raise ProtocolViolation(f"an unknown operation {verb[:16]!r}")


def _size(field: bytes) -> int:
    size = int(field)
    if not 0 <= size <= MAX_PAYLOAD:
        raise ProtocolViolation(f"a message of {size} bytes")
    return size


def _message(subject: str, sid: int, reply: str, raw: bytes, header_size: int) -> Message:
    if not header_size:
        return Message(subject, sid, reply, raw)
    first = raw[: raw.find(b"\r\n")] if b"\r\n" in raw[:header_size] else raw[:header_size]
    # "NATS/1.0" then, for JetStream's notes, "408 Request Timeout"
    _, _, rest = first.decode(errors="replace").partition(" ")
    code, _, words = rest.strip().partition(" ")
    return Message(subject, sid, reply, raw[header_size:], int(code) if code.isdigit() else 0, words.strip())


# --- what the client sends ------------------------------------------------------------------


def connect(options: Mapping[str, object]) -> bytes:
    return b"CONNECT " + json.dumps(dict(options), separators=(",", ":")).encode() + b"\r\nPING\r\n"


def sub(subject: str, sid: int) -> bytes:
    return f"SUB {subject} {sid}\r\n".encode()


def pub(subject: str, payload: bytes, reply: str = "", headers: Mapping[str, str] | None = None) -> bytes:
    """PUB (or HPUB with ``headers``) of ``payload`` to ``subject``."""
    target = f"{subject} {reply}" if reply else subject
    if not headers:
        return b"".join((f"PUB {target} {len(payload)}\r\n".encode(), payload, b"\r\n"))
    head = ("NATS/1.0\r\n" + "".join(f"{key}: {value}\r\n" for key, value in headers.items()) + "\r\n").encode()
    return b"".join((f"HPUB {target} {len(head)} {len(head) + len(payload)}\r\n".encode(), head, payload, b"\r\n"))


PING = b"PING\r\n"
PONG = b"PONG\r\n"
