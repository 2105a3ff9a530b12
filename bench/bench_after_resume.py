"""Benchmark 1b: warm tells soon after a pair's claude resumed, through irisd vs straight to claude.

Issue 30 asks the warm tell through irisd to be at most 1.02x a direct warm turn "also for the
tells sent soon after a pair resumes, where the gap is largest": a claude just started does
housekeeping of its own for seconds, and irisd does its part of a start (the session's rows,
the MCP listing of the new child) on the same cores.

Each round, every side in turn (the order shuffled: each side first, and after each other, as often as the others):

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
sent back to back cost. ``--kept``: the protocol client keeps one connection for all its
tells (as ``iris mcp`` does), instead of a new connection and hello for each.
``--baseline REV``: an irisd of that revision too (its own claude, the same tells), a third
side in the same rounds.

``--control``: a second direct claude (``direct-b``, its own session of the same length) as
one more side: ``direct-b / direct`` is what two claudes alike differ by in this run, the
noise floor of a ratio between two processes (claude's own speed varies from one process
to the next). ``--fresh-every N`` (with ``--no-resume``): every N rounds each side's claude
is started again (irisd's pair slept and resumed, the direct ones restarted with
``--resume``), its first tell untimed, so a run's ratio is over several claudes a side,
not one.

Run: .venv/bin/python bench/bench_after_resume.py [--rounds N] [--after K] [--no-resume] [--kept]
     [--baseline REV] [--control] [--fresh-every N]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _common import Rotation, describe, header, median, request, revision, running_iris, status, timed
from bench_daemon_overhead import DirectClaude, versus, via_socket

from harness import Iris
from iris_cli.client import Client
from protocol.messages import Sleep, Tell, TellReply


class ChildAsItRuns:
    """The argv and environment of irisd's claude for ``alpha``, from /proc."""

    def __init__(self, iris: Iris) -> None:
        (pid,) = [p.pid for p in status(iris).processes if p.to_team == "alpha" and p.pid]
        self.argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        pairs = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1]
        self.env = dict(pair.split("=", 1) for pair in pairs)
        # Not the child's marker: irisd stops every process that has it when the pair stops
        # its claude (README "What is stopped, and when"), a direct claude up at the time too.
        self.env.pop("IRIS_RUN", None)

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


