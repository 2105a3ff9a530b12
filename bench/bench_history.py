"""Reading history back, code against code: ``Report`` of the latest 1,000 of 10,000 tells
and ``ReadTranscript`` of 10,000 and of 100 messages, through irisd built from this
checkout and through irisd built from another revision (``--baseline REV``), the same
history written into each one's database, requests interleaved round by round (each side
first in turn); irisd's CPU per read of the 10,000 messages (all its threads, from
/proc/PID/task/*/schedstat); and irisd's memory: VmRSS before and after the reads, and its
peak while they ran (VmHWM, reset before them through /proc/PID/clear_refs).

Both sides are asked for packed pages (``ReadTranscript(paged=True, packed=True)``), as
``iris cache read`` asks, each page decoded as it comes; code from before packed pages sends
the lines decoded, code from before pages answers with one frame (``frames`` says so).

No claude runs: the history is written straight into the databases with irisd's queries.

Run: .venv/bin/python bench/bench_history.py --baseline HEAD~3 [--rounds 15]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from pathlib import Path

from _common import describe, header, median, read_transcript, request, reset_peak, rss_kib, running_iris, timed
from bench_memory import store_history
from bench_warm_path import checkout

from harness import Iris
from protocol.messages import Report, ReportReply

MESSAGES = 10_000


def cpu_ns(iris: Iris) -> int:
    """irisd's CPU time so far, all its threads (schedstat: nanoseconds, not clock ticks)."""
    assert iris.process is not None
    return sum(int(Path(task, "schedstat").read_text().split()[0])
               for task in glob.glob(f"/proc/{iris.process.pid}/task/*"))


def read(iris: Iris, tell_id: str, expected: int) -> int:
    """Read a transcript in pages; how many frames it took."""
    reply, frames = read_transcript(iris, tell_id)
    assert len(reply.entries) == expected
    return frames


def report(iris: Iris) -> None:
    reply = request(iris, Report(to_team="team0", limit=1000))
    assert isinstance(reply, ReportReply) and len(reply.tells) == 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with, e.g. HEAD~3")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    header(f"history read back: this checkout vs {args.baseline}")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    with checkout(args.baseline) as old_code, running_iris(["team0"], start=False) as old, \
            running_iris(["team0"]) as new:
        old.env["PYTHONPATH"] = str(old_code)
        old.settings.pop("preloadMcp", None)  # a setting the older code may not know
        old.start()
        sides = {"old": old, "new": new}
        ids = {name: store_history(iris, MESSAGES, MESSAGES) for name, iris in sides.items()}
        start = {name: rss_kib(iris.process.pid)["VmRSS"] for name, iris in sides.items() if iris.process}
        frames = {name: read(iris, ids[name][MESSAGES], MESSAGES) for name, iris in sides.items()}
        for iris in sides.values():
            assert iris.process is not None
            reset_peak(iris.process.pid)
        rss = {name: rss_kib(iris.process.pid)["VmRSS"] for name, iris in sides.items() if iris.process}
        times: dict[str, dict[str, list[float]]] = {name: {"large": [], "small": [], "report": []} for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}  # irisd's, per large read
        order = list(sides)
        for round_ in range(args.rounds):
            for name in order if round_ % 2 == 0 else order[::-1]:
                iris = sides[name]
                before = cpu_ns(iris)
                times[name]["large"].append(timed(read, iris, ids[name][MESSAGES], MESSAGES))
                cpu[name].append((cpu_ns(iris) - before) / 1e9)
                times[name]["small"].append(timed(read, iris, ids[name][100], 100))
                times[name]["report"].append(timed(report, iris))
            print(".", end="", flush=True, file=sys.stderr)
        after = {name: rss_kib(iris.process.pid) for name, iris in sides.items() if iris.process}
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    print("new / old (medians):")
    for what, label in (("large", f"ReadTranscript, {MESSAGES} messages"), ("small", "ReadTranscript, 100 messages"),
                        ("report", f"Report, latest 1000 of {MESSAGES} tells")):
        print(f"  {label:<40} {median(times['new'][what]) / median(times['old'][what]):5.2f}x")
    print(f"  irisd's CPU per read of {MESSAGES} messages   {median(cpu['new']) / median(cpu['old']):5.2f}x "
          f"({median(cpu['new']) * 1000:.1f} ms against {median(cpu['old']) * 1000:.1f} ms)")
    print("irisd's memory after the reads / before any (a first read of each side, not timed, then the rounds):")
    for name in sides:
        now, peak = after[name]["VmRSS"], after[name]["VmHWM"]
        print(f"  {name}: RSS {now / start[name]:.2f}x, peak during the rounds {peak / start[name]:.2f}x "
              f"({start[name] / 1024:.1f} -> {rss[name] / 1024:.1f} after the first read -> {now / 1024:.1f} MiB, "
              f"peak {peak / 1024:.1f}); {frames[name]} frames for {MESSAGES} messages")
    print("absolute:")
    for name in sides:
        label = "this checkout" if name == "new" else args.baseline
        print(describe(f"{label}: ReadTranscript {MESSAGES}", times[name]["large"]))
        print(describe(f"{label}: ReadTranscript 100", times[name]["small"]))
        print(describe(f"{label}: Report 1000 of {MESSAGES}", times[name]["report"]))


if __name__ == "__main__":
    main()
