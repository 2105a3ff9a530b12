"""Start-up time of ``iris mcp`` next to a bare MCP SDK stdio server, started the same way.

Claude Code launches the shim for every session, so what counts is the time from
starting the process to the ``initialize`` answer. Both servers run from this
virtualenv's Python, under trio, with the low-level SDK ``Server``; the bare one has a
single tool and nothing else. Runs alternate between the two so that a busy moment of
the machine hurts both alike. Neither talks to irisd: the shim connects lazily, on its
first tool call.

    .venv/bin/python bench/bench_shim_startup.py [--runs 15] [--baseline REV]

Prints the median (and min/max) of each, the difference and the ratio, plus the CPU
time each process used (steadier than wall time when the machine is busy); exits 1
when the shim's median wall time is more than the target (100 ms) above the bare one.

``--baseline REV`` then compares this code with that revision's, the CPU each ``iris mcp``
process uses in all, side by side, interleaved: started and given an empty stdin (``echo
-n | iris mcp``), and through a session of the 2026-07-28 era as Claude Code opens it
(``server/discover``, ``tools/list``, a ``team_tell`` with progress) against a real irisd
with echo children (``bench/sim_irisd.py``). Both run from this virtualenv's Python with
their code first on ``PYTHONPATH`` (``python -m iris_cli mcp``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
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


ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}}},
}
SESSION = [
    ("server/discover", {"_meta": ENVELOPE}),
    ("tools/list", {"_meta": ENVELOPE}),
    ("tools/call", {"name": "team_tell", "arguments": {"toTeam": "alpha", "message": "a question"},
                    "_meta": {**ENVELOPE, "progressToken": 1}}),
]


def shim_argv(code: Path) -> list[str]:
    """``iris mcp`` of the code in ``code`` (first on the path), speaking for team beta."""
    return ["env", f"PYTHONPATH={code}", sys.executable, "-m", "iris_cli", "mcp", "--team", "beta"]


def empty_stdin_cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds of ``echo -n | iris mcp``: start, see stdin end, exit."""
    before = children_cpu()
    subprocess.run(argv, input=b"", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd="/", check=True)
    return children_cpu() - before


def session_cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds of ``iris mcp`` through ``SESSION``, each answer awaited, then stdin closed."""
    before = children_cpu()
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          env=env, cwd="/", text=True) as process:
        assert process.stdin is not None and process.stdout is not None
        for request_id, (method, params) in enumerate(SESSION, start=1):
            process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                            "params": params}) + "\n")
            process.stdin.flush()
            while (answer := json.loads(process.stdout.readline())).get("id") != request_id:
                pass  # progress
            if "result" not in answer or answer["result"].get("isError"):
                raise RuntimeError(f"{method} failed: {answer}")
        process.stdin.close()
        process.wait(timeout=30)
    return children_cpu() - before


def against_baseline(rev: str, runs: int) -> None:
    """This code vs ``rev``'s: CPU of an empty session and of a short one (module docstring)."""
    from _common import REPO, SimIris, revision

    with revision(rev) as old_code:
        root = Path(tempfile.mkdtemp(prefix="iris-bench-"))
        iris = SimIris(root, model_url="http://127.0.0.1:9", claude="/bin/false")  # echo children: no claude
        iris.add_team("alpha")
        iris.add_team("beta")
        iris.start()
        try:
            env = {k: v for k, v in iris.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            sides = {"this code": shim_argv(REPO), rev: shim_argv(old_code)}
            measures = {"echo -n | iris mcp": empty_stdin_cpu, "discover+list+call": session_cpu}
            samples: dict[tuple[str, str], list[float]] = {(m, s): [] for m in measures for s in sides}
            for measure, side in samples:  # warm-up: byte-compiled files, the pair's first tell
                measures[measure](sides[side], env)
            for round_ in range(runs):
                order = list(samples)
                shift = round_ % len(order)
                for measure, side in order[shift:] + order[:shift]:
                    samples[(measure, side)].append(measures[measure](sides[side], env))
        finally:
            iris.stop(timeout=60)
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(iris.socket.parent, ignore_errors=True)
    print(f"\nCPU per iris mcp process (median of {runs}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs):")
    print(f"{'':<22}{'this code':>12}{rev:>14}{'ratio':>9}")
    for measure in measures:
        mine = statistics.median(samples[(measure, "this code")]) * 1000
        theirs = statistics.median(samples[(measure, rev)]) * 1000
        print(f"{measure:<22}{mine:>9.0f} ms{theirs:>11.0f} ms{mine / theirs:>8.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", help="also compare this code's CPU with this git revision's, e.g. main")
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
    if options.baseline:
        against_baseline(options.baseline, options.runs)
    return 0 if difference <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
