"""Nothing outlives its owner: what a tool starts in the background (also with its
environment cleared, in a session of its own), claude children after a kill -9 of irisd or of
the reaper, leftovers of an earlier run. Real irisd, real claude."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from harness import Iris, claude_processes_under, wait_for, wait_until
from irisd.claude.containment import MARKER, Containment, home_id, marked_processes, matches, stop_marked
from irisd.claude.process import ChildEvent, ClaudeProcess

LIFELINE_WITHIN_S = 10.0  # generous: the machine may be loaded; the reaper takes about 1 s


def processes_with(token: bytes, *, but: bytes = b"\0no such thing") -> list[int]:
    """Live (not zombie) processes whose command line holds ``token`` (and not ``but``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and but not in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def executable_of(pid: int) -> str:
    """The name of the program a process runs ("" once it is gone)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(entry.split("=", 1) for entry in raw.split("\0") if "=" in entry)


def sleeper(seconds: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A process in a session of its own (as a daemonizing tool would be)."""
    return subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({seconds})"], env=env, start_new_session=True
    )


# --- the pieces, without claude ---------------------------------------------------------


def test_markers_match_a_run_by_prefix_and_a_child_exactly() -> None:
    assert matches("h:r:12", "h:r:") and matches("h:r:12", "h:") and matches("h:r:12", "h:r:12")
    assert not matches("h:r:12", "h:r:1") and not matches("h:s:1", "h:r:")


def test_stop_marked_stops_only_the_marked_ones_wherever_they_are(tmp_path: Path) -> None:
    ours = sleeper(600, {**os.environ, MARKER: "aaaa:run:1"})
    sibling = sleeper(600, {**os.environ, MARKER: "aaaa:run:2"})
    stranger = sleeper(600, {**os.environ, MARKER: "bbbb:run:1"})
    try:
        wait_for(lambda: marked_processes("aaaa:run:1") == [ours.pid], 10, "the marked process")
        assert stop_marked("aaaa:run:1", grace=1.0) == [ours.pid]
        assert ours.wait(timeout=10) == -signal.SIGTERM
        assert sibling.poll() is None and stranger.poll() is None
        assert sorted(stop_marked("aaaa:", grace=1.0)) == [sibling.pid]
        assert stranger.poll() is None
    finally:
        for process in (ours, sibling, stranger):
            process.kill()
            process.wait()


def test_the_reaper_stops_a_runs_marked_processes_when_its_owner_is_killed(tmp_path: Path) -> None:
    """A stand-in irisd: starts the reaper, then a marked process (not below the reaper);
    kill -9 it."""
    owner = subprocess.Popen(
        [sys.executable, "-c", (
            "import os, subprocess, sys, trio\n"
            "from pathlib import Path\n"
            "from irisd.claude.containment import Containment, MARKER\n"
            f"c = Containment(Path({str(tmp_path)!r}), run_id='r1')\n"
            "async def main():\n"
            "    async with trio.open_nursery() as n:\n"
            "        await n.start(c.serve)\n"
            "        child = subprocess.Popen([sys.executable, '-c', 'import time; time.sl' + 'eep(601)'],\n"
            "            env={**os.environ, MARKER: c.new_marker()}, start_new_session=True)\n"
            "        print(child.pid, c.reaper_pid, flush=True)\n"
            "        await trio.sleep_forever()\n"
            "trio.run(main)\n"
        )],
        stdout=subprocess.PIPE,
    )
    assert owner.stdout is not None
    try:
        child_pid, reaper_pid = map(int, owner.stdout.readline().split())
        # Popen returns before the child's exec: /proc shows its command line a moment later.
        wait_for(lambda: processes_with(b"time.sleep(601)") == [child_pid], 10, "the child to start")
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
    started = time.monotonic()
    wait_for(lambda: not processes_with(b"time.sleep(601)"), LIFELINE_WITHIN_S, "the reaper to stop the child")
    assert time.monotonic() - started < LIFELINE_WITHIN_S
    wait_for(lambda: _zombie(reaper_pid), 10, "the reaper to exit")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_at_start_irisd_stops_what_an_earlier_run_of_its_home_left(iris: Iris) -> None:
    iris.add_team("alpha")
    mine = home_id(iris.home)
    leftover = sleeper(602, {**os.environ, MARKER: f"{mine}:oldrun:3"})
    other_home = sleeper(602, {**os.environ, MARKER: "0123456789ab:oldrun:3"})
    try:
        iris.start()
        assert leftover.wait(timeout=10) in (-signal.SIGTERM, -signal.SIGKILL)  # before irisd answered
        assert other_home.poll() is None  # another home's: not ours to stop
        assert "stopped processes an earlier irisd left running" in iris.log()
    finally:
        for process in (leftover, other_home):
            process.kill()
            process.wait()


