"""Around a tell, with the real claude: partial and async answers, interrupts, the
response timeout, queues, notifications that survive kill -9, commands, reports, watch.

Most tests share one irisd (``shared``); each gives its pairs only what it may: ``alpha``
(external->alpha, kept warm from test to test, so its answers' turn numbers are counted
from the test's own first tell), or a team of its own where it needs a cold pair, a
conversation of its own or a setting. The tests that stop or kill irisd start their own."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from harness import Iris, echoed, started, wait_for
from protocol.messages import CancelTell, GetPair, GetTell, Tell
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    # queueLimit 2: only the queue test has more than one tell waiting for a pair.
    teams = {"alpha": {}, "hasty": {"responseTimeout": 1500}, "compacted": {}, "reported": {}, "watched": {}}
    with started(tmp_path_factory.mktemp("semantics"), model_url=model.base_url, claude=claude_bin,
                 teams=teams, settings={"queueLimit": 2}) as iris:
        yield iris


def turn(answer: dict[str, Any]) -> int:
    """The turn number of the scripted model's echo: ``echo #N: ...``."""
    return echoed(answer["text"])[0]


def test_caller_timeout_returns_the_partial_answer_and_result_fetches_the_rest(
    shared: Iris, model: ScriptedModel,
) -> None:
    iris = shared
    whole = f"echo #{turn(iris.cli_json('tell', 'alpha', 'warm up')) + 1}: one two three four five six seven"
    # The model sends the first word, then waits for the test (not for the clock) to go on.
    partial = iris.cli_json("tell", "alpha", "@gate:partial-answer one two three four five six seven",
                            "--timeout", "3000")
    assert partial["status"] == "in_progress" and partial["tell_status"] == "running"
    assert partial["text"] in ("", "echo ")  # what was streamed so far (a loaded machine: maybe nothing yet)
    # Once the first word is in, a caller who does not wait gets it, and the tell runs on.
    wait_for(lambda: iris.request(GetTell(tell_id=partial["id"])).tell.text == "echo ", what="the first word")
    again = iris.cli_json("result", partial["id"], ok=False)
    seen = (again.get("status"), again.get("tell_status"), again.get("text"))
    assert seen == ("in_progress", "running", "echo "), again
    model.open_gate("partial-answer")
    done = iris.cli_json("result", partial["id"], "--wait", "60000")
    assert done["status"] == "completed" and done["text"] == whole


def test_async_tell_returns_its_id_at_once(shared: Iris, model: ScriptedModel) -> None:
    iris = shared
    # The model holds the answer until the test opens the gate: the id comes back before it.
    result = iris.cli("tell", "alpha", "@gate:background in the background", "--timeout", "-1")
    assert result.returncode == 0, result.stderr
    tell_id = result.stdout.strip()
    assert iris.request(GetTell(tell_id=tell_id)).tell.status in ("queued", "running")
    model.open_gate("background")
    done = iris.cli_json("result", tell_id, "--wait", "60000")
    assert done["status"] == "completed" and re.fullmatch(r"echo #\d+: in the background", done["text"]), done


def test_cancel_interrupts_without_killing_the_warm_child(shared: Iris) -> None:
    iris = shared
    iris.cli_json("tell", "alpha", "warm up")
    pid = iris.request(GetPair(to_team="alpha")).process.pid
    hung = iris.request(Tell(to_team="alpha", message="@hang never answers", timeout_ms=-1))
    wait_for(lambda: iris.request(GetTell(tell_id=hung.tell.id)).tell.status == "running", what="running")
    cancelled = iris.cli_json("cancel", hung.tell.id)
    assert cancelled["tell_status"] == "interrupted"
    assert iris.request(GetPair(to_team="alpha")).process.pid == pid  # the same warm child
    after = iris.cli_json("tell", "alpha", "still there?")
    assert after["status"] == "completed" and after["text"].endswith("still there?")
    assert iris.request(GetPair(to_team="alpha")).process.pid == pid
    too_late = iris.cli("cancel", after["id"])
    assert too_late.returncode == 0
    assert too_late.stdout == f"tell {after['id']} had already ended (completed); nothing to cancel\n"


def test_response_timeout_on_a_model_that_never_answers(shared: Iris) -> None:
    iris = shared  # team hasty has responseTimeout 1500
    first = iris.cli_json("tell", "hasty", "hello")
    timed_out = iris.cli("tell", "hasty", "@hang are you there?", "--json")
    assert timed_out.returncode == 1
    answer = json.loads(timed_out.stdout)
    assert answer["status"] == "timed_out" and "1.5 s (responseTimeout)" in answer["error"]
    # Not before the timeout; how much after depends on the machine's load (the exact times
    # are tests/subsystem/test_pair_timing.py's, on trio's virtual clock).
    assert answer["finished_at"] - answer["started_at"] >= 1.5
    again = iris.cli_json("tell", "hasty", "and now?")  # a new child resumes the conversation
    assert again["status"] == "completed" and again["session_id"] == first["session_id"]


def test_tells_to_a_pair_are_served_in_order_and_a_full_queue_refuses(shared: Iris) -> None:
    iris = shared  # queueLimit 2
    warm = turn(iris.cli_json("tell", "alpha", "warm up"))
    slow = [Tell(to_team="alpha", message=f"@slow:600 m{n}", timeout_ms=-1) for n in range(3)]
    ids = [iris.request(request).tell.id for request in slow]
    refused = iris.cli("tell", "alpha", "one too many", "--timeout", "-1")
    assert refused.returncode == 1
    assert "queue of external->alpha is full (2 tells waiting)" in refused.stderr
    finished = [iris.cli_json("result", i, "--wait", "60000") for i in ids]
    assert [f["text"] for f in finished] == [f"echo #{warm + 1 + n}: m{n}" for n in range(3)]
    assert [f["started_at"] for f in finished] == sorted(f["started_at"] for f in finished)
    running = iris.request(Tell(to_team="alpha", message="@slow:300 x", timeout_ms=-1))
    behind = iris.request(Tell(to_team="alpha", message="y", timeout_ms=-1))
    assert iris.request(CancelTell(tell_id=behind.tell.id)).tell.status == "interrupted"
    assert iris.cli_json("result", running.tell.id, "--wait", "60000")["status"] == "completed"


