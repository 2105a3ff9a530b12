"""Benchmark 13: irisd's memory with 100 idle pairs (target: at most 100 MiB).

One irisd (the real daemon, its claude children echoes in its own process:
``sim_irisd.py``, so a pair costs what it costs irisd, not a claude's ~190 MiB) with 100
teams. Side by side in one run: its resident memory idle, after one tell to each of the
100 teams (100 warm, idle pairs), after a second round (what the pairs keep, not the
first round's garbage), and the same with 10 pairs for the per-pair slope.

Run: .venv/bin/python bench/bench_memory_pairs.py [--pairs 100]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import SimIris, header, request, rss_kib

from harness import claude_binary
from protocol.messages import Tell, TellReply


def rss_mib(iris: SimIris) -> float:
    assert iris.process is not None
    return rss_kib(iris.process.pid)["VmRSS"] / 1024


def tell_each(iris: SimIris, teams: list[str]) -> None:
    for name in teams:
        reply = request(iris, Tell(to_team=name, message="hello", timeout_ms=0))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply


def settled(iris: SimIris) -> float:
    """RSS once the pairs are idle (a moment for their last writes to land)."""
    time.sleep(1.0)
    return rss_mib(iris)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="iris-bench-pairs-"))
    teams = [f"team{n}" for n in range(args.pairs)]
    iris = SimIris(root, model_url="http://127.0.0.1:9", claude=claude_binary())
    for name in teams:
        iris.add_team(name)
    try:
        iris.start()
        idle = settled(iris)
        tell_each(iris, teams[:10])
        ten = settled(iris)
        tell_each(iris, teams)
        first = settled(iris)
        tell_each(iris, teams)
        hundred = settled(iris)
        peak = rss_kib(iris.process.pid)["VmHWM"] / 1024 if iris.process else 0.0
    finally:
        if iris.process is not None:
            iris.stop(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)
    header(f"irisd's memory with {args.pairs} idle pairs (echo children in irisd's process)")
    verdict = "met" if hundred <= 100 else "NOT met"
    print(f"  {args.pairs} idle pairs: {hundred:.1f} MiB (target <= 100 MiB: {verdict}), "
          f"{hundred / idle:.2f}x idle; per pair {(hundred - ten) / (args.pairs - 10) * 1024:.0f} KiB "
          f"(from 10 to {args.pairs} pairs)")
    print(f"  idle {idle:.1f} MiB, 10 pairs {ten:.1f} MiB, {args.pairs} pairs after one tell each {first:.1f} MiB, "
          f"after two {hundred:.1f} MiB, peak {peak:.1f} MiB")


if __name__ == "__main__":
    main()
