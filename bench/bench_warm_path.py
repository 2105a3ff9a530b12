"""The warm path, code against code: the same warm tells through irisd built from this
checkout and through irisd built from another revision (``--baseline REV``, checked out
into a scratch git worktree), side by side in one run, round by round, each side first in
turn; and a turn written straight to a warm claude, for the floor.

Wall time on a shared 2-core machine moves with the load; irisd's own CPU per tell (from
``/proc/PID/stat``, user + system) does not, so it is the figure to compare code by.

Also what each side stored per tell: transcript lines and bytes (read from its database
after the run; claude prints about ten lines a warm turn, a 4.5 KB ``init`` line and token
deltas among them).

Run: .venv/bin/python bench/bench_warm_path.py --baseline HEAD~3 [--rounds 40]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _common import REPO, describe, header, median, ms, request, running_iris, timed
from bench_daemon_overhead import DirectClaude

from harness import Iris
from protocol.messages import Tell, TellReply

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@contextlib.contextmanager
def checkout(revision: str) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="iris-bench-rev-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(folder), revision], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False)


def stored_per_tell(iris: Iris) -> tuple[float, float]:
    """Transcript lines and bytes per tell in ``iris``'s database (lines many to a row since
    schema 14, a row each before)."""
    with contextlib.closing(sqlite3.connect(f"file:{iris.home / 'data' / 'iris.db'}?mode=ro", uri=True)) as db:
        (told,) = db.execute("SELECT count(*) FROM tells").fetchone()
        (schema,) = db.execute("PRAGMA user_version").fetchone()
        query = ("SELECT coalesce(sum(count), 0), coalesce(sum(length(lines)), 0) FROM tell_lines" if schema >= 14
                 else "SELECT count(*), coalesce(sum(length(raw)), 0) FROM tell_messages")
        lines, size = db.execute(query).fetchone()
    return lines / max(told, 1), size / max(told, 1)


def tell(iris: Iris, text: str) -> None:
    reply = request(iris, Tell(to_team="alpha", message=text))
    assert isinstance(reply, TellReply) and reply.status == "completed", reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with, e.g. HEAD~3")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    header(f"warm path: this checkout vs {args.baseline}, and a direct warm turn")
    with checkout(args.baseline) as old_code, running_iris(["alpha"], start=False) as old, \
            running_iris(["alpha"]) as new:
        old.env["PYTHONPATH"] = str(old_code)  # ahead of the editable install of this checkout
        old.settings.pop("preloadMcp", None)  # a setting the older code may not know
        old.start()
        assert old.process is not None and new.process is not None
        claude = DirectClaude(new.claude, str(new.teams_dir / "alpha"), new.env)
        try:
            claude.turn("warm up")
            for started in (old, new):
                tell(started, "warm up")
                tell(started, "warm up again")
            walls: dict[str, list[float]] = {"direct": [], "old": [], "new": []}
            cpu = {"old": 0.0, "new": 0.0}
            sides: list[tuple[str, Iris | None]] = [("direct", None), ("old", old), ("new", new)]
            for round_ in range(args.rounds):
                shift = round_ % len(sides)
                for name, iris in sides[shift:] + sides[:shift]:
                    text = f"question {round_}"
                    if iris is None:
                        walls[name].append(timed(claude.turn, text))
                        continue
                    assert iris.process is not None
                    before = cpu_seconds(iris.process.pid)
                    walls[name].append(timed(tell, iris, text))
                    cpu[name] += cpu_seconds(iris.process.pid) - before
                print(".", end="", flush=True, file=sys.stderr)
            stored = {"old": stored_per_tell(old), "new": stored_per_tell(new)}
        finally:
            claude.close()
    print()
    print("transcript stored per tell (lines, bytes):")
    for name in ("old", "new"):
        print(f"  {name}: {stored[name][0]:.1f} lines, {stored[name][1] / 1024:.1f} KiB")
    print(f"  new / old bytes: {stored['new'][1] / stored['old'][1]:.2f}x" if stored["old"][1] else "")
    base = median(walls["direct"])
    print("irisd's own CPU per warm tell (user + system; the figure to compare code by):")
    for name in ("old", "new"):
        print(f"  {name} ({args.baseline if name == 'old' else 'this checkout'}): {ms(cpu[name] / args.rounds)}")
    print(f"  new / old: {cpu['new'] / cpu['old']:.2f}x" if cpu["old"] else "  old: no CPU measured")
    print("wall, median tell / median direct turn:")
    for name in ("old", "new"):
        extra = median(walls[name]) - base
        print(f"  {name}: {median(walls[name]) / base:5.2f}x  ({'+' if extra >= 0 else ''}{ms(extra)})")
    print("absolute:")
    print(describe("direct: turn on a warm claude", walls["direct"]))
    print(describe(f"irisd at {args.baseline}", walls["old"]))
    print(describe("irisd, this checkout", walls["new"]))


if __name__ == "__main__":
    main()
