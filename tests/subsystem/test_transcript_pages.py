"""A long transcript read through the socket in pages (``ReadTranscript(paged=True)``): the
real core (fake children: no claude is needed to read what is stored), the real socket
server on a socketpair, a client that reads frames with a small maximum size. irisd holds
a page at a time, and a client that does not read stops the reading."""

from __future__ import annotations

import json
import socket
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import apsw
import h11
import pytest
import trio
import trio.testing

from fakes.core import no_events, running_core, teams_config
from iris_mcp.render import MAX_TRANSCRIPT_CHARS, MAX_TRANSCRIPT_ENTRIES
from irisd.caller import OWNER
from irisd.dispatch import Dispatcher
from irisd.http.app import HttpFace
from irisd.http.listener import HttpServer, open_http_socket
from irisd.http.mcp import shim_for
from irisd.http.security import Allowlist, host_names
from irisd.serving import Serving
from irisd.socket_server import SEND_BUFFER, Server
from irisd.store import lines, tells, unsolicited
from irisd.tokens import Access
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.framing import LengthPrefixedFramer
from protocol.messages import (
    Hello,
    ReadTranscript,
    ReadUnsolicited,
    Request,
    ServerMessage,
    TellInfo,
    TranscriptPage,
    TranscriptReply,
    UnsolicitedInfo,
    UnsolicitedReply,
    Welcome,
)
from protocol.transcript import entries

LINES = 10_000
LINE_BYTES = 1024
SMALL_FRAMES = 1024 * 1024  # the client's maximum frame: a tenth of the transcript


def line(n: int, kind: str = "stream_event") -> bytes:
    """A line of about LINE_BYTES that says which it is (n)."""
    if kind == "assistant":
        text = f"line {n} " + "x" * (LINE_BYTES - 100)
        return b'{"type":"assistant","message":{"content":[{"type":"text","text":"' + text.encode() + b'"}]}}'
    return b'{"type":"stream_event","n":' + str(n).encode() + b',"pad":"' + b"x" * (LINE_BYTES - 60) + b'"}'


async def store_transcript(core: Dispatcher, tell_id: str, count: int, kind: str = "stream_event") -> None:
    now = time.time()
    await core.store.call(tells.insert, TellInfo(
        id=tell_id, from_team=None, to_team="alpha", message="what is in the logs?", status="completed",
        text="done", created_at=now, finished_at=now,
    ))
    await core.store.call(tells.append_messages, tell_id, [(now + n / 1000, kind, line(n, kind)) for n in range(count)])


class Reader:
    """The client end of a socketpair served by irisd's socket server: frames of at most
    ``max_frame`` bytes."""

    def __init__(self, stream: trio.SocketStream, max_frame: int, irisd_end: socket.socket) -> None:
        self.stream = stream
        self.framer = LengthPrefixedFramer(max_frame)
        self.irisd_end = irisd_end  # the socket irisd serves this client on

    async def send(self, message: Request) -> None:
        await self.stream.send_all(encode(message))

    async def receive(self) -> ServerMessage:
        while (frame := self.framer.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            assert data, "irisd closed the connection"
            self.framer.receive_data(data)
        return decode_server_message(frame)

    async def transcript(self, tell_id: str, *, packed: bool = False) -> tuple[int, list[int], TranscriptReply]:
        """Read a paged transcript: how many pages, the line numbers in order, the reply.
        Keeps no page (the test's own memory stays flat too)."""
        await self.send(ReadTranscript(tell_id=tell_id, paged=True, packed=packed))
        pages, numbers = 0, []
        while isinstance(message := await self.receive(), TranscriptPage):
            pages += 1
            assert bool(message.packed) == packed and not (packed and message.entries)
            numbers += [int(entry.raw.split('"n":', 1)[1].split(",", 1)[0]) for entry in entries(message)]
        assert isinstance(message, TranscriptReply), message
        return pages, numbers, message


@asynccontextmanager
async def served(tmp_path: Path, max_frame: int = SMALL_FRAMES) -> AsyncIterator[tuple[Dispatcher, Reader]]:
    """The core, its socket server handling one client on a socketpair, and that client."""
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        ours, theirs = socket.socketpair()
        server = Server(cast(trio.SocketListener, None), Serving(core))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.handle, trio.SocketStream(trio.socket.from_stdlib_socket(theirs)))
            reader = Reader(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), max_frame, theirs)
            await reader.send(Hello(protocol_version=PROTOCOL_VERSION))
            assert isinstance(await reader.receive(), Welcome)
            yield core, reader
            nursery.cancel_scope.cancel()
        ours.close()


