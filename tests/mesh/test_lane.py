"""The fast lane (irisd/mesh/lane.py) on a real NATS server: JetStream publishes acked and
stored once per message id, pulled and acked through the durable consumer, refused with
words when no stream takes them; while the server is away nothing is kept for later,
and once it is back the lane connects again and its pull goes on; a server that wants TLS
is spoken to over TLS, its certificate checked as nats-py checks it."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from harness import wait_until
from iris_common.mesh import Mesh
from irisd.mesh.bridge import open_bridge
from irisd.mesh.engine import TELLS, Link, durable_consumer, ensure_consumer, lane_for, open_link
from irisd.mesh.lane import Lane, LaneError, ack, serve_pull
from irisd.mesh.nats_wire import Message
from irisd.mesh.wire import tell_subject
from mesh.nats import NatsServer


@asynccontextmanager
async def open_lane(url: str, *, token: str = "") -> AsyncIterator[tuple[Link, Lane, trio.Nursery]]:
    """irisd ``ws-1``'s connection (streams laid out) and its fast lane, served."""
    async with open_bridge() as bridge:
        link = await open_link(bridge, Mesh(servers=(url,), name="ws-1", token=token))
        try:
            lane = lane_for(link)
            await lane.connect(5)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lane.run)
                yield link, lane, nursery
                nursery.cancel_scope.cancel()
        finally:
            await link.close()


async def pulled(link: Link, lane: Lane, nursery: trio.Nursery) -> trio.MemoryReceiveChannel[Message]:
    """The tells for home ``ws-1``, as its home takes them (each acked)."""
    name = await ensure_consumer(link, TELLS, durable_consumer("home-ws-1", "iris.tell.ws-1.>"))
    send, receive = trio.open_memory_channel[Message](16)

    async def take(message: Message) -> None:
        ack(lane, message)
        await send.send(message)

    nursery.start_soon(serve_pull, lane, TELLS, name, take)
    return receive


async def test_a_tell_is_stored_once_per_message_id_and_pulled_once(nats_server: NatsServer) -> None:
    with trio.fail_after(30):
        async with open_lane(nats_server.url) as (link, lane, nursery):
            once = {"Nats-Msg-Id": "t-lane-1"}
            first = await lane.js_publish(tell_subject("ws-1", "ws-2"), b'{"n": 1}', headers=once)
            again = await lane.js_publish(tell_subject("ws-1", "ws-2"), b'{"n": 1}', headers=once)
            assert first.stream == TELLS and not first.duplicate
            assert again.duplicate and again.seq == first.seq
            tells = await pulled(link, lane, nursery)
            message = await tells.receive()
            assert (message.subject, message.data) == ("iris.tell.ws-1.ws-2", b'{"n": 1}')
            await lane.js_publish(tell_subject("ws-1", "ws-2"), b'{"n": 2}', headers={"Nats-Msg-Id": "t-lane-2"})
            assert (await tells.receive()).data == b'{"n": 2}'  # the one stored once came once
            async def acked() -> bool:  # a work queue: gone once acked
                return not (await link.bridge.call(link.js.stream_info, TELLS)).state.messages

            await wait_until(acked, every=0.05)


async def test_a_publish_no_stream_takes_is_refused_in_words(nats_server: NatsServer) -> None:
    with trio.fail_after(30):
        async with open_lane(nats_server.url) as (_, lane, _nursery):
            with pytest.raises(LaneError, match=r"nothing on NATS takes nowhere\.at\.all"):
                await lane.js_publish("nowhere.at.all", b"{}")


async def test_while_the_server_is_away_nothing_is_kept_and_the_pull_goes_on_after(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats").start()
    try:
        with trio.fail_after(90):
            async with open_lane(server.url) as (link, lane, nursery):
                tells = await pulled(link, lane, nursery)
                await trio.to_thread.run_sync(server.stop)
                await wait_until(lambda: not lane.connected, every=0.02)
                with pytest.raises(LaneError, match="down"):  # never kept to be sent on reconnecting
                    lane.publish_nowait(tell_subject("ws-1", "ws-2"), b"lost")
                await trio.to_thread.run_sync(server.start)
                await lane.wait_connected()
                while True:  # JetStream may still be recovering its streams
                    try:
                        await lane.js_publish(tell_subject("ws-1", "ws-2"), b"after", headers={"Nats-Msg-Id": "a"})
                        break
                    except LaneError:
                        await trio.sleep(0.1)
                assert (await tells.receive()).data == b"after"  # subscribed again, the pull renewed
    finally:
        server.stop()


def certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 it signed: (ca, cert, key)."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
            "-out", "server.csr")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", "san.ext", "-out", "server.pem")
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


@pytest.mark.parametrize("scheme", ["tls", "nats"])  # asked for by the URL, or by the server's INFO
async def test_a_server_that_wants_tls_is_spoken_to_over_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    ca, cert, key = certificates(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # trusted as a system CA would be, by both connections
    server = NatsServer(tmp_path / "nats", extra=["--tls", "--tlscert", str(cert), "--tlskey", str(key)]).start()
    try:
        with trio.fail_after(30):
            async with open_lane(f"{scheme}://127.0.0.1:{server.port}") as (_, lane, _nursery):
                ack = await lane.js_publish(tell_subject("ws-1", "ws-2"), b"{}", headers={"Nats-Msg-Id": "tls-1"})
                assert ack.stream == TELLS
    finally:
        server.stop()


@pytest.mark.parametrize("given", ["setting", "url"])  # settings.mesh.token, or nats://TOKEN@host
async def test_a_server_that_wants_a_token_is_given_it(tmp_path: Path, given: str) -> None:
    server = NatsServer(tmp_path / "nats", extra=["--auth", "s3cret-token"]).start()
    try:
        with trio.fail_after(30):
            url = f"nats://{'s3cret-token@' if given == 'url' else ''}127.0.0.1:{server.port}"
            async with open_lane(url, token="s3cret-token" if given == "setting" else "") as (_, lane, _nursery):
                ack = await lane.js_publish(tell_subject("ws-1", "ws-2"), b"{}", headers={"Nats-Msg-Id": "token-1"})
                assert ack.stream == TELLS
    finally:
        server.stop()
