"""How long an ``iris`` command takes, next to ``python -c pass`` of the same interpreter,
for this checkout and (``--baseline REV``) the code of another revision, interleaved.

Targets (issue 30): ``iris status`` against a running irisd at most 4x ``python -c pass``,
and the CLI's own cost of ``iris tell TEAM MESSAGE`` at most +40 ms: ``iris tell`` less the
same tell sent by a protocol client (a warm Python process: connect, hello, the tell with
its events, the reply). That cost still holds the interpreter's own start-up; the second
reading takes ``python -c pass`` off it too (what Iris's code costs).

The irisd is the real daemon with echo children (``bench/sim_irisd.py``): a tell is answered
at once, so what is measured is the CLI, not a model or claude.

Each side is a normal install, as a user has it: a wheel in a scratch virtualenv (an
editable install adds an import hook to every start of the interpreter, ``python -c pass``
included, which would flatter the ratio); the editable checkout's figures are printed too, and
``iris tell`` from the checkout on ``sys.path`` as a plain path, the way ``scripts/install``
installs it (setuptools' compat editable mode; here the scratch virtualenv's ``iris`` with
the checkout first on ``PYTHONPATH``).
Rounds are interleaved, each in a rotated order, so a busier moment of the machine hits
every side alike. Byte-compiled files are allowed (PYTHONDONTWRITEBYTECODE unset for the
runs), after one warm-up run of each; the "no .pyc" rows run a copy of the sources that
never gets any.

Run: .venv/bin/python bench/bench_cli_startup.py [--baseline REV] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import REPO, SimIris, describe, header, median, ms, normal_install, revision, timed

from iris_cli.client import Client
from protocol.messages import Tell, TellReply

STATUS_TARGET = 4.0  # x python -c pass
TELL_TARGET = 0.040  # s: the CLI's own cost of a tell, over a protocol client
PACKAGES = ("protocol", "iris_common", "iris_mcp", "irisd", "iris_cli")
CHECKOUT_TELL = "iris tell alpha MESSAGE (checkout on the path)"
COMMANDS = ("iris status", "iris status --json", "iris --version", "iris tell alpha MESSAGE", "iris tell --help")


def uncompiled(checkout: Path, python: str, stack: contextlib.ExitStack, *args: str) -> list[str]:
    """``iris ARGS`` run from a copy of ``checkout``'s packages that has no byte-compiled
    files and never gets any (a fresh clone on a machine that sets PYTHONDONTWRITEBYTECODE)."""
    copy = Path(tempfile.mkdtemp(prefix="iris-bench-src-"))
    stack.callback(shutil.rmtree, copy, ignore_errors=True)
    for package in PACKAGES:
        shutil.copytree(checkout / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return ["env", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPATH={copy}", python, "-m", "iris_cli", *args]


def commands(label: str, bin_dir: Path) -> dict[str, list[str]]:
    iris = str(bin_dir / "iris")
    return {
        f"iris status{label}": [iris, "status"],
        f"iris status --json{label}": [iris, "status", "--json"],
        f"iris --version{label}": [iris, "--version"],
        f"iris tell alpha MESSAGE{label}": [iris, "tell", "alpha", "a question"],
        f"iris tell --help{label}": [iris, "tell", "--help"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--baseline", help="also the code of this git revision, e.g. HEAD~3")
    args = parser.parse_args()
    header("iris start-up vs python -c pass" + (f": this checkout vs {args.baseline}" if args.baseline else ""))
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        installed = normal_install()
        old_code = stack.enter_context(revision(args.baseline)) if args.baseline else None
        old_installed = normal_install(old_code) if old_code else None
        for bin_dir in (installed, old_installed):  # the scratch virtualenvs (venv/bin's grandparent)
            if bin_dir is not None:
                stack.callback(shutil.rmtree, bin_dir.parent.parent, ignore_errors=True)
        root = Path(tempfile.mkdtemp(prefix="iris-bench-"))
        iris = SimIris(root, model_url="http://127.0.0.1:9", claude="/bin/false")  # echo children: no claude
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        stack.callback(shutil.rmtree, iris.socket.parent, ignore_errors=True)
        iris.add_team("alpha")
        iris.start()
        stack.callback(iris.stop, timeout=60)
        env = {k: v for k, v in iris.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        pass_argv = [str(installed / "python"), "-c", "pass"]
        runs: dict[str, list[str]] = {"python -c pass": pass_argv, **commands("", installed)}
        if old_installed is not None:
            runs.update(commands(" (baseline)", old_installed))
        editable = Path(sys.executable).parent
        runs["python -c pass (editable checkout)"] = [sys.executable, "-c", "pass"]
        runs["iris status (editable checkout)"] = [str(editable / "iris"), "status"]
        if old_code is not None:  # the same interpreter, the baseline's code first on the path
            runs["iris status (editable, baseline)"] = [
                "env", f"PYTHONPATH={old_code}", str(editable / "iris"), "status"]
        runs[CHECKOUT_TELL] = ["env", f"PYTHONPATH={REPO}", str(installed / "iris"), "tell", "alpha", "a question"]
        if old_code is not None and old_installed is not None:
            runs[CHECKOUT_TELL + " (baseline)"] = [
                "env", f"PYTHONPATH={old_code}", str(old_installed / "iris"), "tell", "alpha", "a question"]
        runs["iris status, no .pyc"] = uncompiled(REPO, sys.executable, stack, "status")
        if old_code is not None:
            runs["iris status, no .pyc (baseline)"] = uncompiled(old_code, sys.executable, stack, "status")

        def run(argv: list[str]) -> None:
            # cwd "/": 'python -m' puts the working folder first on sys.path, before PYTHONPATH
            subprocess.run(argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

        def protocol_tell() -> None:
            """The tell ``iris tell`` sends, from a warm process: connect, hello, request, events, reply."""
            with Client(iris.socket) as client:
                reply = client.request(Tell(to_team="alpha", message="a question", stream=True), lambda _: None)
            assert isinstance(reply, TellReply) and reply.status == "completed", reply

        sides: dict[str, Callable[[], None]] = {label: functools.partial(run, argv) for label, argv in runs.items()}
        sides["tell from a protocol client"] = protocol_tell
        for action in sides.values():
            action()  # warm-up: byte-compiled files written, the pair's first tell (a new conversation) done
        samples: dict[str, list[float]] = {label: [] for label in sides}
        order = list(sides)
        for round_ in range(args.rounds):
            shift = round_ % len(order)
            for label in order[shift:] + order[:shift]:
                samples[label].append(timed(sides[label]))
            print(".", end="", flush=True, file=sys.stderr)
        print(file=sys.stderr)
    loads.append(os.getloadavg()[0])
    m = {label: median(values) for label, values in samples.items()}
    base = m["python -c pass"]
    client = m["tell from a protocol client"]
    old = " (baseline)" if args.baseline else None

    def pair(this: str, before: str | None, show: Callable[[float], str]) -> str:
        shown = show(m[this])
        return f"{shown:>9}   {show(m[before]) if before and before in m else '':>9}"

    print(f"ratios (medians) to python -c pass{'' if not old else ':   this     ' + args.baseline}")
    for command in COMMANDS:
        print(f"  {command:<34} {pair(command, command + old if old else None, lambda v: f'{v / base:.2f}x')}")
    editable_base = m["python -c pass (editable checkout)"]
    print(f"  {'iris status, editable checkout':<34} "
          f"{m['iris status (editable checkout)'] / editable_base:>8.2f}x   "
          + (f"{m['iris status (editable, baseline)'] / editable_base:>8.2f}x" if old else ""))
    print("the CLI's own cost of a tell (iris tell - the same tell from a protocol client):")

    def cost(label: str, less_pass: bool) -> str:
        value = m[label] - client - (base if less_pass else 0.0)
        return f"{'+' if value >= 0 else ''}{ms(value)}"

    tell, old_tell = "iris tell alpha MESSAGE", ("iris tell alpha MESSAGE" + old if old else None)
    print(f"  {'over a protocol client':<34} {cost(tell, False):>9}   {cost(old_tell, False) if old_tell else '':>9}")
    print(f"  {'and over python -c pass':<34} {cost(tell, True):>9}   {cost(old_tell, True) if old_tell else '':>9}")
    old_checkout = CHECKOUT_TELL + " (baseline)" if old else None
    print(f"  {'the checkout on the path, over pass':<34} {cost(CHECKOUT_TELL, True):>9}   "
          f"{cost(old_checkout, True) if old_checkout else '':>9}")
    print("absolute:")
    for label, values in samples.items():
        print(describe(label, values))
    status_ratio = m["iris status"] / base
    tell_cost = m[tell] - client
    print(f"target: iris status at most {STATUS_TARGET:g}x python -c pass: {status_ratio:.2f}x "
          f"{'met' if status_ratio <= STATUS_TARGET else 'MISSED'}")
    print(f"target: iris tell's own cost at most +{ms(TELL_TARGET)} over a protocol client: +{ms(tell_cost)} "
          f"{'met' if tell_cost <= TELL_TARGET else 'MISSED'} (+{ms(tell_cost - base)} over python -c pass too)")
    print(f"load average (1 min) at the start and the end: {loads[0]:.1f}, {loads[1]:.1f}")
    return 0 if status_ratio <= STATUS_TARGET and tell_cost <= TELL_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
