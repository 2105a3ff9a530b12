"""What Claude Code does with a ``team_tell`` that runs for minutes (not a benchmark of
Iris: a measurement of the client, rerun it when claude changes).

An outer ``claude -p`` (the pinned one, against the scripted model) calls ``team_tell``
on a team whose answer streams one word every few seconds for MINUTES minutes, with
``timeout: 0`` (wait for the end), so the call runs that long while Iris sends the
answer so far as progress notifications. It prints, per length: how long the call took,
whether claude got the whole answer, whether it moved the call to the background, and
what it said. ``--minutes 3 6`` (default) takes about ten minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _common import header, running_iris


def measure(minutes: float) -> dict[str, object]:
    words = max(2, int(minutes * 60 / 5))  # one word every 5 s: progress keeps flowing
    with running_iris(["slow"]) as iris:
        outer = iris.root / "outside"
        outer.mkdir()
        shim = Path(sys.executable).parent / "iris"
        config = {"mcpServers": {"iris": {"command": str(shim), "args": ["mcp"],
                                          "env": {"IRIS_HOME": str(iris.home), "IRIS_SOCKET": str(iris.socket)}}}}
        call = json.dumps({"toTeam": "slow", "message": f"@slow:5000 @long:{words}", "timeout": 0})
        argv = [iris.claude, "-p", f"@tool:mcp__iris__team_tell {call}", "--mcp-config", json.dumps(config),
                "--allowedTools", "mcp__iris", "--output-format", "stream-json", "--verbose"]
        started = time.monotonic()
        ran = subprocess.run(argv, env=iris.env, cwd=outer, capture_output=True, text=True,
                             timeout=minutes * 60 + 600)
        took = time.monotonic() - started
        lines = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
        result: dict[str, object] = next((line for line in lines if line.get("type") == "result"), {})
        said = str(result.get("result", ""))
        # Claude Code says so when it moves a tool call to the background (a task of its own).
        backgrounded = [line for line in lines
                        if line.get("is_backgrounded") is True or line.get("subtype") == "task_backgrounded"]
        (Path(__file__).parent / f"long-team-tell-{minutes:g}min.jsonl").write_text(ran.stdout)  # to read
        return {
            "minutes": minutes,
            "call_s": round(took, 1),
            "exit": ran.returncode,
            "whole_answer": f"word{words}" in said,
            "backgrounded": bool(backgrounded),
            "said": said[:300],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, nargs="+", default=[3.0, 6.0])
    args = parser.parse_args()
    header("a team_tell of several minutes, called by Claude Code")
    for minutes in args.minutes:
        print(json.dumps(measure(minutes)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
