"""The connection to NATS and what this irisd keeps there (README "Teams on many hosts").

* stream ``IRIS_TELLS`` (``iris.tell.<home>.<caller>``): tells and cancels for a home
  irisd, one durable consumer per home; work-queue retention, so a message is gone once
  its home acked it (after recording it in its database);
* stream ``IRIS_REPLIES`` (``iris.reply.<caller>.<home>``): final results back to the
  caller's irisd, one durable consumer per caller, so a caller that was down still gets
  them;
* ``iris.live.<caller>.<home>`` (plain NATS, not stored): phases and text as they stream;
* key-value buckets ``iris-teams`` (team -> home) and ``iris-homes`` (irisd -> heartbeat).

Streams and buckets are made by the first irisd that needs them; their replicas follow
the cluster: 3 on a cluster of three or more servers, else 1. One made with fewer (on a
cluster still forming, or before it grew) is scaled up when an irisd next connects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TypeVar

import msgspec
import nats.errors
import nats.js.errors
import trio
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.kv import KeyValue

from iris_common.mesh import HOMES_BUCKET, TEAMS_BUCKET, Mesh, inbox_prefix, permission_refused, permission_words
from irisd.mesh.bridge import Bridge
from irisd.mesh.lane import Credentials, Lane
from protocol.errors import IrisError

log = logging.getLogger("irisd.mesh")

T = TypeVar("T")

TELLS = "IRIS_TELLS"
REPLIES = "IRIS_REPLIES"
DEDUP_WINDOW_S = 24 * 3600.0  # a caller that resends a tell within a day is not heard twice
ACK_WAIT_S = 10.0  # a message not acked in this time goes to the consumer again (acks come in ms)
CONNECT_TIMEOUT_S = 2
SETUP_ATTEMPTS = 5  # a stream or bucket refused, then not found: tried again this often
SETUP_RETRY_S = 0.5
SCALE_UP_API = "$JS.API.STREAM.UPDATE."  # the subject of a stream's scale-up, the one refusal that is not fatal
FIRST_CONNECT_S = 5.0
JS_TIMEOUT_S = 5.0  # a JetStream API request unanswered this long failed (a refused one is never answered)


class MeshError(IrisError):
    """The mesh cannot be reached or refused us; the message names the server and the fix."""

    code = "mesh"


class LinkState(msgspec.Struct):
    """What the connection is doing, for ``iris mesh status`` and the directory."""

    connected: bool = False
    server: str = ""
    since: float = 0.0  # wall clock of the last change
    problem: str = ""  # the last error the client reported
    reconnects: int = 0
    changes: list[str] = msgspec.field(default_factory=list)

    def note(self, connected: bool, server: str = "", problem: str = "") -> None:
        if connected and not self.connected and self.since:
            self.reconnects += 1
        self.connected, self.since = connected, time.time()
        self.server = server or self.server
        if problem:
            self.problem = problem


class Link(msgspec.Struct):
    """One connection to the mesh, its JetStream context and the two buckets."""

    mesh: Mesh
    bridge: Bridge
    client: Client
    js: JetStreamContext
    teams: KeyValue
    homes: KeyValue
    replicas: int
    state: LinkState

    async def close(self) -> None:
        if not self.client.is_closed:
            await self.bridge.call(self.client.close)


async def open_link(bridge: Bridge, mesh: Mesh) -> Link:
    """Connect with ``mesh``'s credentials and lay out the streams and buckets. MeshError
    with the server and the fix when the servers cannot be reached, refuse the
    credentials, or have no JetStream."""
    state = LinkState()
    refusal = ""  # the server refused the credentials during the first connection
    first = trio.CancelScope()
    refusals = SetupRefusals()

    def noted(words: str) -> None:
        nonlocal refusal
        state.note(state.connected, "", words)
        refusals.heard(words)
        # Credentials refused once are refused again: say so now rather than try for
        # FIRST_CONNECT_S. Trying on would also hide it: the server closes right after its
        # "-ERR 'Authorization Violation'", and a client whose next write meets the closed
        # socket reads "Connection reset by peer" instead (about 1 attempt in 4 here, more
        # under load), so the last error is not always the telling one.
        if _refused(words) and not refusal:
            refusal = words
            first.cancel()  # a no-op once the first connection is made

    async def on_error(exc: Exception) -> None:
        bridge.to_trio(noted, _words(exc))

    async def on_disconnected() -> None:
        bridge.to_trio(state.note, False)

    async def on_reconnected() -> None:
        url = client.connected_url
        bridge.to_trio(state.note, True, url.netloc if url else "")

    client = Client()
    servers = list(mesh.servers)
    try:
        # The client tries the servers again and again (as it must later, to reconnect):
        # the first connection gets a few seconds, then the last error it met is the reason
        # (a refusal of the credentials ends it at once).
        with first, trio.fail_after(FIRST_CONNECT_S):
            await bridge.call(
                client.connect,
                servers=servers,
                name=f"irisd {mesh.name}",
                inbox_prefix=inbox_prefix(mesh.name),  # its replies under its name: only it may read them
                user=mesh.user or None,
                password=mesh.password or None,
                token=mesh.token or None,
                user_credentials=mesh.creds or None,
                connect_timeout=CONNECT_TIMEOUT_S,
                max_reconnect_attempts=-1,  # a server that is down is tried again until it is back
                reconnect_time_wait=1,
                allow_reconnect=True,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
            )
    except trio.TooSlowError:
        await bridge.call(client.close)
        raise MeshError(_connect_problem(servers, state.problem or "no answer")) from None
    except Exception as exc:
        await bridge.call(client.close)
        raise MeshError(_connect_problem(servers, _words(exc))) from None
    if refusal:
        await bridge.call(client.close)
        raise MeshError(_connect_problem(servers, refusal))
    url = client.connected_url
    state.note(True, url.netloc if url else "")
    js = client.jetstream(timeout=JS_TIMEOUT_S)
    replicas = min(3, len({uri.netloc for uri in client.servers}))
    setup = Setup(bridge, js, replicas, refusals)
    failure = ""
    try:
        with refusals.setup:
            await setup.stream(TELLS, "iris.tell.>")
            await setup.stream(REPLIES, "iris.reply.>")
            teams = await setup.bucket(TEAMS_BUCKET)
            homes = await setup.bucket(HOMES_BUCKET)
    except nats.js.errors.ServiceUnavailableError:
        failure = f"the NATS server at {state.server} has no JetStream; start it with -js (and -sd DIR for its store)"
    except (nats.errors.Error, TimeoutError) as exc:
        failure = f"NATS at {state.server} refused to set up Iris's streams: {_words(exc)}"
    if refusals.setup.cancelled_caught:
        who, fix = permission_words(mesh)
        failure = f"NATS at {state.server} refused {who} a step of setting up Iris's streams: {refusals.step}; {fix}"
    if failure:
        await bridge.call(client.close)
        raise MeshError(failure)
    return Link(mesh=mesh, bridge=bridge, client=client, js=js, teams=teams, homes=homes, replicas=replicas,
                state=state)


class SetupRefusals:
    """What the server refuses while a link lays out its streams and buckets. A refused
    request is one nobody answers (nats-py would wait JS_TIMEOUT_S for it), so a refusal
    stops the wait at once: a refused step ends the set-up (``setup`` is cancelled,
    ``step`` names it), a refused scale-up ends only itself (the README template does not
    allow one; the stream works on with the replicas it has)."""

    def __init__(self) -> None:
        self.setup = trio.CancelScope()
        self.step = ""
        self.scale_up: trio.CancelScope | None = None  # while a scale-up waits for its answer

    def heard(self, words: str) -> None:
        """An error the client reported (any: only a permission refusal counts here)."""
        if not permission_refused(words):
            return
        if SCALE_UP_API.lower() in words.lower():  # nats-py writes the subject in lower case
            if self.scale_up is not None:
                self.scale_up.cancel()
        elif not self.step:
            self.step = words.removeprefix("Error: ")  # nats-py's class name says nothing
            self.setup.cancel()  # a no-op once the set-up is done


class Setup:
    """Lays out Iris's streams and buckets with ``replicas`` each (found, else made)."""

    def __init__(self, bridge: Bridge, js: JetStreamContext, replicas: int, refusals: SetupRefusals) -> None:
        self.bridge = bridge
        self.js = js
        self.replicas = replicas
        self.refusals = refusals

    async def stream(self, name: str, subjects: str) -> None:
        config = StreamConfig(
            name=name,
            subjects=[subjects],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            num_replicas=self.replicas,
            duplicate_window=DEDUP_WINDOW_S,
        )

        async def make() -> None:
            await self.bridge.call(self.js.add_stream, config)
            log.info("mesh stream created", extra={"stream": name, "replicas": self.replicas})

        await _found_or_made(partial(self.scale_up, name), make)

    async def bucket(self, bucket: str) -> KeyValue:
        async def find() -> KeyValue:
            kv = await self.bridge.call(self.js.key_value, bucket)
            await self.scale_up(f"KV_{bucket}")  # a bucket is the stream KV_<bucket>
            return kv

        config = KeyValueConfig(bucket=bucket, history=1, replicas=self.replicas, storage=StorageType.FILE)
        return await _found_or_made(find, partial(self.bridge.call, self.js.create_key_value, config))

    async def scale_up(self, stream: str) -> None:
        """Give an existing ``stream`` the replicas if it has fewer (never fewer: a server
        that is away for now does not shrink what the others keep). Raises NotFoundError."""
        info = await self.bridge.call(self.js.stream_info, stream)
        have = info.config.num_replicas or 1
        if have >= self.replicas:
            return
        error = "refused by the server (the user's permissions)"
        with trio.CancelScope() as self.refusals.scale_up:
            try:
                await self.bridge.call(self.js.update_stream, replace(info.config, num_replicas=self.replicas))
                error = ""
            except (nats.errors.Error, TimeoutError) as exc:
                error = _words(exc)
        self.refusals.scale_up = None
        if error:  # it keeps working with fewer
            log.warning(
                "mesh stream has fewer replicas than the cluster offers; not scaled up",
                extra={"stream": stream, "replicas": have, "wanted": self.replicas, "error": error},
            )
            return
        log.info("mesh stream scaled up", extra={"stream": stream, "replicas": self.replicas, "was": have})