def test_a_containment_sweeps_its_run_when_it_ends(tmp_path: Path) -> None:
    import trio

    containment = Containment(tmp_path, run_id="r2")
    holder: list[subprocess.Popen[bytes]] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(containment.serve)
            holder.append(sleeper(603, {**os.environ, MARKER: containment.new_marker()}))
            # Popen returns once exec closed its pipe, a moment before the kernel sets up the
            # new environ: /proc shows none until then (the test's race, not the sweep's).
            with trio.fail_after(10):
                await wait_until(lambda: holder[0].pid in marked_processes(containment.run_pattern), every=0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert holder[0].wait(timeout=10) == -signal.SIGTERM


# --- the reaper: ancestry decides, whatever a process does to its environment ----------------

# Two jobs that clear their environment (no marker), one in a session of its own, one in the
# shell's; each from a subshell that ends at once, so both are orphans at once.
ESCAPING = (
    "(env -i setsid python3 -c 'import time; time.sleep({n})' >/dev/null 2>&1 &); "
    "(env -i nohup python3 -c 'import time; time.sleep({m})' >/dev/null 2>&1 &); "
    "echo started; read line"
)


def escaped_jobs(*ns: int) -> list[int]:
    """The jobs' Python processes (not a passing shell whose command line holds the words)."""
    tokens = [f"time.sleep({n})".encode() for n in ns]
    return sorted(
        p for token in tokens for p in processes_with(token, but=b"env") if executable_of(p).startswith("python")
    )


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def is_reaper(pid: int) -> bool:
    return b"reaper_process.py" in Path(f"/proc/{pid}/cmdline").read_bytes()


def ended(pids: list[int]) -> bool:
    return all(not Path(f"/proc/{p}").exists() or _zombie(p) for p in pids)


def wait_gone(pids: list[int], timeout: float = LIFELINE_WITHIN_S) -> None:
    wait_for(lambda: ended(pids), timeout, f"{pids} to end")


async def _start_escaping(containment: Containment, nursery: trio.Nursery, n: int,
                          events: trio.MemorySendChannel[ChildEvent]) -> ClaudeProcess:
    child = ClaudeProcess(["sh", "-c", ESCAPING.format(n=n, m=n + 1)], cwd="/", env=dict(os.environ), events=events,
                          marker=containment.new_marker(), reaper=containment.reaper)
    await nursery.start(child.run)
    return child


async def _wait_jobs(n: int) -> list[int]:
    with trio.fail_after(30):
        def both() -> list[int] | None:
            jobs = escaped_jobs(n, n + 1)
            return jobs if len(jobs) >= 2 else None

        found: list[int] = await wait_until(both, every=0.02)
    return found


def test_what_a_child_starts_stays_below_the_reaper_and_stops_with_it(tmp_path: Path) -> None:
    containment = Containment(tmp_path, run_id="r3")
    found: list[int] = []

    async def main() -> None:
        send, _receive = trio.open_memory_channel[ChildEvent](100)  # room for all it says
        async with trio.open_nursery() as nursery:
            await nursery.start(containment.serve)
            child = await _start_escaping(containment, nursery, 620, send)
            found.extend(await _wait_jobs(620))
            assert child.pid is not None and parent_of(child.pid) not in (os.getpid(), 1)
            spawner = parent_of(child.pid)
            for job in found:
                assert MARKER not in environ_of(job)  # the marker cannot find them
                assert parent_of(job) == spawner  # orphans: re-parented to the reaper, not PID 1
            nursery.cancel_scope.cancel()

    trio.run(main)
    wait_gone(found, timeout=5)  # stopped before serve returned; a moment to be reaped


def test_the_reaper_stops_what_is_below_it_when_its_owner_is_killed(tmp_path: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", (
            "import os, sys, trio\n"
            "from pathlib import Path\n"
            "from irisd.claude.containment import Containment\n"
            "from irisd.claude.process import ClaudeProcess\n"
            f"ESCAPING = {ESCAPING!r}\n"
            f"c = Containment(Path({str(tmp_path)!r}), run_id='r4')\n"
            "async def main():\n"
            "    send, receive = trio.open_memory_channel(100)\n"
            "    async with trio.open_nursery() as n:\n"
            "        await n.start(c.serve)\n"
            "        argv = ['sh', '-c', ESCAPING.format(n=630, m=631)]\n"
            "        child = ClaudeProcess(argv, cwd='/', env=dict(os.environ), events=send,\n"
            "                              marker=c.new_marker(), reaper=c.reaper)\n"
            "        await n.start(child.run)\n"
            "        print(child.pid, flush=True)\n"
            "        await trio.sleep_forever()\n"
            "trio.run(main)\n"
        )],
        stdout=subprocess.PIPE,
    )
    assert owner.stdout is not None
    try:
        child = int(owner.stdout.readline())
        jobs = wait_for(lambda: (found if len(found := escaped_jobs(630, 631)) == 2 else None), 30, "the jobs")
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
    wait_gone([child, *jobs])


