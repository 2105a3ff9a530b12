"""``iris mcp`` driven by the MCP SDK's own client over stdio, as Claude Code drives it:
a real shim subprocess, a real irisd, the real claude against the scripted model.

One daemon (teams alpha and beta) serves the tests that leave it as they found it; its
pairs stay warm from test to test, so the tests compare turn numbers, never fix them.
The tests that need an irisd of their own (other teams, a cold pair, one they start,
stop or restart) keep the ``iris`` fixture."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness import Iris, echoed, started, wait_until
from iris_cli.daemon_control import Layout, read_pid_file, stop_pid
from protocol.messages import (
    UNFINISHED_TELL_STATUSES,
    ApprovalsReply,
    CancelTell,
    Decide,
    GetTell,
    ListApprovals,
    ListTells,
    Report,
    ReportReply,
    TellReply,
)
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

TOOL_NAMES = {
    "team_tell", "team_isAwake", "team_wake", "team_sleep", "team_wake_all", "team_report",
    "team_command", "team_cache_read", "team_cache_clear", "team_teams", "team_getTeamName",
    "team_result", "team_cancel", "team_approvals", "team_approve", "team_deny", "team_questions",
    "team_answer", "team_costs", "team_status", "team_sessions",
}


def iris_command() -> list[str]:
    """The installed ``iris`` script (what Claude Code runs), else ``python -m iris_cli``."""
    script = Path(sys.executable).parent / "iris"
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "iris_cli"]


@asynccontextmanager
async def shim(
    iris: Iris, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, mode: str = "legacy"
) -> AsyncIterator[Client]:
    """An ``iris mcp`` subprocess and an initialized SDK client talking to it."""
    command, *prefix = iris_command()
    params = StdioServerParameters(
        command=command,
        args=[*prefix, "mcp", "--log-level", "info", *args],
        env=env or iris.env,
        cwd=cwd or iris.root,
    )
    with (iris.root / "shim.log").open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> tuple[str, dict[str, Any], bool]:
    result = await client.call_tool(tool, arguments)
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text, result.structured_content, result.is_error


TEAMS = {"alpha": {"description": "The web app"}, "beta": {"description": "The API"}}


def two_teams(iris: Iris) -> tuple[Path, Path]:
    alpha, beta = (iris.add_team(name, **options) for name, options in TEAMS.items())
    return alpha, beta


def folders(iris: Iris) -> tuple[Path, Path]:
    """The folders of the shared daemon's two teams, alpha and beta."""
    return Path(iris.teams["alpha"]["path"]), Path(iris.teams["beta"]["path"])


def leftovers(iris: Iris) -> list[str]:
    """What a test left unfinished on the shared daemon (a tell not finished, an approval
    pending), cancelled or denied here so that the next test is not queued behind it."""
    tells = iris.request(ListTells(limit=200))
    approvals = iris.request(ListApprovals())
    assert isinstance(tells, ReportReply) and isinstance(approvals, ApprovalsReply)
    left = [f"tell {t.id} ({t.status}): {t.message}" for t in tells.tells if t.status in UNFINISHED_TELL_STATUSES]
    left += [f"approval {a.id} of {a.tool_name}" for a in approvals.approvals]
    for approval in approvals.approvals:
        iris.request(Decide(approval_id=approval.id, allow=False, reason="left by a test"))
    for tell in tells.tells:
        if tell.status in UNFINISHED_TELL_STATUSES:
            iris.request(CancelTell(tell_id=tell.id))
    return left


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    with started(tmp_path_factory.mktemp("shim"), model_url=model.base_url, claude=claude_bin, teams=TEAMS) as iris:
        yield iris


@pytest.fixture
def shared(daemon: Iris) -> Iterator[Iris]:
    """The module's daemon, for a test that must leave nothing unfinished on it."""
    yield daemon
    left = leftovers(daemon)
    assert not left, f"the test left this unfinished on the shared daemon: {left}"


