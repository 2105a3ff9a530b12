"""The NATS protocol as the mesh's fast lane speaks it (irisd/mesh/nats_wire.py): bytes in,
operations out, whatever the pieces they come in; commands out as the server reads them."""

from __future__ import annotations

import pytest

from irisd.mesh import nats_wire
from irisd.mesh.nats_wire import Err, Info, Message, Ok, Ping, Pong, ProtocolViolation, Reader

TIMEOUT = b"NATS/1.0 408 Request Timeout\r\n\r\n"
HEADERS = b"NATS/1.0\r\nNats-Msg-Id: t\r\n\r\n"
STREAM = (
    b'INFO {"server_id":"N1","headers":true,"max_payload":1048576}\r\n'
    b"+OK\r\nPING\r\n"
    b"MSG iris.live.ws-1.ws-2 7 11\r\nhello world\r\n"
    b"MSG _INBOX.ws-1.a.r.3 1 $JS.ACK.IRIS_TELLS.home-ws-2.1.5.5.0.0 2\r\nhi\r\n"
    b"HMSG _INBOX.ws-1.a.p.home-ws-2 2 %d %d\r\n%s\r\n" % (len(TIMEOUT), len(TIMEOUT), TIMEOUT)
    + b"HMSG iris.tell.ws-2.ws-1 2 $JS.ACK.x %d %d\r\n%sbody\r\n" % (len(HEADERS), len(HEADERS) + 4, HEADERS)
    + b"PONG\r\n-ERR 'Permissions Violation for Publish to \"x\"'\r\n"
)

EXPECTED = [
    Info({"server_id": "N1", "headers": True, "max_payload": 1048576}),
    Ok(),
    Ping(),
    Message("iris.live.ws-1.ws-2", 7, "", b"hello world"),
    Message("_INBOX.ws-1.a.r.3", 1, "$JS.ACK.IRIS_TELLS.home-ws-2.1.5.5.0.0", b"hi"),
    Message("_INBOX.ws-1.a.p.home-ws-2", 2, "", b"", status=408, description="Request Timeout"),
    Message("iris.tell.ws-2.ws-1", 2, "$JS.ACK.x", b"body"),
    Pong(),
    Err('Permissions Violation for Publish to "x"'),
]


@pytest.mark.parametrize("piece", [len(STREAM), 1, 7, 64])
def test_the_operations_come_out_whatever_the_pieces_the_bytes_come_in(piece: int) -> None:
    reader = Reader()
    ops = []
    for start in range(0, len(STREAM), piece):
        reader.receive_data(STREAM[start : start + piece])
        ops += reader.next_ops()
    assert ops == EXPECTED


def test_a_message_waits_for_its_payload() -> None:
    reader = Reader()
    reader.receive_data(b"MSG a 1 5\r\nabc")
    assert reader.next_ops() == []
    reader.receive_data(b"de\r\nPING\r\n")
    assert reader.next_ops() == [Message("a", 1, "", b"abcde"), Ping()]


@pytest.mark.parametrize(
    "data",
    [
        b"NOPE x\r\n",  # no such operation
        b"MSG a one 5\r\n",  # a sid that is no number
        b"MSG a 1\r\n",  # too few fields
        b"HMSG a 1 9 5\r\n",  # headers larger than the message
        b"MSG a 1 999999999999\r\n",  # a payload past any limit
        b"INFO {not json\r\n",
        b"x" * (nats_wire.MAX_LINE + 1),  # a line that never ends
    ],
)
def test_bytes_that_are_not_nats_are_refused(data: bytes) -> None:
    reader = Reader()
    reader.receive_data(data)
    with pytest.raises(ProtocolViolation):
        reader.next_ops()


def test_commands_are_written_as_the_server_reads_them() -> None:
    assert nats_wire.pub("iris.live.ws-1.ws-2", b"hi") == b"PUB iris.live.ws-1.ws-2 2\r\nhi\r\n"
    assert nats_wire.pub("$JS.ACK.x", b"+ACK", "") == b"PUB $JS.ACK.x 4\r\n+ACK\r\n"
    assert nats_wire.pub("s", b"{}", "_INBOX.a.r.1") == b"PUB s _INBOX.a.r.1 2\r\n{}\r\n"
    head = b"NATS/1.0\r\nNats-Msg-Id: t-1\r\n\r\n"
    assert nats_wire.pub("iris.tell.ws-2.ws-1", b"{}", "_INBOX.a.r.2", {"Nats-Msg-Id": "t-1"}) == (
        b"HPUB iris.tell.ws-2.ws-1 _INBOX.a.r.2 %d %d\r\n" % (len(head), len(head) + 2) + head + b"{}\r\n"
    )
    assert nats_wire.sub("_INBOX.a.r.*", 1) == b"SUB _INBOX.a.r.* 1\r\n"
    assert nats_wire.connect({"user": "ws-1", "pass": "pw"}) == b'CONNECT {"user":"ws-1","pass":"pw"}\r\nPING\r\n'


def test_what_the_server_sends_reads_back_as_it_was_written() -> None:
    """An HPUB as the server relays it (HMSG with the same headers and payload)."""
    written = nats_wire.pub("iris.tell.ws-2.ws-1", b'{"id":"t"}', "_INBOX.a.r.2", {"Nats-Msg-Id": "t"})
    relayed = written.replace(b"HPUB iris.tell.ws-2.ws-1 _INBOX.a.r.2", b"HMSG iris.tell.ws-2.ws-1 4 _INBOX.a.r.2")
    reader = Reader()
    reader.receive_data(relayed)
    assert reader.next_ops() == [Message("iris.tell.ws-2.ws-1", 4, "_INBOX.a.r.2", b'{"id":"t"}')]
