"""How long an ``iris`` command takes, next to ``python -c pass`` of the same
interpreter: the start-up cost of every command (target: ``iris status`` against a
running irisd at most 8x).

Rounds are interleaved (pass, --version, status, status --json, pass, ...), so a busier
moment of the machine hits every side alike. Byte-compiled files are allowed (the
machine's PYTHONDONTWRITEBYTECODE is unset for the runs), as on a user's machine,
after one warm-up run of each.

The target is measured against a normal install, as a user has it: the bench builds a
wheel of this checkout into a scratch virtualenv and times that one's ``python -c pass``
and ``iris status`` (an editable install adds an import hook to every start of the
interpreter, ``python -c pass`` included, which would flatter the ratio).

``IRIS_BENCH_BASELINE=/path/to/another/checkout`` adds that checkout's ``iris status``
(the same interpreter and packages, its own code first on ``PYTHONPATH``) to compare
with, e.g. ``git worktree add /tmp/before <commit>``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO, describe, header, median, normal_install, running_iris, timed

ROUNDS = 30
TARGET = 8.0


def uncompiled(checkout: Path, *args: str) -> list[str]:
    """``iris ARGS`` run from a copy of ``checkout``'s packages that has no byte-compiled
    files and never gets any."""
    copy = Path(tempfile.mkdtemp(prefix="iris-bench-src-"))
    for package in ("protocol", "iris_common", "iris_mcp", "irisd", "iris_cli"):
        shutil.copytree(checkout / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    env = ["env", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPATH={copy}"]
    return [*env, sys.executable, "-m", "iris_cli", *args]


def main() -> int:
    header("iris start-up vs python -c pass")
    bin_dir = Path(sys.executable).parent
    iris = str(bin_dir / "iris")
    installed = normal_install()
    with running_iris(["alpha"]) as instance:
        env = {k: v for k, v in instance.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        runs: dict[str, list[str]] = {
            "python -c pass": [str(installed / "python"), "-c", "pass"],
            "iris status (irisd running)": [str(installed / "iris"), "status"],
            "iris --version": [str(installed / "iris"), "--version"],
            "iris status --json": [str(installed / "iris"), "status", "--json"],
            "python -c pass (editable checkout)": [sys.executable, "-c", "pass"],
            "iris status (editable checkout)": [iris, "status"],
            "iris tell --help": [str(installed / "iris"), "tell", "--help"],
            # A fresh clone on a machine whose shell sets PYTHONDONTWRITEBYTECODE=1 (this
            # one does): Iris's own modules (an editable install) are compiled from source
            # at every start, the installed packages' are not.
            "iris status, no .pyc": uncompiled(REPO, "status"),
        }
        baseline = os.environ.get("IRIS_BENCH_BASELINE")
        if baseline:
            old = ["env", f"PYTHONPATH={baseline}", sys.executable, "-m", "iris_cli", "status"]
            runs["iris status (baseline checkout)"] = old
            runs["iris status (baseline), no .pyc"] = uncompiled(Path(baseline), "status")
            runs["iris --version (baseline)"] = [*old[:-1], "--version"]

        def run(argv: list[str]) -> None:
            # cwd "/": 'python -m' puts the working folder first on sys.path, before PYTHONPATH
            subprocess.run(
                argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
            )

        for argv in runs.values():
            run(argv)  # warm-up: the byte-compiled files are written now
        samples: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(ROUNDS):
            for label, argv in runs.items():
                samples[label].append(timed(run, argv))
    base = median(samples["python -c pass"])
    print("ratios (medians) to python -c pass:")
    for label, values in samples.items():
        print(f"  {label:<34} {median(values) / base:5.1f}x")
    print("absolute:")
    for label, values in samples.items():
        print(describe(label, values))
    ratio = median(samples["iris status (irisd running)"]) / base
    print(f"target: iris status at most {TARGET:g}x python -c pass: {'met' if ratio <= TARGET else 'MISSED'}")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