async def test_initialize_and_list_the_tools(shared: Iris) -> None:
    async with shim(shared) as client:
        assert client.server_info is not None and client.server_info.name == "iris"
        assert "team_tell" in (client.instructions or "")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    tell = tools["team_tell"]
    assert tell.input_schema["required"] == ["message"]
    assert tell.annotations is not None and tell.annotations.read_only_hint is False
    assert tools["team_teams"].annotations is not None and tools["team_teams"].annotations.read_only_hint


async def test_the_newer_protocol_era_works_too(shared: Iris) -> None:
    async with shim(shared, mode="auto") as client:
        assert len((await client.list_tools()).tools) == len(TOOL_NAMES)
        _text, data, is_error = await call(client, "team_teams")
    assert not is_error and [t["name"] for t in data["teams"]] == ["alpha", "beta"]


async def test_identity_comes_from_the_folder_or_the_team_option(iris: Iris) -> None:
    outer = iris.add_team("outer")
    inner = iris.add_team("inner", folder="outer/inner")
    (inner / "src").mkdir()
    link = iris.root / "link-to-outer"
    link.symlink_to(outer)
    iris.start()
    cases = [
        (inner / "src", (), "inner", "folder"),  # the deepest team folder wins
        (link, (), "outer", "folder"),  # real paths are compared
        (iris.root, (), None, "outside"),
        (iris.root, ("--team", "inner"), "inner", "--team"),
    ]
    for cwd, args, team, source in cases:
        async with shim(iris, *args, cwd=cwd) as client:
            text, data, is_error = await call(client, "team_getTeamName")
        assert not is_error, text
        assert (data["team"], data["source"]) == (team, source), cwd


async def test_tell_result_and_timeouts(shared: Iris) -> None:
    alpha, _ = folders(shared)
    async with shim(shared, cwd=alpha) as client:
        text, data, is_error = await call(client, "team_tell", toTeam="beta", message="hello")
        turn, words = echoed(text)
        assert (words, is_error) == ("hello", False)
        assert (data["from_team"], data["to_team"], data["status"]) == ("alpha", "beta", "completed")
        first, said = data["id"], text

        # fromTeam may repeat who we are; the same pair's conversation goes on.
        text, _, _ = await call(client, "team_tell", toTeam="beta", message="again", fromTeam="alpha")
        assert text == f"echo #{turn + 1}: again"

        # -1: the id at once; the answer later.
        text, data, is_error = await call(client, "team_tell", toTeam="beta", message="later", timeout=-1)
        assert not is_error and data["status"] == "in_progress" and "team_result" in text
        text, data, _ = await call(client, "team_result", tellId=data["id"], wait=30_000)
        assert (text, data["status"]) == (f"echo #{turn + 2}: later", "completed")

        # N ms: the answer so far, then the rest with team_result.
        slow = "@chunks:8 @slow:500 one two three four five six seven eight"
        text, data, is_error = await call(client, "team_tell", toTeam="beta", message=slow, timeout=1000)
        assert not is_error and data["status"] == "in_progress"
        assert f'team_result {{"tellId": "{data["id"]}"}}' in text
        text, data, _ = await call(client, "team_result", tellId=data["id"], wait=60_000)
        assert data["status"] == "completed" and text == f"echo #{turn + 3}: one two three four five six seven eight"

        text, data, _ = await call(client, "team_result", tellId=first)
        assert text == said


# Claude Code 2.1.330 speaks the 2026-07-28 era ("auto" negotiates it); older clients the
# initialize handshake ("legacy").
ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


