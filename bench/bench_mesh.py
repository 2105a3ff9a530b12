"""Benchmark 10: a tell to a team of another irisd through NATS JetStream vs the same tell
to a local team.

Two isolated irisds on one nats-server (JetStream, file store) on this machine, the real
claude and the scripted model; ws-1 has the local team ``near``, ws-2 is the home of
``far``. Side by side, round by round (each side first in turn):

* one warm tell (its pair's claude already running), local vs remote: the mesh's
  overhead is the difference (target: at most +3 ms at a load average below 2);
* 10 tells at once from 10 teams (10 pairs), local vs remote: the wall time of the lot;
* tells per second through one home: 20 remote tells sent at once to one pair (and the
  same to a local pair);
* memory: irisd's RSS on a mesh vs an irisd with no mesh that did the same local work
  (the difference is nats-py, its thread and loop, the mesh's tasks).

With ``--warm-only`` just the first (two claude children instead of about thirty).

One claude process is faster than another by chance by a few per cent (benchmark 1b), as
much as the target on a 40 ms turn, and local and remote tells run on two claudes:
``--control`` adds a second local team (``near-b``, its own claude) as one more side,
whose difference from ``near`` is the floor of one run, and compares the remote tells
with both local ones pooled; ``--fresh-every N`` starts every side's claude again every
N rounds (its pair slept, the next tell untimed), so a run has several claudes a side.
The sides' order is shuffled each round. With ``--warm-only`` it also splits the warm
tells' time by both irisds' records: the legs, the home's run against a local run in
irisd (and claude's own figure for its turn on each), and what is outside the caller irisd.

Run: .venv/bin/python bench/bench_mesh.py [--rounds N] [--warm-only [--control] [--fresh-every N] [--pause MS]]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import Rotation, describe, header, median, ms, request, status, timed

from harness import Iris, claude_binary, wait_for
from mesh.nats import NatsServer  # tests/ is on the path (_common)
from protocol.messages import (
    GetTell,
    ListTeams,
    Report,
    ReportReply,
    Sleep,
    TeamsReply,
    Tell,
    TellInfo,
    TellReply,
)
from scripted_model import ScriptedModel

CALLERS = [f"c{index}" for index in range(10)]
LEGS = "mesh legs of a remote tell"


def tell(iris: Iris, team: str, text: str, from_team: str | None = None) -> TellInfo:
    reply = request(iris, Tell(to_team=team, message=text, from_team=from_team, timeout_ms=0))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply
    return reply.tell


def mesh_legs(caller_tells: list[TellInfo], home: Iris) -> dict[str, list[float]]:
    """The mesh's own share of each remote tell, from both irisds' records (one machine,
    one clock): out, caller recorded -> home recorded, and back, home finished -> caller
    finished (the legs: both). Claude's turn (and the load's effect on it) is left out."""
    reply = request(home, Report(to_team="far", all_callers=True, limit=500))
    assert isinstance(reply, ReportReply)
    there = {t.message: t for t in reply.tells}
    legs: dict[str, list[float]] = {LEGS: [], f"{LEGS}: out": [], f"{LEGS}: back": []}
    for mine in caller_tells:
        far = there[mine.message]
        assert far.finished_at is not None and mine.finished_at is not None
        out, back = far.created_at - mine.created_at, mine.finished_at - far.finished_at
        legs[LEGS].append(out + back)
        legs[f"{LEGS}: out"].append(out)
        legs[f"{LEGS}: back"].append(back)
    return legs


def runs(told: dict[str, list[TellInfo]], home: Iris) -> dict[str, list[float]]:
    """Where each warm tell's time goes, from the irisds' records: a local tell's run in
    its irisd (recorded -> finished), a remote one's on the home (the same for its local
    tell there) and in the caller irisd (recorded -> finished, the home's run and the legs
    inside it)."""
    reply = request(home, Report(to_team="far", all_callers=True, limit=500))
    assert isinstance(reply, ReportReply)
    there = {t.message: t for t in reply.tells}

    def run(info: TellInfo) -> float:
        assert info.finished_at is not None
        return info.finished_at - info.created_at

    def turn(info: TellInfo) -> float:
        return (info.duration_ms or 0) / 1000

    local = [t for side in ("local", "local b") for t in told[side]]
    far = [there[t.message] for t in told["remote"]]
    return {
        "local and local b: in irisd": [run(t) for t in local],
        "remote: on the home": [run(t) for t in far],
        "remote: in the caller irisd": [run(t) for t in told["remote"]],
        "local and local b: claude's own turn": [turn(t) for t in local],
        "remote: claude's own turn on the home": [turn(t) for t in far],
    }


def at_once(iris: Iris, team: str) -> None:
    with concurrent.futures.ThreadPoolExecutor(len(CALLERS)) as pool:
        for future in [pool.submit(tell, iris, team, "hi", caller) for caller in CALLERS]:
            future.result()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warm-only", action="store_true", help="only the warm tells, local vs remote")
    parser.add_argument("--control", action="store_true",
                        help="with --warm-only: a second local team (its own claude), the floor of one run")
    parser.add_argument("--fresh-every", type=int, default=0, metavar="N",
                        help="with --warm-only: start every side's claude again every N rounds")
    parser.add_argument("--pause", type=float, default=0.0, metavar="MS",
                        help="with --warm-only: milliseconds between one tell's answer and the next tell "
                             "(untimed; claude works on for a few ms after its answer)")
    args = parser.parse_args()
    if (args.control or args.fresh_every) and not args.warm_only:
        parser.error("--control and --fresh-every go with --warm-only")
    load = [os.getloadavg()[0]]
    root = Path(tempfile.mkdtemp(prefix="iris-bench-mesh-"))
    server = NatsServer(root).start()
    made: list[Iris] = []
    try:
        with ScriptedModel() as model:
            def irisd(name: str, mesh: bool) -> Iris:
                iris = Iris(root / name, model_url=model.base_url, claude=claude_binary())
                if mesh:
                    iris.settings["mesh"] = {"url": server.url, "name": name}
                made.append(iris)
                return iris

            caller, home, plain = irisd("ws-1", True), irisd("ws-2", True), irisd("plain", False)
            caller.add_team("near")
            if args.control:
                caller.add_team("near-b")
            for name in CALLERS:
                caller.add_team(name)
                plain.add_team(name)
            home.add_team("far")
            plain.add_team("near")
            for iris in (home, caller, plain):
                iris.start()

            def far_listed() -> bool:
                teams = request(caller, ListTeams())
                return isinstance(teams, TeamsReply) and any(t.name == "far" for t in teams.teams)

            wait_for(far_listed, timeout=30, what="far listed on ws-1")
            locals_ = ["near", *(["near-b"] if args.control else [])]
            for team in (*locals_, "far"):
                tell(caller, team, "warm up")
            (far_pair,) = [p for p in status(home).processes if p.to_team == "far"]
            if not args.warm_only:
                tell(plain, "near", "warm up")  # the same work as ws-1's, less the mesh: memory to compare
                at_once(plain, "near")
                at_once(caller, "near")
                at_once(caller, "far")
            samples: dict[str, list[float]] = {"local": [], "remote": [], "10 local": [], "10 remote": []}
            if args.control:
                samples["local b"] = []
            remote_tells: list[TellInfo] = []
            told: dict[str, list[TellInfo]] = {"local": [], "local b": [], "remote": []}  # the timed ones

            def remote(text: str) -> TellInfo:
                remote_tells.append(tell(caller, "far", text))
                return remote_tells[-1]

            def timed_tell(side: str, action: Callable[[], TellInfo]) -> float:
                started = time.perf_counter()
                told[side].append(action())
                return time.perf_counter() - started

            def fresh_claudes(round_: int) -> None:
                """Every side's claude stops, and starts again on an untimed tell."""
                before = {p.pid for iris in (caller, home) for p in status(iris).processes if p.pid}
                for team in locals_:
                    request(caller, Sleep(to_team=team))
                request(home, Sleep(to_team="far", from_team=far_pair.from_team))
                for team in locals_:
                    tell(caller, team, f"fresh {round_}")
                remote(f"fresh {round_}")
                after = {p.pid for iris in (caller, home) for p in status(iris).processes if p.pid}
                assert not before & after, f"a claude was not started again: {before & after}"

            order = Rotation(["local", "remote", *(["local b"] if args.control else [])], seed=11)
            for round_ in range(args.rounds):
                if args.fresh_every and round_ and round_ % args.fresh_every == 0:
                    fresh_claudes(round_)
                sides: dict[str, Callable[[], TellInfo]] = {
                    "local": functools.partial(tell, caller, "near", "hello"),
                    "remote": functools.partial(remote, f"hello {round_}"),
                    "local b": functools.partial(tell, caller, "near-b", "hello"),
                }
                for name in order.permutation(round_):
                    time.sleep(args.pause / 1000)
                    samples[name].append(timed_tell(name, sides[name]))
            samples.update(mesh_legs(remote_tells, home))
            samples.update(runs(told, home))
            load.append(os.getloadavg()[0])
            if args.warm_only:
                for name in ("10 local", "10 remote"):
                    del samples[name]
                report(samples, load)
                return
            for round_ in range(max(3, args.rounds // 4)):
                many = [("10 local", functools.partial(at_once, caller, "near")),
                        ("10 remote", functools.partial(at_once, caller, "far"))]
                for name, at_once_to in many if round_ % 2 == 0 else reversed(many):
                    samples[name].append(timed(at_once_to))

            def through_one_pair(team: str) -> float:
                """Tells per second: 20 sent at once (not waiting) to one pair, read back."""
                started = time.perf_counter()
                ids = []
                for index in range(20):
                    reply = request(caller, Tell(to_team=team, message=f"n{index}", timeout_ms=-1))
                    ids.append(reply.tell.id)
                for tell_id in ids:
                    request(caller, GetTell(tell_id=tell_id, wait_ms=120_000))
                return 20 / (time.perf_counter() - started)

            per_second = through_one_pair("far")
            local_per_second = through_one_pair("near")
            mesh_rss, plain_rss = status(caller).memory_rss, status(plain).memory_rss

        report(samples, load, done=False)
        print(f"  10 at once, remote / local: {median(samples['10 remote']) / median(samples['10 local']):.2f}x")
        print(f"  through one home: {per_second:.1f} tells/s, through one local pair {local_per_second:.1f} tells/s "
              "(20 sent at once to one pair)")
        print(f"  irisd RSS on a mesh: {mesh_rss / 2**20:.1f} MiB, without: {plain_rss / 2**20:.1f} MiB "
              f"(+{(mesh_rss - plain_rss) / 2**20:.1f} MiB: nats-py, its thread and loop)")
        for name, values in samples.items():
            print(describe(name, values))
    finally:
        for iris in made:
            if iris.process is not None:
                iris.stop(timeout=60)
            shutil.rmtree(iris.socket.parent, ignore_errors=True)
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def report(samples: dict[str, list[float]], load: list[float], *, done: bool = True) -> None:
    """The warm tells' figures (and every sample's spread, once ``done``)."""
    header("Teams on many hosts: a tell to a team of another irisd vs a local one")
    print(f"load average (1 min): {min(load):.1f} to {max(load):.1f}")
    extra = median(samples["remote"]) - median(samples["local"])
    verdict = "met" if extra <= 0.003 else "NOT met"
    print(f"  warm tell, remote - local: {extra * 1000:+.1f} ms (target <= +3 ms: {verdict}); the mesh's own legs "
          f"(recorded -> taken on the home, finished there -> finished here): "
          f"{ms(median(samples[LEGS]))}")
    if "local b" in samples:
        both = samples["local"] + samples["local b"]
        floor = median(samples["local b"]) - median(samples["local"])
        pooled = median(samples["remote"]) - median(both)
        verdict = "met" if pooled <= 0.003 else "NOT met"
        print(f"  control: local b - local {floor * 1000:+.1f} ms (two local claudes alike: the floor of one run); "
              f"remote - both local {pooled * 1000:+.1f} ms (target <= +3 ms: {verdict})")
    if "remote: on the home" in samples:
        home = median(samples["remote: on the home"]) - median(samples["local and local b: in irisd"])
        outside = (median(samples["remote"]) - median(samples["remote: in the caller irisd"])) - (
            median(samples["local"] + samples.get("local b", [])) - median(samples["local and local b: in irisd"]))
        turns = median(samples["remote: claude's own turn on the home"]) - median(
            samples["local and local b: claude's own turn"])
        print(f"  from the records: the home's run - a local run in irisd {home * 1000:+.2f} ms (the same turn on "
              f"another claude, as each irisd saw it; claude's own figure for its turn {turns * 1000:+.1f} ms); "
              f"outside the caller irisd, remote - local {outside * 1000:+.2f} ms")
    if done:
        for name, values in samples.items():
            print(describe(name, values))


if __name__ == "__main__":
    main()
