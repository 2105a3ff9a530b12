"""The bearer-adding forward proxy the TCK test puts in front of irisd (no claude here)."""

from __future__ import annotations

import pytest
import trio

from e2e.bearer_proxy import BearerProxy, NotForwarded, rewrite_head


def test_the_head_goes_to_the_origin_with_our_token_and_nothing_of_the_clients() -> None:
    head = (
        b"POST http://127.0.0.1:8080/a2a/tck?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
        b"Authorization: Bearer theirs\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n"
        b"Content-Length: 2"
    )
    assert rewrite_head(head, "127.0.0.1:8080", "ours").split(b"\r\n") == [
        b"POST /a2a/tck?x=1 HTTP/1.1",
        b"Host: 127.0.0.1:8080",
        b"Content-Length: 2",
        b"Authorization: Bearer ours",
        b"Connection: close",
        b"",
        b"",
    ]


@pytest.mark.parametrize(
    "line", [b"GET http://127.0.0.1:9/ HTTP/1.1", b"GET https://127.0.0.1:8080/ HTTP/1.1", b"GET / HTTP/1.1", b"GET"]
)
def test_nothing_but_the_one_origin_is_forwarded(line: bytes) -> None:
    with pytest.raises(NotForwarded):
        rewrite_head(line + b"\r\nHost: x", "127.0.0.1:8080", "ours")


async def test_a_stream_flows_through_as_it_comes_and_the_request_carries_the_token() -> None:
    heads: list[bytes] = []
    second = trio.Event()

    async def origin(stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some()
        heads.append(data)
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        await stream.send_all(b"data: 1\n\n")
        await second.wait()  # the client has the first event before the origin sends on
        await stream.send_all(b"data: 2\n\n")
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, origin, 0)
        port = listeners[0].socket.getsockname()[1]
        proxy = BearerProxy(f"127.0.0.1:{port}", "ours")
        proxy_port = await nursery.start(proxy.serve)
        async with await trio.open_tcp_stream("127.0.0.1", proxy_port) as client:
            await client.send_all(f"GET http://127.0.0.1:{port}/s HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            received = b""
            while b"data: 1" not in received:
                received += await client.receive_some()
            second.set()
            while chunk := await client.receive_some():
                received += chunk
        assert received.endswith(b"data: 1\n\ndata: 2\n\n")
        assert b"Authorization: Bearer ours" in heads[0] and heads[0].startswith(b"GET /s HTTP/1.1")
        assert proxy.forwarded == 1
        nursery.cancel_scope.cancel()