def test_a_killed_spawner_takes_its_children_with_it_and_a_new_reaper_takes_the_next(tmp_path: Path) -> None:
    containment = Containment(tmp_path, run_id="r5")
    found: list[int] = []

    async def main() -> None:
        send, _receive = trio.open_memory_channel[ChildEvent](100)  # room for all it says
        async with trio.open_nursery() as nursery:
            await nursery.start(containment.serve)
            child = await _start_escaping(containment, nursery, 640, send)
            found.extend(await _wait_jobs(640))
            assert child.pid is not None
            spawner = parent_of(child.pid)
            os.kill(spawner, signal.SIGKILL)
            with trio.fail_after(LIFELINE_WITHIN_S):
                await child.exited.wait()  # the guard stopped it, and irisd learnt it
                await wait_until(lambda: ended(found), every=0.02)
            again = await _start_escaping(containment, nursery, 650, send)  # the next reaper
            assert again.pid is not None and parent_of(again.pid) != spawner
            found.extend(await _wait_jobs(650))
            nursery.cancel_scope.cancel()

    trio.run(main)
    wait_gone(found, timeout=5)


def test_a_killed_guard_leaves_the_spawner_holding_everything(tmp_path: Path) -> None:
    containment = Containment(tmp_path, run_id="r6")
    found: list[int] = []

    async def main() -> None:
        send, _receive = trio.open_memory_channel[ChildEvent](100)  # room for all it says
        async with trio.open_nursery() as nursery:
            await nursery.start(containment.serve)
            child = await _start_escaping(containment, nursery, 660, send)
            found.extend(await _wait_jobs(660))
            assert containment.reaper_pid is not None
            guard = containment.reaper_pid
            os.kill(guard, signal.SIGKILL)
            with trio.fail_after(10):
                await wait_until(lambda: _zombie(guard), every=0.02)  # dead: its child is re-parented by now
            assert child.pid is not None and parent_of(parent_of(child.pid)) != guard
            assert not any(_zombie(p) for p in found) and not child.exited.is_set()
            nursery.cancel_scope.cancel()

    trio.run(main)
    wait_gone(found, timeout=5)


# --- with claude --------------------------------------------------------------------------

BACKGROUND = "setsid python3 -c 'import time; time.sleep({n})' > /dev/null 2>&1 &"


def start_background_job(iris: Iris, n: int) -> int:
    command = json.dumps({"command": BACKGROUND.format(n=n)})
    result = iris.cli("tell", "alpha", f"@tool:Bash {command}")
    assert result.returncode == 0, result.stderr + iris.log()[-3000:]
    # The job is the Python process: not the shell that starts it, nor a launcher's passing
    # subshells (a pyenv shim forks a few while it finds python), whose command lines hold
    # the same words for a moment.
    job = f"time.sleep({n})".encode()
    (pid,) = wait_for(lambda: [p for p in processes_with(job, but=b"setsid") if executable_of(p).startswith("python")],
                      30, "the background job")
    (claude,) = claude_processes_under([iris.teams_dir / "alpha"])
    assert os.getpgid(pid) != os.getpgid(claude)  # it left claude's process group
    assert environ_of(pid)[MARKER].startswith(home_id(iris.home) + ":")  # but carries the marker
    return int(pid)


@pytest.mark.claude
@pytest.mark.parametrize("how", ["sleep --force", "SIGTERM", "kill -9"])
def test_a_background_job_of_a_tool_is_stopped_with_its_claude(iris: Iris, how: str) -> None:
    iris.add_team("alpha", permissions="skip")
    iris.env["IS_SANDBOX"] = "1"  # claude refuses to skip permissions as root otherwise
    iris.start()
    n = 910 + ["sleep --force", "SIGTERM", "kill -9"].index(how)
    pid = start_background_job(iris, n)
    if how == "sleep --force":
        result = iris.cli("sleep", "alpha", "--force")
        assert result.returncode == 0, result.stderr
    elif how == "SIGTERM":
        assert iris.stop() == 0
    else:
        iris.stop(signal.SIGKILL)
    wait_for(lambda: not processes_with(f"time.sleep({n})".encode()), LIFELINE_WITHIN_S, "the job to stop")
    # An exiting process loses its command line a moment before it is a zombie.
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 10, "the job to end")


