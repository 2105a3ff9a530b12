"""The walking skeleton end to end: CLI -> irisd -> real claude -> scripted model.

Most tests share one irisd (``shared``), each with teams of its own where it counts turns
(``warm`` is the pair of those that do not); the tests that need a daemon configured or
started otherwise, or none, have their own."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness import Iris, started, transcript_file
from iris_cli.client import Client
from protocol import PROTOCOL_VERSION
from protocol.codec import decode_server_message, encode
from protocol.messages import (
    ErrorReply,
    Hello,
    ListTeams,
    TeamsReply,
    Tell,
    TellNotice,
    TellReply,
    Welcome,
)
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    teams: dict[str, dict[str, Any]] = {
        "alpha": {}, "beta": {}, "odd": {"folder": "my proj.v2_x/sub dir"}, "sturdy": {}, "warm": {}, "gone": {}}
    with started(tmp_path_factory.mktemp("tell"), model_url=model.base_url, claude=claude_bin, teams=teams) as iris:
        yield iris


def test_tell_returns_the_answer_and_the_pair_keeps_its_conversation(shared: Iris) -> None:
    iris = shared  # alpha and beta are this test's

    first = iris.cli("tell", "alpha", "hello")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "echo #1: hello\n"

    second = iris.cli("tell", "alpha", "hello again")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "echo #2: hello again\n"  # the same conversation continued

    # Another caller gets a conversation of its own with the same team.
    from_beta = iris.cli("tell", "alpha", "hi", "--from", "beta", "--json")
    assert from_beta.returncode == 0, from_beta.stderr
    answer = json.loads(from_beta.stdout)
    assert answer["status"] == "completed"
    assert answer["text"] == "echo #1: hi"
    assert answer["id"] and answer["from_team"] == "beta" and answer["to_team"] == "alpha"

    external = iris.cli("tell", "alpha", "third", "--json")
    assert json.loads(external.stdout)["text"] == "echo #3: third"
    assert json.loads(external.stdout)["session_id"] != answer["session_id"]


def test_team_folder_with_dots_underscores_and_spaces(shared: Iris) -> None:
    iris = shared
    folder = Path(iris.teams["odd"]["path"])
    assert folder.name == "sub dir" and folder.parent.name == "my proj.v2_x"
    for turn in (1, 2):
        result = iris.cli("tell", "odd", f"turn {turn}", "--json")
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout)
        assert answer["text"] == f"echo #{turn}: turn {turn}"
    # claude kept the transcript where Iris looks for it (the escaping rule of the facts page).
    assert transcript_file(iris, folder, answer["session_id"]).is_file()


def test_errors_name_the_problem_and_the_fix(iris: Iris, shared: Iris) -> None:
    iris.add_team("alpha")  # never started
    not_running = iris.cli("tell", "alpha", "hi")
    assert not_running.returncode == 1
    assert "irisd is not running" in not_running.stderr

    iris = shared  # nothing below reaches a claude
    known = ", ".join(sorted(iris.teams))
    unknown = iris.cli("tell", "bakend", "hi")
    assert unknown.returncode == 1
    assert f"team 'bakend' is not configured; known teams: {known}" in unknown.stderr

    unknown_from = iris.cli("tell", "alpha", "hi", "--from", "nobody")
    assert "team 'nobody' is not configured" in unknown_from.stderr

    empty = iris.cli("tell", "alpha", "   ")
    assert empty.returncode == 1 and "message is empty" in empty.stderr

    bad_wait = iris.cli("tell", "alpha", "hi", "--timeout", "5")
    assert bad_wait.returncode == 1 and "timeout 5 ms is out of range; did you mean 5000 (5 s)?" in bad_wait.stderr
    typo = iris.cli("tell", "alhpa", "hi")
    assert f"team 'alhpa' is not configured; did you mean 'alpha'? known teams: {known}" in typo.stderr
    bad_result_wait = iris.cli("result", "0123456789abcdef", "--wait", "-1")
    assert bad_result_wait.returncode == 1
    assert "`$.wait_ms`; use 0 (answer at once) or 1000 to 3600000 ms" in bad_result_wait.stderr

    as_json = iris.cli("tell", "nope", "hi", "--json")
    assert json.loads(as_json.stderr)["error"]["code"] == "unknown_team"


def test_claude_that_fails_to_start_is_reported_with_its_stderr(iris: Iris) -> None:
    broken = iris.root / "broken-claude"
    broken.write_text("#!/bin/sh\necho 'Error: invalid API key for this org' >&2\nexit 3\n")
    broken.chmod(0o755)
    iris.settings["claudePath"] = str(broken)
    iris.add_team("alpha")
    iris.start()
    result = iris.cli("tell", "alpha", "hi", "--json")
    assert result.returncode == 1
    answer = json.loads(result.stdout)
    assert answer["status"] == "failed"
    assert "exited with code 3" in answer["error"]
    assert "invalid API key for this org" in answer["error"]

    missing = iris.root / "no-such-claude"
    iris.stop()
    iris.settings["claudePath"] = str(missing)
    iris.start()
    result = iris.cli("tell", "alpha", "hi")
    assert result.returncode == 1
    assert "cannot start" in result.stderr and "settings.claudePath" in result.stderr


def test_bad_clients_do_not_disturb_the_daemon(shared: Iris) -> None:
    iris = shared  # sturdy is this test's

    opened: list[socket.socket] = []

    def raw_connection() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        opened.append(sock)
        sock.settimeout(10)
        sock.connect(str(iris.socket))
        return sock

    def read_reply(sock: socket.socket) -> object:
        header = sock.recv(4, socket.MSG_WAITALL)
        (size,) = struct.unpack(">I", header)
        return decode_server_message(sock.recv(size, socket.MSG_WAITALL))

    raw_connection()  # connects and never says anything

    garbage = raw_connection()
    garbage.sendall(struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1")
    reply = read_reply(garbage)
    assert isinstance(reply, ErrorReply) and reply.code == "protocol"
    assert garbage.recv(1) == b""  # and it was disconnected

    oversized = raw_connection()
    oversized.sendall(struct.pack(">I", 2**31))
    reply = read_reply(oversized)
    assert isinstance(reply, ErrorReply) and "limit" in reply.message

    no_hello = raw_connection()
    no_hello.sendall(encode(ListTeams()))
    reply = read_reply(no_hello)
    assert isinstance(reply, ErrorReply) and "hello" in reply.message

    old_client = raw_connection()
    old_client.sendall(encode(Hello(protocol_version=PROTOCOL_VERSION + 1)))
    reply = read_reply(old_client)
    assert isinstance(reply, ErrorReply) and "protocol" in reply.message

    deep = raw_connection()
    deep.sendall(struct.pack(">I", 3000) + b"\x91" * 3000)  # 3000 nested arrays
    reply = read_reply(deep)
    assert isinstance(reply, ErrorReply)

    half = raw_connection()  # disconnects in the middle of a request
    half.sendall(encode(Hello(protocol_version=PROTOCOL_VERSION))[:3])
    half.close()

    hung_up = raw_connection()  # sends a tell and leaves before the answer
    hung_up.sendall(encode(Hello(protocol_version=PROTOCOL_VERSION)))
    assert isinstance(read_reply(hung_up), Welcome)
    hung_up.sendall(encode(Tell(to_team="sturdy", message="@slow:200 leaving")))
    hung_up.close()

    with Client(iris.socket, timeout=60) as client:
        teams = client.request(ListTeams())
        assert isinstance(teams, TeamsReply) and sorted(t.name for t in teams.teams) == sorted(iris.teams)
        answer = client.request(Tell(to_team="sturdy", message="still here"))
        assert isinstance(answer, TellReply)
        assert answer.tell.text == "echo #2: still here"  # after the abandoned one
    for sock in opened:
        sock.close()
    assert iris.process is not None and iris.process.poll() is None


def test_bad_config_refuses_to_start(iris: Iris) -> None:
    iris.write_config()
    (iris.home / "config.yaml").write_text("settings:\n  responseTimout: 5000\n")
    result = subprocess.run(
        [*_irisd(), "--log-level", "error"], env=iris.env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "unknown key 'settings.responseTimout'" in result.stderr
    assert str(iris.home / "config.yaml") in result.stderr
    assert not iris.socket.exists()


def test_streamed_text_reaches_a_streaming_client(shared: Iris) -> None:
    iris = shared
    pieces: list[str] = []
    with iris.client() as client:
        reply = client.request(
            Tell(to_team="warm", message="@chunks:4 one two three four", stream=True),
            on_event=lambda event: pieces.append(msgspec.json.encode(event).decode()),
        )
    assert isinstance(reply, TellReply) and reply.status == "completed"
    texts = [json.loads(p)["text"] for p in pieces if json.loads(p)["type"] == "tell_text"]
    assert len(texts) >= 4
    assert "".join(texts) == reply.tell.text


def test_claude_retrying_the_api_is_told_to_the_waiting_client(shared: Iris) -> None:
    iris = shared
    events: list[object] = []
    with iris.client() as client:
        reply = client.request(
            Tell(to_team="warm", message="@flaky:1 are you up?", stream=True), on_event=events.append
        )
    assert isinstance(reply, TellReply) and reply.status == "completed"
    assert re.fullmatch(r"echo #\d+: are you up\?", reply.tell.text)  # the retry succeeded
    notices = [e.text for e in events if isinstance(e, TellNotice) and e.tell_id == reply.tell.id]
    assert len(notices) == 1, events
    assert notices[0].startswith("claude is retrying the Anthropic API after HTTP 529")
    assert "(attempt 1 of " in notices[0]
    assert "claude retries the API" in iris.log()


def _irisd() -> list[str]:
    import sys

    return [sys.executable, "-m", "irisd.main"]


def test_a_team_folder_removed_while_irisd_runs_is_named_in_the_error_until_restored(shared: Iris) -> None:
    iris = shared
    folder = Path(iris.teams["gone"]["path"])
    folder.rmdir()
    try:
        result = iris.cli("tell", "gone", "hi", "--json")
    finally:
        folder.mkdir(exist_ok=True)
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "team_unavailable"
    assert f"team 'gone' is unavailable: its folder {folder.resolve()} does not exist" in error["message"]
    # restored (above): the next tell starts claude at once, no cool-down
    assert iris.cli_json("tell", "gone", "back?")["text"] == "echo #1: back?"


def test_the_demo_runs_offline_and_cleans_up(iris: Iris, claude_bin: Path) -> None:
    before = set(Path(tempfile.gettempdir()).glob("iris-demo-*"))
    with socket.socket() as taken:
        # The user's own irisd may hold the default HTTP port: the demo must not need it.
        with contextlib.suppress(OSError):  # already taken by something else: as good
            taken.bind(("127.0.0.1", 1615))
            taken.listen()
        result = iris.cli("demo", "--claude", str(claude_bin), timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "echo #1: What does GET /users return?" in result.stdout
    assert "echo #2: And is the email optional?" in result.stdout  # frontend -> backend continued
    assert set(Path(tempfile.gettempdir()).glob("iris-demo-*")) == before  # nothing left behind
    caches = [iris.user_home / ".cache", *([Path(iris.env["XDG_CACHE_HOME"])] if "XDG_CACHE_HOME" in iris.env else [])]
    left = [path for cache in caches for path in cache.glob("claude-cli-nodejs/*iris-demo*")]
    assert left == [], left  # nor claude's logs of the demo's folders in the user's cache
