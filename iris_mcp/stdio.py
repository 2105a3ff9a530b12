"""The stdio ``iris mcp``'s transport: MCP on stdin and stdout, a session of the 2026-07-28
era answered without the MCP SDK (``iris_mcp/fastpath.py``), everything else by the SDK's
server, loaded for the first line that needs it.

How it works: ``serve_stdio`` takes the process's stdin and stdout as the SDK's
``stdio_server`` does (while serving, fd 0 reads the null device and fd 1 writes to
stderr, so nothing else can reach the wire) but reads and writes them on trio's event
loop, not a worker thread per line. ``Front.serve`` reads lines and offers each to the
fast path first, while the connection serves (or opens) the 2026-07-28 era: what Claude
Code sends (``server/discover``, ``tools/list``, ``tools/call``,
``notifications/cancelled``) is answered here, so a normal session never imports the SDK
(nor pydantic). A fast ``tools/call`` runs as its own task on the same ``Shim`` and
``StateSeal`` as the SDK's ``call_tool`` (``iris_mcp/fastcall.py``), and its answer and
progress notifications are written here; a form it asks for (an ``input_required`` result) is sealed by the SDK's
``RequestStateBoundary``, loaded then. A ``notifications/cancelled`` for a fast call
cancels that task (its tell is cancelled as the SDK path cancels it) and nothing is
answered, as the SDK does.

Every other line (an ``initialize``, a retry carrying ``requestState``, anything the fast
path does not know) loads the SDK's server, which from then on takes it and every later
line the fast path leaves, parsed as the SDK's own transport parses them; its messages
are written to the same stdout, one line at a time. The SDK's server decides the era on
the first request it sees: when the fast path already answered the connection's first
request, the SDK's server is first handed a ``server/discover`` with that request's
envelope (its answer is dropped), so it serves the era the client opened.

On stdin's end the SDK's server (if loaded) ends its calls and the fast calls still
running are cancelled and answered "Connection closed", as the SDK answers its own. When
stdin or stdout is not a pipe or socket (a terminal, a file), the SDK's own
``stdio_server`` serves, without the fast path.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

    from iris_mcp.fastpath import FastRequest, RequestId
    from iris_mcp.progress_sender import ReportProgress
    from iris_mcp.shim import Shim, StateSeal

log = logging.getLogger("iris.mcp")

MAX_LINE_BYTES = 16 * 1024 * 1024  # a JSON-RPC line from the client; past it the session ends
MAX_FAST_CALLS = 64  # fast calls at once; past it a call goes the SDK's way (which has its own)
SDK_QUEUE = 16  # lines read ahead of the SDK's server, and its messages ahead of the writer
CONNECTION_CLOSED = -32000  # the SDK's answer to a call still running when the client left
READ_CHUNK = 65536


async def serve_stdio(shim: Shim, seal: StateSeal) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes stdin."""
    with claimed_stdio() as fds:
        if fds is None:
            from mcp.server.stdio import stdio_server

            server = _build_server(shim, seal)
            log.info("stdin or stdout is no pipe: serving through the MCP SDK's stdio transport")
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            return
        stdin, stdout = (trio.lowlevel.FdStream(os.dup(fd)) for fd in fds)  # each closes its own copy
        async with stdin, stdout:
            await serve_streams(shim, seal, stdin, stdout)


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int] | None]:
    """Private copies of fds 0 and 1 for the wire, fd 0 pointed at the null device and fd 1
    at stderr while serving, both put back after; None (nothing claimed) when either is not
    a pipe or socket, which trio cannot wait on."""
    if not all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode)):
        yield None
        return
    wire = [os.dup(0), os.dup(1)]
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire[0], wire[1]
    finally:
        os.close(null)
        os.dup2(wire[0], 0, inheritable=True)
        os.dup2(wire[1], 1, inheritable=True)


