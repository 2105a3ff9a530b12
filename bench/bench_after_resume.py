"""Benchmark 1b: warm tells soon after a pair's claude resumed, through irisd vs straight to claude.

Issue 30 asks the warm tell through irisd to be at most 1.02x a direct warm turn "also for the
tells sent soon after a pair resumes, where the gap is largest": a claude just started does
housekeeping of its own for seconds, and irisd does its part of a start (the session's rows,
the MCP listing of the new child) on the same cores.

Each round, on both sides in turn (each first as often as the other):

* irisd:  ``Sleep`` the pair (its claude stops), then a tell (claude resumes with
          ``--resume``: the cold tell), then ``--after`` tells at once, each timed, from a
          protocol client (as benchmark 1's "protocol client");
* direct: stop the direct claude, start it again with ``--resume`` of its own session, the
          same argv and environment irisd gives a child, then the same turns.

What is compared is the k-th warm tell after the resume, side against side, and all of them
together. Both sides resume a conversation of the same length.

Run: .venv/bin/python bench/bench_after_resume.py [--rounds N] [--after K]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from _common import describe, header, median, request, running_iris, timed
from bench_daemon_overhead import DirectClaude, versus, via_socket

from harness import Iris
from protocol.messages import Sleep, Tell


def resume_direct(iris: Iris, session_id: str) -> DirectClaude:
    return DirectClaude(iris.claude, str(iris.teams_dir / "alpha"), iris.env, session_id=session_id, resume=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--after", type=int, default=3, help="warm tells timed after each resume")
    args = parser.parse_args()
    header("1b. warm tells soon after a resume: through irisd vs straight to claude")
    cold: dict[str, list[float]] = {"irisd": [], "direct": []}
    warm: dict[str, list[list[float]]] = {side: [[] for _ in range(args.after)] for side in ("irisd", "direct")}
    with running_iris(["alpha"]) as iris:
        session_id = str(uuid.uuid4())
        claude = DirectClaude(iris.claude, str(iris.teams_dir / "alpha"), iris.env, session_id=session_id)
        claude.turn("the conversation begins")
        claude.close()
        request(iris, Tell(to_team="alpha", message="the conversation begins"))

        def through_irisd(round_: int) -> None:
            request(iris, Sleep(to_team="alpha"))
            cold["irisd"].append(timed(via_socket, iris, f"resumed {round_}"))
            for k in range(args.after):
                warm["irisd"][k].append(timed(via_socket, iris, f"round {round_}, tell {k}"))

        def direct(round_: int) -> None:
            started = time.perf_counter()
            resumed = resume_direct(iris, session_id)  # spawned here, as irisd spawns it on the tell
            try:
                resumed.turn(f"resumed {round_}")
                cold["direct"].append(time.perf_counter() - started)
                for k in range(args.after):
                    warm["direct"][k].append(timed(resumed.turn, f"round {round_}, tell {k}"))
            finally:
                resumed.close()

        for round_ in range(args.rounds):
            sides = [through_irisd, direct] if round_ % 2 == 0 else [direct, through_irisd]
            for run in sides:
                run(round_)
            print(".", end="", flush=True, file=sys.stderr)
    print()
    print("ratios, irisd / direct (medians; target: the warm tell at most 1.02x):")
    for k in range(args.after):
        print(f"  warm tell {k + 1} after the resume            {versus(warm['irisd'][k], warm['direct'][k])}")
    every_irisd = [t for samples in warm["irisd"] for t in samples]
    every_direct = [t for samples in warm["direct"] for t in samples]
    print(f"  every warm tell after a resume          {versus(every_irisd, every_direct)}")
    print(f"  the resuming tell itself (cold)         {versus(cold['irisd'], cold['direct'])}")
    print("absolute:")
    for side in ("irisd", "direct"):
        print(describe(f"{side}: the resuming tell", cold[side]))
        for k in range(args.after):
            print(describe(f"{side}: warm tell {k + 1} after it", warm[side][k]))
    print(f"every warm tell after a resume: irisd {median(every_irisd) * 1000:.1f} ms, "
          f"direct {median(every_direct) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
