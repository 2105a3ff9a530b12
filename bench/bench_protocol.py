"""Benchmark 3: protocol round trips on irisd's Unix socket (no claude involved).

A small request (``ListTeams``) measured four ways in one run:

* latency on an open connection, one blocking client, one request at a time;
* requests per second from that one client;
* connect + hello + request + close, one at a time (what each CLI call pays);
* requests per second from 100 concurrent clients (trio, one connection each), and
  their latency under that load.

Run: .venv/bin/python bench/bench_protocol.py [--requests N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import trio
from _common import cpu_seconds, describe, header, median, running_iris

from iris_cli.client import Client
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.framing import LengthPrefixedFramer
from protocol.messages import Hello, ListTeams, TeamsReply, Welcome

CONCURRENT = 100


def sequential(socket_path: Path, count: int) -> tuple[list[float], float]:
    """Per-request latencies and the elapsed time of ``count`` requests on one connection."""
    latencies = []
    with Client(socket_path, timeout=30) as client:
        client.connect()
        started = time.perf_counter()
        for _ in range(count):
            sent = time.perf_counter()
            reply = client.request(ListTeams())
            latencies.append(time.perf_counter() - sent)
        elapsed = time.perf_counter() - started
    assert isinstance(reply, TeamsReply)
    return latencies, elapsed


def connect_each_time(socket_path: Path, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        with Client(socket_path, timeout=30) as client:
            client.request(ListTeams())
        latencies.append(time.perf_counter() - started)
    return latencies


class TrioClient:
    """The smallest trio client: greet, then one request at a time."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.framer = LengthPrefixedFramer()

    async def exchange(self, message: object) -> object:
        await self.stream.send_all(encode(message))  # type: ignore[arg-type]
        while (body := self.framer.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                raise ConnectionError("irisd closed the connection")
            self.framer.receive_data(data)
        return decode_server_message(body)


async def concurrent(socket_path: Path, clients: int, each: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    connected: list[TrioClient] = []
    for _ in range(clients):
        client = TrioClient(await trio.open_unix_socket(str(socket_path)))
        assert isinstance(await client.exchange(Hello(protocol_version=PROTOCOL_VERSION)), Welcome)
        connected.append(client)

    async def run(client: TrioClient) -> None:
        for _ in range(each):
            sent = time.perf_counter()
            assert isinstance(await client.exchange(ListTeams()), TeamsReply)
            latencies.append(time.perf_counter() - sent)

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for client in connected:
            nursery.start_soon(run, client)
    elapsed = time.perf_counter() - started
    for client in connected:
        await client.stream.aclose()
    return latencies, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    args = parser.parse_args()
    header("3. protocol round trips (ListTeams) on the Unix socket")
    with running_iris(["alpha", "beta"]) as iris:
        assert iris.process is not None
        pid = iris.process.pid
        sequential(iris.socket, 500)  # warm up
        cpu = cpu_seconds(pid)
        one, one_elapsed = sequential(iris.socket, args.requests)
        one_cpu, cpu = cpu_seconds(pid) - cpu, cpu_seconds(pid)
        fresh = connect_each_time(iris.socket, args.requests // 10)
        fresh_cpu, cpu = cpu_seconds(pid) - cpu, cpu_seconds(pid)
        many, many_elapsed = trio.run(concurrent, iris.socket, CONCURRENT, args.requests // CONCURRENT)
        many_cpu = cpu_seconds(pid) - cpu
    one_rate = len(one) / one_elapsed
    many_rate = len(many) / many_elapsed
    print("ratios:")
    print(f"  {CONCURRENT} concurrent clients vs 1 client, requests/s   {many_rate / one_rate:5.2f}x")
    print(f"  connect + request + close vs request on an open connection   "
          f"{median(fresh) / median(one):5.1f}x")
    slower = median(many) / median(one)
    print(f"  latency under {CONCURRENT} concurrent clients vs alone        {slower:5.1f}x")
    print("absolute:")
    print(f"  1 client:   {one_rate:8.0f} requests/s")
    print(f"  {CONCURRENT} clients: {many_rate:8.0f} requests/s")
    print(describe("request on an open connection (1 client)", one))
    print(describe("connect + hello + request + close", fresh))
    print(describe(f"request, {CONCURRENT} clients at once", many))
    print("irisd's own CPU time per request (the clients share the 2 cores):")
    for label, cpu, samples in (
        ("1 client", one_cpu, one),
        ("connect + request + close", fresh_cpu, fresh),
        (f"{CONCURRENT} clients", many_cpu, many),
    ):
        print(f"  {label:<28} {cpu / len(samples) * 1e6:5.0f} µs")


if __name__ == "__main__":
    main()
