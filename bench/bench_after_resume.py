"""Benchmark 1b: warm tells soon after a pair's claude resumed, through irisd vs straight to claude.

Issue 30 asks the warm tell through irisd to be at most 1.02x a direct warm turn "also for the
tells sent soon after a pair resumes, where the gap is largest": a claude just started does
housekeeping of its own for seconds, and irisd does its part of a start (the session's rows,
the MCP listing of the new child) on the same cores.

Each round, on both sides in turn (each first as often as the other):

* irisd:  ``Sleep`` the pair (its claude stops), then a tell (claude resumes with
          ``--resume``: the cold tell), then ``--after`` tells at once, each timed, from a
          protocol client (as benchmark 1's "protocol client");
* direct: stop the direct claude, start it again with ``--resume`` of its own session, with
          the argv and environment of irisd's child as it runs (read from ``/proc``: its
          ``--mcp-config`` too, so the direct claude connects to irisd's ``/mcp`` with the
          child's token, as the child did when it resumed), then the same turns.

What is compared is the k-th warm tell after the resume, side against side, and all of them
together. Both sides resume a conversation of the same length. ``--no-resume``: the same
tells back to back on claudes that stay up, to tell what the resume adds from what tells
sent back to back cost.

Run: .venv/bin/python bench/bench_after_resume.py [--rounds N] [--after K]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _common import describe, header, median, request, running_iris, status, timed
from bench_daemon_overhead import DirectClaude, versus, via_socket

from harness import Iris
from protocol.messages import Sleep, Tell


class ChildAsItRuns:
    """The argv and environment of irisd's claude for ``alpha``, from /proc."""

    def __init__(self, iris: Iris) -> None:
        (pid,) = [p.pid for p in status(iris).processes if p.to_team == "alpha" and p.pid]
        self.argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        pairs = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1]
        self.env = dict(pair.split("=", 1) for pair in pairs)

    def resumed(self, session_id: str, cwd: str) -> subprocess.Popen[bytes]:
        """The same claude resuming ``session_id`` instead of the child's session."""
        argv = list(self.argv)
        argv[argv.index("--resume") + 1] = session_id
        return subprocess.Popen(argv, cwd=cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)


def resume_direct(iris: Iris, child: ChildAsItRuns, session_id: str) -> DirectClaude:
    direct = DirectClaude.__new__(DirectClaude)
    direct.process = child.resumed(session_id, str(iris.teams_dir / "alpha"))
    return direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--after", type=int, default=3, help="warm tells timed after each resume")
    parser.add_argument("--no-resume", action="store_true",
                        help="the same tells back to back on claudes that stay up (no sleep, no restart)")
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
        request(iris, Sleep(to_team="alpha"))
        request(iris, Tell(to_team="alpha", message="resumed once"))  # a child with --resume to copy

        child = ChildAsItRuns(iris)

        def through_irisd(round_: int) -> None:
            nonlocal child
            if not args.no_resume:
                request(iris, Sleep(to_team="alpha"))
            cold["irisd"].append(timed(via_socket, iris, f"resumed {round_}"))
            for k in range(args.after):
                warm["irisd"][k].append(timed(via_socket, iris, f"round {round_}, tell {k}"))
            child = ChildAsItRuns(iris)  # its token is the one the pair holds now

        kept: DirectClaude | None = None  # --no-resume: the direct claude that stays up

        def direct(round_: int) -> None:
            nonlocal kept
            started = time.perf_counter()
            resumed = kept or resume_direct(iris, child, session_id)  # spawned here, as irisd spawns it on the tell
            try:
                resumed.turn(f"resumed {round_}")
                cold["direct"].append(time.perf_counter() - started)
                for k in range(args.after):
                    warm["direct"][k].append(timed(resumed.turn, f"round {round_}, tell {k}"))
            finally:
                if args.no_resume:
                    kept = resumed
                else:
                    resumed.close()

        for round_ in range(args.rounds):
            sides = [through_irisd, direct] if round_ % 2 == 0 else [direct, through_irisd]
            for run in sides:
                run(round_)
            print(".", end="", flush=True, file=sys.stderr)
        if kept is not None:
            kept.close()
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
