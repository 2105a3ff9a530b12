from __future__ import annotations

import struct
import subprocess
import sys

import msgspec
import pytest

from protocol.codec import decode_request, decode_server_message, encode, encode_many
from protocol.errors import (
    BusyError,
    IrisError,
    ProtocolError,
    UnknownTeamError,
)
from protocol.framing import FrameTooLargeError, LengthPrefixedFramer, LineFramer, encode_frame
from protocol.messages import (
    ErrorReply,
    GetStatus,
    Hello,
    Tell,
    TellInfo,
    TellNotice,
    TellReply,
    TellState,
    TellText,
    Welcome,
    is_event,
)


def frames(framer: LengthPrefixedFramer | LineFramer) -> list[bytes]:
    out = []
    while (frame := framer.next_frame()) is not None:
        out.append(frame)
    return out


def test_length_prefixed_frames_arrive_byte_by_byte() -> None:
    data = encode_frame(b"first") + encode_frame(b"") + encode_frame(b"third")
    framer = LengthPrefixedFramer()
    received = []
    for i in range(len(data)):
        framer.receive_data(data[i : i + 1])
        received += frames(framer)
    assert received == [b"first", b"", b"third"]
    assert framer.pending == 0


def test_oversized_frame_is_refused_from_its_header_alone() -> None:
    framer = LengthPrefixedFramer(max_size=10)
    framer.receive_data(struct.pack(">I", 11))
    with pytest.raises(FrameTooLargeError, match="over the 10-byte limit"):
        framer.next_frame()
    with pytest.raises(FrameTooLargeError):
        encode_frame(b"x" * 11, max_size=10)


def test_several_messages_in_one_write_are_read_as_if_each_came_alone() -> None:
    messages = [TellText(tell_id="t", text="é" * 300), TellState(tell_id="t", status="completed", to_team="a"),
                Welcome(protocol_version=1, daemon_version="1", pid=1)]
    data = encode_many(messages)
    assert data == b"".join(encode(message) for message in messages)
    framer = LengthPrefixedFramer()
    framer.receive_data(data)
    assert [decode_server_message(frame) for frame in frames(framer)] == messages
    assert encode_many([]) == b""
    with pytest.raises(FrameTooLargeError):
        encode_many([TellText(tell_id="t", text="x"), TellText(tell_id="t", text="x" * 100)], max_size=50)


def test_line_framer_splits_lines_and_keeps_the_tail() -> None:
    framer = LineFramer()
    framer.receive_data(b'{"a":1}\n\n{"b"')
    assert frames(framer) == [b'{"a":1}']
    framer.receive_data(b":2}\r\npartial")
    assert frames(framer) == [b'{"b":2}']
    assert framer.tail() == b"partial"


def test_line_framer_refuses_an_endless_line() -> None:
    framer = LineFramer(max_size=8)
    framer.receive_data(b"0123456789")
    with pytest.raises(FrameTooLargeError):
        framer.next_frame()


def test_requests_and_replies_round_trip() -> None:
    for request in (
        Hello(protocol_version=1, client="test"),
        Tell(to_team="backend", message="hi", from_team="frontend", timeout_ms=-1, stream=True),
        GetStatus(),
    ):
        assert decode_request(encode(request)[4:]) == request
    info = TellInfo(id="abc", from_team=None, to_team="b", message="m", status="running", text="so far")
    for reply in (TellReply(status="in_progress", tell=info), ErrorReply(code="busy", message="full"),
                  TellText(tell_id="abc", text="x"), TellNotice(tell_id="abc", text="retrying")):
        assert decode_server_message(encode(reply)[4:]) == reply
        assert is_event(reply) == isinstance(reply, TellText | TellNotice)


def test_tags_are_stable_snake_case_names() -> None:
    wire = msgspec.msgpack.decode(encode(GetStatus())[4:])
    assert wire == {"type": "get_status"}