@pytest.mark.parametrize("packed", [False, True])
async def test_ten_thousand_lines_come_through_the_socket_in_pages_under_a_small_frame_limit(
    tmp_path: Path, packed: bool
) -> None:
    """10 MiB of lines through a client that refuses frames over 1 MiB (the whole reply in one
    frame was 10 MiB): pages of at most lines.PAGE_BYTES and a row, all lines in order, then
    the reply with the tell and no lines; the lines decoded, or packed as stored."""
    with trio.fail_after(60):
        async with served(tmp_path) as (core, reader):
            await store_transcript(core, "t-long", LINES)
            pages, numbers, reply = await reader.transcript("t-long", packed=packed)
    assert numbers == list(range(LINES))
    assert pages >= LINES * LINE_BYTES // (lines.PAGE_BYTES + lines.CHUNK_BYTES)
    assert reply.tell.id == "t-long" and reply.tell.status == "completed" and reply.entries == []


async def test_irisd_s_end_of_a_client_s_socket_takes_a_whole_page_in_one_send(tmp_path: Path) -> None:
    """Its send buffer holds a page and its last row (the kernel doubles what is set, up to
    twice net.core.wmem_max), so irisd writes a page while the client reads the last one."""
    wmem_max = int(await trio.Path("/proc/sys/net/core/wmem_max").read_text())
    with trio.fail_after(60):
        async with served(tmp_path) as (_, reader):
            buffer = reader.irisd_end.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    assert buffer >= 2 * min(SEND_BUFFER, wmem_max)
    assert SEND_BUFFER >= lines.PAGE_BYTES + lines.CHUNK_BYTES


