"""irisd's CPU for a child's first nested tell through ``/mcp``, this checkout vs another
revision (``--baseline REV``, checked out into a scratch worktree and put first on
``PYTHONPATH``), each irisd with its own default settings (``preloadMcp`` as that side
defaults it).

Each round starts an isolated irisd per side (two teams, claude children on the scripted
model; the sides alternate, so the load hits both alike), tells ``alpha`` hello (its
claude child starts and asks ``/mcp`` what it serves), waits until irisd is quiet (a
preload done, if that side preloads) and reads irisd's CPU (user + system,
``/proc/PID/stat``); then ``alpha``'s child calls ``team_tell`` to ``beta`` (its first
tool call, the first nested tell: ``beta``'s child starts) and, once irisd is quiet again,
its CPU is read a second time. Printed: irisd's CPU to the first tell's end (start-up,
the hello, any preload), for the nested tell, and the whole, side by side with ratios.
``--no-preload``: both sides with ``preloadMcp: false`` (the older code then loads the SDK
at the first tool call: the nested tell pays it).

Run: .venv/bin/python bench/bench_mcp_first_call.py --baseline main [--rounds 4] [--no-preload]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from _common import cpu_seconds, header, median, ms, request, wait_quiet
from bench_warm_path import checkout

from harness import Iris, claude_binary
from protocol.messages import Tell, TellReply
from scripted_model import ScriptedModel

NESTED = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "beta", "message": "ping"})


def one_round(model_url: str, pythonpath: Path | None, preload: bool | None) -> tuple[float, float, bool]:
    """irisd's CPU seconds to the hello's end (quiet), for the nested tell, and whether it
    loaded the MCP SDK."""
    root = Path(tempfile.mkdtemp(prefix="iris-bench-mcp-call-"))
    iris = Iris(root, model_url=model_url, claude=claude_binary())
    iris.settings.pop("preloadMcp", None)  # each side's own default...
    if preload is not None:
        iris.settings["preloadMcp"] = preload  # ...unless told
    iris.env.pop("PYTHONDONTWRITEBYTECODE", None)  # .pyc files, as an installed Iris has
    if pythonpath is not None:
        iris.env["PYTHONPATH"] = str(pythonpath)
    try:
        for team in ("alpha", "beta"):
            iris.add_team(team)
        iris.start()
        assert iris.process is not None
        pid = iris.process.pid
        reply = request(iris, Tell(to_team="alpha", message="hello"))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply
        wait_quiet(pid)
        before = cpu_seconds(pid)
        reply = request(iris, Tell(to_team="alpha", message=NESTED))
        assert isinstance(reply, TellReply) and reply.status == "completed", reply
        assert reply.tell is not None and "echo #1: ping" in reply.tell.text, reply
        wait_quiet(pid)
        after = cpu_seconds(pid)
        return before, after - before, "MCP over HTTP ready" in iris.log()
    finally:
        if iris.process is not None:
            iris.stop(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with, e.g. main")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--no-preload", action="store_true", help="preloadMcp: false on both sides")
    args = parser.parse_args()
    settings = "preloadMcp: false" if args.no_preload else "default settings"
    header(f"irisd's CPU for a child's first nested tell through /mcp, this code vs {args.baseline} ({settings})")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    sides = ("this", args.baseline)
    to_hello: dict[str, list[float]] = {side: [] for side in sides}
    nested: dict[str, list[float]] = {side: [] for side in sides}
    loaded: dict[str, set[bool]] = {side: set() for side in sides}
    with ExitStack() as stack:
        old = stack.enter_context(checkout(args.baseline))
        model = stack.enter_context(ScriptedModel())
        for round_ in range(args.rounds):
            for side in sides if round_ % 2 == 0 else sides[::-1]:
                pythonpath = None if side == "this" else old
                hello, call, sdk = one_round(model.base_url, pythonpath, False if args.no_preload else None)
                to_hello[side].append(hello)
                nested[side].append(call)
                loaded[side].add(sdk)
                print(".", end="", flush=True, file=sys.stderr)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    print(f"irisd's CPU, medians of {args.rounds} rounds ({'this':>8} vs {args.baseline}):")
    rows = [("start + first tell (quiet)", to_hello), ("first nested tell (quiet)", nested)]
    whole = {side: [a + b for a, b in zip(to_hello[side], nested[side], strict=True)] for side in sides}
    rows.append(("both", whole))
    for label, values in rows:
        mine, theirs = median(values["this"]), median(values[args.baseline])
        print(f"  {label:<28} {ms(mine):>10} vs {ms(theirs):>10}   {mine / theirs:.2f}x")
    for side in sides:
        print(f"  {side}: the MCP SDK loaded in irisd: {sorted(loaded[side])}")


if __name__ == "__main__":
    main()