@pytest.mark.parametrize(
    "body",
    [
        b"\xc1",  # never used in msgpack
        msgspec.msgpack.encode({"type": "no_such_request"}),
        msgspec.msgpack.encode({"type": "tell", "to_team": 5, "message": "x"}),
        msgspec.msgpack.encode([1, 2, 3]),
        b"\x91" * 5000,  # deeply nested arrays raise RecursionError inside msgspec
        b"\xdd\xff\xff\xff\xff",  # an array header claiming 4 G elements
    ],
)
def test_hostile_bodies_raise_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request(body)


def test_errors_survive_the_wire_as_their_own_class() -> None:
    error = UnknownTeamError.for_name("bakend", ["frontend", "backend"])
    assert "known teams: backend, frontend" in error.message
    rebuilt = IrisError.from_wire(error.code, error.message)
    assert type(rebuilt) is UnknownTeamError and rebuilt.message == error.message
    assert type(IrisError.from_wire("busy", "x")) is BusyError
    assert type(IrisError.from_wire("from_the_future", "x")) is IrisError


def test_a_comma_list_of_known_teams_where_one_team_is_asked_names_the_fan_out() -> None:
    """team_tell's toTeam "api,docs" was told "did you mean 'docs'? ... Add it under
    'teams:'": a wrong guess and a wrong fix."""
    error = UnknownTeamError.for_name("api, docs", ["api", "docs", "web"])
    assert error.message == (
        "team 'api, docs' is several teams; this asks one: to ask api, docs at once, give them as "
        "team_tell's toTeams (or run 'iris tell api,docs MESSAGE')"
    )
    assert "is not configured" in UnknownTeamError.for_name("api,dcs", ["api", "docs"]).message  # one misspelt


