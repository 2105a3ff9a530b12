"""The CPU (user + system) of the CLI's everyday commands, ``python -m iris_cli CMD`` against
a running irisd, this checkout vs another revision (``--baseline REV``: its files from
``git archive``, first on ``PYTHONPATH``), next to ``python -c pass``; one run of each side
per round, in a rotated order, so the machine's load hits all alike. CPU time moves less
with the load than wall time.

Target (leancli): each of these commands at most 80 ms of CPU, ``iris status`` and the plain
``iris tell TEAM MESSAGE`` (the hot paths since before) for scale; usage errors and
``--help`` go through Typer, and are shown too. The irisd is the real daemon with echo
children (``bench/sim_irisd.py``), so what is measured is the CLI.

CPU time on a shared 2-core machine moves by 10 to 20 % from run to run; ``--instructions``
also counts the instructions of one run of each side under callgrind (valgrind), which do
not move with the load.

Run: .venv/bin/python bench/bench_cli_commands.py [--baseline REV] [--rounds 15] [--instructions]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import SimIris, header, median, revision

TARGET = 0.080  # s of CPU per command
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("status",),
    ("tell", "alpha", "MESSAGE"),
    ("tell", "alpha", "MESSAGE", "--timeout", "-1"),
    ("result", "TELL"),
    ("report", "alpha"),
    ("approvals",),
    ("approvals", "--json"),
    ("questions",),
    ("sessions",),
    ("costs",),
    ("sleep", "alpha"),
    ("reload",),
    ("teams",),
    ("report",),  # a usage error: TEAM missing
    ("cache", "--help"),
)
TYPER_ONLY = {("report",), ("cache", "--help")}  # not a plain form: not held to the target


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Not from the checkout's folder: 'python -m' puts the working directory first on sys.path.
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions_of(argv: list[str], env: dict[str, str]) -> int:
    """The instructions ``argv`` ran, counted by callgrind."""
    ran = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    counted = re.search(r"Collected : (\d+)", ran.stderr)
    assert counted is not None, ran.stderr
    return int(counted.group(1))


def a_tell_id(iris: SimIris) -> str:
    from iris_cli.client import Client
    from protocol.messages import Tell, TellReply

    with Client(iris.socket) as client:
        reply = client.request(Tell(to_team="alpha", message="a question"))
    assert isinstance(reply, TellReply), reply
    return reply.tell.id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="0769880", help="the code to compare with (default: before leancli)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="also count instructions (callgrind)")
    args = parser.parse_args()
    header(f"CPU of python -m iris_cli CMD: this checkout vs {args.baseline}")
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        old_code = stack.enter_context(revision(args.baseline))
        root = Path(tempfile.mkdtemp(prefix="iris-bench-"))
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        iris = SimIris(root, model_url="http://127.0.0.1:9", claude="/bin/false")  # echo children: no claude
        stack.callback(shutil.rmtree, iris.socket.parent, ignore_errors=True)
        iris.add_team("alpha")
        iris.start()
        stack.callback(iris.stop, timeout=60)
        tell = a_tell_id(iris)
        env = {k: v for k, v in iris.env.items() if k != "PYTHONDONTWRITEBYTECODE"}  # .pyc allowed, as installed
        new_env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        old_env = {**env, "PYTHONPATH": str(old_code)}
        sides: dict[tuple[str, str], tuple[list[str], dict[str, str]]] = {
            ("python -c pass", ""): ([sys.executable, "-c", "pass"], env)}
        for command in COMMANDS:
            words = {"TELL": tell, "MESSAGE": "a question"}
            argv = [sys.executable, "-m", "iris_cli", *(words.get(word, word) for word in command)]
            sides[(" ".join(command), "new")] = (argv, new_env)
            sides[(" ".join(command), "old")] = (argv, old_env)
        for argv, side_env in sides.values():  # warm-up: .pyc files written
            cpu_of(argv, side_env)
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in sides}
        order = list(sides)
        for round_ in range(args.rounds):
            shift = round_ * 7 % len(order)
            for key in order[shift:] + order[:shift]:
                cpu[key].append(cpu_of(*sides[key]))
            print(".", end="", flush=True, file=sys.stderr)
        print(file=sys.stderr)
        counted = {key: instructions_of(*sides[key]) for key in sides} if args.instructions else {}
    loads.append(os.getloadavg()[0])
    base = median(cpu[("python -c pass", "")])
    print(f"median CPU of {args.rounds} runs each (python -c pass: {base * 1000:.0f} ms)")
    print(f"  {'command':<40} {'this':>8} {args.baseline:>10} {'this/old':>9}   target {TARGET * 1000:.0f} ms")
    missed = []
    for command in COMMANDS:
        label = " ".join(command)
        new, old = median(cpu[(label, "new")]), median(cpu[(label, "old")])
        verdict = "(Typer)" if command in TYPER_ONLY else ("met" if new <= TARGET else "MISSED")
        if verdict == "MISSED":
            missed.append(label)
        print(f"  {'iris ' + label:<40} {new * 1000:>6.0f} ms {old * 1000:>7.0f} ms {new / old:>8.2f}x   {verdict}")
    if counted:
        print(f"instructions (callgrind, one run each; python -c pass: {counted[('python -c pass', '')] / 1e6:.0f} M)")
        for command in COMMANDS:
            label = " ".join(command)
            new_count, old_count = counted[(label, "new")], counted[(label, "old")]
            print(f"  {'iris ' + label:<40} {new_count / 1e6:>6.0f} M {old_count / 1e6:>8.0f} M "
                  f"{new_count / old_count:>8.2f}x")
    print(f"load average (1 min) at the start and the end: {loads[0]:.1f}, {loads[1]:.1f}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
