"""A scripted, deterministic stand-in for the Anthropic Messages API: the HTTP server.

The real ``claude`` CLI talks to it when started with
``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`` and any ``ANTHROPIC_API_KEY``.
Tests use :class:`ScriptedModel` as a context manager; ``iris demo`` runs
``python -m scripted_model [--host H] [--port N]``. Stdlib only.

What it answers (the directive language, the side requests, the other endpoints and
what the CLI does with faults) is decided in ``scripted_model.planner``; this module
only reads requests, holds, streams and counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import urlsplit

from scripted_model.planner import (
    JSON,
    MODELS_PAGE,
    Event,
    Reply,
    count_tokens_json,
    count_turns,
    deltas,
    error_json,
    message_json,
    plan_reply,
    stream_events,
    user_text,
)

MAX_BODY = 64 * 1024 * 1024
"""Request bodies larger than this are refused with 413."""
_POLL_S = 0.05



class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], model: ScriptedModel) -> None:
        self.model = model
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client went away; nothing to report
        super().handle_error(request, client_address)  # a traceback on stderr


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: stdout belongs to ``main()``'s one line."""

    def setup(self) -> None:
        super().setup()
        self.server.model._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.model._track(self.connection, add=False)

    # -- dispatch ----------------------------------------------------------

    def do_GET(self) -> None:
        self._get(with_body=True)

    def do_HEAD(self) -> None:
        self._get(with_body=False)

    def do_POST(self) -> None:
        path = self._path()
        body = self._read_json()
        if body is None:
            return
        self.server.model._record(path, body)
        if path == "/v1/messages":
            self._answer_messages(body)
        elif path == "/v1/messages/count_tokens":
            self._send_json(200, count_tokens_json(body))
        else:
            self._not_found()

    def do_PUT(self) -> None:
        self._drain_and_404()

    def do_PATCH(self) -> None:
        self._drain_and_404()

    def do_DELETE(self) -> None:
        self._drain_and_404()

    def _get(self, *, with_body: bool) -> None:
        path = self._path()
        if path == "/api/hello":
            self._send_json(200, {"message": "hello"}, with_body=with_body)
        elif path == "/v1/models":
            self._send_json(200, MODELS_PAGE, with_body=with_body)
        else:
            self._not_found(with_body=with_body)

    def _drain_and_404(self) -> None:
        if self._read_body() is not None:
            self._not_found()

    def _not_found(self, *, with_body: bool = True) -> None:
        message = f"no such endpoint: {self.command} {self._path()}"
        self._send_json(404, error_json(404, message), with_body=with_body)

    # -- /v1/messages ------------------------------------------------------

    def _answer_messages(self, body: JSON) -> None:
        if not isinstance(body.get("messages"), list):
            self._send_json(400, error_json(400, "messages: a list is required"))
            return
        reply = plan_reply(body, tck=self.server.model.tck)
        streamed = body.get("stream") is True
        turn = (user_text(body), count_turns(body))
        if reply.fail_first and self.server.model._count_attempt(turn) <= reply.fail_first:
            self._send_json(529, error_json(529, "scripted overload (@flaky)"))
        elif reply.error_status is not None:
            message = reply.text or f"scripted error {reply.error_status}"
            self._send_json(reply.error_status, error_json(reply.error_status, message))
        elif reply.mode == "hang" or (reply.mode == "stall" and not streamed):
            self._hold()
        else:
            number = self.server.model._next_id()
            msg_id, tool_id = f"msg_scripted_{number:06d}", f"toolu_scripted_{number:06d}"
            if streamed:
                self._stream(reply, stream_events(reply, body, msg_id, tool_id))
            elif self._pass_gate(reply.gate) and self._pause(reply.delay_s * len(deltas(reply))):
                self._send_json(200, message_json(reply, body, msg_id, tool_id))

    def _stream(self, reply: Reply, events: list[Event]) -> None:
        self.close_connection = True  # the body ends when the connection does
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        gate = reply.gate
        for name, data in events:
            if name == "content_block_delta" and not self._pause(reply.delay_s):
                return
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            if name == "content_block_delta" and reply.mode == "stall":
                self._hold()
                return
            if name == "content_block_delta" and gate:
                if not self._pass_gate(gate):
                    return
                gate = ""  # after the first delta only

    # -- waiting -----------------------------------------------------------

    def _pause(self, seconds: float) -> bool:
        """Sleep unless the server stops first; False if it is stopping."""
        stopping = self.server.model._stopping
        return not (stopping.wait(seconds) if seconds > 0 else stopping.is_set())

    def _pass_gate(self, name: str) -> bool:
        """Wait until gate ``name`` is open ("": none); False if the client left or the
        server stops first."""
        if not name:
            return True
        model = self.server.model
        gate = model._gate(name)
        model._count_waiting(name, +1)
        try:
            while not gate.wait(_POLL_S):
                if model._stopping.is_set() or _peer_closed(self.connection):
                    self.close_connection = True
                    return False
            return True
        finally:
            model._count_waiting(name, -1)

    def _hold(self) -> None:
        """Hold the connection until the client leaves or the server stops."""
        self.close_connection = True
        stopping = self.server.model._stopping
        while not stopping.is_set() and not _peer_closed(self.connection):
            stopping.wait(_POLL_S)

    # -- plumbing ----------------------------------------------------------

    def _path(self) -> str:
        return urlsplit(self.path).path.rstrip("/") or "/"

    def _read_body(self) -> bytes | None:
        """The raw request body, or None after answering 400/413."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if 0 <= length <= MAX_BODY:
            return self.rfile.read(length)
        status = 413 if length > MAX_BODY else 400
        self.close_connection = True
        self._send_json(status, error_json(status, "bad Content-Length"))
        return None

    def _read_json(self) -> JSON | None:
        """The request body as a JSON object, or None after answering 4xx."""
        raw = self._read_body()
        if raw is None:
            return None
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._send_json(400, error_json(400, f"request body is not JSON: {exc}"))
            return None
        if not isinstance(body, dict):
            self._send_json(400, error_json(400, "request body must be a JSON object"))
            return None
        return body

    def _send_json(self, status: int, payload: JSON, *, with_body: bool = True) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if with_body:
            self.wfile.write(data)
        self.wfile.flush()


def _peer_closed(sock: socket.socket) -> bool:
    """True if the peer closed or reset the connection."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class ScriptedModel:
    """A scripted Messages API server that serves in a daemon thread.

    Use it as a context manager, or call ``start()`` and ``stop()``.
    ``requests`` holds every decoded POST body (all paths) in arrival order
    and ``posts`` the same as ``(path, body)`` pairs; both are appended to
    under a lock by the server's threads. ``stop()`` releases every held
    (``@hang``/``@stall``) request promptly and closes every connection.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, tck: bool = False) -> None:
        self.tck = tck
        self.requests: list[JSON] = []
        self.posts: list[tuple[str, JSON]] = []
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._ids = 0
        self._attempts: dict[tuple[str, int], int] = {}
        self._gates: dict[str, threading.Event] = {}
        self._waiting: dict[str, int] = {}  # gate -> answers held there

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT``, with the bound port once started."""
        port = self._server.server_address[1] if self._server else self._port
        return f"http://{self._host}:{port}"

    def messages_requests(self) -> list[JSON]:
        """The bodies received on ``/v1/messages`` so far, in order."""
        with self._lock:
            return [body for path, body in self.posts if path == "/v1/messages"]

    def start(self) -> None:
        """Bind the socket and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("ScriptedModel is already started")
        self._stopping.clear()
        self._server = _Server((self._host, self._port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(_POLL_S,), name="scripted-model", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, release held requests, close all connections."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedModel:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, path: str, body: JSON) -> None:
        with self._lock:
            self.requests.append(body)
            self.posts.append((path, body))

    def _count_attempt(self, turn: tuple[str, int]) -> int:
        """How many requests of this turn (prompt, turn number) have come, this one included."""
        with self._lock:
            self._attempts[turn] = self._attempts.get(turn, 0) + 1
            return self._attempts[turn]

    def open_gate(self, name: str) -> None:
        """Let the answers held by ``@gate:NAME`` go on (and any that come later pass)."""
        self._gate(name).set()

    def waiting_at(self, name: str) -> int:
        """How many answers wait at gate ``name`` now."""
        with self._lock:
            return self._waiting.get(name, 0)

    def _count_waiting(self, name: str, change: int) -> None:
        with self._lock:
            self._waiting[name] = self._waiting.get(name, 0) + change

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def main(argv: list[str] | None = None) -> int:
    """Print ``listening on URL`` and serve until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(
        prog="python -m scripted_model",
        description="Scripted stand-in for the Anthropic Messages API.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tck", action="store_true", help="answer the A2A TCK's messageId prefixes (TCK mode)")
    args = parser.parse_args(argv)
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with ScriptedModel(args.host, args.port, tck=args.tck) as model:
            print(f"listening on {model.base_url}", flush=True)
            while not done.wait(0.5):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