@pytest.mark.parametrize("packed", [False, True])
async def test_irisd_holds_about_a_page_whatever_the_transcript_s_length(tmp_path: Path, packed: bool) -> None:
    """Python's allocations at their peak while irisd serves the read (and this client reads
    it, page by page): the same for 10,000 lines as for 1,000, and far below the transcript
    (the whole reply took about five times its size); the lines decoded, or packed."""
    with trio.fail_after(120):
        async with served(tmp_path) as (core, reader):
            await store_transcript(core, "t-short", LINES // 10)
            await store_transcript(core, "t-long", LINES)
            peaks = {}
            for tell_id in ("t-short", "t-long", "t-short"):  # the first read warms what stays (decoders, ...)
                tracemalloc.start()
                try:
                    _, numbers, _ = await reader.transcript(tell_id, packed=packed)
                    peaks[tell_id] = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                assert len(numbers) == (LINES if tell_id == "t-long" else LINES // 10)
    transcript = LINES * LINE_BYTES
    assert peaks["t-long"] < 1.5 * peaks["t-short"], peaks
    assert peaks["t-long"] < transcript / 3, peaks


async def test_a_client_that_reads_nothing_stops_the_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page is written to the socket before the next is read: while the client reads
    nothing, irisd reads no more than fills the socket's buffers (the pages its send buffer
    takes, and one more: a few of 40), and goes on once the client reads."""
    read: list[int] = []
    original = lines.page

    def counted(*args: object, **kwargs: object) -> lines.Page:
        page = original(*args, **kwargs)  # type: ignore[arg-type]
        read.append(page.line_count)
        return page

    with trio.fail_after(60):
        async with served(tmp_path) as (core, reader):
            await store_transcript(core, "t-long", LINES)
            monkeypatch.setattr(lines, "page", counted)
            await reader.send(ReadTranscript(tell_id="t-long", paged=True))
            await trio.testing.wait_all_tasks_blocked()  # irisd waits for the socket to take more
            held = list(read)
            monkeypatch.undo()
            pages, numbers, _ = 0, [], None
            while isinstance(message := await reader.receive(), TranscriptPage):
                pages += 1
                numbers += [int(e.raw.split('"n":', 1)[1].split(",", 1)[0]) for e in message.entries]
    assert len(held) <= 2 * SEND_BUFFER // lines.PAGE_BYTES + 2 and sum(held) < LINES // 4, held
    assert pages >= 30 and numbers == list(range(LINES))


async def test_the_steps_come_in_pages_too_and_the_end_carries_the_tells_figures(tmp_path: Path) -> None:
    """steps=True: the steps of 10,000 assistant lines in pages, in order; the end step (a
    result line last) booked with the tell's cost, as the unpaged reply has it."""
    result = b'{"type":"result","subtype":"success","result":"done","total_cost_usd":9.0,"duration_ms":5}'
    with trio.fail_after(60):
        async with served(tmp_path) as (core, reader):
            await store_transcript(core, "t-long", LINES, "assistant")
            await core.store.call(tells.append_messages, "t-long", [(time.time(), "result", result)])
            await core.store.call(tells.update, TellInfo(
                id="t-long", from_team=None, to_team="alpha", message="?", status="completed", text="done",
                created_at=1.0, finished_at=2.0, cost_usd=0.25,
            ))
            await reader.send(ReadTranscript(tell_id="t-long", steps=True, paged=True))
            pages = []
            while isinstance(message := await reader.receive(), TranscriptPage):
                assert not message.entries
                pages.append(message.steps)
            whole = await core.dispatch(ReadTranscript(tell_id="t-long", steps=True), OWNER, no_events)
    paged = [step for page in pages for step in page]
    assert len(pages) > 10
    assert [s.text.split(" ", 2)[:2] for s in paged[:-1]] == [["line", str(n)] for n in range(LINES)]
    assert paged[-1].kind == "end" and paged[-1].cost_usd == 0.25
    assert isinstance(whole, TranscriptReply) and whole.steps == paged



# --- the HTTP API: the same pages, written as the body ------------------------------------


@asynccontextmanager
async def http_served(tmp_path: Path) -> AsyncIterator[tuple[Dispatcher, int, str]]:
    """The core behind the HTTP face, hypercorn on a real socket; (core, port, owner token)."""
    async with running_core(tmp_path, teams_config(tmp_path)) as core:
        with open_http_socket("127.0.0.1", 0) as sock:
            port = sock.getsockname()[1]
            access = Access.open(tmp_path)
            config = core.current.config
            face = HttpFace(Serving(core), access, Allowlist(host_names("127.0.0.1"), port), config=lambda: config)
            async with trio.open_nursery() as nursery:
                await nursery.start(HttpServer(face, sock, max_connections=8).run)
                yield core, port, access.owner_token
                nursery.cancel_scope.cancel()


async def http_get(port: int, token: str, path: str, *, read: bool = True) -> trio.SocketStream:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                          "Connection: close\r\n\r\n".encode())
    return stream


