"""Benchmark 11b: the mesh's own legs, without a model's turn in the way.

Two irisds on one nats-server (JetStream, file store), each the real daemon with its
claude children replaced by echoes in its own process (``sim_irisd.py``): a tell's
turn takes no time, so what is left is Iris and NATS. ``ws-1`` has the local team
``near``, ``ws-2`` is the home of ``far``. Side by side, round by round (each side first
in turn), one blocking tell at a time from the same caller team:

* local: a warm tell to ``near`` on ws-1;
* remote: a warm tell to ``far`` through ws-2;
* the mesh's legs of each remote tell, from both irisds' records (one machine, one
  clock): caller recorded -> home recorded, plus home finished -> caller finished
  (target: at most 3 ms median);
* CPU per tell (every thread, to the nanosecond: schedstat): ws-1 (caller) and ws-2 (home) for the
  remote tells vs ws-1 for the local.

With ``--revision REV`` the same runs on that revision's code too (a git worktree of it),
interleaved: code against code on the same machine at the same time (each round
runs every side's local and remote tell once, in a shuffled order).

With ``--profile DIR`` (py-spy on the PATH or beside Python; with ``--revision`` that
revision's code instead of this checkout's) it records where both irisds spend their CPU
instead: py-spy on the caller and the home
over ``--rounds`` local tells, then over as many remote ones, each phase in its own
folded-stacks file in DIR (``local-caller.txt``, ``remote-caller.txt``,
``remote-home.txt``), and prints each file's heaviest functions (own and total share).

Run: .venv/bin/python bench/bench_mesh_legs.py [--rounds N] [--revision REV | --profile DIR]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    REPO,
    Rotation,
    SimIris,
    describe,
    header,
    median,
    ms,
    request,
    thread_cpu_seconds,
    wait_quiet,
)

from harness import claude_binary
from mesh.nats import NatsServer  # tests/ is on the path (_common)
from protocol.messages import ListTeams, Report, ReportReply, TeamsReply, Tell, TellInfo, TellReply


class Side:
    """A caller and a home irisd running one checkout's code."""

    def __init__(self, root: Path, label: str, url: str, repo: Path) -> None:
        self.label = label
        self.caller = SimIris(root / f"{label}-ws-1", model_url="http://127.0.0.1:9", claude=claude_binary())
        self.home = SimIris(root / f"{label}-ws-2", model_url="http://127.0.0.1:9", claude=claude_binary())
        self.far = f"far-{label}"  # one home per team on the mesh: each side's own
        for iris, name, offer in ((self.caller, "ws-1", []), (self.home, "ws-2", [self.far])):
            iris.settings["mesh"] = {"url": url, "name": f"{label}-{name}", "offer": offer}
            iris.env["PYTHONPATH"] = str(repo)  # the checkout whose code runs
            iris.script = repo / "bench" / "sim_irisd.py"
        self.caller.add_team("near")
        self.caller.add_team("asker")
        self.home.add_team(self.far)
        self.remote: list[TellInfo] = []
        self.local: list[TellInfo] = []
        self.parts: dict[str, list[float]] = {}
        self.samples: dict[str, list[float]] = {"local": [], "remote": []}
        self.cpu = {"local": 0.0, "remote caller": 0.0, "remote home": 0.0}

    def start(self) -> None:
        for iris in (self.home, self.caller):
            iris.start()

        def far_listed() -> bool:
            teams = request(self.caller, ListTeams())
            return isinstance(teams, TeamsReply) and any(t.name == self.far for t in teams.teams)

        deadline = time.monotonic() + 60
        while not far_listed():
            assert time.monotonic() < deadline, "far not listed on ws-1"
            time.sleep(0.1)
        for team in ("near", self.far):
            self.tell(team, "warm up")
        for iris in (self.caller, self.home):  # the MCP SDK loads in the background after a start
            wait_quiet(iris.process.pid)  # type: ignore[union-attr]

    def tell(self, team: str, text: str) -> TellInfo:
        reply = request(self.caller, Tell(to_team=team, message=text, from_team="asker", timeout_ms=0))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply
        return reply.tell

    def one(self, side: str, index: int) -> None:
        """One blocking tell, ``side`` "local" or "remote", and its CPU on both irisds."""
        pids = [self.caller.process.pid, self.home.process.pid]  # type: ignore[union-attr]
        before = [thread_cpu_seconds(pid) for pid in pids]
        started = time.perf_counter()
        info = self.tell(self.far if side == "remote" else "near", f"{side} {index}")
        self.samples[side].append(time.perf_counter() - started)
        after = [thread_cpu_seconds(pid) for pid in pids]
        if side == "remote":
            self.remote.append(info)
            self.cpu["remote caller"] += after[0] - before[0]
            self.cpu["remote home"] += after[1] - before[1]
        else:
            self.local.append(info)
            self.cpu["local"] += after[0] - before[0]

    def legs(self) -> list[float]:
        """The mesh's legs of each remote tell; also where the rest of each tell's time went
        (``self.parts``), from both irisds' records and the client's clock."""
        reply = request(self.home, Report(to_team=self.far, all_callers=True, limit=1000))
        assert isinstance(reply, ReportReply)
        there = {t.message: t for t in reply.tells}
        legs = []
        names = ("legs: out", "legs: back", "local: in irisd", "local: outside it", "remote: on the home",
                 "remote: outside the caller")
        self.parts = {name: [] for name in names}
        for mine, took in zip(self.remote, self.samples["remote"], strict=True):
            far = there[mine.message]
            assert far.finished_at is not None and mine.finished_at is not None
            out, back = far.created_at - mine.created_at, mine.finished_at - far.finished_at
            legs.append(out + back)
            self.parts["legs: out"].append(out)
            self.parts["legs: back"].append(back)
            self.parts["remote: on the home"].append(far.finished_at - far.created_at)
            self.parts["remote: outside the caller"].append(took - (mine.finished_at - mine.created_at))
        for info, took in zip(self.local, self.samples["local"], strict=True):
            assert info.finished_at is not None
            self.parts["local: in irisd"].append(info.finished_at - info.created_at)
            self.parts["local: outside it"].append(took - (info.finished_at - info.created_at))
        return legs

    def stop(self) -> None:
        for iris in (self.caller, self.home):
            if iris.process is not None:
                iris.stop(timeout=60)
            shutil.rmtree(iris.socket.parent, ignore_errors=True)


