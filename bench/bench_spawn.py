"""The start-up cost of a claude child with and without the reaper (irisd/claude/reaper.py).

Starts a small program (``/bin/echo``) as a ClaudeProcess N times each way, alternating,
and prints the median time from ``run`` to its first line of output and to its exit,
side by side with the ratio. A real claude takes 1.5 to 7 s to start here: what the
reaper adds must be lost in that.

    .venv/bin/python bench/bench_spawn.py [N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from irisd.claude.containment import Containment
from irisd.claude.process import ChildEvent, ChildExited, ChildLine, ClaudeProcess
from irisd.claude.reaper import Reaper


async def one(reaper: Reaper | None) -> tuple[float, float]:
    send, receive = trio.open_memory_channel[ChildEvent](16)
    process = ClaudeProcess(["/bin/echo", "ready"], cwd="/", env=dict(os.environ), events=send, reaper=reaper)
    started = time.perf_counter()
    first = 0.0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(process.run)
        async for event in receive:
            if isinstance(event, ChildLine) and not first:
                first = time.perf_counter() - started
            if isinstance(event, ChildExited):
                break
    return first, time.perf_counter() - started


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        containment = Containment(Path(home))
        assert containment.reaper is not None, "the reaper needs Linux"
        async with trio.open_nursery() as nursery:
            await nursery.start(containment.serve)
            results: dict[str, list[tuple[float, float]]] = {"trio.run_process": [], "reaper": []}
            for _ in range(n):
                results["trio.run_process"].append(await one(None))
                results["reaper"].append(await one(containment.reaper))
            nursery.cancel_scope.cancel()
    base = [statistics.median(x[i] for x in results["trio.run_process"]) for i in (0, 1)]
    print(f"{n} starts each, nproc {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'':18} {'first line':>12} {'exit':>12}")
    for name, values in results.items():
        medians = [statistics.median(x[i] for x in values) for i in (0, 1)]
        print(f"{name:18} {medians[0] * 1000:9.2f} ms {medians[1] * 1000:9.2f} ms"
              f"   ({medians[0] / base[0]:.2f}x, {medians[1] / base[1]:.2f}x)")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 50)