async def http_answer(stream: trio.SocketStream) -> tuple[int, Any]:
    """The status and the JSON body of a response (chunked or not), read to its end."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))  # h11 expects a response then
    status, body = 0, bytearray()
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            await stream.aclose()
            return status, json.loads(body)


async def test_the_http_api_writes_the_transcript_page_by_page_and_a_reader_that_reads_nothing_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    original = lines.page

    def counted(*args: object, **kwargs: object) -> lines.Page:
        page = original(*args, **kwargs)  # type: ignore[arg-type]
        read.append(page.line_count)
        return page

    with trio.fail_after(60):
        async with http_served(tmp_path) as (core, port, token):
            await store_transcript(core, "t-long", LINES)
            monkeypatch.setattr(lines, "page", counted)
            stream = await http_get(port, token, "/api/tells/t-long/transcript")
            await trio.testing.wait_all_tasks_blocked()  # the body waits for this reader to read
            held = list(read)
            status, body = await http_answer(stream)
    assert len(held) <= 3 and sum(held) < LINES // 4, held
    assert status == 200 and body["type"] == "transcript_reply" and body["tell"]["id"] == "t-long"
    assert [int(e["raw"].split('"n":', 1)[1].split(",", 1)[0]) for e in body["entries"]] == list(range(LINES))
    assert "steps" not in body and len(read) >= 30  # as msgspec writes the reply: an empty default left out


async def test_the_http_api_answers_a_transcript_without_lines_and_an_unknown_tell_as_before(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with http_served(tmp_path) as (core, port, token):
            await store_transcript(core, "t-empty", 0)
            status, body = await http_answer(await http_get(port, token, "/api/tells/t-empty/transcript"))
            assert status == 200 and body == {"type": "transcript_reply", "entries": [], "tell": body["tell"]}
            assert body["tell"]["id"] == "t-empty"
            status, body = await http_answer(await http_get(port, token, "/api/tells/t-empty/transcript?steps=true"))
            assert status == 200 and (body["entries"], body["steps"], body["tell"]["id"]) == ([], [], "t-empty")
            status, body = await http_answer(await http_get(port, token, "/api/tells/t-none/transcript"))
            assert status == 404 and body["code"] == "not_found" and "t-none" in body["message"]


async def test_a_failure_half_way_through_the_body_ends_it_with_the_error_not_a_whole_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status went out with the first page: the database failing after it ends the body
    with the error's JSON on a line of its own, and the body is no JSON a reader could take
    for the transcript."""
    original = lines.page

    def failing(db: Any, *args: Any, **kwargs: Any) -> lines.Page:
        if args[2] != (0, 0):  # after the first page
            raise apsw.IOError("disk I/O error")
        return original(db, *args, **kwargs)

    with trio.fail_after(60):
        async with http_served(tmp_path) as (core, port, token):
            await store_transcript(core, "t-long", LINES)
            monkeypatch.setattr(lines, "page", failing)
            stream = await http_get(port, token, "/api/tells/t-long/transcript")
            with pytest.raises(json.JSONDecodeError) as cut:
                await http_answer(stream)
    last = json.loads(cut.value.doc.rsplit("\n", 1)[1])
    assert last["type"] == "error" and "I/O" in last["message"], last


async def test_irisds_own_mcp_reads_the_steps_in_pages_and_keeps_only_what_it_shows(tmp_path: Path) -> None:
    """``team_cache_read`` through irisd's /mcp runs in irisd: it asks for the steps in pages
    and keeps the tail it shows, so irisd holds no more for it than for the socket."""
    async def no_progress(progress: float, message: str) -> None:
        pass

    with trio.fail_after(60):
        async with running_core(tmp_path, teams_config(tmp_path)) as core:
            await store_transcript(core, "t-long", LINES, "assistant")
            shim = shim_for(Serving(core), OWNER)
            tracemalloc.start()
            try:
                output = await shim.call("team_cache_read", {"tellId": "t-long"}, no_progress)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    assert output.data["entries_truncated"] and output.data["entries"][-1]["line"].startswith("assistant: line 9999")
    assert len(output.data["entries"]) == MAX_TRANSCRIPT_ENTRIES and len(output.text) == MAX_TRANSCRIPT_CHARS
    assert peak < LINES * LINE_BYTES / 3, peak


def unsolicited_lines(db: apsw.Connection, turn_id: str, count: int) -> None:
    with db:
        for n in range(count):
            unsolicited.append_message(db, turn_id, float(n), "stream_event", line(n))


@pytest.mark.parametrize("packed", [False, True])
async def test_an_unsolicited_turn_s_lines_come_in_pages_too(tmp_path: Path, packed: bool) -> None:
    turn = UnsolicitedInfo(id="u-long", from_team=None, to_team="alpha", status="completed", started_at=1.0)
    with trio.fail_after(60):
        async with served(tmp_path) as (core, reader):
            await core.store.call(unsolicited.save, turn)
            await core.store.call(unsolicited_lines, "u-long", LINES // 2)
            await reader.send(ReadUnsolicited(turn_id="u-long", paged=True, packed=packed))
            pages, numbers = 0, []
            while isinstance(message := await reader.receive(), TranscriptPage):
                pages += 1
                assert bool(message.packed) == packed
                numbers += [int(e.raw.split('"n":', 1)[1].split(",", 1)[0]) for e in entries(message)]
            whole = await core.dispatch(ReadUnsolicited(turn_id="u-long"), OWNER, no_events)
    assert numbers == list(range(LINES // 2)) and pages > 10
    assert isinstance(message, UnsolicitedReply) and message.turn.id == "u-long" and message.entries == []
    assert isinstance(whole, UnsolicitedReply) and len(whole.entries) == LINES // 2