@pytest.mark.claude
def test_kill_9_during_a_hung_request_leaves_no_claude_and_a_restart_runs_one_per_pair(iris: Iris) -> None:
    folders = [iris.add_team("alpha"), iris.add_team("beta")]
    iris.start()
    hung = iris.cli_json("tell", "alpha", "@hang wait for ever", "--timeout", "-1")
    assert iris.cli("tell", "beta", "hello").returncode == 0  # an idle claude too
    iris.wait_for_tell_status(hung["id"], "running")
    assert len(claude_processes_under(folders)) == 2

    iris.stop(signal.SIGKILL)
    started = time.monotonic()
    wait_for(lambda: not claude_processes_under(folders), LIFELINE_WITHIN_S, "no claude of the killed run")
    assert time.monotonic() - started < LIFELINE_WITHIN_S
    assert not marked_processes(home_id(iris.home) + ":")  # nor anything they started

    iris.start()
    for team in ("alpha", "beta"):
        result = iris.cli("tell", team, "again")
        assert result.returncode == 0, result.stderr
    per_folder = [len(claude_processes_under([folder])) for folder in folders]
    assert per_folder == [1, 1]  # one claude per pair, none beside an orphan
    assert iris.cli_json("result", hung["id"], ok=False)["tell_status"] == "interrupted"  # exit 1: not completed


ENV_CLEARED = (
    "env -i setsid python3 -c 'import time; time.sleep({n})' > /dev/null 2>&1 & "
    "env -i nohup python3 -c 'import time; time.sleep({m})' > /dev/null 2>&1 &"
)
HOW = ["SIGTERM", "kill -9, start", "spawner kill -9", "guard kill -9, SIGTERM"]


@pytest.mark.claude
@pytest.mark.parametrize("how", HOW)
def test_a_job_that_clears_its_environment_still_dies_with_irisd(iris: Iris, how: str) -> None:
    """``env -i`` drops the marker, ``setsid`` leaves the group and the session, ``nohup``
    ignores SIGHUP: the reaper is still their ancestor."""
    iris.add_team("alpha", permissions="skip")
    iris.env["IS_SANDBOX"] = "1"  # claude refuses to skip permissions as root otherwise
    iris.start()
    n = 930 + 2 * HOW.index(how)
    try:
        command = json.dumps({"command": ENV_CLEARED.format(n=n, m=n + 1)})
        result = iris.cli("tell", "alpha", f"@tool:Bash {command}")
        assert result.returncode == 0, result.stderr + iris.log()[-3000:]
        jobs = wait_for(lambda: found if len(found := escaped_jobs(n, n + 1)) == 2 else None, 30, "the two jobs")
        (claude,) = claude_processes_under([iris.teams_dir / "alpha"])
        for job in jobs:  # no marker, not in claude's process group
            assert MARKER not in environ_of(job) and os.getpgid(job) != os.getpgid(claude)
        (setsid,) = escaped_jobs(n)
        assert os.getsid(setsid) == setsid  # nor in its session
        spawner = parent_of(claude)  # (on old code: irisd)
        if how == "SIGTERM":
            assert iris.stop() == 0
            wait_gone(jobs, timeout=5)  # stopped before irisd exited; a moment to be reaped
        elif how == "kill -9, start":
            iris.stop(signal.SIGKILL)
            wait_gone(jobs)
            iris.start()
        elif how == "spawner kill -9":
            assert is_reaper(spawner)  # (never irisd, nor whoever runs the tests)
            os.kill(spawner, signal.SIGKILL)
            wait_gone([claude, *jobs])
            wait_for(lambda: "the reaper ended" in iris.log(), 30, "irisd to log the reaper's end")
        else:
            guard = parent_of(spawner)
            assert is_reaper(guard)
            os.kill(guard, signal.SIGKILL)
            wait_for(lambda: _zombie(guard), 10, "the guard to die")
            assert iris.stop() == 0
            wait_gone(jobs, timeout=5)
        if iris.process is not None:  # irisd goes on: the next tell has a claude, contained
            again = iris.cli("tell", "alpha", "again")
            assert again.returncode == 0, again.stderr + iris.log()[-3000:]
            (claude,) = claude_processes_under([iris.teams_dir / "alpha"])
            assert parent_of(claude) != spawner and is_reaper(parent_of(claude))
    finally:
        for job in escaped_jobs(n, n + 1):  # the old code's leftovers: not for the next test
            os.kill(job, signal.SIGKILL)
