"""The fast lane writes a publish to its socket in the publisher's own step
(irisd/mesh/lane.py ``_flush``), not in a writer task's turn after the loop's other
tasks: against a stand-in server on a real socket, the bytes are there before the
publisher yields; what the socket does not take at once goes through the writer task,
in order. A subject it listens to is handed to its handler as the reader reads it."""

from __future__ import annotations

import os

import trio
import trio.testing

from harness import wait_until
from irisd.mesh.lane import Credentials, Lane
from irisd.mesh.nats_wire import Message


async def test_a_publish_is_on_the_socket_before_the_publisher_yields() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    lane = Lane([f"nats://127.0.0.1:{port}"], name="test", inbox="_INBOX.ws-1", credentials=Credentials())
    with trio.fail_after(10):
        async with listener, trio.open_nursery() as nursery:
            server: list[trio.SocketStream] = []

            async def serve() -> None:  # INFO, then PONG to the client's CONNECT and PING
                stream = await listener.accept()
                server.append(stream)
                await stream.send_all(b'INFO {"server_id":"x","max_payload":1048576}\r\n')
                seen = b""
                while b"PING\r\n" not in seen:
                    seen += await stream.receive_some(4096)
                await stream.send_all(b"PONG\r\n")

            nursery.start_soon(serve)
            await lane.connect(5)
            heard: list[Message] = []
            lane.listen("iris.live.ws-1.*", heard.append)
            nursery.start_soon(lane.run)
            await trio.testing.wait_all_tasks_blocked()
            fd = server[0].socket.fileno()
            subscribed = _drain(fd)
            (sid,) = [line.split()[-1] for line in subscribed.split(b"\r\n") if line.startswith(b"SUB iris.live")]
            await server[0].send_all(b"MSG iris.live.ws-1.ws-2 " + sid + b" 2\r\nhi\r\n")
            await wait_until(lambda: heard, every=0.001)
            assert heard == [Message("iris.live.ws-1.ws-2", int(sid), "", b"hi")]
            lane.publish_nowait("iris.live.ws-2.ws-1", b"hello")
            assert _drain(fd) == b"PUB iris.live.ws-2.ws-1 5\r\nhello\r\n"  # no checkpoint in between
            big = os.urandom(8 * 1024 * 1024)  # more than the socket takes at once: the rest via the task
            lane.publish_nowait("a", big)
            lane.publish_nowait("b", b"after")
            got = bytearray()
            expected = len(b"PUB a 8388608\r\n") + len(big) + 2 + len(b"PUB b 5\r\nafter\r\n")
            while len(got) < expected:
                got += await server[0].receive_some(1024 * 1024)
            assert bytes(got) == b"PUB a 8388608\r\n" + big + b"\r\nPUB b 5\r\nafter\r\n"
            nursery.cancel_scope.cancel()
            await server[0].aclose()


def _drain(fd: int) -> bytes:
    """What the server's side of the socket holds now (never waits)."""
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk
