"""The fast lane: a trio NATS connection of its own for the mesh's hot path (README
"Teams on many hosts").

Every remote tell crosses four messages: the tell (a JetStream publish and its ack), its
delivery to the home (a pull consumer), the final result (a publish and its ack), its
delivery to the caller. Through nats-py each one paid two thread hand-offs (trio to the
asyncio thread and back) and nats-py's own work per message (its futures, tasks and
queues): about 0.9 ms a message one way against 0.4 ms for a plain socket (measured on
this machine, ``bench/bench_mesh_legs.py``). The lane speaks the NATS text protocol
(``nats_wire.py``) from irisd's own trio loop instead: PUB/HPUB, SUB, MSG/HMSG, a reply
inbox for JetStream's acks, pull requests for the two durable consumers, and the live
messages. nats-py keeps everything else (streams, buckets and consumers made and
scaled, the directory's key-value watch and heartbeats), on its own connection.

The lane uses the same credentials as nats-py's connection (user and password, token,
or a creds file: the JWT and the nonce's signature come from nats-py's own callbacks)
and the same inbox prefix (``_INBOX.<name>``), so it needs no permission beyond those
README "Who may ask" lists. It hands nothing to the server while disconnected: a
publish or request then raises ``LaneError``, and what was waiting to be written when
the connection broke is dropped (its sender is told, or it was an ack or a live message:
the first comes again as a redelivery, the second is best effort).
"""

from __future__ import annotations

import logging
import os
import secrets
import ssl
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import msgspec
import trio

from irisd.mesh import nats_wire
from irisd.mesh.nats_wire import Err, Info, Message, Ok, Ping, Pong, ProtocolViolation, Reader

log = logging.getLogger("irisd.mesh")

CONNECT_TIMEOUT_S = 2.0
RECONNECT_S = 1.0  # the wait after every server of the list failed once
REQUEST_TIMEOUT_S = 5.0  # JetStream's ack of a publish comes in ms
PING_S = 10.0  # a connection whose server answers no PING for two of these is dropped
MAX_PINGS_OUT = 2
MAX_OUTGOING = 8 * 1024 * 1024  # bytes waiting to be written: past it a publish is refused
READ_SIZE = 64 * 1024
PULL_BATCH = 16  # messages one pull request may deliver
PULL_EXPIRES_S = 30.0  # a pull request's life on the server (it is renewed after)
PULL_RETRY_S = 1.0  # after the server refused a pull request (the consumer gone, a leader election)
MUX_SID = 1


class LaneError(Exception):
    """The fast lane cannot carry this now: not connected, no answer in time, or refused.
    Whoever sends tries again (as after nats-py's errors)."""


class _Broken(Exception):
    """The connection broke under us: the lane connects again."""


class Credentials(msgspec.Struct, frozen=True, kw_only=True):
    """What the lane says who it is with: as nats-py's connection does."""

    user: str = ""
    password: str = ""
    token: str = ""
    jwt: Callable[[], bytes | bytearray] | None = None  # a creds file's JWT ...
    sign: Callable[[str], bytes] | None = None  # ... and the signature of the server's nonce


class _Waiting(msgspec.Struct):
    """A request's reply, once it came (or why it will not)."""

    done: trio.Event
    reply: Message | None = None
    problem: str = ""


class _Subscription(msgspec.Struct):
    subject: str
    # Takes each message, and None when the connection broke (a pull request is gone);
    # raises trio.WouldBlock when it has no room (the message is dropped).
    send: Callable[[Message | None], None]


class ApiError(msgspec.Struct, frozen=True):
    code: int = 0
    description: str = ""


class PubAck(msgspec.Struct, frozen=True):
    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: ApiError | None = None


_PUB_ACK = msgspec.json.Decoder(PubAck)


