"""The stdio ``iris mcp``'s transport: MCP on stdin and stdout, its hot requests answered
without the MCP SDK's JSON-RPC (``iris_mcp/fastpath.py``), everything else by the SDK's
server.

How it works: ``serve_stdio`` takes the process's stdin and stdout as the SDK's
``stdio_server`` does (while serving, fd 0 reads the null device and fd 1 writes to
stderr, so nothing else can reach the wire) but reads and writes them on trio's event
loop, not a worker thread per line. ``serve_streams`` reads lines: once the SDK's
server has seen the connection open the 2026-07-28 era, each line is offered to the
fast path first. A fast ``tools/call`` runs as its own task on the same ``Shim`` and
``StateSeal`` as the SDK's ``call_tool``, and its answer and progress notifications
are written here; a ``notifications/cancelled`` for it cancels that task (its tell is
cancelled as the SDK path cancels it) and nothing is answered, as the SDK does. Every
other line is parsed as the SDK's own transport parses it and handed to its server,
whose messages are written to the same stdout, one line at a time.

On stdin's end the SDK's server ends its calls and the fast calls still running are
cancelled and answered "Connection closed", as the SDK answers its own. When stdin or
stdout is not a pipe or socket (a terminal, a file), the SDK's own ``stdio_server``
serves, without the fast path.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import trio

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage
    from mcp_types import RequestId

    from iris_mcp.fastpath import FastRequest
    from iris_mcp.progress_sender import ReportProgress
    from iris_mcp.shim import Shim, StateSeal

log = logging.getLogger("iris.mcp")

MAX_LINE_BYTES = 16 * 1024 * 1024  # a JSON-RPC line from the client; past it the session ends
MAX_FAST_CALLS = 64  # fast calls at once; past it a call goes the SDK's way (which has its own)
SDK_QUEUE = 16  # lines read ahead of the SDK's server, and its messages ahead of the writer
CONNECTION_CLOSED = -32000  # the SDK's answer to a call still running when the client left
READ_CHUNK = 65536


async def serve_stdio(shim: Shim, server: Server[Any], seal: StateSeal) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes stdin."""
    with claimed_stdio() as fds:
        if fds is None:
            from mcp.server.stdio import stdio_server

            log.info("stdin or stdout is no pipe: serving through the MCP SDK's stdio transport")
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            return
        stdin, stdout = (trio.lowlevel.FdStream(os.dup(fd)) for fd in fds)  # each closes its own copy
        async with stdin, stdout:
            await serve_streams(shim, server, seal, stdin, stdout)


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


@dataclass
class _Call:
    """What ``RequestStateBoundary`` reads of a request's context (the stdio principal is None)."""

    method: str
    params: dict[str, Any]


class Front:
    """One stdio connection: the router, the fast calls, the writer (see the module docstring)."""

    def __init__(
        self, shim: Shim, server: Server[Any], seal: StateSeal, stdout: trio.abc.SendStream, *, fast: bool = True
    ) -> None:
        self.shim = shim
        self.server = server
        self.seal = seal
        self.stdout = stdout
        self.fast = fast  # False: every line goes to the SDK (tests compare both ways)
        self.modern = False  # the SDK's server serves the 2026-07-28 era (decided by the first request)
        self.decided = False
        self._write_lock = trio.Lock()
        self.broken = False  # stdout
        self.server_info = server.server_info_stamp  # encoded into each answer, never changed
        self.taken = 0  # requests the fast path took
        self._calls: dict[RequestId, trio.CancelScope] = {}

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
        from mcp.shared.message import SessionMessage

        from protocol.framing import FrameTooLargeError, LineFramer

        to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](SDK_QUEUE)
        sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](SDK_QUEUE)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._write_sdk, from_sdk)
            nursery.start_soon(self._run_sdk, sdk_in, sdk_out)
            async with trio.open_nursery() as calls:
                async with to_sdk:
                    framer = LineFramer(MAX_LINE_BYTES)
                    try:
                        async for data in stdin:
                            framer.receive_data(data)
                            while (line := framer.next_frame()) is not None:
                                await self._route(line, to_sdk, calls)
                    except FrameTooLargeError as exc:
                        log.error("the MCP client sent %s; ending the session", exc)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        log.info("stdin broke; ending the session")
                    if (tail := framer.tail()).strip():
                        await self._route(tail, to_sdk, calls)
                calls.cancel_scope.cancel()  # the client left: its fast calls end, answered as closed

    async def _run_sdk(self, sdk_in: Any, sdk_out: Any) -> None:
        await self.server.run(sdk_in, sdk_out, self.server.create_initialization_options())

    async def _write_sdk(self, from_sdk: Any) -> None:
        async with from_sdk:
            async for message in from_sdk:
                json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await self.write(json.encode() + b"\n")

    async def _route(self, line: bytes, to_sdk: Any, calls: trio.Nursery) -> None:
        if self.modern and self.fast:
            from iris_mcp.fastpath import Cancel, read_line

            fast = read_line(line)
            if isinstance(fast, Cancel):
                scope = self._calls.get(fast.request_id)
                if scope is not None:
                    scope.cancel()
                    return
            elif fast is not None and len(self._calls) < MAX_FAST_CALLS:
                from mcp.shared.dispatcher import coerce_request_id

                key = coerce_request_id(fast.id)
                if key in self._calls:  # an id still in use: the SDK answers that as it does
                    await to_sdk.send(self._parsed(line))
                    return
                self._calls[key] = scope = trio.CancelScope()
                self.taken += 1
                calls.start_soon(self._answer, fast, key, scope)
                return
        await to_sdk.send(self._parsed(line))

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
        from mcp.shared.exceptions import MCPError

        from iris_mcp import fastpath

        try:
            with scope:
                try:
                    result = await self._result(request)
                except MCPError as exc:  # the seal refused (as the SDK's path answers it)
                    line = fastpath.error_response(request.id, exc.error.code, exc.error.message, exc.error.data)
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

        info = self.server_info
        if request.method == "tools/list":
            from iris_mcp.listing import list_result

            return {**list_result(self.shim.offered), "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        return fastpath.complete(await self._call_tool(request), info)

    async def _call_tool(self, request: FastRequest) -> dict[str, Any]:
        """``tools/call`` on the SDK path's terms: the same Shim, asking, seal and result."""
        from iris_mcp import fastpath
        from iris_mcp.asking import Asking
        from iris_mcp.shim import can_elicit

        report: ReportProgress = None
        token = request.progress_token
        if token is not None:

            async def report_progress(value: float, message: str) -> None:
                await self.write(fastpath.progress(token, value, message))

            report = report_progress

        async def run(ctx: Any) -> dict[str, Any]:
            can_ask = can_elicit(request.protocol_version, request.capabilities)
            asking = Asking(can_ask=can_ask, spent=self.seal.spent())
            output = await self.shim.call(request.name, request.arguments, report, asking)
            return output.wire()

        ctx = cast(Any, _Call(request.method, request.params))
        return cast(dict[str, Any], await self.seal(ctx, cast(Callable[..., Any], run)))


async def serve_streams(
    shim: Shim,
    server: Server[Any],
    seal: StateSeal,
    stdin: trio.abc.ReceiveStream,
    stdout: trio.abc.SendStream,
    *,
    fast: bool = True,
) -> None:
    """Serve MCP from ``stdin`` to ``stdout`` until ``stdin`` ends (see the module docstring)."""
    await Front(shim, server, seal, stdout, fast=fast).serve(stdin)