async def _found_or_made(find: Callable[[], Awaitable[T]], make: Callable[[], Awaitable[T]]) -> T:
    """What ``find`` finds (it raises NotFoundError when it is not there), else what
    ``make`` makes. ``make`` refused (BadRequestError) is read again: another irisd made
    it just now, or a cluster that has just formed refused it and takes it a moment later."""
    refusal: nats.js.errors.BadRequestError | None = None
    for attempt in range(SETUP_ATTEMPTS):
        try:
            return await find()
        except nats.js.errors.NotFoundError:
            pass
        if attempt:
            await trio.sleep(SETUP_RETRY_S)
        try:
            return await make()
        except nats.js.errors.BadRequestError as exc:
            refusal = exc
    assert refusal is not None
    raise refusal


async def ensure_consumer(link: Link, stream: str, config: ConsumerConfig) -> str:
    """Make the durable consumer ``config`` of ``stream`` unless it is there (as nats-py's
    pull_subscribe does, with the same API calls, so the same permissions); its name."""
    name = config.durable_name
    assert name is not None
    try:
        await link.bridge.call(link.js.consumer_info, stream, name)
    except nats.js.errors.NotFoundError:
        await link.bridge.call(link.js.add_consumer, stream, config=config)
    return name


def lane_for(link: Link) -> Lane:
    """The fast lane of ``link``'s irisd (not connected yet): the servers nats-py knows
    (the one it is connected to first), its credentials, its inbox prefix."""
    mesh, client = link.mesh, link.client
    connected = client.connected_url
    servers = [uri.geturl() for uri in client.servers]
    if connected is not None and connected.geturl() in servers:
        servers.remove(connected.geturl())
        servers.insert(0, connected.geturl())
    # A creds file's JWT and the nonce's signature: nats-py's own callbacks, made from it
    # at connect (they need the nkeys package, as nats-py does).
    signed = bool(mesh.creds)
    credentials = Credentials(
        user=mesh.user, password=mesh.password, token=mesh.token,
        jwt=client._user_jwt_cb if signed else None,
        sign=client._signature_cb if signed else None,
    )
    return Lane(servers or list(mesh.servers), name=f"irisd {mesh.name} (fast lane)",
                inbox=inbox_prefix(mesh.name), credentials=credentials)


def durable_consumer(name: str, subject: str) -> ConsumerConfig:
    """A pull consumer that survives restarts: every message is delivered until acked."""
    return ConsumerConfig(
        name=name,
        durable_name=name,
        filter_subject=subject,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=ACK_WAIT_S,
        max_deliver=-1,
    )


def _connect_problem(servers: list[str], words: str) -> str:
    where = ", ".join(servers)
    if _refused(words):
        return (
            f"NATS at {where} refused this irisd's credentials ({words}); check settings.mesh.user/password, "
            "token or creds against the server's configuration"
        )
    return (
        f"cannot reach the NATS server at {where} ({words}); start it (nats-server -js -sd DIR) "
        "or fix settings.mesh.url in config.yaml"
    )


def _refused(words: str) -> bool:
    """Whether a client error says the server refused our credentials."""
    return "authorization" in words.lower() or "authentication" in words.lower()


def _words(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
