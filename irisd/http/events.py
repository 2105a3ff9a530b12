"""``/api/events``: the live events ``iris watch`` gets, one JSON Event per WebSocket
message, for the dashboard and scripts.

Events come through ``Serving`` as the socket's ``iris watch`` gets them, a ``Watch``
(the first one, ``watching``, says the subscription is in place), in batches with each
tell's text joined (irisd/events.py). The core's EventHub never waits for anyone: a
client that falls out of its window of events (it reads too slowly) is dropped by the
hub and closed here with code 1013 (try again later). A send that the client does not
take within ``SEND_TIMEOUT_S`` ends the connection too (the HTTP server's writes can be
cancelled). So a slow client costs a pair nothing. irisd stopping closes every client
with 1001.
Messages FROM the client are read and ignored (hypercorn caps their size).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec
import trio
from starlette.websockets import WebSocket

from protocol.errors import BusyError, ShuttingDownError
from protocol.messages import Event, Watch

if TYPE_CHECKING:
    from irisd.caller import Caller
    from irisd.serving import Serving

log = logging.getLogger("irisd.http")

SEND_TIMEOUT_S = 10.0
CLOSE_GOING_AWAY = 1001
CLOSE_TOO_SLOW = 1013

_encoder = msgspec.json.Encoder()


class _TooSlowToRead(trio.BrokenResourceError):
    """The client took no event for SEND_TIMEOUT_S: as good as gone."""


async def serve_events(serving: Serving, websocket: WebSocket, caller: Caller) -> None:
    """Forward the events of a ``Watch`` (served like the socket's ``iris watch``, and
    counted in flight like it) until the client leaves, falls behind, or irisd stops.
    Raises IrisError (an unknown team) before the upgrade is accepted."""
    team = websocket.query_params.get("team") or None
    if team is not None:
        serving.dispatcher.check_team(team)  # UnknownTeamError: refused with 404
    await websocket.accept()

    async def send_event(event: Event) -> None:
        with trio.move_on_after(SEND_TIMEOUT_S) as sending:
            await websocket.send_text(_encoder.encode(event).decode())
        if sending.cancelled_caught:
            raise _TooSlowToRead

    code: int | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_until_disconnect, websocket, nursery.cancel_scope)
        try:
            with serving.counted():
                await serving.dispatch(Watch(team=team), caller, send_event)
        except ShuttingDownError:
            code = CLOSE_GOING_AWAY
        except BusyError:  # the hub dropped it: it fell behind
            code = CLOSE_TOO_SLOW
        except _TooSlowToRead:
            log.info("closed an events client that read nothing", extra={"timeout_s": SEND_TIMEOUT_S})
        nursery.cancel_scope.cancel()
    if code is not None:
        reason = "irisd is stopping" if code == CLOSE_GOING_AWAY else "too slow: events were lost; connect again"
        with trio.move_on_after(SEND_TIMEOUT_S):
            await websocket.close(code, reason)


async def _until_disconnect(websocket: WebSocket, scope: trio.CancelScope) -> None:
    while (await websocket.receive())["type"] != "websocket.disconnect":
        pass  # the client has nothing to say; its messages are dropped
    scope.cancel()
