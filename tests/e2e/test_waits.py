"""A tell that waits says what it waits for, with the real claude: a tell queued behind
an undecided approval names that approval and the command that decides it, also in a
fan-out (where the other teams' answers come meanwhile)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from typing import IO

from harness import Iris

TOUCH = '@tool:Bash {"command": "touch made.txt"}'


def read(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_a_fan_out_names_the_approval_a_team_waits_behind_and_how_to_decide_it(iris: Iris) -> None:
    folder = iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    first = iris.cli_json("tell", "alpha", TOUCH, "--timeout", "-1")
    approval = iris.wait_for_approval(120)["id"]
    fan_out = subprocess.Popen(
        [sys.executable, "-m", "iris_cli", "tell", "alpha,beta", "status report please"],
        env=iris.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=iris.root,
    )
    try:
        assert fan_out.stderr is not None
        lines = queue.Queue[str]()
        threading.Thread(target=read, args=(fan_out.stderr, lines), daemon=True).start()
        said = lines.get(timeout=60)  # no terminal: the hint still reaches stderr, while alpha waits
        assert said == (
            f"alpha: queued behind 1 tell; tell {first['id'][:10]} ahead awaits your approval of Bash "
            f"`touch made.txt`: run 'iris approve {approval[:10]}' (or 'iris deny {approval[:10]}')\n"
        ), said
        assert f"iris approve {approval[:10]} [--remember]" in lines.get(timeout=10)
        single = subprocess.Popen(  # one more tell, not a fan-out: the same words, on stderr
            [sys.executable, "-m", "iris_cli", "tell", "alpha", "and you?"],
            env=iris.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=iris.root,
        )
        try:
            assert single.stderr is not None
            behind = queue.Queue[str]()
            threading.Thread(target=read, args=(single.stderr, behind), daemon=True).start()
            said = behind.get(timeout=60)
            assert said.startswith(f"queued behind 2 tells; tell {first['id'][:10]} ahead awaits your approval"), said
            assert iris.cli("approve", approval).returncode == 0
            out = fan_out.communicate(timeout=120)[0]
            assert single.communicate(timeout=120)[0] == "echo #3: and you?\n"
        finally:
            single.kill()
            single.wait()
    finally:
        fan_out.kill()
        fan_out.wait()
    assert fan_out.returncode == 0, out
    assert "── beta (completed)" in out and "── alpha (completed)" in out
    assert (folder / "made.txt").exists()
    waited = [t for t in iris.cli_json("report", "alpha") if t["message"] == "status report please"]
    assert waited[0]["started_at"] > waited[0]["created_at"]  # 'took' counts from here (iris report)