def test_a_persisted_tell_survives_kill_9_of_the_daemon(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    stored = iris.cli_json(
        "tell", "alpha", "remember the release", "--from", "beta", "--persist", "--ttl-days", "2"
    )
    assert stored["status"] in ("pending", "delivering") and stored["id"].startswith("n-")
    assert iris.stop(signal.SIGKILL) == -signal.SIGKILL  # right after the acknowledgement
    iris.start()
    delivered = wait_for(
        lambda: [n for n in iris.cli_json("notifications", "--all") if n["status"] == "delivered"],
        what="delivery after restart",
    )
    assert delivered[0]["id"] == stored["id"] and delivered[0]["tell_id"]
    result = iris.cli_json("result", delivered[0]["tell_id"])
    assert result["text"] == "echo #1: remember the release" and result["from_team"] == "beta"
    assert iris.cli_json("notifications") == []  # nothing pending


def test_slash_command_goes_through_the_queue(shared: Iris) -> None:
    iris = shared
    iris.cli_json("tell", "compacted", "something to compact")
    compacted = iris.cli_json("command", "compacted", "compact")
    assert compacted["status"] == "completed" and compacted["kind"] == "command"
    assert compacted["message"] == "/compact"
    bad = iris.cli("command", "compacted", "rm -rf")
    assert bad.returncode == 1 and "is not a slash command name" in bad.stderr


def test_report_transcript_and_cache_clear(shared: Iris) -> None:
    iris = shared
    told = iris.cli_json("tell", "reported", "@chunks:3 report me")
    report = iris.cli_json("report", "reported")
    assert [t["id"] for t in report] == [told["id"]] and report[0]["cost_usd"] is not None
    transcript = iris.cli_json("cache", "read", told["id"])
    types = [e["type"] for e in transcript["entries"]]
    # the token deltas were streamed live, not stored; the assistant line holds the text
    assert types[0] == "system" and types[-1] == "result" and "stream_event" not in types and "assistant" in types
    assert json.loads(transcript["entries"][-1]["raw"])["result"] == "echo #1: report me"
    assert iris.cli_json("cache", "clear", "reported")["count"] == 1
    assert iris.cli_json("report", "reported") == []
    gone = iris.cli("result", told["id"])
    assert gone.returncode == 1 and "no tell with id" in gone.stderr
    assert iris.cli_json("tell", "reported", "still remembers")["text"] == "echo #2: still remembers"


def test_watch_follows_tells_live(shared: Iris) -> None:
    iris = shared
    logged = len(iris.log())
    with iris.watch("watched") as watcher:
        told = iris.cli_json("tell", "watched", "@chunks:3 watch this")
        watcher.until(lambda e: e.get("status") == "completed", what="the tell's end")
        events = watcher.seen[1:]
    states = [e["status"] for e in events if e["type"] == "tell_state"]
    assert states == ["queued", "running", "completed"]
    processes = [e["process"]["state"] for e in events if e["type"] == "process_state"]
    assert processes[:1] == ["spawning"] and "processing" in processes  # the pair's claude, as it changed
    assert all(e["tell_id"] == told["id"] for e in events if e["type"] != "process_state")
    assert "".join(e["text"] for e in events if e["type"] == "tell_text") == "echo #1: watch this"
    iris.cli_json("tell", "watched", "after the watcher left")  # its events meet a closed socket
    assert "request failed" not in iris.log()[logged:]  # a watcher leaving is no failure


def test_a_watcher_is_told_when_irisd_stops(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    with iris.watch() as watcher:
        assert iris.stop() == 0
        assert watcher.process.wait(timeout=20) == 1
        assert "irisd is stopping" in watcher.stderr()


def test_kill_9_mid_tell_keeps_the_answer_so_far_and_the_cli_names_the_tell(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    with iris.watch("alpha") as watcher:
        telling = subprocess.Popen(
            [sys.executable, "-m", "iris_cli", "tell", "alpha", "@slow:400 @long:40"],
            env=iris.env, cwd=iris.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        watcher.until(lambda e: e["type"] == "tell_text" and "word3" in e["text"], what="the answer's third word")
        tell_id = watcher.seen[-1]["tell_id"]
        # irisd saves a running tell's text at least every half second: wait until it has
        db = apsw.Connection(str(iris.home / "data" / "iris.db"), flags=apsw.SQLITE_OPEN_READONLY)
        stored = "SELECT text FROM tells WHERE id = ?"
        wait_for(lambda: "word3" in str(db.execute(stored, (tell_id,)).fetchall()), timeout=20,
                 what="the text so far saved")
        db.close()
        iris.stop(signal.SIGKILL)
        out, err = telling.communicate(timeout=30)
    assert telling.returncode == 1, (out, err)
    assert f"tell {tell_id} was under way" in err and f"'iris result {tell_id}'" in err, err
    iris.start()
    cut = iris.cli_json("result", tell_id, ok=False)
    assert cut["tell_status"] == "interrupted", cut
    assert cut["text"].startswith("word1 word2 word3"), cut  # the text so far, from the stored transcript
    assert "its answer so far is kept" in cut["error"]
    human = iris.cli("result", tell_id)
    assert "word1 word2 word3" in human.stdout and human.returncode == 1
