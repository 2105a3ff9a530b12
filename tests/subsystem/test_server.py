"""The server's connections, on trio's virtual clock."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from irisd.socket_server import SEND_TIMEOUT_S, Connection
from protocol.messages import TellText


async def test_a_client_that_stops_reading_is_hung_up_on_even_when_shielded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, theirs = trio.testing.lockstep_stream_pair()  # a send waits for the other side to read
    connection = Connection(ours)  # type: ignore[arg-type]
    started = trio.current_time()
    with trio.CancelScope() as outer:
        outer.cancel()  # a cancellation (the drain) cannot cut the frame, nor wait for ever
        with pytest.raises(trio.BrokenResourceError, match="read nothing for 30 s"):
            await connection.send(TellText(tell_id="t", text="x"))
    assert trio.current_time() - started == SEND_TIMEOUT_S
    with pytest.raises(trio.ClosedResourceError):
        await ours.send_all(b"more")  # closed: the client is gone
    await theirs.aclose()
