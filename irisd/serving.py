"""The one serve path of every front end (the Unix socket, the HTTP API, ``/api/events``,
``/mcp``, the A2A endpoints, their watches included): a request of a ``Caller`` goes
through :meth:`Serving.dispatch` to the core.

One caller does not: the mesh's home side (irisd/mesh/home.py), which runs other irisds'
tells here, calls the dispatcher itself. It is part of the core (cancelled with it at the
drain, so there is nothing in flight to wait for), and it must not be refused while irisd
drains: the home answers a refused tell with a failed result, for good, while a tell it has
not taken yet stays in the mesh's durable queue and runs after the restart.

It owns what the front ends must agree on:

* **draining**: once ``stop_accepting`` is called, a new request is answered with
  ``ShuttingDownError`` (a ``Hello`` still gets its ``Welcome``, so a client hears why);
* **in-flight counting**: ``counted`` brackets a request AND the sending of its reply, so
  that ``wait_idle`` (the daemon's drain) returns only once every caller has its answer;
* **limits**: every request is checked against the limits its type declares
  (protocol/limits.py), once, whichever face built it (``validated``);
* **the catch-all**: an error that is not an ``IrisError`` is a bug; it is logged with its
  traceback once and becomes an ``IrisError`` (code ``internal``) the client can read.
  A client that left (``trio.BrokenResourceError`` / ``ClosedResourceError``) is not an
  error: it passes through for the front end to drop the connection.

The front ends keep only their wire: framing or HTTP, their connection limits, and how an
``IrisError`` is written (an ``ErrorReply`` frame, a JSON body with a status).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio

from irisd.events import SendEvent, no_events
from protocol.codec import validated
from protocol.errors import IrisError, ShuttingDownError
from protocol.messages import Hello, Reply, Request

if TYPE_CHECKING:
    from irisd.caller import Caller
    from irisd.dispatch import Dispatcher

log = logging.getLogger("irisd.serving")


CLIENT_LEFT = (trio.BrokenResourceError, trio.ClosedResourceError)


def internal_error(exc: Exception, what: str, **extra: object) -> IrisError:
    """Log a bug (with its traceback) and say it in words a client can pass on."""
    log.exception(f"{what} failed", extra=extra)
    return IrisError(f"irisd failed on this {what} ({type(exc).__name__}: {exc}); see the irisd log")


class Serving:
    """Requests to ``dispatcher``, counted, refused while draining, with one catch-all."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.draining = False
        self.in_flight = 0
        self._idle = trio.Event()
        self._idle.set()

    def stop_accepting(self) -> None:
        """New requests get ShuttingDownError from now on; those in flight run on."""
        self.draining = True

    @contextmanager
    def counted(self) -> Iterator[None]:
        """One request in flight for the drain, until the block ends (its reply is sent)."""
        self.in_flight += 1
        self._idle = trio.Event()
        try:
            yield
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    async def wait_idle(self) -> None:
        """Until no request is in flight."""
        while self.in_flight:
            await self._idle.wait()

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent | None = None) -> Reply:
        """Serve ``request`` as ``caller``. Raises IrisError for the client (ShuttingDownError
        while draining), or a CLIENT_LEFT error when sending an event found the client gone.
        Cancellation propagates (the core stopping ends a watch with ShuttingDownError first)."""
        if self.draining and not isinstance(request, Hello):
            raise ShuttingDownError("irisd is stopping; send this again once it is back")
        try:
            return await self.dispatcher.dispatch(validated(request), caller, send_event or no_events)
        except (IrisError, *CLIENT_LEFT):
            raise
        except Exception as exc:
            raise internal_error(exc, "request", request=type(request).__name__) from None

    async def serve(self, request: Request, caller: Caller, send_event: SendEvent | None = None) -> Reply:
        """``dispatch``, counted in flight while it runs: for a front end whose answer another
        layer sends (the MCP SDK, the A2A face). One that sends its own answer brackets
        ``dispatch`` and the sending with ``counted``."""
        with self.counted():
            return await self.dispatch(request, caller, send_event)