class KeptConnection:
    """A protocol client that keeps its connection (and hello) for all its tells, as
    ``iris mcp`` keeps one."""

    def __init__(self, iris: Iris) -> None:
        self.iris = iris
        self.client: Client | None = None

    def tell(self, text: str) -> None:
        if self.client is None:
            self.client = Client(self.iris.socket, timeout=300)
            self.client.connect()
        reply = self.client.request(Tell(to_team="alpha", message=text), on_event=lambda event: None)
        assert isinstance(reply, TellReply) and reply.status == "completed", reply

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def generation_ratios(samples: list[list[float]], base: list[list[float]], rounds: int) -> list[float]:
    """The ratio of two sides' medians over each generation of claudes (``rounds`` rounds
    each; ``samples[k][r]`` is the k-th warm tell of round r): a generation's claudes are
    compared with each other, so one claude process faster than another by chance (the
    control shows by how much) weighs as one generation, not as the whole run."""
    generations = len(samples[0]) // rounds
    return [
        median([t for tells in samples for t in tells[g * rounds:(g + 1) * rounds]])
        / median([t for tells in base for t in tells[g * rounds:(g + 1) * rounds]])
        for g in range(generations)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--after", type=int, default=3, help="warm tells timed after each resume")
    parser.add_argument("--no-resume", action="store_true",
                        help="the same tells back to back on claudes that stay up (no sleep, no restart)")
    parser.add_argument("--kept", action="store_true",
                        help="the protocol client keeps one connection for all its tells (as 'iris mcp' does)")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="milliseconds between one tell's answer and the next tell (untimed), on every side")
    parser.add_argument("--baseline", help="also an irisd of this git revision (its own claude), e.g. main")
    parser.add_argument("--control", action="store_true",
                        help="a second direct claude as one more side: the ratio two claudes alike differ by")
    parser.add_argument("--seed", type=int, default=1, help="of the shuffled order of the sides in each round")
    parser.add_argument("--fresh-every", type=int, default=0, metavar="N",
                        help="with --no-resume: start every side's claude again every N rounds (first tell untimed)")
    args = parser.parse_args()
    if args.fresh_every and not args.no_resume:
        parser.error("--fresh-every goes with --no-resume (without it every round starts each claude again)")
    header("1b. warm tells soon after a resume: through irisd vs straight to claude")
    names = ["irisd", "direct", *(["direct-b"] if args.control else []), *(["baseline"] if args.baseline else [])]
    cold: dict[str, list[float]] = {side: [] for side in names}
    warm: dict[str, list[list[float]]] = {side: [[] for _ in range(args.after)] for side in names}
    with contextlib.ExitStack() as stack:
        iris = stack.enter_context(running_iris(["alpha"]))
        old: Iris | None = None
        if args.baseline:
            old_code = stack.enter_context(revision(args.baseline))
            old = stack.enter_context(running_iris(["alpha"], start=False))
            old.env["PYTHONPATH"] = str(old_code)  # ahead of the editable install of this checkout
            old.start()
            request(old, Tell(to_team="alpha", message="the conversation begins"))
        sessions: dict[str, str] = {side: str(uuid.uuid4()) for side in ("direct", "direct-b") if side in names}
        for session_id in sessions.values():
            claude = DirectClaude(iris.claude, str(iris.teams_dir / "alpha"), iris.env, session_id=session_id)
            claude.turn("the conversation begins")
            claude.close()
        request(iris, Tell(to_team="alpha", message="the conversation begins"))
        request(iris, Sleep(to_team="alpha"))
        request(iris, Tell(to_team="alpha", message="resumed once"))  # a child with --resume to copy

        child = ChildAsItRuns(iris)
        kept = {side: KeptConnection(daemon) for side, daemon in (("irisd", iris), ("baseline", old)) if daemon}
        for connection in kept.values():
            stack.callback(connection.close)

        def teller(side: str, daemon: Iris) -> Callable[[str], None]:
            if args.kept:
                return kept[side].tell
            return lambda text: via_socket(daemon, text)

        def fresh(round_: int) -> bool:
            """Whether this round starts each side's claude again."""
            return not args.no_resume or (args.fresh_every > 0 and round_ > 0 and round_ % args.fresh_every == 0)

        def through(side: str, daemon: Iris, round_: int) -> None:
            tell = teller(side, daemon)
            if fresh(round_):
                request(daemon, Sleep(to_team="alpha"))
                if args.no_resume:  # --fresh-every: the resuming tell is not one of the timed ones
                    tell(f"resumed {round_}")
            cold[side].append(timed(tell, f"resumed {round_}"))
            for k in range(args.after):
                time.sleep(args.pause / 1000)
                warm[side][k].append(timed(tell, f"round {round_}, tell {k}"))

        def through_irisd(round_: int) -> None:
            nonlocal child
            through("irisd", iris, round_)
            child = ChildAsItRuns(iris)  # its token is the one the pair holds now

        staying: dict[str, DirectClaude] = {}  # --no-resume: the direct claudes that stay up

        def straight(side: str) -> Callable[[int], None]:
            def direct(round_: int) -> None:
                if fresh(round_) and side in staying:
                    staying.pop(side).close()
                started = time.perf_counter()
                resumed = staying.get(side)
                if resumed is None:  # spawned here, as irisd spawns it on the tell
                    resumed = resume_direct(iris, child, sessions[side])
                    if args.no_resume and round_ > 0:  # --fresh-every: the resuming turn is untimed
                        resumed.turn(f"resumed {round_}")
                        started = time.perf_counter()
                try:
                    resumed.turn(f"resumed {round_}")
                    cold[side].append(time.perf_counter() - started)
                    for k in range(args.after):
                        time.sleep(args.pause / 1000)
                        warm[side][k].append(timed(resumed.turn, f"round {round_}, tell {k}"))
                finally:
                    if args.no_resume:
                        staying[side] = resumed
                    else:
                        resumed.close()
            return direct

        sides: list[Callable[[int], None]] = [through_irisd, *(straight(side) for side in sessions)]
        if old is not None:
            baseline = old
            sides.append(lambda round_: through("baseline", baseline, round_))
        order = Rotation(sides, seed=args.seed)
        for round_ in range(args.rounds):
            # Each side first as often as the others, and after each other side as often: in
            # a fixed rotation one side always followed the same one (and what that one
            # left running, such as irisd's held end, written 10 ms after its last answer).
            for run in order.permutation(round_):
                run(round_)
            print(".", end="", flush=True, file=sys.stderr)
        for claude in staying.values():
            claude.close()
    print()
    print("ratios, irisd / direct (medians; target: the warm tell at most 1.02x):")
    for k in range(args.after):
        print(f"  warm tell {k + 1} after the resume            {versus(warm['irisd'][k], warm['direct'][k])}")
    every_irisd = [t for samples in warm["irisd"] for t in samples]
    every_direct = [t for samples in warm["direct"] for t in samples]
    print(f"  every warm tell after a resume          {versus(every_irisd, every_direct)}")
    print(f"  the resuming tell itself (cold)         {versus(cold['irisd'], cold['direct'])}")
    if args.fresh_every:
        print(f"  per generation of claudes (started again every {args.fresh_every} rounds), every warm tell:")
        for side, base in (("irisd", "direct"), *((("direct-b", "direct"),) if args.control else ())):
            ratios = generation_ratios(warm[side], warm[base], args.fresh_every)
            print(f"    {side} / {base}: median {median(ratios):.3f}x of {len(ratios)} "
                  f"({' '.join(f'{r:.2f}' for r in ratios)})")
    if args.control:
        every_b = [t for samples in warm["direct-b"] for t in samples]
        print(f"  control: direct-b / direct, every warm tell  {versus(every_b, every_direct)}"
              "  (two claudes alike: the noise floor of one run)")
        print(f"  control: irisd / direct-b, every warm tell   {versus(every_irisd, every_b)}")
        print(f"  irisd / both direct claudes, every warm tell {versus(every_irisd, every_direct + every_b)}"
              "  (two claudes for the floor: the run's figure)")
    if args.baseline:
        every_old = [t for samples in warm["baseline"] for t in samples]
        print(f"  {args.baseline}: every warm tell          {versus(every_old, every_direct)}")
        print(f"  this code / {args.baseline}, every warm tell  {versus(every_irisd, every_old)}")
    staying_up = (f"claudes started again every {args.fresh_every} rounds" if args.fresh_every
                  else "claudes that stay up")
    print(f"({'one kept connection' if args.kept else 'a new connection and hello'} for each tell; "
          f"{'back to back on ' + staying_up if args.no_resume else 'each round after a resume'})")
    print("absolute:")
    for side in names:
        print(describe(f"{side}: the resuming tell", cold[side]))
        for k in range(args.after):
            print(describe(f"{side}: warm tell {k + 1} after it", warm[side][k]))
    print(f"every warm tell after a resume: irisd {median(every_irisd) * 1000:.1f} ms, "
          f"direct {median(every_direct) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
