"""The server's connections, on trio's virtual clock."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from irisd.events import send_events, send_with_reply
from irisd.socket_server import SEND_TIMEOUT_S, Connection
from protocol.codec import decode_server_message
from protocol.framing import LengthPrefixedFramer
from protocol.messages import ErrorReply, Event, TellState, TellText

EVENTS: list[Event] = [TellText(tell_id="t", text="x"), TellState(tell_id="t", status="completed", to_team="a")]


@pytest.mark.parametrize("how", ["one frame", "several in one write"])
async def test_a_client_that_stops_reading_is_hung_up_on_even_when_shielded(
    autojump_clock: trio.testing.MockClock, how: str
) -> None:
    ours, theirs = trio.testing.lockstep_stream_pair()  # a send waits for the other side to read
    connection = Connection(ours)  # type: ignore[arg-type]
    started = trio.current_time()
    with trio.CancelScope() as outer:
        outer.cancel()  # a cancellation (the drain) cannot cut the frame, nor wait for ever
        with pytest.raises(trio.BrokenResourceError, match="read nothing for 30 s"):
            if how == "one frame":
                await connection.send(TellText(tell_id="t", text="x"))
            else:
                await send_events(connection.events, EVENTS)
    assert trio.current_time() - started == SEND_TIMEOUT_S
    with pytest.raises(trio.ClosedResourceError):
        await ours.send_all(b"more")  # closed: the client is gone
    await theirs.aclose()


class Recorded:
    """A client's stream that records each write."""

    def __init__(self) -> None:
        self.writes: list[list[str]] = []

    async def send_all(self, data: bytes | bytearray) -> None:
        framer = LengthPrefixedFramer()
        framer.receive_data(data)
        frames = []
        while (frame := framer.next_frame()) is not None:
            frames.append(type(decode_server_message(frame)).__name__)
        self.writes.append(frames)


async def test_the_events_kept_for_the_reply_go_out_in_its_write_ahead_of_it() -> None:
    stream = Recorded()
    connection = Connection(stream)  # type: ignore[arg-type]
    await send_with_reply(connection.events, EVENTS)
    assert stream.writes == []
    await connection.send(ErrorReply(code="internal", message="the reply"))
    await send_events(connection.events, EVENTS)
    await connection.events(EVENTS[0])
    assert stream.writes == [
        ["TellText", "TellState", "ErrorReply"],
        ["TellText", "TellState"],
        ["TellText"],
    ]
