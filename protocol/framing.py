"""Framing: bytes in, frames out, with a hard maximum size.

Two framings share one shape (``receive_data`` then ``next_frame`` until it returns
``None``), so the trio layer reads any stream the same way:

* ``LengthPrefixedFramer``: the daemon socket; a 4-byte big-endian length, then the body.
* ``LineFramer``: a ``claude`` child's stdout; one JSON document per ``\\n``-ended line.

A frame over the limit raises ``FrameTooLargeError`` as soon as it is detected (for
length-prefixed frames: from the header alone, before the body arrives), so a hostile
or broken peer cannot make us buffer without bound.
"""

from __future__ import annotations

import struct

from protocol.errors import ProtocolError

HEADER = struct.Struct(">I")
DEFAULT_MAX_FRAME = 16 * 1024 * 1024


class FrameTooLargeError(ProtocolError):
    """A frame (or line) is larger than the framer's limit."""


def encode_frame(body: bytes, max_size: int = DEFAULT_MAX_FRAME) -> bytes:
    """Prefix ``body`` with its length; refuses bodies over ``max_size``."""
    check_body_size(len(body), max_size)
    return HEADER.pack(len(body)) + body


def check_body_size(size: int, max_size: int = DEFAULT_MAX_FRAME) -> None:
    """FrameTooLargeError for a message to send of more than ``max_size`` bytes."""
    if size > max_size:
        raise FrameTooLargeError(f"message of {size} bytes is over the {max_size}-byte limit; send less text at once")


def check_frame_size(size: int, max_size: int = DEFAULT_MAX_FRAME) -> None:
    """FrameTooLargeError for a frame header announcing more than ``max_size`` bytes."""
    if size > max_size:
        raise FrameTooLargeError(f"frame of {size} bytes is over the {max_size}-byte limit")


class LengthPrefixedFramer:
    """Splits a byte stream into length-prefixed frames."""

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_size = max_size
        self._buffer = bytearray()

    def receive_data(self, data: bytes | bytearray) -> None:
        self._buffer += data

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None if more bytes are needed."""
        if len(self._buffer) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self._buffer)
        check_frame_size(size, self.max_size)
        end = HEADER.size + size
        if len(self._buffer) < end:
            return None
        frame = bytes(self._buffer[HEADER.size : end])
        del self._buffer[:end]
        return frame

    @property
    def pending(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer)


class LineFramer:
    """Splits a byte stream into lines (without the ``\\n``), skipping blank lines."""

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_size = max_size
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already searched for b"\n"

    def receive_data(self, data: bytes | bytearray) -> None:
        self._buffer += data

    def next_frame(self) -> bytes | None:
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline < 0:
                self._scanned = len(self._buffer)
                if self._scanned > self.max_size:
                    raise FrameTooLargeError(
                        f"line of over {self.max_size} bytes without a newline"
                    )
                return None
            line = bytes(self._buffer[:newline]).rstrip(b"\r")
            del self._buffer[: newline + 1]
            self._scanned = 0
            if len(line) > self.max_size:
                raise FrameTooLargeError(f"line of {len(line)} bytes is over the limit")
            if line.strip():
                return line

    def tail(self) -> bytes:
        """Bytes after the last newline (an unterminated last line at EOF)."""
        return bytes(self._buffer)