def checkout(revision: str, root: Path) -> Path:
    path = root / "revision"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), revision],
                   check=True, capture_output=True)
    return path


def py_spy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    return found


def profile(side: Side, rounds: int, folder: Path) -> None:
    """py-spy on both irisds over ``rounds`` local tells, then ``rounds`` remote ones."""
    folder.mkdir(parents=True, exist_ok=True)
    pids = {"caller": side.caller.process.pid, "home": side.home.process.pid}  # type: ignore[union-attr]
    for kind in ("local", "remote"):
        spies = {
            # --gil: the thread running Python (not nats-py's idle loop; SQLite releases the GIL, so its
            # own time shows as the gaps; py-spy's pauses make every figure somewhat larger)
            who: subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--rate", "500", "--gil", "--format", "raw",
                                   "--nolineno", "--output", str(folder / f"{kind}-{who}.txt")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for who, pid in pids.items() if kind == "remote" or who == "caller"
        }
        time.sleep(1.0)  # py-spy attached
        for index in range(rounds):
            side.one(kind, index)
        for spy in spies.values():
            spy.send_signal(signal.SIGINT)
        for spy in spies.values():
            spy.wait(timeout=60)
    for who, cpu in side.cpu.items():
        print(f"  CPU per tell, {who}: {cpu / rounds * 1000:.2f} ms")
    for path in sorted(folder.glob("*.txt")):
        heaviest(path)


def heaviest(path: Path, top: int = 25) -> None:
    """The functions of a folded-stacks file that take the most samples: own and total."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        samples += n
        frames = stack.split(";")
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    print(f"\n-- {path.name}: {samples} samples --")
    print("  own:")
    for frame, n in own.most_common(top):
        print(f"    {n / samples:6.1%}  {frame}")
    print("  total:")
    for frame, n in total.most_common(top * 2):
        print(f"    {n / samples:6.1%}  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--revision", help="also run this revision's code, interleaved")
    parser.add_argument("--profile", type=Path, help="py-spy both irisds into this folder instead")
    args = parser.parse_args()
    if args.profile is not None:
        run_profile(args.rounds, args.profile, args.revision)
        return
    root = Path(tempfile.mkdtemp(prefix="iris-bench-legs-"))
    server = NatsServer(root).start()
    sides: list[Side] = []
    other: Path | None = None
    load = [os.getloadavg()[0]]
    try:
        sides.append(Side(root, "this", server.url, REPO))
        if args.revision:
            other = checkout(args.revision, root)
            label = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.revision], check=True,
                                   capture_output=True, text=True).stdout.strip()  # a name teams may carry
            sides.append(Side(root, label, server.url, other))
        for side in sides:
            side.start()
        # Each round every (checkout, local/remote) once, in a shuffled order: a tell right
        # after one of the same kind on the same irisds is faster (a fixed order, each side
        # first in turn, gave one checkout's remote tells that place: 0.1 to 0.9 ms of bias
        # with the same code on both sides).
        order = Rotation([(side, kind) for side in sides for kind in ("local", "remote")], seed=30)
        for index in range(args.rounds):
            for side, kind in order.permutation(index):
                side.one(kind, index)
        load.append(os.getloadavg()[0])
        legs = {side.label: side.legs() for side in sides}
    finally:
        for side in sides:
            side.stop()
        server.stop()
        if other is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(other)], check=False)
        shutil.rmtree(root, ignore_errors=True)
    header("The mesh's own legs: echo children, one tell at a time, remote vs local")
    print(f"load average (1 min): {min(load):.1f} to {max(load):.1f}")
    for side in sides:
        mine = legs[side.label]
        extra = median(side.samples["remote"]) - median(side.samples["local"])
        verdict = "met" if median(mine) <= 0.003 else "NOT met"
        rounds = len(side.remote)
        print(f"  [{side.label}] the mesh's legs median {ms(median(mine))} (target <= 3 ms: {verdict}); "
              f"remote - local {extra * 1000:+.2f} ms; CPU per tell: local {side.cpu['local'] / rounds * 1000:.2f} ms, "
              f"remote {side.cpu['remote caller'] / rounds * 1000:.2f} ms on the caller + "
              f"{side.cpu['remote home'] / rounds * 1000:.2f} ms on the home")
    if len(sides) == 2:
        ratio = median(legs[sides[0].label]) / median(legs[sides[1].label])
        print(f"  legs, this checkout / {sides[1].label}: {ratio:.2f}x")
    for side in sides:
        for name, values in (*side.samples.items(), ("legs", legs[side.label]), *side.parts.items()):
            print(describe(f"[{side.label}] {name}", values))


def run_profile(rounds: int, folder: Path, revision: str | None) -> None:
    root = Path(tempfile.mkdtemp(prefix="iris-bench-legs-"))
    server = NatsServer(root).start()
    other = checkout(revision, root) if revision else None
    side = Side(root, "this", server.url, other or REPO)
    try:
        side.start()
        header("Where the CPU of a local and a remote tell goes (py-spy)")
        print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
        profile(side, rounds, folder.resolve())
    finally:
        side.stop()
        server.stop()
        if other is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(other)], check=False)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
