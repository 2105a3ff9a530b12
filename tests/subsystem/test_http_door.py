"""The HTTP face's door (irisd/http/door.py) on a real socket: the face is loaded and built
only when a client connects, a child is granted its token (the face alone: the child's first
requests need no MCP SDK) or the MCP preload asks (the face and the SDK), and
never when irisd drains first; a client that connected before it was loaded is served."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from irisd.http import door
from irisd.http.door import HttpDoor, open_http_socket


class FakeFace:
    """Stands in for the loaded face (``HttpServer``): it accepts one client and says hello."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.mcp_wanted = 0
        self.running = trio.Event()
        self.stopped = trio.Event()

    def want_mcp(self) -> None:
        self.mcp_wanted += 1

    def stop_accepting(self) -> None:
        self.stopped.set()

    async def run(self) -> None:
        self.running.set()
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(self.sock.dup()))
        async with listener, trio.open_nursery() as nursery:

            async def serve() -> None:
                while True:
                    stream = await listener.accept()
                    async with stream:
                        await stream.send_all(b"hello")

            nursery.start_soon(serve)
            await self.stopped.wait()
            nursery.cancel_scope.cancel()


class Counted:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.loads = 0
        self.faces: list[FakeFace] = []
        self.built = trio.Event()

    def load(self) -> None:
        self.loads += 1

    def build(self) -> FakeFace:
        self.faces.append(FakeFace(self.sock))
        self.built.set()
        return self.faces[-1]


async def test_the_face_is_loaded_by_the_first_client_which_it_then_serves() -> None:
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        counted = Counted(sock)
        door = HttpDoor(sock, counted.load, counted.build)
        async with trio.open_nursery() as nursery:
            await nursery.start(door.run)
            await trio.testing.wait_all_tasks_blocked()  # a door nobody knocks at stays as it is
            assert (counted.loads, counted.faces, door.server) == (0, [], None)
            client = await trio.open_tcp_stream(*sock.getsockname()[:2])
            async with client:  # connected before the face was there: served once it is
                assert await client.receive_some(5) == b"hello"
            assert counted.loads == 1 and len(counted.faces) == 1
            door.want_mcp()  # loaded: passed on at once
            assert counted.faces[0].mcp_wanted == 1
            door.stop_accepting()
        assert counted.faces[0].stopped.is_set()


@pytest.mark.parametrize(("want", "sdk_wanted"), [("want_face", 0), ("want_mcp", 1)],
                         ids=["a child granted its token: the face alone", "the preload: the face and the SDK"])
async def test_a_child_granted_its_token_or_the_preload_loads_the_face(want: str, sdk_wanted: int) -> None:
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        counted = Counted(sock)
        door = HttpDoor(sock, counted.load, counted.build)
        async with trio.open_nursery() as nursery:
            await nursery.start(door.run)
            getattr(door, want)()
            getattr(door, want)()
            await counted.built.wait()
            await counted.faces[0].running.wait()
            assert counted.loads == 1 and counted.faces[0].mcp_wanted == sdk_wanted
            door.stop_accepting()


async def test_a_drain_before_anything_needed_it_loads_nothing() -> None:
    with open_http_socket("127.0.0.1", 0) as sock, trio.fail_after(30):
        counted = Counted(sock)
        door = HttpDoor(sock, counted.load, counted.build)
        async with trio.open_nursery() as nursery:
            await nursery.start(door.run)
            door.stop_accepting()  # run returns: the nursery closes
        assert (counted.loads, counted.faces) == (0, [])


async def test_a_client_that_reads_nothing_is_cut_off_by_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that reads nothing of a streamed body is cut off by the kernel: one bound
    for every route's writes, set on the door's socket."""
    monkeypatch.setattr(door, "SEND_TIMEOUT_S", 0.5)
    with open_http_socket("127.0.0.1", 0) as sock:
        async with trio.SocketListener(trio.socket.from_stdlib_socket(sock.dup())) as listener:
            with socket.socket() as reader:
                reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # its buffer fills soon
                reader.connect(sock.getsockname()[:2])
                async with await listener.accept() as stream:
                    assert stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 500
                    with trio.fail_after(20), pytest.raises(trio.BrokenResourceError):
                        while True:  # until the kernel gives up on it (without the option: never)
                            await stream.send_all(b"x" * 65536)
            # A reader that reads is not cut off.
            with socket.socket() as reader:
                reader.connect(sock.getsockname()[:2])
                async with await listener.accept() as stream:
                    total = 4 * 1024 * 1024

                    def read_all() -> int:
                        got = 0
                        while got < total:
                            got += len(reader.recv(1 << 16))
                        return got

                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(stream.send_all, b"y" * total)
                        assert await trio.to_thread.run_sync(read_all) == total
