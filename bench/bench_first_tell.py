"""The first tell after irisd starts vs the next cold tell, with and without loading what
``/mcp`` needs in the background once irisd is ready (``settings.preloadMcp``).

Each round starts a fresh irisd with two teams (a fresh ``CLAUDE_CONFIG_DIR`` too, which
one direct claude turn warms first: a claude's very first start in a new config folder
does work of its own that is no part of irisd's first tell), waits until irisd is quiet
(the background load done, when on), then tells ``alpha`` (the first cold tell: its claude connects to
``/mcp``) and ``beta`` (the next cold tell: the MCP SDK is loaded by then whatever the
setting). Rounds alternate preload on / off (A B A B), so both see the same load.

Run: .venv/bin/python bench/bench_first_tell.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import sys

from _common import describe, header, median, ms, request, running_iris, timed, wait_quiet
from bench_daemon_overhead import DirectClaude

from harness import Iris
from protocol.messages import Tell, TellReply


def tell(iris: Iris, team: str) -> None:
    reply = request(iris, Tell(to_team=team, message="hello"))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    header("the first tell after irisd starts vs the next cold tell, /mcp preloaded or not")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    first: dict[bool, list[float]] = {True: [], False: []}
    second: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.rounds):
        for preload in (True, False) if round_ % 2 == 0 else (False, True):
            with running_iris(["alpha", "beta"], preloadMcp=preload) as iris:
                assert iris.process is not None
                claude = DirectClaude(iris.claude, str(iris.teams_dir / "alpha"), iris.env)
                claude.turn("warm the config folder")
                claude.close()
                wait_quiet(iris.process.pid)
                first[preload].append(timed(tell, iris, "alpha"))
                second[preload].append(timed(tell, iris, "beta"))
            print(".", end="", flush=True, file=sys.stderr)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    print("first tell − next cold tell (medians; target with the preload: at most +50 ms):")
    for preload in (True, False):
        extra = median(first[preload]) - median(second[preload])
        ratio = median(first[preload]) / median(second[preload])
        label = "preloaded once ready" if preload else "loaded at the first child"
        print(f"  {label:<28} {'+' if extra >= 0 else ''}{ms(extra)}  ({ratio:.2f}x)")
    print("absolute:")
    for preload in (True, False):
        label = "preload" if preload else "no preload"
        print(describe(f"{label}: first tell", first[preload]))
        print(describe(f"{label}: next cold tell", second[preload]))


if __name__ == "__main__":
    main()
