"""Start-up time of ``iris mcp`` next to a bare MCP SDK stdio server, started the same way.

Claude Code launches the shim for every session, so what counts is the time from
starting the process to the ``initialize`` answer. Both servers run from this
virtualenv's Python, under trio, with the low-level SDK ``Server``; the bare one has a
single tool and nothing else. Runs alternate between the two so that a busy moment of
the machine hurts both alike. Neither talks to irisd: the shim connects lazily, on its
first tool call.

    .venv/bin/python bench/bench_shim_startup.py [--runs 15]

Prints the median (and min/max) of each, the difference and the ratio; exits 1 when the
shim is more than the target (100 ms) slower than the bare server.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 100.0

BARE_SERVER = '''
import mcp_types as types
import trio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema={"type": "object"})])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="echo")])


async def main():
    server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


trio.run(main)
'''

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
)


def time_to_initialize(command: list[str], env: dict[str, str]) -> float:
    """Seconds from spawning ``command`` to reading its answer to ``initialize``."""
    started = time.perf_counter()
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(INITIALIZE + "\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        elapsed = time.perf_counter() - started
        process.stdin.close()
        process.wait(timeout=30)
    if '"id":1' not in answer.replace(" ", ""):
        raise RuntimeError(f"{command} did not answer initialize: {answer!r}")
    return elapsed


def iris_command() -> list[str]:
    script = Path(sys.executable).parent / "iris"
    if os.access(script, os.X_OK):
        return [str(script), "mcp"]
    return [sys.executable, "-m", "iris_cli", "mcp"]


def describe(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"{name:<22} median {statistics.median(ms):7.1f} ms   min {min(ms):7.1f}   max {max(ms):7.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    # The shim must not find (or start) a daemon: point it at a socket nobody serves.
    scratch = Path(tempfile.mkdtemp(prefix="iris-bench-"))
    env = {**os.environ, "IRIS_HOME": str(scratch), "IRIS_SOCKET": str(scratch / "none.sock")}
    bare = scratch / "bare_server.py"
    bare.write_text(BARE_SERVER)
    commands = {"bare SDK server": [sys.executable, str(bare)], "iris mcp": iris_command()}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for name, command in commands.items():  # warm the file cache; not counted
        time_to_initialize(command, env)
    for _ in range(options.runs):
        for name, command in commands.items():
            samples[name].append(time_to_initialize(command, env))
    for name, runs in samples.items():
        print(describe(name, runs))
    bare_ms = statistics.median(samples["bare SDK server"]) * 1000
    shim_ms = statistics.median(samples["iris mcp"]) * 1000
    difference = shim_ms - bare_ms
    verdict = "within" if difference <= TARGET_MS else "OVER"
    print(
        f"iris mcp - bare: {difference:+.1f} ms (ratio {shim_ms / bare_ms:.2f}); "
        f"{verdict} the target of +{TARGET_MS:g} ms ({options.runs} runs each)"
    )
    return 0 if difference <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
