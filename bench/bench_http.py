"""Benchmark 7: what irisd's HTTP face costs and saves.

Side by side, round by round, in one run (the same real claude, the scripted model
answering at once):

1. cold: a tell through irisd to a pair whose claude is not running, in a new
   conversation (irisd spawns claude, which connects to irisd's /mcp over HTTP with its
   own token, and answers), vs the same cold turn of a bare ``claude`` with no MCP
   server at all (spawn, new session, one turn, its ``result`` line). Target: at most
   1.15x. (With the stdio MCP shim per child it was 2-3x: each child started a Python
   process that imported the MCP SDK.)
2. ten cold tells at once (ten pairs) vs ten bare cold turns at once. Target: 1.2x.
3. warm: the same tell to a running pair over the HTTP API (``POST
   /api/teams/{team}/tell``, one kept-alive connection) vs over the Unix socket
   (a protocol client, one kept connection). Target: 1.1x.

Run: .venv/bin/python bench/bench_http.py [--rounds N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import urllib.parse
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from _common import describe, header, median, request, running_iris, timed

from harness import Iris
from iris_cli.client import Client
from iris_common.environment import child_environment
from irisd.claude.command import claude_argv
from irisd.claude.wire import user_turn
from protocol.messages import PairReply, ResetSession, SessionReply, Sleep, Tell, TellReply

PAIRS = 10
TEAMS = [f"team{n}" for n in range(PAIRS)]
TARGETS = {"cold": 1.15, "ten cold": 1.2, "warm": 1.1}


def bare_turn(iris: Iris, folder: Path, text: str) -> None:
    """A cold claude turn with no MCP server: spawn, new session, one turn, result."""
    # irisd's own flags for a child, without --mcp-config.
    argv = claude_argv(iris.claude, session_id=str(uuid.uuid4()), resume=False)
    env = child_environment(claude_config_dir=Path(iris.env["CLAUDE_CONFIG_DIR"]), environ=iris.env)
    process = subprocess.Popen(
        argv, cwd=folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(user_turn(text))
    process.stdin.flush()
    for line in process.stdout:
        if json.loads(line).get("type") == "result":
            break
    else:
        raise RuntimeError("claude exited before its result")
    process.stdin.close()
    process.wait(timeout=60)


def cold_pair(iris: Iris, team: str) -> None:
    """Make the pair (external, team) cold: no claude, a fresh conversation."""
    slept = request(iris, Sleep(to_team=team, force=True))
    assert isinstance(slept, PairReply) and slept.process.state == "stopped", slept
    reset = request(iris, ResetSession(to_team=team))
    assert isinstance(reset, SessionReply), reset


def tell(iris: Iris, team: str, text: str) -> None:
    reply = request(iris, Tell(to_team=team, message=text))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


class HttpApi:
    def __init__(self, iris: Iris) -> None:
        url = urllib.parse.urlsplit(iris.http_url)
        self.connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=300)
        self.headers = {"Authorization": f"Bearer {iris.owner_token}", "Content-Type": "application/json"}

    def tell(self, team: str, text: str) -> None:
        self.connection.request("POST", f"/api/teams/{team}/tell", json.dumps({"message": text}), self.headers)
        response = self.connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == 200 and answer["status"] == "completed", answer


class SocketApi:
    def __init__(self, iris: Iris) -> None:
        self.client = Client(iris.socket, timeout=300)
        self.client.connect()

    def tell(self, team: str, text: str) -> None:
        reply = self.client.request(Tell(to_team=team, message=text))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply


def side_by_side(round_: int, *sides: tuple[list[float], Callable[[], None]]) -> None:
    """Time each side once, the first one first in even rounds, last in odd ones."""
    for samples, action in sides if round_ % 2 == 0 else reversed(sides):
        samples.append(timed(action))
    print(".", end="", flush=True, file=sys.stderr)


def all_at_once(pool: ThreadPoolExecutor, actions: list[Callable[[], None]]) -> None:
    for future in [pool.submit(action) for action in actions]:
        future.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warm-rounds", type=int, default=30)
    parser.add_argument("--parallel-rounds", type=int, default=2)
    args = parser.parse_args()
    header("7. the HTTP face: cold tells (MCP over HTTP) vs bare claude; warm tells, HTTP vs socket")
    results: dict[str, tuple[list[float], list[float]]] = {}
    with running_iris(["alpha", *TEAMS], maxProcesses=PAIRS + 1) as iris:
        folder = iris.teams_dir / "alpha"
        tell(iris, "alpha", "warm up")  # claude's own first-run files exist before we time
        bare_turn(iris, folder, "warm up")

        cold_irisd: list[float] = []
        cold_bare: list[float] = []
        for round_ in range(args.rounds):
            cold_pair(iris, "alpha")
            side_by_side(
                round_,
                (cold_irisd, partial(tell, iris, "alpha", f"cold {round_}")),
                (cold_bare, partial(bare_turn, iris, folder, f"cold {round_}")),
            )
        results["cold"] = (cold_irisd, cold_bare)

        ten_irisd: list[float] = []
        ten_bare: list[float] = []
        with ThreadPoolExecutor(PAIRS) as pool:
            for round_ in range(args.parallel_rounds):
                for team in TEAMS:
                    cold_pair(iris, team)
                side_by_side(
                    round_,
                    (ten_irisd, partial(all_at_once, pool, [partial(tell, iris, t, f"ten {round_}") for t in TEAMS])),
                    (ten_bare, partial(all_at_once, pool, [
                        partial(bare_turn, iris, iris.teams_dir / t, f"ten {round_}") for t in TEAMS
                    ])),
                )
        results["ten cold"] = (ten_irisd, ten_bare)

        http_api, socket_api = HttpApi(iris), SocketApi(iris)
        tell(iris, "alpha", "warm again")
        warm_http: list[float] = []
        warm_socket: list[float] = []
        for round_ in range(args.warm_rounds):
            side_by_side(
                round_,
                (warm_http, partial(http_api.tell, "alpha", f"warm {round_}")),
                (warm_socket, partial(socket_api.tell, "alpha", f"warm {round_}")),
            )
        results["warm"] = (warm_http, warm_socket)
    print()
    print("ratios (medians):")
    missed = []
    labels = {
        "cold": "cold tell through irisd / bare cold claude turn (no MCP)",
        "ten cold": f"{PAIRS} cold tells at once / {PAIRS} bare cold turns at once",
        "warm": "warm tell over the HTTP API / over the Unix socket",
    }
    for key, (ours, base) in results.items():
        ratio = median(ours) / median(base)
        verdict = "ok" if ratio <= TARGETS[key] else "MISSED"
        if ratio > TARGETS[key]:
            missed.append(key)
        print(f"  {labels[key]:<62} {ratio:5.2f}x  (target {TARGETS[key]}x: {verdict})")
    print("absolute:")
    print(describe("cold: tell through irisd", cold_irisd))
    print(describe("cold: bare claude turn, no MCP", cold_bare))
    print(describe(f"{PAIRS} cold tells at once (wall)", ten_irisd))
    print(describe(f"{PAIRS} bare cold turns at once (wall)", ten_bare))
    print(describe("warm: tell over HTTP", warm_http))
    print(describe("warm: tell over the socket", warm_socket))
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
