"""A forward HTTP proxy that adds a bearer token: how the A2A TCK reaches Iris's A2A face.

The TCK (third_party/a2a-tck, at the commit Iris carries) sends no credentials and has no
option to, while Iris answers no A2A method without a token. Its HTTP client (httpx)
honours ``HTTP_PROXY``, so the test points that at this proxy, which forwards each
request to the one origin it serves with ``Authorization: Bearer TOKEN`` added, as an A2A
client holding a token would send it. Nothing else changes: the TCK still reads the card
and every URL from irisd itself. One request per connection (``Connection: close``), and
bytes pass as they come, so an SSE stream flows and a client that leaves ends it.
"""

from __future__ import annotations

import urllib.parse

import trio

MAX_HEAD_BYTES = 64 * 1024
_DROPPED = {b"authorization", b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization"}


class NotForwarded(ValueError):
    """A request this proxy will not forward (another origin, not absolute-form, too long)."""


def rewrite_head(head: bytes, origin: str, token: str) -> bytes:
    """The request head to send to ``origin`` (``host:port``): the request line in origin
    form, the client's own credentials and connection headers replaced by ours."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].split(b" ")
    except ValueError:
        raise NotForwarded(f"not a request line: {lines[0]!r}") from None
    url = urllib.parse.urlsplit(target.decode("latin-1"))
    if url.scheme != "http" or url.netloc != origin:
        raise NotForwarded(f"this proxy forwards to http://{origin} only, not {target!r}")
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in _DROPPED]
    added = [f"Authorization: Bearer {token}".encode(), b"Connection: close"]
    return b"\r\n".join([b" ".join([method, path.encode("latin-1"), version]), *kept, *added]) + b"\r\n\r\n"


class BearerProxy:
    """Serves on 127.0.0.1 (any free port); forwards to ``origin`` with ``token``."""

    def __init__(self, origin: str, token: str) -> None:
        self.origin = origin
        self.token = token
        self.forwarded = 0  # requests sent on, for the test to see the TCK went through us

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SocketStream) -> None:
        async with client:
            head, rest = await _read_head(client)
            if head is None:
                return
            try:
                request = rewrite_head(head, self.origin, self.token)
            except NotForwarded as exc:
                body = str(exc).encode()
                status = b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n"
                await client.send_all(status + b"Content-Length: %d\r\n\r\n" % len(body) + body)
                return
            host, port = self.origin.rsplit(":", 1)
            upstream = await trio.open_tcp_stream(host, int(port))
            async with upstream:
                self.forwarded += 1
                await upstream.send_all(request + rest)
                async with trio.open_nursery() as nursery:
                    # Whichever side ends first ends the exchange: the response is complete
                    # (irisd closes), or the client left mid-stream.
                    nursery.start_soon(_pump, client, upstream, nursery.cancel_scope)
                    nursery.start_soon(_pump, upstream, client, nursery.cancel_scope)


async def _read_head(stream: trio.SocketStream) -> tuple[bytes | None, bytes]:
    """The request head (without its blank line) and whatever body bytes came with it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            return None, b""
        try:
            chunk = await stream.receive_some()
        except trio.BrokenResourceError:
            return None, b""
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


async def _pump(source: trio.SocketStream, sink: trio.SocketStream, done: trio.CancelScope) -> None:
    try:
        async for chunk in source:
            await sink.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    done.cancel()
