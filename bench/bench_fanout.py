"""Benchmark 12: what watchers cost a streaming tell (irisd/events.py's fan-out).

Side by side, round by round, in one run: the same warm pair answers a tell of WORDS
words that the scripted model streams one word per delta,

1. alone (nobody watches);
2. with 100 WebSocket subscribers of /api/events that read everything (a separate
   process, trio-websocket), each checked to have received the tell's whole text;
3. with 250 subscribers that read nothing (raw sockets with a small receive buffer).

Targets: 100 readers cost the tell at most 1.5x its time alone; irisd's CPU per delta
with 100 readers at most 2x alone (independent of who watches). Before the queue per
watcher coalesced a tell's text (a frame per delta for every watcher), 100 readers made
a 4,000-word tell take 40x as long, and 250 non-readers 13x.

Run: .venv/bin/python bench/bench_fanout.py [--rounds N] [--words W]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import urllib.parse

from _common import cpu_seconds, describe, header, median, request, running_iris, timed

from harness import Iris
from protocol.messages import Tell, TellReply

READERS = 100
SLEEPERS = 250
TARGETS = {"time": 1.5, "cpu": 2.0}


def tell(iris: Iris, words: int, tag: str) -> None:
    reply = request(iris, Tell(to_team="alpha", message=f"@long:{words} {tag}"))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


class Readers:
    """``count`` WebSockets that read every event, in a process of their own."""

    def __init__(self, iris: Iris, count: int) -> None:
        url = iris.http_url.replace("http://", "ws://") + "/api/events"
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-readers", str(count), url, iris.owner_token],
            stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"  # every one subscribed

    def close(self) -> list[int]:
        """Once each saw the tell completed: the characters of its text each one received."""
        out, _ = self.process.communicate(timeout=120)
        return [int(n) for n in out.split()]


def sleepers(iris: Iris, count: int) -> list[socket.socket]:
    """``count`` WebSockets on /api/events that never read past their upgrade."""
    url = urllib.parse.urlsplit(iris.http_url)
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((url.hostname, url.port))
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET /api/events HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {iris.owner_token}\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        opened.append(sock)
    return opened


def measured(iris: Iris, words: int, tag: str) -> tuple[float, float]:
    """Seconds the tell took, and irisd's CPU seconds meanwhile."""
    assert iris.process is not None
    cpu = cpu_seconds(iris.process.pid)
    took = timed(tell, iris, words, tag)
    return took, cpu_seconds(iris.process.pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--words", type=int, default=4000)
    args = parser.parse_args()
    header(f"12. event fan-out: a {args.words}-word streaming tell alone, with {READERS} reading "
           f"and {SLEEPERS} non-reading WebSocket subscribers")
    times: dict[str, list[float]] = {"alone": [], "readers": [], "sleepers": []}
    cpus: dict[str, list[float]] = {"alone": [], "readers": [], "sleepers": []}
    received: list[int] = []
    expected = len(" ".join(f"word{n}" for n in range(1, args.words + 1)))
    with running_iris(["alpha"]) as iris:
        tell(iris, args.words, "warm up")
        for round_ in range(args.rounds):
            order = ["alone", "readers", "sleepers"]
            for side in order if round_ % 2 == 0 else reversed(order):
                tag = f"{side} {round_}"
                if side == "alone":
                    took, cpu = measured(iris, args.words, tag)
                elif side == "readers":
                    readers = Readers(iris, READERS)
                    took, cpu = measured(iris, args.words, tag)
                    received += readers.close()
                else:
                    opened = sleepers(iris, SLEEPERS)
                    took, cpu = measured(iris, args.words, tag)
                    for sock in opened:
                        sock.close()
                times[side].append(took)
                cpus[side].append(cpu)
                print(".", end="", flush=True, file=sys.stderr)
    print()
    ratios = {
        "time": median(times["readers"]) / median(times["alone"]),
        "cpu": median(cpus["readers"]) / median(cpus["alone"]),
    }
    sleepers_ratio = median(times["sleepers"]) / median(times["alone"])
    print("ratios (medians):")
    labels = {
        "time": f"tell with {READERS} reading subscribers / alone",
        "cpu": f"irisd CPU per delta, {READERS} reading subscribers / alone",
    }
    missed = []
    for key, ratio in ratios.items():
        verdict = "ok" if ratio <= TARGETS[key] else "MISSED"
        if verdict != "ok":
            missed.append(key)
        print(f"  {labels[key]:<62} {ratio:5.2f}x  (target {TARGETS[key]}x: {verdict})")
    print(f"  {f'tell with {SLEEPERS} non-reading subscribers / alone':<62} {sleepers_ratio:5.2f}x")
    print("absolute:")
    for side, label in (("alone", "alone"), ("readers", f"{READERS} readers"), ("sleepers", f"{SLEEPERS} non-readers")):
        print(describe(f"tell, {label}", times[side]))
        per_delta = median(cpus[side]) / args.words * 1e6
        print(f"  {'irisd CPU, ' + label:<44} median {median(cpus[side]):8.2f} s   {per_delta:7.1f} us per delta")
    short = [n for n in received if n < expected]
    print(f"  readers that got the whole text: {len(received) - len(short)} of {len(received)}")
    if missed or short:
        sys.exit(1)


async def serve_readers(count: int, url: str, token: str) -> None:
    """``--serve-readers``: ``count`` WebSockets reading every event; "ready" once all are
    subscribed; once each has seen a tell completed, each one's characters of its text."""
    import trio
    from trio_websocket import open_websocket_url

    ready = 0
    chars = [0] * count
    all_ready = trio.Event()

    async def read(index: int) -> None:
        nonlocal ready
        headers = [(b"Authorization", f"Bearer {token}".encode())]
        async with open_websocket_url(url, extra_headers=headers, max_message_size=16 * 1024 * 1024) as ws:
            assert json.loads(await ws.get_message())["type"] == "watching"
            ready += 1
            if ready == count:
                all_ready.set()
            while True:
                event = json.loads(await ws.get_message())
                if event["type"] == "tell_text":
                    chars[index] += len(event["text"])
                elif event["type"] == "tell_state" and event["status"] == "completed":
                    return  # every event of the tell came before this one

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(read, index)
        await all_ready.wait()
        print("ready", flush=True)
    print(" ".join(map(str, chars)), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-readers"]:
        import trio

        trio.run(serve_readers, int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        main()