@ERAS
async def test_progress_notifications_carry_the_streamed_text(shared: Iris, mode: str) -> None:
    alpha, _ = folders(shared)
    seen: list[tuple[float, float, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((trio.current_time(), progress, message or ""))

    async with shim(shared, cwd=alpha, mode=mode) as client:
        arguments = {"toTeam": "beta", "message": "@chunks:5 @slow:600 one two three four five"}  # batches: 0.25 s+
        result = await client.call_tool("team_tell", arguments, progress_callback=on_progress)
        answered = trio.current_time()
    assert not result.is_error
    final = result.structured_content["text"]
    assert echoed(final)[1] == "one two three four five"
    progress = [p for _, p, _ in seen]
    assert progress == sorted(set(progress))  # strictly increasing
    texts = [m for _, _, m in seen if m.startswith("echo")]
    assert len(texts) >= 3, seen
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    # The answer so far, to the last one sent: one held when the result comes is dropped (the
    # result says more), so the last may be the whole answer or, on a busy machine, a part.
    assert final.startswith(texts[-1])
    assert seen[0][0] < answered - 0.6  # they arrived while the tell ran, not with the answer


@ERAS
async def test_cancelling_the_call_interrupts_the_tell(shared: Iris, mode: str) -> None:
    iris = shared
    alpha, _ = folders(iris)
    working = trio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message and "waiting for the model" in message:  # the phase @hang stays in
            working.set()

    async with shim(iris, cwd=alpha, mode=mode) as client:
        with trio.move_on_after(60):
            async with trio.open_nursery() as nursery:

                async def hanging_tell() -> None:
                    arguments = {"toTeam": "beta", "message": "@hang forever"}
                    await client.call_tool("team_tell", arguments, progress_callback=on_progress)

                nursery.start_soon(hanging_tell)
                await working.wait()
                nursery.cancel_scope.cancel()  # the SDK client sends notifications/cancelled

        report = await trio.to_thread.run_sync(iris.request, Report(to_team="beta", from_team="alpha"))
        assert isinstance(report, ReportReply)
        tell_id = report.tells[0].id
        with trio.fail_after(30):
            while True:
                reply = await trio.to_thread.run_sync(iris.request, GetTell(tell_id=tell_id))
                assert isinstance(reply, TellReply)
                if reply.tell.status != "running":
                    break
                await trio.sleep(0.1)
        assert reply.tell.status == "interrupted"

        # The pair serves the next tell as usual.
        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="after")
        assert not is_error and text.endswith("after")

        # team_cancel does the same by id.
        _, started, _ = await call(client, "team_tell", toTeam="beta", message="@hang again", timeout=-1)
        text, data, is_error = await call(client, "team_cancel", tellId=started["id"])
        assert not is_error and data["tell_status"] == "interrupted", text


@ERAS
async def test_a_call_without_a_progress_token_cancelled_cancels_its_tell_too(shared: Iris, mode: str) -> None:
    """A client that asks no progress gets no events of its tell but the one that names it
    (``Tell.announce``): its cancelled call still interrupts the tell. In the 2026-07-28 era
    ("auto": the client discovers first) the call takes ``iris mcp``'s fast path."""
    iris = shared
    alpha, _ = folders(iris)

    def running() -> str | None:
        report = iris.request(Report(to_team="beta", from_team="alpha"))
        assert isinstance(report, ReportReply)
        return next((t.id for t in report.tells if t.status == "running"), None)

    async with shim(iris, cwd=alpha, mode=mode) as client:
        with trio.move_on_after(120):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "team_tell", {"toTeam": "beta", "message": "@hang forever"})
                with trio.fail_after(90):
                    tell_id = await wait_until(lambda: trio.to_thread.run_sync(running), every=0.1)
                nursery.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
        with trio.fail_after(30):
            await wait_until(lambda: trio.to_thread.run_sync(lambda: not running()), every=0.1)
        reply = await trio.to_thread.run_sync(iris.request, GetTell(tell_id=tell_id))
        assert isinstance(reply, TellReply) and reply.tell.status == "interrupted", reply


