"""Benchmark 4: ten pairs told at once vs one pair alone.

Ten teams, one pair each (the external caller to each team), all through irisd from
blocking protocol clients, one thread per tell. Side by side in one run:

* warm: every pair's claude is running; one tell to one pair, then one tell to each
  of the ten pairs at once;
* cold: every pair was put to sleep first; the same two measurements, so each tell
  also spawns (and resumes) its claude.

On 2 cores ten claude processes compete for CPU: the ratios say how much of the
pool's parallelism survives on a small machine.

Run: .venv/bin/python bench/bench_parallel_pairs.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

from _common import describe, header, median, ms, request, running_iris, timed

from harness import Iris
from protocol.messages import PairReply, Sleep, Tell, TellReply, Wake

PAIRS = 10
TEAMS = [f"team{n}" for n in range(PAIRS)]


def tell(iris: Iris, team: str, text: str) -> float:
    def run() -> None:
        reply = request(iris, Tell(to_team=team, message=text))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply

    return timed(run)


def at_once(iris: Iris, pool: ThreadPoolExecutor, text: str) -> tuple[float, list[float]]:
    """Wall time of ten tells sent together, and each one's latency."""
    latencies: list[float] = []

    def all_of_them() -> None:
        latencies.extend(pool.map(lambda team: tell(iris, team, text), TEAMS))

    return timed(all_of_them), latencies


def put_to_sleep(iris: Iris) -> None:
    for team in TEAMS:
        reply = request(iris, Sleep(to_team=team))
        assert isinstance(reply, PairReply) and reply.process.state == "stopped", reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    header(f"4. {PAIRS} pairs told at once vs one pair")
    warm_one: list[float] = []
    warm_wall: list[float] = []
    warm_each: list[float] = []
    cold_one: list[float] = []
    cold_wall: list[float] = []
    cold_each: list[float] = []
    with running_iris(TEAMS, maxProcesses=PAIRS) as iris, ThreadPoolExecutor(PAIRS) as pool:
        list(pool.map(lambda team: request(iris, Wake(to_team=team)), TEAMS))
        at_once(iris, pool, "warm up")  # every session exists: cold spawns resume
        for round_ in range(args.rounds):
            warm_one.append(tell(iris, "team0", f"alone {round_}"))
            wall, each = at_once(iris, pool, f"together {round_}")
            warm_wall.append(wall)
            warm_each += each
            put_to_sleep(iris)
            cold_one.append(tell(iris, "team0", f"cold alone {round_}"))
            put_to_sleep(iris)
            wall, each = at_once(iris, pool, f"cold together {round_}")
            cold_wall.append(wall)
            cold_each += each
            print(".", end="", flush=True, file=sys.stderr)
    print()
    print("ratios (medians):")
    for label, one, walls, each in (
        ("warm", warm_one, warm_wall, warm_each),
        ("cold", cold_one, cold_wall, cold_each),
    ):
        speedup = PAIRS * median(one) / median(walls)
        print(
            f"  {label}: {PAIRS} at once take {median(walls) / median(one):4.1f}x one tell's time "
            f"(each tell {median(each) / median(one):4.1f}x slower); throughput {speedup:4.1f}x of one "
            f"pair at a time"
        )
    print("absolute:")
    print(describe("warm: one tell, one pair", warm_one))
    print(describe(f"warm: {PAIRS} tells at once (wall)", warm_wall))
    print(describe(f"warm: {PAIRS} tells at once (each)", warm_each))
    print(describe("cold: one tell, one pair", cold_one))
    print(describe(f"cold: {PAIRS} tells at once (wall)", cold_wall))
    print(describe(f"cold: {PAIRS} tells at once (each)", cold_each))
    print(f"  (cold one: spawn + resume + turn; {ms(median(cold_one))} median)")


if __name__ == "__main__":
    main()
