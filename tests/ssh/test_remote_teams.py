"""Teams on another machine: a real irisd, a real sshd on loopback letting in another
user with its own HOME, the real claude running as that user (so its sessions are
provably remote) and the scripted model."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, claude_under_test_version, wait_for
from iris_cli.doctor import Context, check_remote_teams
from protocol.messages import GetPair, GetStatus, GetTell, ProcessInfo, Report, ReportReply, Tell
from scripted_model import ScriptedModel
from ssh.sshd import SshServer, command_lines

pytestmark = pytest.mark.claude


def add_remote_team(
    iris: Iris, name: str, sshd: SshServer, folder: str, claude: str, model: ScriptedModel, **options: Any
) -> None:
    iris.teams[name] = {
        "path": folder,
        "host": sshd.destination,
        "sshOptions": sshd.ssh_options(),
        "claudePath": claude,
        "env": {
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
        **options,
    }


def tell(iris: Iris, team: str, message: str) -> dict[str, Any]:
    result = iris.cli("tell", team, message, "--json")
    assert result.returncode == 0, result.stdout + result.stderr + iris.log()[-3000:]
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def pair(iris: Iris, team: str) -> ProcessInfo:
    return iris.request(GetPair(to_team=team)).process  # type: ignore[no-any-return]


def remote_claudes(sshd: SshServer) -> list[str]:
    return [line for line in command_lines(sshd.remote_processes()) if "sshd" not in line]


def test_a_remote_team_answers_and_continues_its_conversation_there_across_a_restart(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    add_remote_team(iris, "far", sshd, remote_folder, remote_claude, model)
    iris.start()
    first = tell(iris, "far", "hello over there")
    assert first["status"] == "completed" and first["text"] == "echo #1: hello over there"
    assert first["new_session"]
    assert pair(iris, "far").host == sshd.destination
    status = iris.cli("status")
    assert sshd.destination in status.stdout, status.stdout
    # claude keeps the session in the remote user's HOME, not in irisd's CLAUDE_CONFIG_DIR.
    escaped = "".join(c if c.isalnum() else "-" for c in remote_folder)
    assert (sshd.home / ".claude" / "projects" / escaped / f"{first['session_id']}.jsonl").exists()
    assert not list(iris.claude_config.glob(f"projects/*/{first['session_id']}.jsonl"))
    assert tell(iris, "far", "and again")["text"] == "echo #2: and again"

    assert iris.stop() == 0
    wait_for(lambda: not remote_claudes(sshd), timeout=30, what="the remote claude to stop with irisd")
    iris.start()
    again = tell(iris, "far", "after the restart")
    assert again["text"] == "echo #3: after the restart"  # resumed on the remote side
    assert again["session_id"] == first["session_id"] and not again.get("new_session")
    sessions = json.loads(iris.cli("sessions", "--json").stdout)
    assert [(s["to_team"], s.get("transcript_exists", True)) for s in sessions] == [("far", True)]

    slept = iris.cli("sleep", "far")
    assert slept.returncode == 0, slept.stdout + slept.stderr
    wait_for(lambda: not remote_claudes(sshd), timeout=30, what="no remote claude after sleep")


def test_killing_the_ssh_client_mid_tell_interrupts_it_and_leaves_no_remote_process(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    add_remote_team(iris, "far", sshd, remote_folder, remote_claude, model)
    iris.start()
    tell(iris, "far", "warm up")
    started = iris.request(Tell(to_team="far", message="@slow:300 @chunks:100 a long answer", timeout_ms=-1))
    tell_id = started.tell.id
    wait_for(lambda: iris.request(GetTell(tell_id=tell_id)).tell.text, what="streamed text")
    ssh_pid = pair(iris, "far").pid
    assert ssh_pid is not None and remote_claudes(sshd)
    os.kill(ssh_pid, signal.SIGKILL)  # the connection drops
    ended = wait_for(
        lambda: (r := iris.request(GetTell(tell_id=tell_id))).tell.status != "running" and r, what="the end"
    )
    assert ended.tell.status == "interrupted"
    assert f"the ssh connection to {sshd.destination} was cut" in ended.tell.error
    assert ended.tell.text  # what it had said is kept
    wait_for(lambda: not remote_claudes(sshd), timeout=30, what="no remote process left")
    assert tell(iris, "far", "are you back?")["status"] == "completed"  # a new connection resumes


def test_an_unreachable_host_fails_fast_with_ssh_s_message_and_blocks_no_other_team(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    options = sshd.ssh_options()
    options[options.index("-p") + 1] = "1"  # nothing listens there
    add_remote_team(iris, "gone", sshd, remote_folder, remote_claude, model, sshOptions=options)
    closed = sshd.ssh_options(forwarding=False)
    add_remote_team(iris, "closed", sshd, remote_folder, remote_claude, model, sshOptions=closed)
    iris.add_team("near")
    iris.start()
    waiting = iris.request(Tell(to_team="gone", message="anyone?", timeout_ms=-1))
    assert tell(iris, "near", "hi")["text"] == "echo #1: hi"  # not held up
    started = time.monotonic()
    failed = iris.cli("tell", "gone", "anyone there?", "--json")
    assert time.monotonic() - started < 15
    assert failed.returncode == 1
    error = json.loads(failed.stdout)["error"]
    assert f"the ssh connection to {sshd.destination} failed" in error and "Connection refused" in error
    assert iris.request(GetTell(tell_id=waiting.tell.id)).tell.status == "failed"
    gone = pair(iris, "gone")
    assert gone.state == "failed" and "Connection refused" in gone.reason
    # A host whose sshd forwards no port: every start fails the same way, and says why.
    shut = iris.cli("tell", "closed", "anyone?", "--json")
    assert shut.returncode == 1, shut.stdout + shut.stderr
    error = json.loads(shut.stdout)["error"]
    assert "claude keeps crashing on start (3 times): " in error, error
    assert f"the ssh connection to {sshd.destination} could not forward port " in error
    assert "its sshd allows no TCP forwarding (AllowTcpForwarding, PermitListen)" in error
    wait_for(lambda: not remote_claudes(sshd), timeout=30, what="no remote process left by the failed starts")
    assert iris.request(GetStatus()).processes  # and irisd is fine


def test_doctor_checks_each_remote_team_host_folder_and_claude(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    add_remote_team(iris, "far", sshd, remote_folder, remote_claude, model)
    iris.write_config()
    found = check_remote_teams(Context(env=iris.env))
    assert found.verdict == "ok" and f"far ({sshd.destination}: claude {claude_under_test_version()})" in found.detail
    add_remote_team(iris, "lost", sshd, "/no/such/folder", remote_claude, model)
    iris.write_config()
    lost = check_remote_teams(Context(env=iris.env))
    assert lost.verdict == "fail" and "lost: the folder /no/such/folder does not exist on" in lost.detail
    del iris.teams["lost"]
    options = sshd.ssh_options()
    options[options.index("-p") + 1] = "1"
    add_remote_team(iris, "gone", sshd, remote_folder, remote_claude, model, sshOptions=options)
    iris.write_config()
    gone = check_remote_teams(Context(env=iris.env))
    assert gone.verdict == "fail" and "gone: the ssh connection to" in gone.detail
    assert "Connection refused" in gone.detail and "sshOptions" in gone.fix
    del iris.teams["gone"]
    closed = sshd.ssh_options(forwarding=False)
    add_remote_team(iris, "closed", sshd, remote_folder, remote_claude, model, sshOptions=closed)
    iris.write_config()
    shut = check_remote_teams(Context(env=iris.env))
    assert shut.verdict == "fail", shut
    assert shut.detail == (
        f"closed: the ssh connection to {sshd.destination} could not forward a port back to irisd: its sshd "
        "allows no TCP forwarding (AllowTcpForwarding, PermitListen), which the team's claude needs to reach Iris"
    )
    assert "AllowTcpForwarding" in shut.fix and "no-port-forwarding" in shut.fix


def test_sleep_force_mid_tell_stops_the_remote_claude_and_the_tool_it_started(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    add_remote_team(iris, "far", sshd, remote_folder, remote_claude, model, permissions="skip")
    iris.start()
    # A tool that runs until stopped (claude refuses a plain long sleep).
    command = json.dumps({"command": "tail -f /dev/null --pid=1 -s 7"})
    busy = iris.request(Tell(to_team="far", message=f"@tool:Bash {command}", timeout_ms=-1))
    wait_for(lambda: any("tail -f /dev/null" in line for line in remote_claudes(sshd)), timeout=90,
             what="the remote claude's tool to run")

    slept = iris.cli("sleep", "far", "--force")
    assert slept.returncode == 0, slept.stdout + slept.stderr
    ended = iris.request(GetTell(tell_id=busy.tell.id)).tell
    assert ended.status == "interrupted" and "stopped" in ended.error
    wait_for(lambda: not remote_claudes(sshd), timeout=30, what="no remote claude and no tail left")
    assert pair(iris, "far").state == "stopped"


def test_a_remote_team_tells_a_local_one_through_its_own_forward_with_its_own_token(
    iris: Iris, sshd: SshServer, remote_folder: str, remote_claude: str, model: ScriptedModel
) -> None:
    add_remote_team(iris, "far", sshd, remote_folder, remote_claude, model)
    iris.add_team("near")
    iris.start()
    request = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "near", "message": "from over there"})
    outer = tell(iris, "far", request)
    assert outer["status"] == "completed", outer
    said = str(outer["text"]).removeprefix("tool mcp__iris__team_tell said: ")
    assert said != outer["text"], outer["text"]  # the tool answered (no refusal, no missing tool)
    nested_reply = json.loads(said)
    assert (nested_reply["status"], nested_reply["text"]) == ("completed", "echo #1: from over there")

    # The local team was told by the remote one (the token said who), chained to the outer tell.
    asked = iris.request(Report(to_team="near", from_team="far", limit=5))
    assert isinstance(asked, ReportReply) and len(asked.tells) == 1, asked
    nested = asked.tells[0]
    assert (nested.message, nested.status, nested.from_team) == ("from over there", "completed", "far")
    assert (nested.chain_id, nested.hops) == (outer["id"], 1) and nested.id == nested_reply["id"]
    # The nested answer is in the remote claude's own transcript, in the remote HOME.
    escaped = "".join(c if c.isalnum() else "-" for c in remote_folder)
    transcript = sshd.home / ".claude" / "projects" / escaped / f"{outer['session_id']}.jsonl"
    assert "echo #1: from over there" in transcript.read_text()

    # The way there: a forward bound on the remote loopback only, to irisd's own port.
    ssh_pid = pair(iris, "far").pid
    assert ssh_pid is not None
    ssh_argv = Path(f"/proc/{ssh_pid}/cmdline").read_bytes().decode().split("\0")
    listen, _, target = ssh_argv[ssh_argv.index("-R") + 1].partition(":")[2].partition(":")
    assert target == iris.http_url.removeprefix("http://")
    assert listening_on(int(listen)) == ["127.0.0.1"]
    # The child's token: in a 0600 file of the remote user's, in no process's command line.
    claude = next(line for line in remote_claudes(sshd) if "--mcp-config" in line)
    config = Path(claude.split("--mcp-config ", 1)[1].split()[0])
    info = config.stat()
    assert (stat.S_IMODE(info.st_mode), stat.S_IMODE(config.parent.stat().st_mode)) == (0o600, 0o700)
    assert info.st_uid == sshd.uid
    server = json.loads(config.read_text())["mcpServers"]["iris"]
    assert server["url"] == f"http://127.0.0.1:{listen}/mcp"
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    assert len(token) >= 32 and token != iris.owner_token
    everyone = command_lines([int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()])
    assert not [line for line in everyone if token in line]


def listening_on(port: int) -> list[str]:
    """The addresses with a socket listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                v4 = ".".join(str(b) for b in reversed(bytes.fromhex(address)))
                found.append(v4 if table == "tcp" else f"IPv6 {address}")
    return found
