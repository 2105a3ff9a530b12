"""nats-py is asyncio-only and irisd is trio: one thread runs an asyncio loop for all of
the mesh's NATS work, and trio code awaits coroutines on it.

Why a thread and not trio-asyncio (measured, README "Teams on many hosts"): a JetStream
publish and its ack took 0.63 ms through the thread against 0.9-1.06 ms through
trio-asyncio (plain asyncio: 0.44 ms), with 150 KiB against 330-450 KiB more memory; and
the client's own tasks (pings, reconnects, flushes) never share a loop with irisd, so a
stall on one side cannot delay the other.

``call`` runs a coroutine on the loop and waits for it without holding a trio worker
thread: the loop's done-callback wakes the trio task through the trio token. ``to_trio``
is the way back for callbacks the client makes (a message arrived, the connection
dropped).

Each call costs two thread hand-offs (each a wait for a CPU slot on a busy machine) on
top of nats-py's own work: what every remote tell crosses (its publish, its delivery,
its result and that result's delivery) goes through the fast lane instead
(``irisd/mesh/lane.py``), on irisd's trio loop; this thread keeps the rest (streams,
buckets, consumers made, the directory's watch and heartbeats).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class Bridge:
    def __init__(self, loop: asyncio.AbstractEventLoop, token: trio.lowlevel.TrioToken) -> None:
        self.loop = loop
        self._token = token

    async def call(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        """``await function(*args, **kwargs)`` on the asyncio loop; its result or its
        exception. Cancellation cancels the asyncio task too (and waits no longer)."""
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(
            function(*args, **kwargs), self.loop
        )
        done = trio.Event()
        future.add_done_callback(lambda _: self.to_trio(done.set))
        try:
            await done.wait()
        except BaseException:
            future.cancel()
            raise
        return future.result()

    def to_trio(self, function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` soon in the trio loop (from the asyncio thread); nothing
        once trio has finished."""
        try:
            self._token.run_sync_soon(function, *args)
        except trio.RunFinishedError:
            pass


@asynccontextmanager
async def open_bridge() -> AsyncIterator[Bridge]:
    """A thread with an asyncio loop, for as long as the block runs. On the way out every
    task still on the loop is cancelled, then the loop stops and the thread is joined."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="iris-mesh-asyncio", daemon=True)
    thread.start()
    try:
        yield Bridge(loop, trio.lowlevel.current_trio_token())
    finally:
        with trio.CancelScope(shield=True):
            stopped = asyncio.run_coroutine_threadsafe(_cancel_all(), loop)
            await trio.to_thread.run_sync(stopped.result)
            loop.call_soon_threadsafe(loop.stop)
            await trio.to_thread.run_sync(thread.join)
            loop.close()


async def _cancel_all() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
