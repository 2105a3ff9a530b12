"""Benchmark 18c: what a spare's first turn does that a later turn does not, measured.

The bare claude a spare runs (as ``bench_spare_warm_ups.py``: stream-json, the child's
settings and system prompt, no Iris MCP server), warmed up as irisd warms a spare (the
context usage), then three turns, each once claude is quiet. For each turn:

* the requests claude sent the API during it (by path: a Messages request is a model
  request; anything else, a title, a quota check or ``count_tokens``, would show here);
* claude's CPU, split by thread: its main (JavaScript) thread, the JavaScriptCore
  compiler threads (``JITWorker``: the code claude runs often gets compiled there) and
  the rest (the HTTP client, the heap's helpers, the allocator);
* the minor page faults it took (memory it touched for the first time, or again after
  the allocator gave it back): 4 KiB each, zeroed by the kernel;
* with ``--phases``, where in the turn the time goes, from claude's own debug log
  (``--debug-file``; the logging costs a little, alike in every turn): from the input to
  the turn's start (reading the input, the prompt's attachments, the plugins'
  ``prompt.submit`` hooks), from there to the API request (the request built), to the
  first chunk of the answer (the request sent; the scripted model answers at once), to
  the turn's end, and to its ``result`` line read here.

With ``--also NAME``, each round also runs a claude started otherwise, side by side:
``traffic``, its nonessential traffic on (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` empty,
as a user's claude runs unless they set it; the tests and the other benchmarks set it);
``keep-freed``, its allocator keeping the memory it freed (``MIMALLOC_PURGE_DELAY=-1``;
by default it gives it back to the system, and a turn then faults it in again).

Run: .venv/bin/python bench/bench_spare_first_turn.py [--rounds N] [--phases] [--also traffic|keep-freed]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from _common import header, median, wait_quiet
from bench_spare_warm_ups import Claude, started

from scripted_model import ScriptedModel

TURNS = ("first", "second", "third")
PHASES = {  # a phase ends at the first line of claude's debug log holding this text, after the last
    "input to the turn's start": "[engine] turn {n} start",
    "to the API request": "[API REQUEST]",
    "to the answer's first chunk": "Stream started",
    "to the turn's end": "[engine] turn {n} end",
}


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds each group of claude's threads has used: main, JITWorker, other (a
    thread that ended meanwhile is not counted)."""
    used = dict.fromkeys(("main", "JITWorker", "other"), 0.0)
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            name = (task / "comm").read_text().strip()
            group = "main" if task.name == str(pid) else "JITWorker" if name == "JITWorker" else "other"
            used[group] += int((task / "schedstat").read_text().split()[0]) / 1e9
    return used


