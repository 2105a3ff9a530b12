"""Benchmark 18: a new conversation's first tell on a spare claude vs a cold start vs a warm tell.

Side by side, round by round, through irisd from a protocol client, one irisd with two
teams set up alike but for ``sessions.spares`` (alpha: 1, beta: 0):

* spare: a new conversation of alpha (``ResetSession`` first, so the next tell starts one);
  its spawn takes alpha's spare, which was started (and had settled) before the tell;
* cold: the same for beta, which has no spare: the tell starts claude, then runs the turn;
* warm: a tell on alpha's running claude (its second turn).

Then what a spare costs: its claude's resident memory once settled (VmRSS, VmHWM).
Target (issue 31): a new conversation's first tell at most 2x a warm tell.

Run: .venv/bin/python bench/bench_spare.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import describe, header, median, request, rss_kib, running_iris, status, timed, wait_quiet

from harness import Iris
from protocol.messages import ResetSession, SessionReply, Tell, TellReply


def tell(iris: Iris, team: str, text: str) -> None:
    reply = request(iris, Tell(to_team=team, message=text))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


def new_conversation(iris: Iris, team: str) -> None:
    reply = request(iris, ResetSession(to_team=team))
    assert isinstance(reply, SessionReply), reply


def settled_spare(iris: Iris, team: str) -> int:
    """The team's spare's pid, once it is up and no longer busy starting."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = status(iris).spares.get(team, [])
        if pids:
            wait_quiet(pids[0])
            return pids[0]
        time.sleep(0.05)
    raise AssertionError(f"{team}'s spare did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    header("17. a new conversation's first tell: on a spare vs a cold start vs a warm tell")
    spare: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    memory: list[dict[str, int]] = []
    with running_iris(["alpha", "beta"], start=False) as iris:
        iris.teams["alpha"]["sessions"] = {"spares": 1}
        iris.start()
        for round_ in range(args.rounds):
            new_conversation(iris, "alpha")
            pid = settled_spare(iris, "alpha")
            memory.append(rss_kib(pid))
            spare.append(timed(tell, iris, "alpha", f"first on a spare {round_}"))
            warm.append(timed(tell, iris, "alpha", f"warm {round_}"))
            new_conversation(iris, "beta")
            cold.append(timed(tell, iris, "beta", f"first, cold {round_}"))
            print(".", end="", flush=True, file=sys.stderr)
    print()
    print("ratios:")
    print(f"  first tell on a spare / warm tell      {median(spare) / median(warm):6.2f}x   (target: at most 2x)")
    print(f"  first tell cold / warm tell            {median(cold) / median(warm):6.2f}x")
    print(f"  first tell on a spare / cold           {median(spare) / median(cold):6.2f}x")
    print("absolute:")
    print(describe("spare: a new conversation on a spare", spare))
    print(describe("cold: a new conversation, claude started", cold))
    print(describe("warm: a tell on a running claude", warm))
    rss = sorted(m["VmRSS"] for m in memory)
    peak = sorted(m["VmHWM"] for m in memory)
    print(f"  a spare's claude, settled: RSS median {rss[len(rss) // 2] / 1024:.0f} MiB, "
          f"peak median {peak[len(peak) // 2] / 1024:.0f} MiB (n={len(rss)})")


if __name__ == "__main__":
    main()
