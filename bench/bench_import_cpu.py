"""The CPU (user + system) of importing a module in a new interpreter, this checkout vs
another revision (``--baseline REV``, checked out into a scratch worktree and put first on
``PYTHONPATH``), next to ``python -c pass``; runs alternate, so the load hits all alike.
CPU time moves less with the machine's load than wall time.

Run: .venv/bin/python bench/bench_import_cpu.py --baseline HEAD~1 [--module protocol.codec] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile

from _common import header, median
from bench_warm_path import checkout


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Not from this checkout's folder: ``python -c`` puts the working directory first on
    # sys.path, ahead of PYTHONPATH, and the baseline's side would import this checkout.
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--module", default="protocol.codec")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    header(f"CPU of importing {args.module}: this checkout vs {args.baseline}")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    with checkout(args.baseline) as old_code:
        sides = {
            "pass": ([sys.executable, "-c", "pass"], env),
            "new": ([sys.executable, "-c", f"import {args.module}"], env),
            "old": ([sys.executable, "-c", f"import {args.module}"], env | {"PYTHONPATH": str(old_code)}),
        }
        for argv, side_env in sides.values():  # warm-up: .pyc files written
            cpu_of(argv, side_env)
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for run in range(args.runs):
            order = list(sides)
            for name in order[run % 3:] + order[: run % 3]:
                cpu[name].append(cpu_of(*sides[name]))
    base = median(cpu["pass"])
    print(f"load average: {os.getloadavg()[0]:.1f}")
    for name in ("new", "old"):
        own = median(cpu[name]) - base
        print(f"  {name}: {median(cpu[name]) * 1000:.1f} ms CPU, {own * 1000:.1f} ms over python -c pass")
    print(f"  new / old, over python -c pass: {(median(cpu['new']) - base) / (median(cpu['old']) - base):.2f}x")


if __name__ == "__main__":
    main()
