"""irisd's start-up, process start to the socket answering: this checkout vs another
revision (``--baseline REV``, checked out into a scratch worktree and put first on
``PYTHONPATH``), with the test harness's isolated config (one team, ``preloadMcp: false``,
the HTTP face on a free port).

Each run starts irisd and polls its socket; the moment a client's hello is answered it
reads irisd's CPU (user + system, ``/proc/PID/stat``) and the wall time since the start;
then it asks ``GET /health`` of the HTTP face and reads irisd's CPU again (what an irisd
that a child, a browser or an HTTP client talks to has spent by then: code that loads the
face when it is first needed pays for it there), and stops it. Runs alternate between
the two sides, for a fresh ``IRIS_HOME`` each time (a first start: the database is made;
what every test does) and a restart on the same home (what a user's restart, ``iris``
auto-start or systemd pays), so the load hits all alike. Both sides run with ``.pyc``
files (written by a warm-up start), as an installed Iris does (``scripts/install``
compiles it).

Run: .venv/bin/python bench/bench_irisd_start.py --baseline HEAD~3 [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import cpu_seconds, header, median, ms, percentile
from bench_warm_path import checkout

from harness import Iris, claude_binary
from iris_cli.client import Client
from protocol.errors import DaemonNotRunningError

POLL_S = 0.002  # between connection attempts: short, and a sleep, so the poll takes little CPU


class Side:
    """One revision's irisd: a fresh home per first start, one kept home for restarts."""

    def __init__(self, name: str, pythonpath: Path | None) -> None:
        self.name = name
        self.pythonpath = pythonpath
        self.kept = self._iris()

    def _iris(self) -> Iris:
        iris = Iris(Path(tempfile.mkdtemp(prefix=f"iris-bench-start-{self.name}-")),
                    model_url="http://127.0.0.1:9", claude=claude_binary())
        iris.env.pop("PYTHONDONTWRITEBYTECODE", None)  # .pyc files, as an installed Iris has
        if self.pythonpath is not None:
            iris.env["PYTHONPATH"] = str(self.pythonpath)  # ahead of this checkout's editable install
        iris.add_team("alpha")
        return iris

    def start(self, *, fresh: bool) -> tuple[float, float, float]:
        """CPU and wall seconds from process start to the socket's answer, and CPU seconds
        once the HTTP face has answered too."""
        iris = self._iris() if fresh else self.kept
        try:
            return start_to_ready(iris)
        finally:
            if fresh:
                remove(iris)

    def close(self) -> None:
        remove(self.kept)


def start_to_ready(iris: Iris) -> tuple[float, float, float]:
    iris.write_config()
    with iris.log_path.open("ab") as log:
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "irisd.main", "--log-level", "debug"], env=iris.env,
                                   stdout=subprocess.DEVNULL, stderr=log, cwd=iris.root)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise SystemExit(f"irisd exited with {process.returncode}: {iris.log_path.read_text()[-2000:]}")
            try:
                with Client(iris.socket, timeout=5) as client:
                    client.connect()
                break
            except DaemonNotRunningError:
                if time.monotonic() > deadline:
                    raise SystemExit("irisd not ready after 120 s") from None
                time.sleep(POLL_S)
        wall = time.perf_counter() - started
        cpu = cpu_seconds(process.pid)
        with urllib.request.urlopen(f"{iris.http_url}/health", timeout=60) as answer:
            assert answer.status == 200
        with_http = cpu_seconds(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return cpu, wall, with_http


def remove(iris: Iris) -> None:
    shutil.rmtree(iris.root, ignore_errors=True)
    shutil.rmtree(iris.socket.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the git revision to compare with, e.g. HEAD~3")
    parser.add_argument("--runs", type=int, default=20, help="starts of each kind on each side")
    args = parser.parse_args()
    header(f"irisd start-up, process start to ready: this checkout vs {args.baseline}")
    with checkout(args.baseline) as old_code:
        sides = [Side("new", None), Side("old", old_code)]
        try:
            for side in sides:  # warm-up: .pyc files written, the kept homes' databases made
                side.start(fresh=False)
            load = [os.getloadavg()[0]]
            results: dict[tuple[str, bool], list[tuple[float, float, float]]] = {
                (side.name, fresh): [] for side in sides for fresh in (True, False)
            }
            for run in range(args.runs):
                for fresh in (True, False):
                    for side in sides if run % 2 == 0 else sides[::-1]:
                        results[side.name, fresh].append(side.start(fresh=fresh))
                print(".", end="", flush=True, file=sys.stderr)
            load.append(os.getloadavg()[0])
        finally:
            for side in sides:
                side.close()
    print(f"\nload average {load[0]:.1f} at the start, {load[1]:.1f} at the end; medians of {args.runs} starts each")
    for fresh in (True, False):
        kind = "first start (a fresh home)" if fresh else "restart (the same home)"
        new, old = results["new", fresh], results["old", fresh]
        cpu_ratio = median([c for c, _, _ in new]) / median([c for c, _, _ in old])
        wall_ratio = median([w for _, w, _ in new]) / median([w for _, w, _ in old])
        http_ratio = median([h for _, _, h in new]) / median([h for _, _, h in old])
        print(f"  {kind:<28} CPU to ready new/old {cpu_ratio:.2f}x   wall to ready {wall_ratio:.2f}x"
              f"   CPU once the HTTP face answered too {http_ratio:.2f}x")
    print("absolute:")
    for (name, fresh), samples in results.items():
        kind = "fresh" if fresh else "restart"
        cpu, wall, http = [c for c, _, _ in samples], [w for _, w, _ in samples], [h for _, _, h in samples]
        print(f"  {name} {kind:<8} CPU {ms(median(cpu)):>9} (p90 {ms(percentile(cpu, 90)):>9}, min {ms(min(cpu)):>9})"
              f"   wall {ms(median(wall)):>9} (p90 {ms(percentile(wall, 90)):>9}, min {ms(min(wall)):>9})"
              f"   CPU with the HTTP face {ms(median(http)):>9}")


if __name__ == "__main__":
    main()