async def test_pairs_reports_transcripts_and_commands(iris: Iris) -> None:
    alpha, _ = two_teams(iris)
    iris.start()
    async with shim(iris, cwd=alpha) as client:
        text, data, is_error = await call(client, "team_teams")
        assert not is_error
        assert text.splitlines()[0].startswith("- alpha (you): The web app [asleep]")
        assert [(t["name"], t["description"]) for t in data["teams"]] == [
            ("alpha", "The web app"), ("beta", "The API")
        ]

        text, data, is_error = await call(client, "team_isAwake", team="beta")
        assert not is_error and data["process"]["state"] == "stopped" and "asleep" in text

        text, data, is_error = await call(client, "team_wake", team="beta")
        assert not is_error and data["process"]["state"] in ("idle", "spawning"), text
        text, data, _ = await call(client, "team_isAwake")
        assert data["teams"]["beta"]["awake"] and not data["teams"]["alpha"]["awake"]
        assert data["pool"]["max_processes"] == 10

        text, data, _ = await call(client, "team_tell", toTeam="beta", message="remember me")
        tell_id = data["id"]
        text, data, is_error = await call(client, "team_report", team="beta")
        assert not is_error and tell_id in text and "remember me" in text
        assert data["tells"][0]["id"] == tell_id

        text, data, is_error = await call(client, "team_cache_read", tellId=tell_id)
        assert not is_error and "result (success): echo #1: remember me" in text
        assert data["tell"]["id"] == tell_id and data["entries"]
        latest, _, _ = await call(client, "team_cache_read", team="beta")
        assert latest == text

        text, data, is_error = await call(client, "team_command", team="beta", command="compact")
        assert not is_error and (data["kind"], data["message"]) == ("command", "/compact"), text
        assert text == "/compact ran in alpha->beta: Compacted"

        text, data, is_error = await call(client, "team_sleep", team="beta")
        assert not is_error and data["process"]["state"] == "stopped", text

        text, data, is_error = await call(client, "team_wake_all", parallel=True)
        assert not is_error, text
        assert {p["to_team"] for p in data["processes"]} == {"beta"}  # every team but ours

        text, data, is_error = await call(client, "team_cache_clear", team="beta")
        assert not is_error and data["cleared"] >= 1, text
        text, data, _ = await call(client, "team_report", team="beta")
        assert tell_id not in text

        text, data, is_error = await call(client, "team_tell", toTeam="beta", message="note", persist=True)
        assert not is_error and data["notification"]["status"] in ("pending", "delivering", "delivered")


async def test_errors_are_tool_errors_that_say_what_to_do(shared: Iris) -> None:
    iris = shared
    alpha, _ = folders(iris)
    async with shim(iris, cwd=alpha) as client:
        text, data, is_error = await call(client, "team_tell", toTeam="bakend", message="hi")
        assert is_error and "team 'bakend' is not configured; known teams: alpha, beta" in text
        assert data["error"]["code"] == "unknown_team"

        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="hi", fromTeam="beta")
        assert is_error and "fromTeam 'beta' is refused: you are team 'alpha'" in text

        text, _, is_error = await call(client, "team_tell", team="beta", message="hi")
        assert is_error and "unknown field `team`" in text and "toTeam" in text

        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="hi", timeout=5)
        assert is_error and "timeout 5 ms is out of range" in text

        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="   ")
        assert is_error and "message is empty" in text

        text, _, is_error = await call(client, "team_result", tellId="nope")
        assert is_error and "no tell with id 'nope'" in text

        text, _, is_error = await call(client, "team_nope")
        assert is_error and "unknown tool 'team_nope'" in text

    async with shim(iris, cwd=iris.root) as client:  # the external caller may not pose as a team
        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="hi", fromTeam="alpha")
        assert is_error and "external caller" in text


async def test_the_shim_starts_the_daemon_and_survives_its_restart(iris: Iris) -> None:
    alpha, _ = two_teams(iris)
    iris.write_config()
    layout = Layout.from_env(iris.env)
    try:
        async with shim(iris, "--no-autostart", cwd=alpha) as client:
            text, _, is_error = await call(client, "team_teams")
            assert is_error and "irisd is not running" in text

        async with shim(iris, cwd=alpha) as client:
            text, _, is_error = await call(client, "team_teams")  # starts irisd, detached
            assert not is_error, text
            pid = read_pid_file(layout)
            assert pid is not None
            await trio.to_thread.run_sync(stop_pid, pid)

            text, _data, is_error = await call(client, "team_tell", toTeam="beta", message="back")
            assert (text, is_error) == ("echo #1: back", False)  # started again, transparently
    finally:
        pid = read_pid_file(layout)
        if pid is not None:
            await trio.to_thread.run_sync(stop_pid, pid)