def test_a_client_decoding_replies_never_builds_the_request_decoder() -> None:
    """``iris status`` decodes one reply: the decoder of every request type (a tenth of its
    start-up's CPU) is made only where a request is decoded (irisd)."""
    script = (
        "from protocol import codec\n"
        "from protocol.messages import ListTeams, TeamsReply\n"
        "reply = codec.decode_server_message(bytes(codec.encode(TeamsReply(teams=[])))[4:])\n"
        "assert codec._request_decoder.cache_info().currsize == 0\n"
        "assert isinstance(codec.decode_request(bytes(codec.encode(ListTeams()))[4:]), ListTeams)\n"
        "print(codec._request_decoder.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


def test_a_client_naming_the_replies_it_expects_never_builds_the_whole_unions_decoder() -> None:
    """``iris status`` expects a StatusReply (or an error): building the decoder of every reply
    and event type was a fifth of its start-up; its own decoder is a small part of that."""
    script = (
        "from protocol import codec\n"
        "from protocol.messages import ErrorReply, TeamsReply, TellText, Welcome\n"
        "frame = lambda message: bytes(codec.encode(message))[4:]\n"
        "teams = codec.decode_server_message(frame(TeamsReply(teams=[])), (TeamsReply,))\n"
        "error = codec.decode_server_message(frame(ErrorReply(code='busy', message='m')), (TeamsReply,))\n"
        "assert teams == TeamsReply(teams=[]) and error == ErrorReply(code='busy', message='m')\n"
        "assert codec._server_decoder.cache_info().currsize == 0\n"
        "assert codec.decode_server_message(frame(Welcome(1, 'v', 2)), (TeamsReply,)) == Welcome(1, 'v', 2)\n"
        "print(codec._server_decoder.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"  # a message it did not name: the whole union's decoder, made then


def test_a_message_a_client_did_not_expect_is_decoded_as_without_expectations() -> None:
    """A new event type, a reply to another request: decoded all the same (the caller decides
    what to do with it), and bytes that are no message fail as they always did."""
    event = TellNotice(tell_id="t1", text="claude retries the API")
    assert decode_server_message(bytes(encode(event))[4:], (TellReply,)) == event
    for body in (b"\xc1", msgspec.msgpack.encode({"type": "tell_reply", "status": "nope"})):
        with pytest.raises(ProtocolError) as expected:
            decode_server_message(body, (TellReply, TellText))
        with pytest.raises(ProtocolError) as unnamed:
            decode_server_message(body)
        assert expected.value.message == unnamed.value.message


def test_msgspec_sees_the_same_types_with_or_without_typing_extensions() -> None:
    """``iris status`` and ``iris tell`` import msgspec with typing_extensions hidden
    (``iris_cli.entry.import_msgspec``), so msgspec reads every Struct's annotations with
    ``typing.get_type_hints``; this checks that it gives what typing_extensions' gives, for
    every message (a typing_extensions that changed that would fail here, not in a user's CLI)."""
    import inspect
    import typing

    import typing_extensions

    import protocol.health
    import protocol.messages

    assert typing_extensions.Required is typing.Required and typing_extensions.NotRequired is typing.NotRequired
    structs = [
        value for module in (protocol.messages, protocol.health) for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct) and value is not msgspec.Struct
    ]
    assert len(structs) > 100
    for struct_type in structs:
        assert typing_extensions.get_type_hints(struct_type, include_extras=True) == typing.get_type_hints(
            struct_type, include_extras=True
        ), struct_type


def test_every_event_and_no_other_message_derives_from_the_event_base() -> None:
    """The client tells an event from the reply that ends its request with
    ``protocol.core_messages.is_event`` (an isinstance of the events' base), so that
    ``iris tell`` needs none of the unions' types: the base must match the ``Event`` union."""
    import typing

    import protocol.core_messages
    import protocol.messages

    events = set(typing.get_args(protocol.messages.Event))
    others = set(typing.get_args(protocol.messages.Reply)) | set(typing.get_args(protocol.messages.Request))
    assert events and others and not events & others
    assert all(issubclass(event, protocol.core_messages._Event) for event in events)
    assert not any(issubclass(message, protocol.core_messages._Event) for message in others)
    assert set(protocol.messages.EVENT_TYPES) == events


@pytest.mark.parametrize(
    ("module_name", "some"),
    [
        ("protocol.core_messages", {"Hello", "Welcome", "ErrorReply", "Tell", "TellReply", "TellInfo", "TellText"}),
        ("protocol.status_messages", {"GetStatus", "StatusReply", "TeamInfo", "ProcessInfo", "ProcessState"}),
    ],
)
def test_the_hot_paths_messages_are_the_messages_modules_own(module_name: str, some: set[str]) -> None:
    """``protocol.messages`` re-exports every Struct and literal of the modules the CLI's hot
    paths import alone (one type either way: ``Tell`` from one is ``Tell`` from the other)."""
    import importlib

    import protocol.core_messages
    import protocol.health
    import protocol.limits
    import protocol.messages

    module = importlib.import_module(module_name)
    imported = {*vars(protocol.limits), *vars(protocol.health), "Literal", "TypeGuard"}
    if module is not protocol.core_messages:
        imported |= set(vars(protocol.core_messages))
    public = {name: value for name, value in vars(module).items() if name[0].isupper() and name not in imported}
    assert some <= set(public)
    for name, value in public.items():
        assert getattr(protocol.messages, name) is value, name


def test_the_wire_structs_annotations_are_evaluated_once_as_their_classes_are_made() -> None:
    """msgspec reads a Struct's annotations when it first encodes or decodes one, and compiles
    each string annotation (``from __future__ import annotations``) then: 56 compiles in a
    plain ``iris tell``, the decoders of every message 4x slower to make. The modules of the
    wire Structs therefore do not postpone them; a string is left only where a class names
    itself."""
    import inspect

    import protocol.core_messages
    import protocol.health
    import protocol.messages
    import protocol.status_messages

    strings = {
        f"{value.__name__}.{field}"
        for module in (protocol.core_messages, protocol.status_messages, protocol.messages, protocol.health)
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct)
        for field, annotation in vars(value).get("__annotations__", {}).items()
        if isinstance(annotation, str)
    }
    assert strings == {"TellPhase.head"}
