"""``iris demo``: the whole flow, offline, in a temporary folder.

A scripted model stands in for the Anthropic API, so no account and no network are
needed; everything else is real: the irisd daemon, real ``claude`` processes in two
team folders, the socket protocol and the CLI client.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.panel import Panel
from rich.text import Text

from iris_cli import render
from iris_cli.client import Client
from iris_cli.daemon_control import wait_until_answering
from iris_cli.text import pair_name
from iris_common import locate
from protocol.errors import IrisError
from protocol.messages import GetStatus, StatusReply, Tell, TellReply
from scripted_model import ScriptedModel

START_TIMEOUT_S = 20.0

SCRIPT: list[tuple[str | None, str, str]] = [
    (None, "backend", "What does GET /users return?"),
    ("frontend", "backend", "Which fields does a user have?"),
    ("frontend", "backend", "And is the email optional?"),
    ("backend", "frontend", "Which page lists the users?"),
]


def find_claude(explicit: str | None) -> str:
    found = locate.find_claude(explicit)
    if found is None:
        named = f" ({explicit!r} is not an executable)" if explicit else ""
        raise IrisError(f"the claude CLI was not found{named}; {locate.not_found_fix()}, or pass --claude PATH")
    return found


def run_demo(claude: str | None, *, keep: bool = False) -> None:
    claude_path = find_claude(claude)
    root = Path(tempfile.mkdtemp(prefix="iris-demo-"))
    try:
        with ScriptedModel() as model, (root / "irisd.log").open("wb") as log:
            env = _environment(root, model.base_url)
            _write_config(root, claude_path)
            daemon = subprocess.Popen(
                [sys.executable, "-m", "irisd.main"], env=env, stdout=subprocess.DEVNULL, stderr=log
            )
            try:
                _play(Path(env["IRIS_SOCKET"]), daemon)
            finally:
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()
    finally:
        if keep:
            render.note(f"kept {root}", render.err)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _environment(root: Path, base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        IRIS_HOME=str(root / "iris"),
        IRIS_SOCKET=str(root / "irisd.sock"),
        CLAUDE_CONFIG_DIR=str(root / "claude-config"),
        # claude keeps its MCP logs per project folder under the cache: the demo's folders
        # go with it, not into the user's ~/.cache
        XDG_CACHE_HOME=str(root / "cache"),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="iris-demo",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


def _write_config(root: Path, claude_path: str) -> None:
    for team in ("frontend", "backend"):
        (root / "projects" / team).mkdir(parents=True)
    (root / "iris").mkdir()
    (root / "iris" / "config.yaml").write_text(
        "settings:\n"
        f"  claudePath: {claude_path!r}\n"
        "  responseTimeout: 60000\n"
        "  httpPort: 0\n"  # any free port: an irisd of the user's may hold 1615
        "teams:\n"
        f"  frontend:\n    path: {str(root / 'projects/frontend')!r}\n"
        "    description: The web app\n    color: '#E91E63'\n"
        f"  backend:\n    path: {str(root / 'projects/backend')!r}\n"
        "    description: The API server\n    color: '#2196F3'\n"
    )


def _play(socket_path: Path, daemon: subprocess.Popen[bytes]) -> None:
    if wait_until_answering(socket_path, time.monotonic() + START_TIMEOUT_S, daemon.pid) is None:
        code = daemon.poll()
        why = f"exited with code {code}" if code is not None else f"did not answer within {START_TIMEOUT_S:g} s"
        raise IrisError(f"irisd {why}; run 'iris demo --keep' and read irisd.log in the folder it names")
    render.out.print(Text.assemble(("Iris demo", "bold"), ": two teams, a scripted model, real claude processes.\n"))
    for from_team, to_team, message in SCRIPT:
        started = time.monotonic()
        with Client(socket_path) as client:
            reply = client.request(Tell(to_team=to_team, message=message, from_team=from_team))
        assert isinstance(reply, TellReply)
        seconds = time.monotonic() - started
        title = f"{pair_name(from_team, to_team)}  ({reply.status}, {seconds:.1f} s)"
        answer = Text.assemble((message, "bold"), "\n\n", reply.tell.text or reply.tell.error or "")
        render.out.print(Panel(answer, title=Text(title)))
    with Client(socket_path) as client:
        status = client.request(GetStatus())
    assert isinstance(status, StatusReply)
    render.status(status)
    render.out.print(
        "\nThe '#N' in each answer counts the turns of that pair's conversation: "
        "frontend -> backend continued its session, while each pair has its own."
    )