async def test_a_daemon_restart_between_calls_is_invisible(iris: Iris) -> None:
    alpha, _ = two_teams(iris)
    iris.start()
    async with shim(iris, cwd=alpha) as client:
        _, _, is_error = await call(client, "team_teams")
        assert not is_error
        await trio.to_thread.run_sync(iris.stop)
        await trio.to_thread.run_sync(iris.start)
        text, _, is_error = await call(client, "team_tell", toTeam="beta", message="still there")
        assert (text, is_error) == ("echo #1: still there", False)


def test_stdout_carries_nothing_but_json_rpc(shared: Iris) -> None:
    iris = shared
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "team_teams", "arguments": {}}},
    ]
    log = iris.root / "raw-shim.log"
    with log.open("w") as stderr, subprocess.Popen(
        [*iris_command(), "mcp", "--log-level", "debug"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=iris.env, cwd=iris.root,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            process.stdin.flush()
            replies = [json.loads(process.stdout.readline()) for _ in range(3)]
            process.stdin.close()  # the client leaves: the shim exits, having written nothing more
            assert process.stdout.read() == ""
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    assert [r.get("id") for r in replies] == [1, 2, 3]
    assert all(r["jsonrpc"] == "2.0" and "result" in r for r in replies), replies
    assert "alpha" in replies[2]["result"]["content"][0]["text"]
    assert "iris.mcp" in log.read_text()  # the logs went to stderr


async def test_the_person_at_another_claude_code_decides_approvals(shared: Iris) -> None:
    iris = shared
    alpha, beta = folders(iris)
    from protocol.messages import GetTell, Tell

    asked = iris.request(Tell(to_team="beta", message='@tool:Bash {"command": "echo hi > allowed.txt"}', timeout_ms=-1))
    async with shim(iris, cwd=alpha) as client:
        for _ in range(600):
            text, data, is_error = await call(client, "team_approvals")
            if data["approvals"]:
                break
            await trio.sleep(0.1)
        (approval,) = data["approvals"]
        assert not is_error and "$ echo hi > allowed.txt" in text and approval["tool_name"] == "Bash"
        text, data, is_error = await call(client, "team_approve", approvalId=approval["id"])
        assert not is_error and data["approval"]["status"] == "allowed"
        assert data["approval"]["decided_by"] == "alpha (Claude Code)"
        text, _, is_error = await call(client, "team_deny", approvalId=approval["id"])
        assert is_error and "already allowed" in text
    done = iris.request(GetTell(tell_id=asked.tell.id, wait_ms=60_000))
    assert done.tell.status == "completed" and (beta / "allowed.txt").exists()


async def test_a_tell_queued_behind_an_approval_asks_the_calling_model_to_get_it_decided(shared: Iris) -> None:
    iris = shared
    _, beta = folders(iris)
    from protocol.messages import Tell

    asked = iris.request(Tell(to_team="beta", message='@tool:Bash {"command": "echo hi > ahead.txt"}', timeout_ms=-1))
    approval = iris.wait_for_approval(120)["id"]
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with shim(iris) as client:  # not in a team's folder: the same pair as the first tell (external->beta)
        arguments = {"toTeam": "beta", "message": "status?", "timeout": 5000}
        result = await client.call_tool("team_tell", arguments, progress_callback=on_progress)
    (content,) = result.content
    assert isinstance(content, types.TextContent) and not result.is_error
    behind = f"queued behind 1 tell; tell {asked.tell.id[:10]} ahead awaits your approval of Bash `echo hi > ahead.txt`"
    assert behind in content.text and f"run 'iris approve {approval[:10]}'" in content.text, content.text
    assert f"ask your person to run `iris approve {approval}`" in content.text
    assert any(behind in message and "ask your person" in message for message in seen), seen
    assert iris.cli("approve", approval).returncode == 0
    assert iris.cli_json("result", result.structured_content["id"], "--wait", "60000")["status"] == "completed"
    assert (beta / "ahead.txt").exists()


ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
SDK_MODULES = ("mcp.", "mcp_types", "pydantic")  # what a session of the 2026-07-28 era never imports


def imported_modules(stderr: str) -> set[str]:
    """The modules a process imported, from its ``-X importtime`` report on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_session_of_the_newer_era_never_loads_the_sdk(shared: Iris) -> None:
    """What Claude Code 2.1.330 sends (discover, list, a call with progress, a cancelled
    call) answered by ``iris mcp`` without importing the MCP SDK or pydantic."""
    iris = shared
    alpha, _ = folders(iris)
    log = iris.root / "lean-shim.log"
    env = {**iris.env, "PYTHONPROFILEIMPORTTIME": "1"}

    def request(request_id: int, method: str, params: dict[str, Any]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"

    def tell(message: str, token: int) -> dict[str, Any]:
        meta = {**ENVELOPE, "progressToken": token}
        return {"name": "team_tell", "arguments": {"toTeam": "beta", "message": message}, "_meta": meta}

    with log.open("w") as stderr, subprocess.Popen(
        [*iris_command(), "mcp", "--log-level", "debug"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=alpha,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        def send(line: str) -> None:
            stdin.write(line)
            stdin.flush()

        def until(request_id: int) -> list[dict[str, Any]]:
            lines = [json.loads(stdout.readline())]
            while lines[-1].get("id") != request_id:
                lines.append(json.loads(stdout.readline()))
            return lines

        try:
            send(request(1, "server/discover", {"_meta": ENVELOPE}))
            (discovered,) = until(1)
            send(request(2, "tools/list", {"_meta": ENVELOPE}))
            (listed,) = until(2)
            send(request(3, "tools/call", tell("@chunks:3 @slow:300 one two three", 3)))
            *progress, answered = until(3)
            send(request(4, "tools/call", tell("@hang forever", 4)))
            line = json.loads(stdout.readline())
            while "waiting for the model" not in line["params"]["message"]:  # only its progress comes
                line = json.loads(stdout.readline())
            send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}) + "\n")
            send(request(5, "tools/list", {"_meta": ENVELOPE}))
            after = until(5)
            stdin.close()
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    assert discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "iris"
    assert {tool["name"] for tool in listed["result"]["tools"]} == TOOL_NAMES
    assert echoed(answered["result"]["structuredContent"]["text"])[1] == "one two three"
    assert progress and all(line["params"]["progressToken"] == 3 for line in progress)
    assert all(line.get("id") != 4 for line in after)  # the cancelled call is not answered
    report = iris.request(Report(to_team="beta", from_team="alpha"))
    assert isinstance(report, ReportReply) and report.tells[0].status in ("interrupted", "running")
    ended = iris.request(GetTell(tell_id=report.tells[0].id, wait_ms=30_000))  # its interrupt may take a moment
    assert isinstance(ended, TellReply) and ended.tell.status == "interrupted", ended
    loaded = imported_modules(log.read_text())
    assert "iris_mcp.fastpath" in loaded  # the report is there
    assert not [m for m in loaded if m.startswith(SDK_MODULES)], sorted(m for m in loaded if m.startswith(SDK_MODULES))


def test_an_initialize_first_loads_the_sdk_and_it_serves_the_session(shared: Iris) -> None:
    iris = shared
    log = iris.root / "sdk-shim.log"
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "team_teams", "arguments": {}}},
    ]
    with log.open("w") as stderr, subprocess.Popen(
        [*iris_command(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
        env={**iris.env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=iris.root,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            process.stdin.flush()
            replies = [json.loads(process.stdout.readline()) for _ in range(2)]
            process.stdin.close()
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    assert replies[0]["result"]["protocolVersion"] == "2025-11-25"
    assert "alpha" in replies[1]["result"]["content"][0]["text"]
    assert {"mcp_types", "mcp.server.lowlevel.server"} <= imported_modules(log.read_text())