def minor_faults(pid: int) -> int:
    """The minor page faults of the whole process so far (its ended threads' too)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


@dataclass
class Turn:
    wall: list[float] = field(default_factory=list)
    cpu: dict[str, list[float]] = field(default_factory=lambda: {"main": [], "JITWorker": [], "other": []})
    faults: list[float] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)
    phases: dict[str, list[float]] = field(default_factory=dict)

    def total_cpu(self) -> float:
        return median([sum(parts) for parts in zip(*self.cpu.values(), strict=True)])


def phases(log: Path, since: float, n: int, ended: float) -> dict[str, float]:
    """The turn's phases (seconds) from claude's debug log: its lines after ``since``
    (the wall clock when the turn was sent), up to ``ended`` (its result read here)."""
    stamps = []
    for line in log.read_text().splitlines():
        stamp, _, text = line.partition(" ")
        with contextlib.suppress(ValueError):
            at = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            if at >= since - 0.001:
                stamps.append((at, text))
    found, at = {}, since
    for phase, marker in PHASES.items():
        wanted = marker.format(n=n)
        at_marker = next((t for t, text in stamps if t >= at and wanted in text), None)
        if at_marker is None:
            return {}
        found[phase], at = at_marker - at, at_marker
    found["to the result line read here"] = ended - at
    return found


def measure(model: ScriptedModel, turns: dict[str, Turn], round_: int, *, debug: bool, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "debug.log"
        with started(model, env=env, argv=["--debug-file", str(log)] if debug else []) as claude:
            times = run_turns(model, claude, turns, round_)
        if debug:  # read once claude has exited: it writes its log behind
            for n, (name, sent_at, ended_at) in enumerate(times, start=1):
                for phase, seconds in phases(log, sent_at, n, ended_at).items():
                    turns[name].phases.setdefault(phase, []).append(seconds)


def run_turns(
    model: ScriptedModel, claude: Claude, turns: dict[str, Turn], round_: int
) -> list[tuple[str, float, float]]:
    """The warm-up irisd gives a spare, then the turns, each once claude is quiet; when each
    was sent and its result read (the wall clock, as claude's log has it)."""
    claude.context_usage()  # the warm-up irisd gives a spare
    time.sleep(1)
    pid = claude.process.pid
    times = []
    for name in TURNS:
        wait_quiet(pid)
        turn = turns[name]
        asked, cpu, faults = len(model.posts), thread_cpu(pid), minor_faults(pid)
        sent_at, started_at = time.time(), time.monotonic()
        claude.turn(f"{name} turn {round_}")
        turn.wall.append(time.monotonic() - started_at)
        times.append((name, sent_at, time.time()))
        used = thread_cpu(pid)
        for group in turn.cpu:
            turn.cpu[group].append(used[group] - cpu[group])
        turn.faults.append(minor_faults(pid) - faults)
        turn.requests.update(path for path, _ in model.posts[asked:])
    return times


CONFIGURATIONS = {  # name: (what it is, claude's environment beside the bench's)
    "default": ("as the tests start claude", {}),
    "traffic": ("nonessential traffic on, a user's default", {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": ""}),
    "keep-freed": ("the allocator keeping what it freed", {"MIMALLOC_PURGE_DELAY": "-1"}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--phases", action="store_true", help="also claude's phases of each turn (its debug log on)")
    parser.add_argument("--also", action="append", default=[], choices=list(CONFIGURATIONS)[1:],
                        help="also a claude started so, side by side")
    args = parser.parse_args()
    header("18c. what a spare's first turn does that a later turn does not")
    names = ["default", *args.also]
    figures = {name: {turn: Turn() for turn in TURNS} for name in names}
    with ScriptedModel() as model:
        for round_ in range(args.rounds):
            for name in names if round_ % 2 == 0 else names[::-1]:
                measure(model, figures[name], round_, debug=args.phases, env=CONFIGURATIONS[name][1])
            print(".", end="", flush=True)
    print()
    for name in names:
        report(name, figures[name], phased=args.phases)


def report(name: str, turns: dict[str, Turn], *, phased: bool) -> None:
    first = turns["first"]
    print(f"{name} ({CONFIGURATIONS[name][0]}): the first turn over the second, and over the third (medians):")
    for later_name in TURNS[1:]:
        later = turns[later_name]
        print(f"  wall {median(first.wall) / median(later.wall):5.2f}x   claude's CPU "
              f"{first.total_cpu() / later.total_cpu():5.2f}x   (over the {later_name} turn)")
    print("  per turn (medians; CPU in ms; requests: all rounds' together, by path):")
    print(f"  {'turn':<8}{'wall':>8}{'CPU':>8}{'main':>8}{'JIT':>8}{'other':>8}{'faults':>9}   requests")
    for turn_name, turn in turns.items():
        cpu = {group: median(values) * 1000 for group, values in turn.cpu.items()}
        print(f"  {turn_name:<8}{median(turn.wall) * 1000:>8.1f}{turn.total_cpu() * 1000:>8.1f}{cpu['main']:>8.1f}"
              f"{cpu['JITWorker']:>8.1f}{cpu['other']:>8.1f}{median(turn.faults):>9.0f}   "
              f"{dict(turn.requests)} in {len(turn.wall)} turns")
    if phased:
        print("  where the time goes, from claude's debug log (ms, medians; the log on):")
        print(f"  {'phase':<32}" + "".join(f"{turn_name:>10}" for turn_name in TURNS))
        for phase in [*PHASES, "to the result line read here"]:
            print(f"  {phase:<32}" + "".join(
                f"{median(turns[turn_name].phases.get(phase, [float('nan')])) * 1000:>10.1f}" for turn_name in TURNS))


if __name__ == "__main__":
    main()
