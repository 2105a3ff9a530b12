"""Team and model text is text, in every command that prints it: rich markup in a message
or an answer (``[/code]``, ``list[int]``, ``[bold]``) is shown as written, never read as
style, and never crashes a command. And ``iris watch`` keeps tells that stream at once apart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from typing import Any

from harness import Iris, wait_for

HOSTILE = "see [/code] and list[int] and [bold]not bold[/bold] [red]"


def test_markup_in_messages_answers_and_errors_is_printed_as_written(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    told = iris.cli("tell", "alpha", HOSTILE)
    assert told.returncode == 0, told.stderr
    assert told.stdout.strip() == f"echo #1: {HOSTILE}"
    tell_id = iris.cli_json("report", "alpha")[0]["id"]
    for args in (["result", tell_id], ["report", "alpha"], ["cache", "read", tell_id]):
        shown = iris.cli(*args)
        assert shown.returncode == 0, (args, shown.stderr)
        assert "[/code]" in shown.stdout and "list[int]" in shown.stdout, (args, shown.stdout)
    queued = iris.cli_json("tell", "alpha", "@slow:200 @long:5", "--timeout", "-1")
    watcher = subprocess.Popen([sys.executable, "-m", "iris_cli", "watch"], env=iris.env, cwd=iris.root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watcher.stdout or ()), daemon=True)
    reader.start()
    try:
        iris.wait_for_tell_status(queued["id"], "completed")
        assert iris.cli("tell", "alpha", HOSTILE).returncode == 0  # queued with its message: watch prints it
        # Watchers get events in batches (at most every 0.25 s): wait for the one with the answer.
        wait_for(lambda: any("[/code]" in line for line in lines), 30, "the watcher to print the second tell")
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        reader.join(timeout=30)
        assert watcher.stdout is not None and watcher.stderr is not None
        with watcher.stdout, watcher.stderr:
            err = watcher.stderr.read()
    out = "".join(lines)
    assert "MarkupError" not in err and "Traceback" not in err, err
    assert "[/code]" in out and "list[int]" in out, out
    unknown = iris.cli("tell", "[/code]", "hi")
    assert unknown.returncode == 1 and "[/code]" in unknown.stderr and "Traceback" not in unknown.stderr


def test_watch_labels_the_text_of_tells_that_stream_at_once(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    for team in ("alpha", "beta"):  # warm: both answer at once below
        iris.cli_json("tell", team, "warm up")
    # (the test's own watcher, and a human's: it starts just as fast)
    with iris.watch() as ready, subprocess.Popen([sys.executable, "-m", "iris_cli", "watch"], env=iris.env,
                                                 cwd=iris.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 text=True) as human:
        try:
            assert human.stderr is not None
            assert "watching every team" in human.stderr.readline()
            first = iris.cli_json("tell", "alpha", "@slow:150 @long:8", "--timeout", "-1")
            second = iris.cli_json("tell", "beta", "@slow:150 @long:8", "--timeout", "-1")
            lines: list[str] = []
            reader = threading.Thread(target=lambda: lines.extend(human.stdout or ()), daemon=True)
            reader.start()
            ended: set[str] = set()  # either may end first

            def both_ended(event: dict[str, Any]) -> bool:
                if event["type"] == "tell_state" and event["status"] == "completed":
                    ended.add(event["tell_id"])
                return ended >= {first["id"], second["id"]}

            ready.until(both_ended, what="both tells' ends")
            # The human watcher gets its events in batches too: wait until it printed both ends.
            wait_for(lambda: all(any(t["id"] in line and "completed" in line for line in lines)
                                 for t in (first, second)), 30, "the watcher to print both tells' ends")
        finally:
            human.terminate()
            human.wait(timeout=30)
        reader.join(timeout=30)
        out = "".join(lines)
    runs = re.findall(r"^\[(\w{8}) external->(\w+)\] (.*)$", out, re.MULTILINE)
    assert {team for _, team, _ in runs} == {"alpha", "beta"}, out
    for tell, team in ((first, "alpha"), (second, "beta")):
        words = " ".join(text for tell_id, t, text in runs if t == team and tell["id"].startswith(tell_id)).split()
        assert words == [f"word{n}" for n in range(1, 9)], (team, out)  # each tell's words, in order
    json.dumps(runs)  # plain data