class Lane:
    """One NATS connection served by irisd's trio loop, until cancelled (``run``)."""

    def __init__(self, servers: list[str], *, name: str, inbox: str, credentials: Credentials) -> None:
        self._servers = servers
        self._name = name
        self._credentials = credentials
        self._inbox = f"{inbox}.{secrets.token_hex(6)}"  # this lane's: requests' replies, pulled messages
        self._subscriptions: dict[int, _Subscription] = {}
        self._subscribed: set[int] = set()  # sids sent as the connection was opened
        self._waiting: dict[str, _Waiting] = {}
        self._next_sid = MUX_SID + 1
        self._next_token = 0
        self._out = bytearray()
        self._wake = trio.Event()
        self._fd: int | None = None  # the served plain socket, written from publish_nowait itself
        self._writing = False  # the writer task is in a send: what comes meanwhile waits for it
        self._pings_out = 0
        self._connected = trio.Event()
        self._first: tuple[trio.abc.Stream, Reader] | None = None  # made by connect, served by run
        self.connected = False
        self.server = ""  # the server connected to (or last tried)
        self.problem = ""  # why the last connection broke or could not be made

    # --- what the mesh uses -----------------------------------------------------------------

    def publish_nowait(self, subject: str, payload: bytes, *, reply: str = "",
                       headers: dict[str, str] | None = None, flush: bool = True) -> None:
        """Hand ``payload`` to the connection (written at once, in order). LaneError when
        disconnected or falling behind: nothing is kept for a later connection.
        ``flush=False``: it leaves in one write with the next publish, which its sender
        makes in the same step (each write costs a system call and wakes the server)."""
        if not self.connected:
            raise LaneError(f"the fast lane to NATS is down: {self.problem or 'connecting'}")
        if len(self._out) > MAX_OUTGOING:
            raise LaneError("the fast lane to NATS is falling behind (8 MiB not written yet)")
        self._out += nats_wire.pub(subject, payload, reply, headers)
        if flush:
            self._flush()

    async def request(self, subject: str, payload: bytes, *, headers: dict[str, str] | None = None,
                      timeout_s: float = REQUEST_TIMEOUT_S) -> Message:
        """Publish with a reply inbox and wait for the reply. LaneError when the lane is
        down, breaks meanwhile, or nobody answers in ``timeout_s`` (or nobody listens:
        NATS's "no responders"). Cancellation just stops waiting."""
        self._next_token += 1
        token = str(self._next_token)
        waiting = self._waiting[token] = _Waiting(trio.Event())
        try:
            self.publish_nowait(subject, payload, reply=f"{self._inbox}.r.{token}", headers=headers)
            with trio.move_on_after(timeout_s):
                await waiting.done.wait()
        finally:
            self._waiting.pop(token, None)
        reply = waiting.reply
        if reply is None:
            raise LaneError(waiting.problem or f"no answer from NATS in {timeout_s:g} s")
        if reply.status == 503:
            raise LaneError(f"nothing on NATS takes {subject} (no stream for it, or JetStream is away or "
                            "electing a leader)")
        return reply

    async def js_publish(self, subject: str, payload: bytes, *, headers: dict[str, str] | None = None) -> PubAck:
        """Store ``payload`` in the JetStream stream that takes ``subject``: its ack, or
        LaneError (also when JetStream refused it, with its words)."""
        reply = await self.request(subject, payload, headers=headers)
        try:
            ack = _PUB_ACK.decode(reply.data)
        except msgspec.DecodeError:
            raise LaneError(f"JetStream answered a publish to {subject} with {reply.data[:80]!r}") from None
        if ack.error is not None:
            raise LaneError(f"JetStream refused a publish to {subject}: {ack.error.description} ({ack.error.code})")
        return ack

    def subscribe(self, subject: str, capacity: int) -> trio.MemoryReceiveChannel[Message | None]:
        """Messages on ``subject`` from now on, and None each time the connection breaks.
        At most ``capacity`` wait: more are dropped (a JetStream message comes again)."""
        send, receive = trio.open_memory_channel[Message | None](capacity)
        self._subscribe(subject, send.send_nowait)
        return receive

    def listen(self, subject: str, handle: Callable[[Message], None]) -> None:
        """Hand each message on ``subject`` from now on to ``handle`` as it is read, in
        the reader's own step (no task and channel between: for a handler that only
        hands it on, never blocks and never raises)."""

        def send(message: Message | None) -> None:
            if message is not None:
                handle(message)

        self._subscribe(subject, send)

    def _subscribe(self, subject: str, send: Callable[[Message | None], None]) -> None:
        sid = self._next_sid
        self._next_sid += 1
        self._subscriptions[sid] = _Subscription(subject, send)
        if self.connected:
            self._out += nats_wire.sub(subject, sid)
            self._flush()

    async def wait_connected(self) -> None:
        await self._connected.wait()

    def inbox(self, name: str) -> str:
        return f"{self._inbox}.{name}"

    # --- the connection -------------------------------------------------------------------

    async def connect(self, timeout_s: float) -> None:
        """Make the first connection, trying the servers in turn for up to ``timeout_s``;
        LaneError with the last problem if none answers. ``run`` serves it."""
        with trio.move_on_after(timeout_s):
            while self._first is None:
                self._first = await self._try_servers()
        if self._first is None:
            raise LaneError(f"the fast lane cannot connect to NATS: {self.problem or 'no answer'}")
        self._up()

    async def run(self) -> None:
        """Serve the connection, connect again when it breaks, until cancelled
        (``connect`` first)."""
        while True:
            opened, self._first = self._first, None
            if opened is None:
                opened = await self._try_servers()
                if opened is None:
                    continue
                self._up()
            stream, reader = opened
            try:
                async with stream:
                    self._fd = stream.socket.fileno() if isinstance(stream, trio.SocketStream) else None
                    try:
                        async with trio.open_nursery() as nursery:
                            nursery.start_soon(self._read, stream, reader)
                            nursery.start_soon(self._write, stream)
                            nursery.start_soon(self._ping)
                    finally:
                        self._fd = None  # before the socket closes: its number may be another file's then
            except* (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ProtocolViolation, _Broken) as group:
                self.problem = _words(group.exceptions[0])
            finally:
                self._down()
            log.warning("mesh: the fast lane to NATS broke; connecting again",
                        extra={"server": self.server, "error": self.problem})

    async def _try_servers(self) -> tuple[trio.abc.Stream, Reader] | None:
        """A connection to the first server of the list that answers; None (after a
        pause) if none did."""
        for url in self._servers:
            try:
                opened = await self._open(url)
            except (OSError, trio.BrokenResourceError, trio.TooSlowError, ProtocolViolation, _Broken) as exc:
                self.problem = f"{urlsplit(url).netloc}: {_words(exc)}"
                continue
            self.server = urlsplit(url).netloc
            return opened
        await trio.sleep(RECONNECT_S)
        return None

    async def _open(self, url: str) -> tuple[trio.abc.Stream, Reader]:
        where = urlsplit(url if "://" in url else f"nats://{url}")
        reader = Reader()
        with trio.fail_after(CONNECT_TIMEOUT_S):
            stream: trio.abc.Stream = await trio.open_tcp_stream(where.hostname or "127.0.0.1", where.port or 4222)
            try:
                info = await _receive_info(stream, reader)
                if where.scheme == "tls" or info.get("tls_required"):
                    stream = trio.SSLStream(stream, ssl.create_default_context(), server_hostname=where.hostname)
                    await stream.do_handshake()
                await stream.send_all(nats_wire.connect(self._connect_options(info, where.username, where.password)))
                await _receive_pong(stream, reader)
                subscribe = nats_wire.sub(f"{self._inbox}.r.*", MUX_SID)
                self._subscribed = set(self._subscriptions)
                for sid in self._subscribed:
                    subscribe += nats_wire.sub(self._subscriptions[sid].subject, sid)
                await stream.send_all(subscribe)
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
        return stream, reader

    def _connect_options(self, info: dict[str, object], user: str | None, password: str | None) -> dict[str, object]:
        from irisd import __version__

        given = self._credentials
        options: dict[str, object] = {
            "verbose": False, "pedantic": False, "lang": "python3-trio", "version": __version__, "protocol": 1,
            "headers": True, "no_responders": True, "name": self._name,
        }
        nonce = info.get("nonce")
        if given.sign is not None and isinstance(nonce, str):
            options["sig"] = given.sign(nonce).decode()
            if given.jwt is not None:
                options["jwt"] = given.jwt().decode()
        if given.user and given.password:
            options["user"], options["pass"] = given.user, given.password
        elif given.token:
            options["auth_token"] = given.token
        elif user is not None:  # nats://user:password@host, or nats://token@host
            if password is None:
                options["auth_token"] = user
            else:
                options["user"], options["pass"] = user, password
        return options

    async def _read(self, stream: trio.abc.Stream, reader: Reader) -> None:
        while True:
            data = await stream.receive_some(READ_SIZE)
            if not data:
                raise _Broken("the server closed the connection")
            reader.receive_data(data)
            for op in reader.next_ops():
                match op:
                    case Message():
                        self._deliver(op)
                    case Ping():
                        self._out += nats_wire.PONG
                        self._flush()
                    case Pong():
                        self._pings_out = 0
                    case Err(words=words):
                        log.warning("mesh: NATS said on the fast lane", extra={"error": words})
                        self.problem = words
                    case Info() | Ok():
                        pass

    def _deliver(self, message: Message) -> None:
        if message.sid == MUX_SID:
            waiting = self._waiting.pop(message.subject.rsplit(".", 1)[-1], None)
            if waiting is not None:
                waiting.reply = message
                waiting.done.set()
            return
        subscription = self._subscriptions.get(message.sid)
        if subscription is None:
            return
        try:
            subscription.send(message)
        except trio.WouldBlock:
            log.info("mesh: the fast lane dropped a message its reader had no room for",
                     extra={"subject": message.subject})

    def _flush(self) -> None:
        """Write what waits now, from the caller's own step, when the socket takes it
        (it is a plain one, served, and the writer task is not in a send); what is left
        goes to the writer task. A message then leaves as it is published, not after the
        other tasks of the loop's next round (a home's final result after the writes of
        the tell's end, the caller's tell after its own bookkeeping). Errors are the
        writer's to meet and report: it tries the same bytes again."""
        if self._fd is not None and not self._writing and self._out:
            try:
                sent = os.write(self._fd, self._out)
            except OSError:  # full (BlockingIOError) or broken: the writer task sees which
                sent = 0
            del self._out[:sent]
        if self._out:
            self._wake.set()

    async def _write(self, stream: trio.abc.Stream) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._out:
                data = bytes(self._out)
                self._out.clear()
                self._writing = True
                try:
                    await stream.send_all(data)
                finally:
                    self._writing = False

    async def _ping(self) -> None:
        while True:
            await trio.sleep(PING_S)
            if self._pings_out >= MAX_PINGS_OUT:
                raise _Broken(f"no PONG from the server in {PING_S * MAX_PINGS_OUT:g} s")
            self._pings_out += 1
            self._out += nats_wire.PING
            self._flush()

    def _up(self) -> None:
        """A connection is made: publishes go to it from now on (written once ``run``
        serves it), after the subscriptions made while it was being opened."""
        self.connected, self._pings_out = True, 0
        for sid in self._subscriptions.keys() - self._subscribed:
            self._out += nats_wire.sub(self._subscriptions[sid].subject, sid)
        self._connected.set()

    def _down(self) -> None:
        """The connection is gone: nothing waits on it any longer."""
        self.connected = False
        self._connected = trio.Event()
        self._out.clear()
        for waiting in self._waiting.values():
            waiting.problem = f"the fast lane to NATS broke ({self.problem})"
            waiting.done.set()
        self._waiting.clear()
        for subscription in self._subscriptions.values():
            try:
                subscription.send(None)
            except trio.WouldBlock:
                pass


