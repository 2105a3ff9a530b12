"""Shared by the benchmarks: an isolated Iris with the real claude and the scripted
model (the test harness's), figures, and the machine they were measured on.

Every benchmark measures the things it compares side by side in one run, interleaved
round by round, so a busier moment of the machine hits both sides alike; it prints
ratios first, then the absolute numbers for context.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from harness import Iris, claude_binary  # noqa: E402
from iris_cli.client import Client  # noqa: E402
from protocol.messages import (  # noqa: E402
    Event,
    GetStatus,
    ReadTranscript,
    StatusReply,
    TranscriptEntry,
    TranscriptPage,
    TranscriptReply,
)
from protocol.transcript import entries  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402

T = TypeVar("T")


class Rotation(Generic[T]):
    """The order of the sides in each round: blocks of rounds that run every
    ordering once, each block shuffled (``seed``: the same orders run after run)."""

    def __init__(self, sides: list[T], *, seed: int) -> None:
        self.orders = [list(order) for order in itertools.permutations(sides)]
        self.random = random.Random(seed)
        self.block: list[list[T]] = []

    def permutation(self, round_: int) -> list[T]:
        if round_ % len(self.orders) == 0:
            self.block = self.random.sample(self.orders, len(self.orders))
        return self.block[round_ % len(self.orders)]


@contextlib.contextmanager
def running_iris(teams: list[str], *, start: bool = True, **settings: Any) -> Iterator[Iris]:
    """A started, isolated Iris (own IRIS_HOME, socket, CLAUDE_CONFIG_DIR) with ``teams``."""
    root = Path(tempfile.mkdtemp(prefix="iris-bench-"))
    with ScriptedModel() as model:
        iris = Iris(root, model_url=model.base_url, claude=claude_binary())
        try:
            iris.settings.update(settings)
            for team in teams:
                iris.add_team(team)
            if start:
                iris.start()
            yield iris
        finally:
            if iris.process is not None:
                iris.stop(timeout=60)
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(iris.socket.parent, ignore_errors=True)


class SimIris(Iris):
    """An isolated irisd whose claude children are echoes in its own process
    (``bench/sim_irisd.py``): the real daemon, at a pair's cost instead of a claude's."""

    log_level = "warning"
    script = REPO / "bench" / "sim_irisd.py"

    def start(self, *, wait: bool = True) -> subprocess.Popen[bytes]:
        self.write_config()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(self.script), "--log-level", self.log_level],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log, cwd=self.root,
            )
        if wait:
            self.wait_ready(timeout=120)
        return self.process


def normal_install(source: Path = REPO) -> Path:
    """A scratch virtualenv with ``source`` (this checkout) installed from a wheel (no
    editable hook); its ``bin`` folder. Dependencies come from pip's cache when they can."""
    scratch = Path(tempfile.mkdtemp(prefix="iris-bench-venv-"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(scratch / "wheel"),
                    str(source)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "venv", str(scratch / "venv")], check=True)
    wheel = next((scratch / "wheel").glob("*.whl"))
    subprocess.run([str(scratch / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                   check=True, capture_output=True)
    return scratch / "venv" / "bin"


@contextlib.contextmanager
def revision(rev: str) -> Iterator[Path]:
    """The files of ``rev`` in a scratch folder (``git archive``: no worktree to clean up)."""
    folder = Path(tempfile.mkdtemp(prefix="iris-bench-rev-"))
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def timed(action: Callable[..., object], *args: Any) -> float:
    """Seconds ``action(*args)`` took."""
    started = time.perf_counter()
    action(*args)
    return time.perf_counter() - started


def request(iris: Iris, message: Any, timeout: float = 300) -> Any:
    with Client(iris.socket, timeout=timeout) as client:
        return client.request(message)


def status(iris: Iris) -> StatusReply:
    reply = request(iris, GetStatus())
    assert isinstance(reply, StatusReply)
    return reply


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, in KiB, from /proc."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def read_transcript(iris: Iris, tell_id: str) -> tuple[TranscriptReply, int]:
    """A transcript read as the faces read it, in pages packed as irisd stores them, each
    decoded as it comes (while irisd reads the next), and how many frames it took (code
    from before pages answers in one, code from before packed pages sends the lines)."""
    lines: list[TranscriptEntry] = []
    frames = 1

    def on_event(event: Event) -> None:
        nonlocal frames
        assert isinstance(event, TranscriptPage)
        lines.extend(entries(event))
        frames += 1

    with Client(iris.socket, timeout=300) as client:
        reply = client.request(ReadTranscript(tell_id=tell_id, paged=True, packed=True), on_event)
    assert isinstance(reply, TranscriptReply)
    return msgspec.structs.replace(reply, entries=lines or reply.entries), frames


def reset_peak(pid: int) -> None:
    """VmHWM back to VmRSS (Linux: 5 into /proc/PID/clear_refs): it shows the peak from now on."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


# --- figures ---------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    milliseconds = seconds * 1000
    return f"{milliseconds:.2f} ms" if milliseconds < 10 else f"{milliseconds:.1f} ms"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> float:
    """CPU time all threads of a process have used so far, to the nanosecond (schedstat;
    ``cpu_seconds`` counts in clock ticks of 10 ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def wait_quiet(pid: int, *, cpu_share: float = 0.1, window: float = 0.5, timeout: float = 120.0) -> None:
    """Wait until a process uses less than ``cpu_share`` of a core over ``window`` seconds
    (e.g. irisd done importing the MCP SDK in the background after its start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(window)
        if cpu_seconds(pid) - before < cpu_share * window:
            return


def describe(label: str, samples: list[float]) -> str:
    return (
        f"  {label:<44} median {ms(median(samples)):>10}   p90 {ms(percentile(samples, 90)):>10}"
        f"   min {ms(min(samples)):>10}   (n={len(samples)})"
    )


def header(title: str) -> None:
    print(f"\n== {title} ==")
    print(f"machine: {machine()}")


def machine() -> str:
    memory = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.splitlines()
    total = memory[1].split()[1] if len(memory) > 1 else "?"
    version = subprocess.run([str(claude_binary()), "--version"], capture_output=True, text=True)
    claude = version.stdout.strip()
    return (
        f"{os.cpu_count()} cores ({_cpu_model()}), {total} RAM, Python {platform.python_version()}, "
        f"claude {claude}"
    )


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"
