"""Benchmark 18: a new conversation's first tell on a spare claude vs a cold start vs a warm tell.

Side by side, round by round, through irisd from a protocol client, one irisd with two
teams set up alike but for ``sessions.spares`` (alpha: 1, beta: 0):

* spare: a new conversation of alpha (``ResetSession`` first, so the next tell starts one);
  its spawn takes alpha's spare, which was started (and had settled) before the tell;
* cold: the same for beta, which has no spare: the tell starts claude, then runs the turn;
* warm: a tell on alpha's running claude (its second turn), once the spare that replaces
  it is up and settled (a claude starting takes a core for about a second).

Beside each spare and warm tell's wall time, the CPU time the spare's claude spent on it
(all its threads, from /proc): what claude does on a session's first turn that it does
not on a later one, in a figure that a busy machine does not stretch as it does wall time.
And what of the wall time is outside claude: the tell's wall time less the time from
irisd handing the message to claude to irisd having its result (``started_at`` and
``finished_at``, which the tell carries): irisd's share (the take, the tell's writes, the
reply) and the client's.

Then what a spare costs: its claude's resident memory once settled (VmRSS, VmHWM).
Target (issue 31): a new conversation's first tell at most 2x a warm tell.

With ``--baseline REV``, a second irisd built from that revision (checked out into a
scratch git worktree) runs alongside, and its spare's first and warm tells are measured in
the same rounds, each side first in turn: the code against the code before it.

Run: .venv/bin/python bench/bench_spare.py [--rounds N] [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass, field

from _common import (
    describe,
    header,
    median,
    request,
    rss_kib,
    running_iris,
    status,
    thread_cpu_seconds,
    timed,
    wait_quiet,
)
from bench_warm_path import checkout

from harness import Iris
from protocol.messages import ResetSession, SessionReply, Tell, TellReply


def tell(iris: Iris, team: str, text: str) -> TellReply:
    reply = request(iris, Tell(to_team=team, message=text))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply
    return reply


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


def timed_with_cpu(pid: int, team: str, iris: Iris, text: str) -> tuple[float, float, float]:
    """The tell's wall time, the CPU time claude ``pid`` spent meanwhile, and the wall time
    outside claude (irisd's and the client's), in seconds."""
    before = thread_cpu_seconds(pid)
    started = time.perf_counter()
    reply = tell(iris, team, text)
    wall = time.perf_counter() - started
    assert reply.tell.started_at is not None and reply.tell.finished_at is not None, reply
    return wall, thread_cpu_seconds(pid) - before, wall - (reply.tell.finished_at - reply.tell.started_at)


@dataclass
class Side:
    """The spare's first tells and warm tells of one irisd: wall time and claude's CPU."""

    iris: Iris
    first: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    first_cpu: list[float] = field(default_factory=list)
    warm_cpu: list[float] = field(default_factory=list)
    first_outside: list[float] = field(default_factory=list)  # the wall time outside claude: irisd's, the client's
    warm_outside: list[float] = field(default_factory=list)
    memory: list[dict[str, int]] = field(default_factory=list)

    def spare_round(self, round_: int, others: list[Side]) -> None:
        """A new conversation on alpha's spare (once every side's spare has settled), then a
        warm tell on it."""
        new_conversation(self.iris, "alpha")
        pid = settled_spare(self.iris, "alpha")
        for other in others:  # a replacement starting in another irisd would take the CPU
            settled_spare(other.iris, "alpha")
        self.memory.append(rss_kib(pid))
        wall, cpu, outside = timed_with_cpu(pid, "alpha", self.iris, f"first on a spare {round_}")
        self.first.append(wall)
        self.first_cpu.append(cpu)
        self.first_outside.append(outside)
        for side in [self, *others]:  # the warm tell on a quiet machine: its replacement is up
            settled_spare(side.iris, "alpha")
        wall, cpu, outside = timed_with_cpu(pid, "alpha", self.iris, f"warm {round_}")
        self.warm.append(wall)
        self.warm_cpu.append(cpu)
        self.warm_outside.append(outside)

    def paired(self) -> float:
        """The median of each round's first tell over the warm tell that came seconds after it
        (the machine's load, which other work changes over a run, changes both alike)."""
        return median([first / warm for first, warm in zip(self.first, self.warm, strict=True)])

    def report(self, name: str) -> None:
        print(f"  {name}: first tell on a spare / warm tell {median(self.first) / median(self.warm):6.2f}x "
              f"(round by round {self.paired():.2f}x), "
              f"claude's CPU {median(self.first_cpu) / median(self.warm_cpu):6.2f}x")
        print(describe(f"{name}: first tell on a spare", self.first))
        print(describe(f"{name}: warm tell", self.warm))
        print(describe(f"{name}: claude's CPU, first tell on a spare", self.first_cpu))
        print(describe(f"{name}: claude's CPU, warm tell", self.warm_cpu))
        print(describe(f"{name}: outside claude, first tell on a spare", self.first_outside))
        print(describe(f"{name}: outside claude, warm tell", self.warm_outside))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--baseline", help="also the spare of irisd at this git revision, side by side (e.g. HEAD~1)")
    args = parser.parse_args()
    header("18. a new conversation's first tell: on a spare vs a cold start vs a warm tell")
    cold: list[float] = []
    with contextlib.ExitStack() as stack:
        iris = stack.enter_context(running_iris(["alpha", "beta"], start=False))
        iris.teams["alpha"]["sessions"] = {"spares": 1}
        iris.start()
        sides = [Side(iris)]
        if args.baseline:
            old_code = stack.enter_context(checkout(args.baseline))
            old = stack.enter_context(running_iris(["alpha"], start=False))
            old.env["PYTHONPATH"] = str(old_code)  # ahead of the editable install of this checkout
            old.teams["alpha"]["sessions"] = {"spares": 1}
            old.start()
            sides.append(Side(old))
        for round_ in range(args.rounds):
            order = sides if round_ % 2 == 0 else sides[::-1]  # each side first in turn
            for side in order:
                side.spare_round(round_, [other for other in sides if other is not side])
            new_conversation(iris, "beta")
            cold.append(timed(tell, iris, "beta", f"first, cold {round_}"))
            print(".", end="", flush=True, file=sys.stderr)
    print()
    this = sides[0]
    print("ratios:")
    print(f"  first tell on a spare / warm tell      {median(this.first) / median(this.warm):6.2f}x   "
          "(target: at most 2x)")
    print(f"  the same, round by round               {this.paired():6.2f}x   (the median of each round's ratio)")
    print(f"  first tell cold / warm tell            {median(cold) / median(this.warm):6.2f}x")
    print(f"  first tell on a spare / cold           {median(this.first) / median(cold):6.2f}x")
    print(f"  claude's CPU: first tell on a spare / warm tell {median(this.first_cpu) / median(this.warm_cpu):6.2f}x")
    print("absolute:")
    print(describe("spare: a new conversation on a spare", this.first))
    print(describe("cold: a new conversation, claude started", cold))
    print(describe("warm: a tell on a running claude", this.warm))
    print(describe("claude's CPU for a first tell on a spare", this.first_cpu))
    print(describe("claude's CPU for a warm tell", this.warm_cpu))
    print(describe("outside claude (irisd, the client): first tell on a spare", this.first_outside))
    print(describe("outside claude (irisd, the client): warm tell", this.warm_outside))
    rss = sorted(m["VmRSS"] for m in this.memory)
    peak = sorted(m["VmHWM"] for m in this.memory)
    print(f"  a spare's claude, settled: RSS median {rss[len(rss) // 2] / 1024:.0f} MiB, "
          f"peak median {peak[len(peak) // 2] / 1024:.0f} MiB (n={len(rss)})")
    if args.baseline:
        print(f"this checkout vs {args.baseline}, side by side:")
        this.report("this checkout")
        sides[1].report(args.baseline)
        print(f"  first tell on a spare, this checkout / {args.baseline}: "
              f"{median(this.first) / median(sides[1].first):.2f}x wall, "
              f"{median(this.first_cpu) / median(sides[1].first_cpu):.2f}x claude's CPU")


if __name__ == "__main__":
    main()
