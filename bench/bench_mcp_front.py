"""Benchmark 17: what the ``iris mcp`` front end adds to a warm tell, over irisd's socket.

Side by side, round by round (each side first in turn), against one irisd whose children
are echoes in its own process (``sim_irisd.py``: a warm tell costs irisd's path only, so
the front end's own milliseconds are not lost in a claude turn's noise):

* socket:          the tell from a protocol client on a kept connection (what the shim
                   itself sends);
* MCP:             ``team_tell`` through an ``iris mcp`` subprocess, from the MCP SDK's
                   client over stdio, without a progress token (no progress wanted);
* MCP + progress:  the same with a progress token (``progress_callback``), as Claude Code
                   calls it; the notifications it got are counted;
* Shim in process: the tools' own code (``iris_mcp.shim.Shim`` on the shim's
                   ``DaemonLink``) called in this process, no MCP: what Iris's Python adds,
                   apart from the SDK and the second process. This process's CPU per call
                   is reported for it and for the socket side.

Target (issue 30): the MCP front end at most +2 ms over the socket.

With ``--baseline REV`` a second ``iris mcp``, of that revision (a scratch git worktree on
PYTHONPATH), runs the same calls in the same rounds.

Run: .venv/bin/python bench/bench_mcp_front.py [--rounds N] [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import trio
from _common import REPO, SimIris, describe, header, machine, median, ms
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness import claude_binary
from iris_cli.aclient import ConnectionPool
from iris_cli.mcp_stdio import DaemonLink
from iris_mcp.shim import Shim
from protocol.messages import Tell, TellReply

TARGET_S = 0.002


@contextlib.contextmanager
def checkout(revision: str) -> Iterator[Path]:
    """``revision`` of this repository in a scratch git worktree."""
    folder = Path(tempfile.mkdtemp(prefix="iris-bench-rev-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(folder), revision], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False)


class Side:
    """One way of sending the tell, its samples, and the notifications it got."""

    def __init__(self, label: str, send: Callable[[str], Awaitable[int]]) -> None:
        self.label = label
        self.send = send
        self.samples: list[float] = []
        self.notifications: list[int] = []
        self.cpu = 0.0  # this process's CPU time over the rounds


def mcp_sides(name: str, client: Client) -> list[Side]:
    async def plain(text: str) -> int:
        result = await client.call_tool("team_tell", {"toTeam": "alpha", "message": text})
        assert not result.is_error, result
        return 0

    async def with_progress(text: str) -> int:
        seen = 0

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal seen
            seen += 1

        arguments = {"toTeam": "alpha", "message": text}
        result = await client.call_tool("team_tell", arguments, progress_callback=on_progress)
        assert not result.is_error, result
        return seen

    return [Side(f"{name}, no progress token", plain), Side(f"{name}, progress token", with_progress)]


async def run(rounds: int, baseline: str | None, old_code: Path | None) -> None:
    root = Path(tempfile.mkdtemp(prefix="iris-bench-mcp-"))
    iris = SimIris(root, model_url="http://127.0.0.1:9", claude=claude_binary())
    iris.add_team("alpha")
    try:
        iris.start()
        pool = ConnectionPool(iris.socket, "bench")

        async def via_socket(text: str) -> int:
            reply = await pool.request(Tell(to_team="alpha", message=text, timeout_ms=50_000))
            assert isinstance(reply, TellReply) and reply.status == "completed", reply
            return 0

        shim = Shim(DaemonLink(iris.socket, autostart=False), cwd=str(iris.root), env={})

        async def via_shim(text: str) -> int:
            output = await shim.call("team_tell", {"toTeam": "alpha", "message": text}, None)
            assert not output.is_error, output.text
            return 0

        sides = [Side("socket: protocol client", via_socket), Side("Shim in process, no MCP", via_shim)]
        async with contextlib.AsyncExitStack() as stack:
            errlog = stack.enter_context((root / "shim.log").open("a"))
            shims = [("iris mcp", iris.env)]
            if old_code is not None:
                shims.append((f"iris mcp at {baseline}", {**iris.env, "PYTHONPATH": str(old_code)}))
            for name, env in shims:
                params = StdioServerParameters(
                    command=sys.executable, args=["-m", "iris_cli", "mcp"], env=env, cwd=str(iris.root)
                )
                client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
                sides += mcp_sides(name, client)
            for warm in range(3):  # the pair, the kept connections, the shims' lazy imports
                for side in sides:
                    await side.send(f"warm {warm}")
            for round_ in range(rounds):
                shift = round_ % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    start, cpu = trio.current_time(), time.process_time()
                    seen = await side.send(f"question {round_}")
                    side.samples.append(trio.current_time() - start)
                    side.cpu += time.process_time() - cpu
                    side.notifications.append(seen)
                print(".", end="", flush=True, file=sys.stderr)
        await pool.aclose()
    finally:
        if iris.process is not None:
            iris.stop(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)
    print(file=sys.stderr)
    base = median(sides[0].samples)
    print("ratios (median time / median tell from a protocol client on a kept connection):")
    for side in sides[1:]:
        over = median(side.samples) - base
        verdict = "met" if over <= TARGET_S else "MISSED"
        extra = ("+" if over >= 0 else "-") + ms(abs(over))
        print(f"  {side.label:<40} {median(side.samples) / base:5.2f}x   ({extra}; target +2 ms: {verdict})")
    print("this process's CPU per call (what the Shim's own Python adds, without the MCP SDK):")
    for side in sides[:2]:
        print(f"  {side.label:<40} {ms(side.cpu / rounds)}")
    print("progress notifications per tell:")
    for side in sides[2:]:
        print(f"  {side.label:<40} median {median([float(n) for n in side.notifications]):g}, "
              f"max {max(side.notifications)}")
    print("absolute:")
    for side in sides:
        print(describe(side.label, side.samples))
    print(f"load average {os.getloadavg()[0]:.1f} at the end; {machine()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--baseline", help="also an 'iris mcp' of this git revision, e.g. HEAD~3")
    args = parser.parse_args()
    header("17. the MCP front end: team_tell through 'iris mcp' vs the same tell on the socket")
    with checkout(args.baseline) if args.baseline else contextlib.nullcontext() as old_code:
        trio.run(run, args.rounds, args.baseline, old_code)


if __name__ == "__main__":
    main()
