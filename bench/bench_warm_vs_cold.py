"""Benchmark 2: the pool's value: a warm tell vs a cold one.

Side by side, round by round, through irisd from a protocol client:

* warm: the pair's claude is running and idle; the tell is one turn;
* cold: the pair's claude was put to sleep first; the tell spawns claude with
  ``--resume`` (the conversation so far is reloaded and sent again) and then runs
  the turn.

(The seeds of this project claim a warm pool makes tells "52% faster".)

Run: .venv/bin/python bench/bench_warm_vs_cold.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys

from _common import describe, header, median, ms, request, running_iris, timed

from harness import Iris
from protocol.messages import PairReply, Sleep, Tell, TellReply


def tell(iris: Iris, text: str) -> None:
    reply = request(iris, Tell(to_team="alpha", message=text))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    header("2. warm tell vs cold tell (spawn + --resume + turn)")
    warm: list[float] = []
    cold: list[float] = []
    with running_iris(["alpha"]) as iris:
        tell(iris, "start the conversation")  # the session exists: later spawns resume it
        for round_ in range(args.rounds):
            warm.append(timed(tell, iris, f"warm {round_}"))
            slept = request(iris, Sleep(to_team="alpha"))
            assert isinstance(slept, PairReply) and slept.process.state == "stopped", slept
            cold.append(timed(tell, iris, f"cold {round_}"))
            print(".", end="", flush=True, file=sys.stderr)
    print()
    saved = 1 - median(warm) / median(cold)
    print("ratios:")
    print(f"  cold / warm (median)             {median(cold) / median(warm):6.1f}x")
    print(f"  a warm tell is {saved:.0%} faster than a cold one ({ms(median(cold) - median(warm))} saved)")
    print("absolute:")
    print(describe("warm: tell on a running claude", warm))
    print(describe("cold: spawn + resume + tell", cold))


if __name__ == "__main__":
    main()
