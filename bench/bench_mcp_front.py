"""Benchmark 17: what the ``iris mcp`` front end adds to a warm tell, over irisd's socket.

Side by side, round by round (each side first in turn), against one irisd whose children
are echoes in its own process (``sim_irisd.py``: a warm tell costs irisd's path only, so
the front end's own milliseconds are not lost in a claude turn's noise):

* socket:          the tell from a protocol client on a kept connection (what the shim
                   itself sends);
* MCP:             ``team_tell`` through an ``iris mcp`` subprocess, from the MCP SDK's
                   client over stdio, without a progress token (no progress wanted);
* MCP + progress:  the same with a progress token (``progress_callback``), as Claude Code
                   calls it; the notifications it got are counted.

Target (issue 30): the MCP front end at most +2 ms over the socket.

Run: .venv/bin/python bench/bench_mcp_front.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio
from _common import SimIris, describe, header, machine, median, ms
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness import claude_binary
from iris_cli.aclient import ConnectionPool
from protocol.messages import Tell, TellReply

TARGET_S = 0.002


def iris_command() -> list[str]:
    script = Path(sys.executable).parent / "iris"
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "iris_cli"]


async def run(rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="iris-bench-mcp-"))
    iris = SimIris(root, model_url="http://127.0.0.1:9", claude=claude_binary())
    iris.add_team("alpha")
    socket: list[float] = []
    plain: list[float] = []
    progress: list[float] = []
    notifications: list[int] = []
    try:
        iris.start()
        command, *prefix = iris_command()
        params = StdioServerParameters(command=command, args=[*prefix, "mcp"], env=iris.env, cwd=str(iris.root))
        pool = ConnectionPool(iris.socket, "bench")
        with (root / "shim.log").open("a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:

                async def via_socket(text: str) -> None:
                    reply = await pool.request(Tell(to_team="alpha", message=text, timeout_ms=50_000))
                    assert isinstance(reply, TellReply) and reply.status == "completed", reply

                async def via_mcp(text: str) -> None:
                    result = await client.call_tool("team_tell", {"toTeam": "alpha", "message": text})
                    assert not result.is_error, result

                async def via_mcp_progress(text: str) -> None:
                    seen = 0

                    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                        nonlocal seen
                        seen += 1

                    arguments = {"toTeam": "alpha", "message": text}
                    result = await client.call_tool("team_tell", arguments, progress_callback=on_progress)
                    assert not result.is_error, result
                    notifications.append(seen)

                for warm in range(3):  # the pair, the kept connections, the shim's lazy imports
                    await via_socket(f"warm {warm}")
                    await via_mcp(f"warm {warm}")
                    await via_mcp_progress(f"warm {warm}")
                notifications.clear()
                sides: list[tuple[list[float], Callable[[str], Awaitable[None]]]] = [
                    (socket, via_socket), (plain, via_mcp), (progress, via_mcp_progress),
                ]
                for round_ in range(rounds):
                    shift = round_ % len(sides)
                    for samples, action in sides[shift:] + sides[:shift]:
                        start = trio.current_time()
                        await action(f"question {round_}")
                        samples.append(trio.current_time() - start)
                    print(".", end="", flush=True, file=sys.stderr)
        await pool.aclose()
    finally:
        if iris.process is not None:
            iris.stop(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)
    print(file=sys.stderr)
    base = median(socket)
    print("ratios (median time / median tell from a protocol client on a kept connection):")
    for label, samples in (("MCP, no progress token", plain), ("MCP, with a progress token", progress)):
        over = median(samples) - base
        verdict = "met" if over <= TARGET_S else "MISSED"
        print(f"  {label:<28} {median(samples) / base:5.2f}x   (+{ms(over)}; target +2 ms: {verdict})")
    print(f"progress notifications per tell (with a token): median {median([float(n) for n in notifications]):g}, "
          f"max {max(notifications)}")
    print("absolute:")
    print(describe("socket: protocol client, kept connection", socket))
    print(describe("iris mcp: team_tell, no progress token", plain))
    print(describe("iris mcp: team_tell, progress token", progress))
    print(machine())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    header("17. the MCP front end: team_tell through 'iris mcp' vs the same tell on the socket")
    trio.run(run, args.rounds)


if __name__ == "__main__":
    main()
