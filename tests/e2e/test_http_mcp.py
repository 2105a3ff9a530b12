"""irisd's own children reach Iris over HTTP (/mcp) with a token of their own: the
real claude as the MCP client, the scripted model choosing the tool calls.

What the token decides: the team the child speaks as (naming another is refused), the
tell its nested tells are linked to, and that a stopped child can do nothing more.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from harness import Http, Iris, wait_for
from protocol.messages import GetPair, PairReply, Report, ReportReply

pytestmark = pytest.mark.claude

TOOL = "mcp__iris__team_tell"


def ask(to_team: str, message: str, **extra: str) -> str:
    return f"@tool:{TOOL} " + json.dumps({"toTeam": to_team, "message": message, **extra})


def tell(iris: Iris, team: str, message: str) -> dict[str, object]:
    result = iris.cli("tell", team, message, "--json", timeout=180)
    assert result.stdout, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def child_config(iris: Iris, to_team: str) -> tuple[int, Path, str]:
    """The running child of (external, to_team): its pid, its --mcp-config file, its argv."""
    pair = iris.request(GetPair(to_team=to_team))
    assert isinstance(pair, PairReply) and pair.process.pid is not None, pair
    argv = Path(f"/proc/{pair.process.pid}/cmdline").read_bytes().split(b"\0")
    config = Path(argv[argv.index(b"--mcp-config") + 1].decode())
    return pair.process.pid, config, b" ".join(argv).decode()


def test_a_childs_nested_tell_through_http_mcp_loads_no_mcp_sdk(iris: Iris) -> None:
    """A claude child asks irisd's /mcp what it serves as it starts (server/discover,
    tools/list) and then calls team_tell: irisd answers all of it itself, without the SDK
    (a second of CPU); the nested tell works as ever. With irisd's default settings, so
    nothing preloads it either."""
    for name in ("alpha", "beta"):
        iris.add_team(name)
    iris.start()
    assert tell(iris, "alpha", "hello")["status"] == "completed"
    answer = tell(iris, "alpha", ask("beta", "ping"))  # the warm child's first tool call
    assert answer["status"] == "completed" and "echo #1: ping" in str(answer["text"]), answer
    answer = tell(iris, "alpha", ask("beta", "pong"))
    assert answer["status"] == "completed" and "echo #2: pong" in str(answer["text"]), answer
    assert "MCP over HTTP ready" not in iris.log()


def test_a_childs_long_nested_tell_streams_its_progress_to_the_child_without_the_sdk(iris: Iris) -> None:
    """claude asks for progress: a nested tell that takes a while is answered as an event
    stream (its progress notifications while it runs, then the answer), still without
    the SDK."""
    for name in ("alpha", "beta"):
        iris.add_team(name)
    iris.start()
    answer = tell(iris, "alpha", ask("beta", "@slow:800 @long:5"))
    assert answer["status"] == "completed" and "word1 word2 word3 word4 word5" in str(answer["text"]), answer
    assert "streaming a tools/call's answer" in iris.log() and '"progress":true' in iris.log()
    assert "MCP over HTTP ready" not in iris.log()


def test_a_child_tells_through_http_mcp_with_its_own_token_kept_out_of_argv(iris: Iris) -> None:
    for name in ("alpha", "beta"):
        iris.add_team(name)
    iris.start()
    answer = tell(iris, "alpha", ask("beta", "ping"))
    assert answer["status"] == "completed", answer
    assert "echo #1: ping" in str(answer["text"])

    asked = iris.request(Report(to_team="beta", from_team="alpha", limit=1))
    assert isinstance(asked, ReportReply) and asked.tells, asked
    assert asked.tells[0].message == "ping" and asked.tells[0].status == "completed"
    assert (asked.tells[0].chain_id, asked.tells[0].hops) == (answer["id"], 1)  # linked by the token

    pid, config, argv = child_config(iris, "alpha")
    server = json.loads(config.read_text())["mcpServers"]["iris"]
    assert server["type"] == "http" and server["url"] == f"{iris.http_url}/mcp"
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    assert token and token not in argv and iris.owner_token not in argv
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert "iris_cli" not in argv  # no stdio shim process any more
    children = [p for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]
    assert not any(b"iris_cli" in Path(f"/proc/{p}/cmdline").read_bytes() for p in children)


def test_a_child_naming_another_team_as_the_sender_is_refused(iris: Iris) -> None:
    for name in ("alpha", "beta", "gamma"):
        iris.add_team(name)
    iris.start()
    answer = tell(iris, "alpha", ask("gamma", "I am beta, honest", fromTeam="beta"))
    assert answer["status"] == "completed", answer
    said = str(answer["text"])
    assert said.startswith(f"tool {TOOL} failed:"), said
    assert "fromTeam 'beta' is refused: you are team 'alpha'" in said
    for sender in ("alpha", "beta"):
        report = iris.request(Report(to_team="gamma", from_team=sender))
        assert isinstance(report, ReportReply) and report.tells == []  # nothing was sent


def test_a_stopped_childs_token_is_refused(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    assert tell(iris, "alpha", "hello")["status"] == "completed"
    _, config, _ = child_config(iris, "alpha")
    token = json.loads(config.read_text())["mcpServers"]["iris"]["headers"]["Authorization"]
    http = Http(iris)
    listed = mcp_tools_list(http, token)
    assert listed[0] == 200 and "team_tell" in listed[1], listed
    status, answer = http.json("GET", "/api/teams", headers={"Authorization": token}, auth=False)
    assert status == 200  # a child's token is a caller like any other...
    status, answer = http.json("POST", "/api/approvals/x/approve", headers={"Authorization": token}, auth=False)
    assert status == 403 and answer["code"] == "permission_denied"  # ...that may not decide approvals

    assert iris.cli("sleep", "alpha").returncode == 0
    wait_for(lambda: not config.exists(), 30, "the config file to go with the child")
    assert mcp_tools_list(http, token)[0] == 401
    status, answer = http.json("GET", "/api/teams", headers={"Authorization": token}, auth=False)
    assert status == 401 and answer["code"] == "unauthorized"


def mcp_tools_list(http: Http, authorization: str) -> tuple[int, str]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    headers = {
        "Authorization": authorization,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    status, _, data = http.request("POST", "/mcp", body, headers=headers, auth=False)
    return status, data.decode()


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return -1


def test_irisd_loads_what_mcp_needs_once_ready_before_any_tell(iris: Iris) -> None:
    """Asked to (settings.preloadMcp, off by default: a child's requests no longer need
    it), irisd loads the MCP SDK in the background once ready, and only when some team is
    a local claude."""
    iris.settings["preloadMcp"] = True
    iris.add_team("alpha")
    iris.start()
    assert iris.cli_json("status")  # ready and serving while it loads
    wait_for(lambda: "MCP over HTTP ready" in iris.log(), timeout=60, what="the MCP SDK loaded without a tell")
    assert iris.cli_json("report", "alpha") == []  # no tell, no claude child
