"""Start-up time of ``iris mcp`` next to a bare MCP SDK stdio server, started the same way.

Claude Code launches the shim for every session, so what counts is the time from
starting the process to the ``initialize`` answer. Both servers run from this
virtualenv's Python, under trio, with the low-level SDK ``Server``; the bare one has a
single tool and nothing else. Runs alternate between the two so that a busy moment of
the machine hurts both alike. Neither talks to irisd: the shim connects lazily, on its
first tool call.

    .venv/bin/python bench/bench_shim_startup.py [--runs 15]

Prints the median (and min/max) of each, the difference and the ratio, plus the CPU
time each process used (steadier than wall time when the machine is busy); exits 1
when the shim's median wall time is more than the target (100 ms) above the bare one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_to_initialize(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to reading its answer to ``initialize``, and the
    CPU seconds the process used in all (start-up, one answer, exit): the second is the
    steadier figure on a busy machine."""
    cpu_before = children_cpu()
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
    return elapsed, children_cpu() - cpu_before


def iris_command() -> list[str]:
    script = Path(sys.executable).parent / "iris"
    if os.access(script, os.X_OK):
        return [str(script), "mcp"]
    return [sys.executable, "-m", "iris_cli", "mcp"]


def describe(name: str, samples: list[tuple[float, float]]) -> str:
    wall = [s[0] * 1000 for s in samples]
    cpu = [s[1] * 1000 for s in samples]
    return (
        f"{name:<18} wall: median {statistics.median(wall):7.1f} ms  (min {min(wall):7.1f}, "
        f"max {max(wall):7.1f})   cpu: median {statistics.median(cpu):7.1f} ms"
    )


def median_ms(samples: list[tuple[float, float]], index: int) -> float:
    return statistics.median(s[index] for s in samples) * 1000


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
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for command in commands.values():  # warm the file cache; not counted
        time_to_initialize(command, env)
    for _ in range(options.runs):
        for name, command in commands.items():
            samples[name].append(time_to_initialize(command, env))
    for name, runs in samples.items():
        print(describe(name, runs))
    bare_runs, shim_runs = samples["bare SDK server"], samples["iris mcp"]
    difference = median_ms(shim_runs, 0) - median_ms(bare_runs, 0)
    cpu_difference = median_ms(shim_runs, 1) - median_ms(bare_runs, 1)
    verdict = "within" if difference <= TARGET_MS else "OVER"
    print(
        f"iris mcp - bare: wall {difference:+.1f} ms (ratio {median_ms(shim_runs, 0) / median_ms(bare_runs, 0):.2f}), "
        f"cpu {cpu_difference:+.1f} ms; {verdict} the target of +{TARGET_MS:g} ms "
        f"({options.runs} runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    return 0 if difference <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