async def serve_pull(lane: Lane, stream: str, consumer: str, handle: Callable[[Message], Awaitable[None]]) -> None:
    """Take the messages of the durable pull consumer ``consumer`` of ``stream`` one by
    one with ``handle`` (which acks them), until cancelled. One pull request at a time,
    for up to ``PULL_BATCH`` messages, renewed when it is used up, expired, or gone with
    a connection."""
    inbox = lane.inbox(f"p.{consumer}")
    messages = lane.subscribe(inbox, capacity=2 * PULL_BATCH + 8)
    request = msgspec.json.encode({"batch": PULL_BATCH, "expires": int(PULL_EXPIRES_S * 1e9)})
    next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"
    while True:
        await lane.wait_connected()
        try:
            lane.publish_nowait(next_subject, request, reply=inbox)
        except LaneError:  # it broke just now (wait for the next connection), or it is behind
            if lane.connected:
                await trio.sleep(PULL_RETRY_S)  # let it write what waits, rather than ask again at once
            continue
        left = PULL_BATCH
        deadline = trio.current_time() + PULL_EXPIRES_S + REQUEST_TIMEOUT_S  # its expiry note lost: ask again
        while left:
            message: Message | None = None
            with trio.move_on_at(deadline):  # only the wait: a message being handled is never cut short
                message = await messages.receive()
            if message is None:
                break  # expired, or the connection broke (the request went with it)
            if message.status == 100:  # a heartbeat
                continue
            if message.status:
                if message.status not in (404, 408):  # 409 and the like: the consumer is busy or away
                    log.info("mesh: NATS refused a pull request", extra={
                        "consumer": consumer, "error": f"{message.status} {message.description}"})
                    await trio.sleep(PULL_RETRY_S)
                break
            left -= 1
            await handle(message)


def ack(lane: Lane, message: Message, verdict: bytes = b"+ACK") -> None:
    """Ack (or with ``b"+TERM"``, drop for good) a JetStream message; a lane that is down
    loses it, and the message comes again."""
    if not message.reply:
        return
    try:
        lane.publish_nowait(message.reply, verdict)
    except LaneError:
        pass


async def _receive_info(stream: trio.abc.Stream, reader: Reader) -> dict[str, object]:
    while True:
        for op in await _receive_ops(stream, reader):
            if isinstance(op, Info):
                return op.fields
            raise ProtocolViolation("the server did not start with INFO")


async def _receive_pong(stream: trio.abc.Stream, reader: Reader) -> None:
    while True:
        for op in await _receive_ops(stream, reader):
            match op:
                case Pong():
                    return
                case Err(words=words):
                    raise _Broken(words)


async def _receive_ops(stream: trio.abc.Stream, reader: Reader) -> list[nats_wire.Op]:
    data = await stream.receive_some(READ_SIZE)
    if not data:
        raise _Broken("the server closed the connection")
    reader.receive_data(data)
    return reader.next_ops()


def _words(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

