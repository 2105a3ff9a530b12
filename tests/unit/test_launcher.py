"""Launchers without running anything: the command lines, the session check of a local
child, and how an ssh failure is described."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from iris_common.paths import session_file
from irisd.claude.launcher import IrisEndpoint, LaunchSpec, LocalLauncher, SshLauncher

SESSION = "0b6f8f5e-1c2d-4e3f-9a8b-7c6d5e4f3a2b"


async def test_a_local_child_runs_in_the_team_folder_and_resumes_what_claude_has_on_disk(tmp_path: Path) -> None:
    launcher = LocalLauncher(claude_path="claude", folder=str(tmp_path), claude_config_dir=str(tmp_path / "cfg"),
                             environment=lambda: {"A": "1"})
    command = launcher.command(LaunchSpec(session_id=SESSION, resume=False, mcp_config='{"x": 1}'))
    assert command.cwd == str(tmp_path) and command.env == {"A": "1"} and launcher.host == ""
    assert command.argv[0].endswith("claude") and command.argv[1] == "-p" and "--session-id" in command.argv
    assert command.argv[command.argv.index("--mcp-config") + 1] == '{"x": 1}'
    assert await launcher.can_resume(SESSION) is False
    transcript = session_file(tmp_path / "cfg", str(tmp_path), SESSION)
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n")
    assert await launcher.can_resume(SESSION) is True
    assert launcher.describe_exit(1, "oops", "claude exited with code 1") == "claude exited with code 1"


def test_a_remote_child_is_one_quoted_ssh_command_with_the_team_env_and_a_reverse_forward() -> None:
    launcher = SshLauncher(
        destination="me@build-box",
        folder="/srv/my project",
        claude_path="/opt/claude/bin/claude",
        ssh_options=["-p", "2222"],
        env={"ANTHROPIC_API_KEY": "k'ey", "FOO": "a b"},
        local_env=lambda: {"SSH_AUTH_SOCK": "/run/agent"},
        forward_port=lambda: 41234,
    )
    spec = LaunchSpec(session_id=SESSION, resume=True, endpoint=IrisEndpoint("http://127.0.0.1:1615/mcp", "s3cr3t"))
    command = launcher.command(spec)
    argv = command.argv
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and argv[argv.index("-p") + 1] == "2222"
    assert argv[argv.index("-R") + 1] == "127.0.0.1:41234:127.0.0.1:1615"  # remote loopback only
    assert argv[-3:-1] == ["--", "me@build-box"] and command.env == {"SSH_AUTH_SOCK": "/run/agent"}
    assert command.cwd == "/"  # the team's folder is on the other host
    words = shlex.split(argv[-1])  # what the remote login shell sees
    assert words[:4] == ["exec", "env", "IRIS_FOLDER=/srv/my project", "IRIS_CLAUDE=/opt/claude/bin/claude"]
    folder = words[4].removeprefix("IRIS_DIR=")
    assert folder.startswith("/tmp/iris-") and words[5:7] == ["IRIS_ENV_LINES=2", "IRIS_MCP=1"]
    claude = words[words.index("iris-remote") + 1 :]
    assert claude[0] == "/opt/claude/bin/claude" and claude[claude.index("--resume") + 1] == SESSION
    assert claude[claude.index("--mcp-config") + 1] == f"{folder}/mcp.json"
    # The env and the token travel in the first lines of input, never in a command line.
    assert "s3cr3t" not in argv[-1] and "k'ey" not in argv[-1] and "a b" not in argv[-1]
    first, second, mcp, rest = command.preamble.split(b"\n")
    assert (first, second, rest) == (b"ANTHROPIC_API_KEY=k'ey", b"FOO=a b", b"")
    config = json.loads(mcp)
    assert config["mcpServers"]["iris"] == {
        "type": "http",
        "url": "http://127.0.0.1:41234/mcp",
        "headers": {"Authorization": "Bearer s3cr3t", "Host": "127.0.0.1:1615"},  # irisd's name, not the tunnel's
    }
    assert launcher.host == "me@build-box"


def test_the_forward_port_is_new_for_each_start_and_below_the_ephemeral_ports() -> None:
    launcher = SshLauncher(destination="box", folder="/srv/p")
    spec = LaunchSpec(session_id=SESSION, resume=False, endpoint=IrisEndpoint("http://127.0.0.1:1615/mcp", "t"))
    ports = set()
    for _ in range(20):
        argv = launcher.command(spec).argv
        ports.add(int(argv[argv.index("-R") + 1].split(":")[1]))
    assert len(ports) > 1 and all(10000 <= port < 32768 for port in ports)  # Linux's start at 32768


def test_a_remote_child_without_an_endpoint_gets_no_forward() -> None:
    launcher = SshLauncher(destination="box", folder="/srv/p")
    command = launcher.command(LaunchSpec(session_id=SESSION, resume=False))
    assert "-R" not in command.argv and "--mcp-config" not in shlex.split(command.argv[-1])
    assert command.preamble == b"" and "IRIS_MCP=1" not in shlex.split(command.argv[-1])


def test_ssh_failures_are_named_as_such() -> None:
    launcher = SshLauncher(destination="box", folder="/srv/p")
    refused = launcher.describe_exit(255, "ssh: connect to host box port 22: Connection refused\n", "x")
    assert refused == "the ssh connection to box failed: ssh: connect to host box port 22: Connection refused"
    assert launcher.describe_exit(255, "", "x") == "the ssh connection to box failed: ssh failed without saying why"
    missing = launcher.describe_exit(97, "iris: the folder /srv/p does not exist on box (the team's path)", "x")
    assert missing == "the folder /srv/p does not exist on box (the team's path) [box]"
    assert launcher.describe_exit(1, "whatever", "claude exited with code 1") == "claude exited with code 1"
    forward = launcher.describe_exit(255, "Error: remote port forwarding failed for listen port 41234\n", "x")
    assert forward == (
        "the ssh connection to box could not forward port 41234 on box back to irisd: that port is taken there, "
        "or its sshd allows no TCP forwarding (AllowTcpForwarding, PermitListen); each start picks another random port"
    )
    off = launcher.describe_exit(255, "Error: remote port forwarding failed for listen port 0\n", "x")
    assert off.endswith("could not forward a port back to irisd: its sshd allows no TCP forwarding "
                        "(AllowTcpForwarding, PermitListen), which the team's claude needs to reach Iris")
    cut = launcher.describe_exit(-9, "", "claude (pid 7) was killed by SIGKILL")
    assert cut == "the ssh connection to box was cut (ssh (pid 7) was killed by SIGKILL)"
