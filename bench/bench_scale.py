"""Benchmark 12: the mesh past one machine, by simulation: many irisds on one NATS
JetStream cluster of three servers, all on loopback.

Each irisd is the real daemon with its claude children replaced by echoes in its own
process (``sim_irisd.py``), so what is measured is Iris and NATS, not a model. Every
irisd ``ws-I`` is the home of ``--teams`` teams (``hI-tJ``). The irisds are started in
steps (``--steps``, default 1, 5, 10, 20: the new ones all at once), and at each step:

* convergence: from the new irisds' start (and from the last one answering on its
  socket) until every irisd lists every team of the mesh;
* cross-host tells: ``--tells`` blocking tells, ``--clients`` at a time, each from a team
  of ``ws-I`` to a team of ``ws-(I+1)`` (warm pairs: each pair had a tell before), all
  irisds sending: tells/s and the p50/p99 of one tell; with one irisd, the same tells to
  its own teams (the local baseline);
* the JetStream sizes (the two buckets and the two streams, from the server's /jsz);
* each irisd's resident memory (median), and per 100 teams it knows of;
* each irisd's CPU while the mesh is idle (``--idle`` seconds, no tells: heartbeats and
  the directory's watch), in percent of one core: the load-robust figure of what a
  bigger mesh costs every member.

At the last step, a home goes away: one irisd is killed (kill -9: its heartbeat goes
stale) and another stopped cleanly (it says so at once); the time until every other
irisd shows that home's teams as unreachable.

With ``--revision REV`` the irisds run that revision's code (a git worktree of it), to
compare code against code on the same machine (one run after the other: the idle CPU is
the figure to compare, the load of the moment weighs on the rest).

Run: .venv/bin/python bench/bench_scale.py [--steps 1,5,10,20] [--teams 50] [--tells 400] [--revision REV]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from _common import REPO, SimIris, cpu_seconds, header, median, percentile, request, rss_kib

from harness import claude_binary
from mesh.nats import NatsCluster  # tests/ is on the path (_common)
from protocol.messages import ListTeams, TeamsReply, Tell, TellReply

PAIRS_PER_IRISD = 5  # each irisd tells the next one's first teams from its own first teams


def team(irisd: int, index: int) -> str:
    return f"h{irisd}-t{index}"


def listed(iris: SimIris) -> dict[str, str]:
    """Every team an irisd lists -> where it lives ("" for its own)."""
    reply = request(iris, ListTeams(), timeout=60)
    assert isinstance(reply, TeamsReply)
    return {t.name: t.remote for t in reply.teams}


def wait_until(done: Callable[[], bool], timeout: float, what: str, pause: float = 0.05) -> float:
    """Poll ``done()`` until true; the seconds it took."""
    started = time.perf_counter()
    while not done():
        if time.perf_counter() - started > timeout:
            raise AssertionError(f"not {what} after {timeout:g} s")
        time.sleep(pause)
    return time.perf_counter() - started


def converged(irisds: list[SimIris], teams: int) -> bool:
    everyone = {team(i, j) for i in range(len(irisds)) for j in range(teams)}
    pending = [iris for iris in irisds if not getattr(iris, "converged", False)]
    for iris in pending:
        if set(listed(iris)) >= everyone:
            iris.converged = True  # type: ignore[attr-defined]
        else:
            return False
    return True


def jetstream_sizes(cluster: NatsCluster) -> dict[str, tuple[int, int]]:
    """stream -> (messages, bytes), as the first server reports them."""
    url = f"http://127.0.0.1:{cluster.servers[0].monitor_port}/jsz?streams=true"
    with urllib.request.urlopen(url, timeout=10) as answer:
        report = json.load(answer)
    sizes = {}
    for account in report.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            state = stream.get("state") or {}
            sizes[stream["name"]] = (int(state.get("messages", 0)), int(state.get("bytes", 0)))
    return sizes


def tell(iris: SimIris, to_team: str, from_team: str, text: str) -> float:
    started = time.perf_counter()
    reply = request(iris, Tell(to_team=to_team, message=text, from_team=from_team, timeout_ms=0))
    took = time.perf_counter() - started
    assert isinstance(reply, TellReply) and reply.status == "completed", reply
    assert reply.tell.text == f"echo: {text}", reply.tell.text
    return took


def routes(count: int) -> list[tuple[int, str, str]]:
    """(sending irisd, to team, from team): each irisd to the next one (to itself alone)."""
    return [(i, team((i + 1) % count, j), team(i, j)) for i in range(count) for j in range(PAIRS_PER_IRISD)]


def tells_at_once(irisds: list[SimIris], tells: int, clients: int) -> tuple[float, list[float]]:
    """``tells`` cross-host tells, ``clients`` at a time, round robin over the routes:
    (tells per second, each tell's seconds)."""
    plan = routes(len(irisds))
    for sender, to_team, from_team in plan:  # warm every pair first
        tell(irisds[sender], to_team, from_team, "warm up")
    counter = iter(range(tells))
    lock = threading.Lock()
    took: list[float] = []

    def client() -> None:
        while True:
            with lock:
                index = next(counter, None)
            if index is None:
                return
            sender, to_team, from_team = plan[index % len(plan)]
            seconds = tell(irisds[sender], to_team, from_team, f"n{index}")
            with lock:
                took.append(seconds)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    return tells / (time.perf_counter() - started), took


def gone_everywhere(irisds: list[SimIris], home: int, teams: int) -> bool:
    """Every other irisd shows ``home``'s teams as unreachable (words after its name)."""
    name = team(home, 0)
    for index, iris in enumerate(irisds):
        if index == home or iris.process is None:
            continue
        if listed(iris).get(name, "") == f"irisd ws-{home}":
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", default="1,5,10,20")
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--tells", type=int, default=400)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--revision", help="run the irisds on this revision's code")
    args = parser.parse_args()
    steps = [int(n) for n in args.steps.split(",")]
    root = Path(tempfile.mkdtemp(prefix="iris-bench-scale-"))
    code = REPO
    if args.revision:
        code = root / "revision"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(code), args.revision],
                       check=True, capture_output=True)
    cluster = NatsCluster(root / "nats").start()
    irisds: list[SimIris] = []
    rows: list[str] = []
    load = [os.getloadavg()[0]]
    first: tuple[int, float] | None = None  # (teams known, RSS) at the first step
    try:
        for count in steps:
            new = []
            for index in range(len(irisds), count):
                iris = SimIris(root / f"ws-{index}", model_url="http://127.0.0.1:9", claude=claude_binary())
                iris.settings["mesh"] = {"url": cluster.urls, "name": f"ws-{index}"}
                iris.env["PYTHONPATH"] = str(code)
                iris.script = code / "bench" / "sim_irisd.py"
                for j in range(args.teams):
                    iris.add_team(team(index, j))
                new.append(iris)
            started = time.perf_counter()
            for iris in new:
                iris.start(wait=False)
            for iris in new:
                iris.wait_ready(timeout=300)
            answering = time.perf_counter()
            irisds += new
            for iris in irisds:
                iris.converged = False  # type: ignore[attr-defined]
            wait_until(functools.partial(converged, irisds, args.teams), timeout=300, what="converged")
            done = time.perf_counter()
            pids = [iris.process.pid for iris in irisds if iris.process is not None]
            before = [cpu_seconds(pid) for pid in pids]
            time.sleep(args.idle)
            idle = median([(cpu_seconds(pid) - was) / args.idle * 100 for pid, was in zip(pids, before, strict=True)])
            per_second, took = tells_at_once(irisds, args.tells, args.clients)
            sizes = jetstream_sizes(cluster)
            rss = [rss_kib(iris.process.pid)["VmRSS"] / 1024 for iris in irisds if iris.process is not None]
            known = count * args.teams
            first = first or (known, median(rss))
            slope = (median(rss) - first[1]) / (known - first[0]) * 100 if known > first[0] else 0.0
            load.append(os.getloadavg()[0])
            kind = "cross-host" if count > 1 else "local (one irisd)"
            rows.append(
                f"  {count:>3} irisds x {args.teams} teams ({known:>5} teams): converged {done - started:6.2f} s "
                f"after start ({done - answering:5.2f} s after the last answered); {kind} tells "
                f"{per_second:6.1f}/s, p50 {median(took) * 1000:6.1f} ms, p99 {percentile(took, 99) * 1000:7.1f} ms; "
                f"idle CPU per irisd {idle:4.1f}% of a core; "
                f"irisd RSS median {median(rss):5.1f} MiB (+{slope:4.2f} MiB per 100 more teams known); "
                + ", ".join(f"{name} {msgs} msgs {size / 1024:.0f} KiB" for name, (msgs, size) in sorted(sizes.items()))
            )
            print(rows[-1], flush=True)
        gone: list[str] = []
        if len(irisds) >= 3:
            killed, stopped = len(irisds) - 1, len(irisds) - 2
            process = irisds[killed].process
            assert process is not None
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            irisds[killed].process = None
            took_killed = wait_until(functools.partial(gone_everywhere, irisds, killed, args.teams), 120, "gone",
                                     0.2)
            irisds[stopped].stop(timeout=60)
            took_stopped = wait_until(functools.partial(gone_everywhere, irisds, stopped, args.teams), 120, "gone",
                                      0.2)
            gone.append(f"  a home killed (kill -9) seen unreachable by all {len(irisds) - 2} others in "
                        f"{took_killed:.2f} s; a home stopped cleanly, in {took_stopped:.2f} s")
        header(f"The mesh by simulation: up to {steps[-1]} irisds x {args.teams} teams, NATS cluster of 3"
               + (f", irisds on {args.revision}" if args.revision else ""))
        print(f"load average (1 min) during the run: {min(load):.1f} to {max(load):.1f}")
        for line in rows + gone:
            print(line)
    finally:
        for iris in irisds:
            if iris.process is not None:
                try:
                    iris.stop(timeout=60)
                except Exception:  # the others still stop
                    iris.process.kill()
            shutil.rmtree(iris.socket.parent, ignore_errors=True)
        cluster.stop()
        if code != REPO:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)], check=False)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
