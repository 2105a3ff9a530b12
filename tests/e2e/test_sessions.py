"""Sessions and supervision with the real claude: persistence across restarts, the pool
under maxProcesses, idle reaping, crashes, wake and sleep per pair, no leaks.

The tests that neither restart irisd, change its settings, count its processes or pairs
nor read its log share one (``shared``), each with teams of its own."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Http, Iris, child_pids, started, transcript_file, wait_for
from protocol.messages import GetPair, GetStatus, GetTell, ProcessInfo, Sleep, Tell, Wake
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


def tell(iris: Iris, team: str, message: str, *args: str) -> dict[str, Any]:
    result = iris.cli("tell", team, message, "--json", *args)
    assert result.returncode == 0, result.stderr + iris.log()[-3000:]
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def pair_state(iris: Iris, team: str, from_team: str | None = None) -> ProcessInfo:
    reply = iris.request(GetPair(to_team=team, from_team=from_team))
    return reply.process  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    teams: dict[str, dict[str, Any]] = {"reaped": {"idleTimeout": 1000}, "killed": {}, "alpha": {}, "beta": {}}
    with started(tmp_path_factory.mktemp("sessions"), model_url=model.base_url, claude=claude_bin,
                 teams=teams) as iris:
        yield iris


def test_conversation_continues_across_a_daemon_restart(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    first = tell(iris, "alpha", "before")
    assert first["text"] == "echo #1: before" and first["new_session"]
    assert iris.stop() == 0
    iris.start()
    again = tell(iris, "alpha", "after")
    assert again["text"] == "echo #2: after"
    assert again["session_id"] == first["session_id"] and not again.get("new_session")
    listing = json.loads(iris.cli("sessions", "--json").stdout)
    assert [(s["to_team"], s["message_count"]) for s in listing] == [("alpha", 2)]


def test_lru_eviction_keeps_busy_pairs_and_the_evicted_pair_resumes(iris: Iris) -> None:
    for name in ("a", "b", "c"):
        iris.add_team(name)
    iris.settings["maxProcesses"] = 2
    iris.start()
    tell(iris, "a", "one")
    tell(iris, "b", "one")
    tell(iris, "c", "one")  # the pool is full: a, the least recently used idle pair, goes
    assert pair_state(iris, "a").state == "stopped"
    assert pair_state(iris, "b").state == "idle" and pair_state(iris, "c").state == "idle"
    assert tell(iris, "a", "two")["text"] == "echo #2: two"  # resumed after eviction
    assert pair_state(iris, "b").state == "stopped"  # now b was the oldest
    status = iris.request(GetStatus())
    assert sum(p.pid is not None for p in status.processes) == 2


def test_idle_process_is_reaped_and_the_pair_resumes(shared: Iris) -> None:
    iris = shared  # reaped: idleTimeout 1000
    tell(iris, "reaped", "one")
    wait_for(lambda: pair_state(iris, "reaped").state == "stopped", what="idle reaping")
    assert tell(iris, "reaped", "two")["text"] == "echo #2: two"


def test_a_child_killed_mid_tell_is_noticed_at_once(shared: Iris) -> None:
    iris = shared
    tell(iris, "killed", "warm up")
    slow = iris.request(Tell(to_team="killed", message="@slow:500 @chunks:20 a long answer", timeout_ms=-1))
    tell_id = slow.tell.id
    pid = wait_for(lambda: pair_state(iris, "killed").pid, what="pid")
    wait_for(lambda: iris.request(_get(tell_id)).tell.text, what="first streamed text")
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    ended = wait_for(lambda: (r := iris.request(_get(tell_id))).tell.status != "running" and r, what="end")
    assert time.monotonic() - killed_at < 5.0  # its exit noticed, not its silence (the response timeout: 120 s)
    assert ended.tell.status == "interrupted" and "SIGKILL" in ended.tell.error
    assert ended.tell.text  # what it had said is kept
    assert pair_state(iris, "killed").state == "stopped"
    after = tell(iris, "killed", "are you back?")
    assert after["status"] == "completed" and after["session_id"] == slow.tell.session_id
    assert not after.get("new_session")


def test_wake_and_sleep_act_on_one_pair(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    woke = iris.cli("wake", "alpha", "--from", "beta")
    assert woke.returncode == 0 and "beta->alpha is awake" in woke.stdout
    assert pair_state(iris, "alpha", "beta").state == "idle"
    assert pair_state(iris, "alpha").state == "stopped"  # (external, alpha) untouched
    again = iris.cli("wake", "alpha", "--from", "beta")
    assert "already awake" in again.stdout

    slow = Tell(to_team="alpha", from_team="beta", message="@slow:300 @chunks:30 x", timeout_ms=-1)
    busy = iris.request(slow)
    wait_for(lambda: pair_state(iris, "alpha", "beta").state == "processing", what="processing")
    refused = iris.cli("sleep", "alpha", "--from", "beta")
    assert refused.returncode == 1 and "busy" in refused.stdout and "--force" in refused.stdout
    assert pair_state(iris, "alpha", "beta").state == "processing"
    forced = iris.cli("sleep", "alpha", "--from", "beta", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert pair_state(iris, "alpha", "beta").state == "stopped"
    assert iris.request(_get(busy.tell.id)).tell.status == "interrupted"

    everyone = iris.cli("wake", "--all", "--json")
    assert everyone.returncode == 0, everyone.stderr
    woken = {(p["from_team"], p["to_team"]): p["state"] for p in json.loads(everyone.stdout)["processes"]}
    assert woken == {(None, "alpha"): "idle", (None, "beta"): "idle"}


def test_spawning_and_stopping_leaks_no_fds_or_processes(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    assert iris.process is not None
    daemon = iris.process.pid
    iris.request(Wake(to_team="alpha"))  # warm up lazy imports and the database
    iris.request(Sleep(to_team="alpha"))
    # The HTTP face (loaded by its first client, keeping a socket of its own from then on): a
    # claude of the first cycle may be stopped before it connects to /mcp, one of a later one not.
    assert Http(iris).json("GET", "/health", auth=False)[0] == 200
    fds_before = len(os.listdir(f"/proc/{daemon}/fd"))
    children_before = child_pids(daemon)
    for _ in range(8):
        assert iris.request(Wake(to_team="alpha")).process.pid is not None
        iris.request(Sleep(to_team="alpha"))
    # (the fd of the last client connection may close a moment after its reply)
    wait_for(lambda: len(os.listdir(f"/proc/{daemon}/fd")) <= fds_before, timeout=30, what="fds")
    # Only the reaper (one per run of irisd: see irisd/claude/reaper_process.py); the
    # claude children are its spawner's.
    (reaper,) = children_before
    assert b"reaper_process.py" in Path(f"/proc/{reaper}/cmdline").read_bytes()
    assert child_pids(daemon) == children_before


def test_a_lost_transcript_starts_a_new_conversation_and_says_so(iris: Iris) -> None:
    folder = iris.add_team("alpha")
    iris.start()
    first = tell(iris, "alpha", "one")
    iris.stop()
    transcript_file(iris, folder, first["session_id"]).unlink()
    iris.start()
    assert "session transcript is gone" in iris.log()
    fresh = tell(iris, "alpha", "two")
    assert fresh["text"] == "echo #1: two" and fresh["new_session"]
    assert fresh["session_id"] != first["session_id"]
    human = iris.cli("tell", "alpha", "three")
    assert human.stdout == "echo #2: three\n"


def test_a_transcript_claude_cannot_resume_is_replaced_once(iris: Iris) -> None:
    folder = iris.add_team("alpha")
    iris.start()
    first = tell(iris, "alpha", "one")
    iris.stop()
    transcript_file(iris, folder, first["session_id"]).write_text("")
    iris.start()
    fresh = tell(iris, "alpha", "two")
    assert fresh["status"] == "completed" and fresh["new_session"]
    assert fresh["session_id"] != first["session_id"]


def test_session_reset_starts_a_fresh_conversation(shared: Iris) -> None:
    iris = shared  # beta->alpha is this test's
    tell(iris, "alpha", "one", "--from", "beta")
    reset = iris.cli("session", "reset", "beta", "alpha")
    assert reset.returncode == 0, reset.stderr
    assert tell(iris, "alpha", "two", "--from", "beta")["text"] == "echo #1: two"


def test_a_claude_that_keeps_crashing_marks_only_its_pair_failed(iris: Iris) -> None:
    broken = iris.root / "crashing-claude"
    broken.write_text("#!/bin/sh\necho 'boom: cannot start' >&2\nexit 7\n")
    broken.chmod(0o755)
    iris.add_team("alpha")
    iris.start()
    tell(iris, "alpha", "fine")
    iris.stop()
    iris.settings["claudePath"] = str(broken)
    iris.start()
    failed = iris.cli("tell", "alpha", "hi", "--json")
    assert failed.returncode == 1
    error = json.loads(failed.stdout)["error"]
    assert "keeps crashing on start (3 times)" in error and "boom: cannot start" in error
    status = json.loads(iris.cli("status", "--json").stdout)
    (alpha,) = [p for p in status["processes"] if p["to_team"] == "alpha"]
    assert alpha["state"] == "failed" and "boom" in alpha["reason"]
    assert "failed" in iris.cli("status").stdout


def _get(tell_id: str) -> GetTell:
    return GetTell(tell_id=tell_id)