class Front:
    """One stdio connection: the router, the fast calls, the writer (see the module docstring).

    ``server``: makes the SDK's server, when a line needs it (default: ``build_server``
    on ``shim`` and ``seal``). ``fast``: False sends every line to the SDK (tests compare
    both ways)."""

    def __init__(
        self,
        shim: Shim,
        seal: StateSeal,
        stdout: trio.abc.SendStream,
        *,
        fast: bool = True,
        server: Callable[[], Server[Any]] | None = None,
    ) -> None:
        from iris_mcp.listing import SERVER_INFO

        self.shim = shim
        self.seal = seal
        self.stdout = stdout
        self.fast = fast
        self.make_server = server or partial(_build_server, shim, seal)
        self.server: Server[Any] | None = None  # the SDK's, once a line needed it
        self.modern = False  # the connection serves the 2026-07-28 era (decided by its first request)
        self.decided = False
        self.opening: dict[str, Any] | None = None  # the envelope of a first request the fast path answered
        self._write_lock = trio.Lock()
        self.broken = False  # stdout
        self.server_info = SERVER_INFO  # encoded into each answer, never changed
        self.taken = 0  # requests the fast path took
        self._calls: dict[RequestId, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        self._to_sdk: Any = None  # the SDK server's read stream (anyio), once loaded
        self._prime_id = f"iris-era-{os.getpid()}-{id(self)}"  # the SDK's answer to it is dropped

    async def write(self, line: bytes) -> None:
        """Write one whole line: shielded, as a line cut short by a cancel would corrupt the
        wire. Once stdout broke (the client is gone) lines are dropped: stdin ends next."""
        with trio.CancelScope(shield=True):
            async with self._write_lock:
                if self.broken:
                    return
                try:
                    await self.stdout.send_all(line)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    log.info("stdout broke: the MCP client is gone")
                    self.broken = True

    async def serve(self, stdin: trio.abc.ReceiveStream) -> None:
        """Route stdin's lines until it ends, then wind down (see the module docstring)."""
        from protocol.framing import FrameTooLargeError, LineFramer

        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if not self.fast:
                self._load_sdk()
            async with trio.open_nursery() as calls:
                try:
                    framer = LineFramer(MAX_LINE_BYTES)
                    try:
                        async for data in stdin:
                            framer.receive_data(data)
                            while (line := framer.next_frame()) is not None:
                                await self._route(line, calls)
                    except FrameTooLargeError as exc:
                        log.error("the MCP client sent %s; ending the session", exc)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        log.info("stdin broke; ending the session")
                    if (tail := framer.tail()).strip():
                        await self._route(tail, calls)
                finally:
                    if self._to_sdk is not None:
                        self._to_sdk.close()  # the SDK's server ends its calls
                calls.cancel_scope.cancel()  # the client left: its fast calls end, answered as closed

    def _load_sdk(self) -> None:
        """Build the SDK's server and start it and its writer in this connection's nursery."""
        import anyio
        from mcp.shared.message import SessionMessage

        assert self._nursery is not None
        log.debug("loading the MCP SDK's server")
        self.server = self.make_server()
        to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](SDK_QUEUE)
        sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](SDK_QUEUE)
        self._nursery.start_soon(self._write_sdk, from_sdk)
        self._nursery.start_soon(self._run_sdk, self.server, sdk_in, sdk_out)
        self._to_sdk = to_sdk

    async def _run_sdk(self, server: Server[Any], sdk_in: Any, sdk_out: Any) -> None:
        await server.run(sdk_in, sdk_out, server.create_initialization_options())

    async def _write_sdk(self, from_sdk: Any) -> None:
        async with from_sdk:
            async for message in from_sdk:
                if getattr(message.message, "id", None) == self._prime_id:
                    continue  # the answer to the discover that told the SDK the era
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await self.write(line.encode() + b"\n")

    async def _route(self, line: bytes, calls: trio.Nursery) -> None:
        from iris_mcp import fastpath

        if self.fast and (self.modern or not self.decided):
            fast = fastpath.read_line(line)
            if isinstance(fast, fastpath.Cancel):
                scope = self._calls.get(fast.request_id)
                if scope is not None:
                    scope.cancel()
                    return
                if self.decided and self.server is None:
                    return  # no call of that id runs anywhere (the SDK's server would ignore it too)
            elif fast is not None and len(self._calls) < MAX_FAST_CALLS:
                key = fastpath.coerce_request_id(fast.id)
                if key not in self._calls:  # an id still in use: the SDK answers that as it does
                    if not self.decided:  # this request opens the 2026-07-28 era
                        self.decided = self.modern = True
                        meta = fast.params["_meta"]
                        self.opening = {k: v for k, v in meta.items() if k.startswith("io.modelcontextprotocol/")}
                    self._calls[key] = scope = trio.CancelScope()
                    self.taken += 1
                    calls.start_soon(self._answer, fast, key, scope)
                    return
        await self._send_sdk(line)

    async def _send_sdk(self, line: bytes) -> None:
        """Hand ``line`` to the SDK's server (loaded now if it is not yet)."""
        if self.server is None:
            import msgspec

            from iris_mcp.sdk import import_server

            await trio.to_thread.run_sync(import_server)  # fast calls under way go on meanwhile
            self._load_sdk()
            if self.opening is not None:  # the fast path opened the era: tell the SDK's server
                prime = {"jsonrpc": "2.0", "id": self._prime_id, "method": "server/discover",
                         "params": {"_meta": self.opening}}
                await self._to_sdk.send(self._parsed(msgspec.json.encode(prime)))
        await self._to_sdk.send(self._parsed(line))

    def _parsed(self, line: bytes) -> SessionMessage | Exception:
        """The line as the SDK's stdio transport hands it to its server; the first request
        decides the era, as the SDK's server decides it."""
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        from iris_mcp.fastpath import opens_modern

        try:
            message = types.jsonrpc_message_adapter.validate_json(line.decode(errors="replace"), by_name=False)
        except Exception as exc:  # what the SDK's transport does with a line it cannot read
            return exc
        if not self.decided and isinstance(message, types.JSONRPCRequest):
            self.decided = True
            self.modern = opens_modern(message.method, message.params)
        return SessionMessage(message)

    async def _answer(self, request: FastRequest, key: RequestId, scope: trio.CancelScope) -> None:
        """Run one fast request and write its answer. A call the client cancelled
        (``scope``) is not answered; one still running when the session ends (this task
        cancelled from outside) is answered "Connection closed", as the SDK answers."""
        from iris_mcp import fastpath

        try:
            with scope:
                try:
                    result = await self._result(request)
                except fastpath.FastError as exc:  # the seal refused (as the SDK's path answers it)
                    line = fastpath.error_response(request.id, exc.code, exc.message, exc.data)
                except Exception:
                    log.exception("%s failed", request.method)
                    line = fastpath.error_response(request.id, fastpath.INTERNAL_ERROR, "Internal server error")
                else:
                    line = fastpath.response(request.id, result)
                await self.write(line)
        except trio.Cancelled:
            await self.write(fastpath.error_response(request.id, CONNECTION_CLOSED, "Connection closed"))
            raise
        finally:
            self._calls.pop(key, None)

    async def _result(self, request: FastRequest) -> dict[str, Any]:
        from iris_mcp import fastpath

        if request.method == "server/discover":
            from iris_mcp.listing import discover_result

            return discover_result()
        if request.method == "tools/list":
            from iris_mcp.listing import list_result

            return {**list_result(self.shim.offered), "_meta": {"io.modelcontextprotocol/serverInfo": self.server_info}}
        return fastpath.complete(await self._call_tool(request), self.server_info)

    async def _call_tool(self, request: FastRequest) -> dict[str, Any]:
        """``tools/call`` on the SDK path's terms: the same Shim, asking, seal and result."""
        from iris_mcp import fastpath
        from iris_mcp.fastcall import CallContext, call_tool

        report: ReportProgress = None
        token = request.progress_token
        if token is not None:

            async def report_progress(value: float, message: str) -> None:
                await self.write(fastpath.progress(token, value, message))

            report = report_progress

        return await call_tool(self.shim, self.seal, request, report, CallContext(request.method, request.params))


def _build_server(shim: Shim, seal: StateSeal) -> Server[Any]:
    from iris_mcp.shim import build_server

    return build_server(shim, seal=seal)


async def serve_streams(
    shim: Shim,
    seal: StateSeal,
    stdin: trio.abc.ReceiveStream,
    stdout: trio.abc.SendStream,
    *,
    fast: bool = True,
) -> None:
    """Serve MCP from ``stdin`` to ``stdout`` until ``stdin`` ends (see the module docstring)."""
    await Front(shim, seal, stdout, fast=fast).serve(stdin)
