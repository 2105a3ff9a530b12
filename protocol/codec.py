"""Reusable encoders and decoders for the socket protocol (msgpack bodies, framed)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Union, cast, get_args

import msgspec
import msgspec.msgpack  # by name: the CLI's hot paths load msgspec's submodules one by one (iris_cli.entry)

from protocol.core_messages import ErrorReply
from protocol.errors import InvalidRequestError, ProtocolError
from protocol.framing import DEFAULT_MAX_FRAME, HEADER, check_body_size
from protocol.limits import explain

# The unions of every message (protocol.messages) are imported where a decoder of them is
# made: a client that names the replies it expects never creates the hundred Structs.
if TYPE_CHECKING:
    from protocol.messages import Request, ServerMessage

# What a decoder raises for bytes that are no message: msgspec's DecodeError (and its
# ValidationError), RecursionError for nesting past its depth, and UnicodeDecodeError
# for a string that is not UTF-8 (msgspec lets that one through as it is: measured).
UNDECODABLE = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)
_LONE_SURROGATE = rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"  # compiled by re's cache when a message fails


def undecodable(exc: BaseException, data: bytes | bytearray) -> str:
    """Why ``data`` could not be decoded, in words a sender can act on (msgspec says "Input
    data was truncated" for a JSON string that ends in half a surrogate pair)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not valid UTF-8 (byte {exc.object[exc.start:exc.start + 1]!r}); send text as UTF-8"
    if isinstance(exc, RecursionError):
        return "it is nested too deep"
    if isinstance(exc, msgspec.DecodeError) and (found := re.search(_LONE_SURROGATE, data)):
        escape = found.group().decode()
        return (
            f"a JSON string holds {escape}, half of a UTF-16 surrogate pair without its other half: it is no "
            "character; send the text as UTF-8, or the whole pair"
        )
    return str(exc)


_encoder = msgspec.msgpack.Encoder()
_HEADER_ROOM = bytes(HEADER.size)


@functools.cache
def _server_decoder() -> msgspec.msgpack.Decoder[object]:
    """Made at the first message decoded without a list of the expected ones: building the
    decoder of every reply and event type cost a short command a fifth of its start-up."""
    from protocol.messages import ServerMessage

    return msgspec.msgpack.Decoder(ServerMessage)


@functools.cache
def _expected_decoder(expected: tuple[type[msgspec.Struct], ...]) -> msgspec.msgpack.Decoder[object]:
    """A decoder of just ``expected`` and ``ErrorReply``: msgspec builds a decoder for the
    types it can reach, so a command's is a small part of the whole union's."""
    return msgspec.msgpack.Decoder(Union[(ErrorReply, *expected)])


@functools.cache
def _request_decoder() -> msgspec.msgpack.Decoder[object]:
    """Made at the first request decoded: a client (``iris status``) never decodes one, and
    building the decoder of every request type was a tenth of its start-up's CPU."""
    from protocol.messages import Request

    return msgspec.msgpack.Decoder(Request)


@functools.cache
def _request_types() -> tuple[type[msgspec.Struct], ...]:
    from protocol.messages import Request

    return get_args(Request)


def encode(message: msgspec.Struct, max_size: int = DEFAULT_MAX_FRAME) -> bytearray:
    """One framed message, ready to send: encoded after room for its header, so a long
    transcript is not copied again to put the header in front."""
    frame = bytearray(HEADER.size)
    _encode_into(message, frame, HEADER.size)
    check_body_size(len(frame) - HEADER.size, max_size)
    HEADER.pack_into(frame, 0, len(frame) - HEADER.size)
    return frame


def encode_many(messages: Iterable[msgspec.Struct], max_size: int = DEFAULT_MAX_FRAME) -> bytearray:
    """Several framed messages one after the other, for one write: a reader takes them
    apart by their headers as if each had come alone."""
    frames = bytearray()
    for message in messages:
        start = len(frames)
        frames += _HEADER_ROOM
        _encode_into(message, frames, start + HEADER.size)
        size = len(frames) - start - HEADER.size
        check_body_size(size, max_size)
        HEADER.pack_into(frames, start, size)
    return frames


def _encode_into(message: msgspec.Struct, buffer: bytearray, offset: int) -> None:
    try:
        _encoder.encode_into(message, buffer, offset)
    except OverflowError:  # a number past 64 bits (``--timeout 99999999999999999999``): no wire can carry it
        raise InvalidRequestError(f"invalid request: {_too_large(message)}") from None


def _too_large(message: msgspec.Struct) -> str:
    """Which field of ``message`` holds a number too large to send, in the words (and with
    the fix) a decoder gives for a value out of its declared range."""
    try:
        msgspec.convert(msgspec.structs.asdict(message), type(message))
    except msgspec.ValidationError as exc:
        return explain(exc, (type(message),)) or str(exc)
    fields = [name for name in message.__struct_fields__ if isinstance(getattr(message, name), int)
              and not -(2**63) <= getattr(message, name) < 2**64]
    return f"a number too large to send (at `$.{fields[0] if fields else '?'}`); use a smaller one"


def decode_request(body: bytes | bytearray) -> Request:
    """Decode a client's frame body. A value out of a field's declared range (protocol/limits.py)
    raises InvalidRequestError naming the field, its range and what to do (the connection is
    fine); anything else that is not a valid request raises ProtocolError."""
    return cast("Request", _decode(_request_decoder(), body, _request_types()))


def validated(request: Request) -> Request:
    """``request`` checked against its type's declared limits, as a decoder would check it:
    for the requests a face builds in process (the HTTP API's, /mcp's, A2A's), which no
    decoder saw. InvalidRequestError names the field, its range and the fix."""
    return cast("Request", _decode(_request_decoder(), _encoder.encode(request), _request_types()))


def decode_server_message(
    body: bytes | bytearray, expected: tuple[type[msgspec.Struct], ...] = ()
) -> ServerMessage:
    """Decode a daemon's frame body (a reply or a pushed event).

    ``expected``: the replies and events the caller waits for (``ErrorReply`` is always
    one); a client that names them decodes them without building the decoder of the whole
    union. Any other message (an event added later, a reply to another request) is still
    decoded, by the whole union's decoder, as if nothing had been named."""
    if expected:
        try:
            return cast("ServerMessage", _expected_decoder(expected).decode(body))
        except UNDECODABLE:
            pass  # not one of them, or not a message at all: the whole union decides and says why
    return cast("ServerMessage", _decode(_server_decoder(), body))


def _decode(
    decoder: msgspec.msgpack.Decoder[object], body: bytes | bytearray, limited: tuple[type[msgspec.Struct], ...] = ()
) -> object:
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as exc:
        if why := explain(exc, limited):
            raise InvalidRequestError(f"invalid request: {why}") from None
        raise ProtocolError(f"invalid message: {exc}") from None
    except UnicodeDecodeError as exc:  # a whole frame, one bad string: the connection is fine
        raise InvalidRequestError(f"invalid request: {undecodable(exc, body)}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        # Deep nesting raises RecursionError, not DecodeError (measured).
        raise ProtocolError(f"undecodable message: {undecodable(exc, body)}") from None
