"""Where and how a team's claude runs: on this machine, or on another one over SSH.

A ``Launcher`` owns everything that differs between a local and a remote claude:

* the command line, environment and working folder of the child (``command``);
* "can this session be resumed?" (``can_resume``: is claude's transcript there?), and
  what a resumed claude starts its running cost from (``stored_total``);
* how the child reaches Iris's MCP endpoint (part of ``command``: a local child gets
  the endpoint as it is; a remote one through a reverse forward of its ssh connection);
* how the process and everything it started are stopped (``child``: a local child is
  stopped as a process group; a remote one by a wrapper on the remote side that stops
  claude's process group when its ssh connection closes);
* what an exit means (``describe_exit``: ssh's own failures are named as such).

The pair decides WHEN (``irisd/pool/process_machine.py``); the launcher decides HOW.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import msgspec
import trio

from iris_common import ssh
from iris_common.config import IrisConfig, Team
from iris_common.environment import child_environment, root_skip_problem
from iris_common.locate import find_claude
from iris_common.paths import session_file
from irisd.claude.command import claude_argv
from irisd.claude.process import ChildEvent, ClaudeProcess
from irisd.claude.reaper import Reaper
from irisd.claude.spend import Spent, stored_total
from protocol.errors import ClaudeError

PROBE_TIMEOUT_S = 30.0
COST_STATE_SCAN_BYTES = 4 * 1024 * 1024  # how far back a session's transcript is read for its cost-state
# The reverse forward's port on the remote loopback, new for each start: below Linux's
# ephemeral range (32768-60999), where the host's own outgoing connections, and their
# TIME_WAIT, hold ports that a listener cannot take; and below IANA's (49152-65535).
FORWARD_PORTS = range(10000, 32768)


class Child(Protocol):
    """What a pair needs of its child (a ClaudeProcess, or a fake in tests)."""

    pid: int | None

    async def run(self, *, task_status: trio.TaskStatus[Child] = ...) -> None: ...
    def stop(self) -> None: ...
    async def send(self, data: bytes) -> None: ...


ChildFactory = Callable[[list[str], str, dict[str, str], trio.MemorySendChannel[ChildEvent]], Child]


def claude_child(
    argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]
) -> Child:
    return ClaudeProcess(argv, cwd=cwd, env=env, events=events)


def marked_claude_child(new_marker: Callable[[], str], reaper: Reaper | None = None) -> ChildFactory:
    """The child factory of a contained irisd: each claude carries a fresh marker
    (``containment.Containment.new_marker``), and stopping it also stops everything that
    holds the marker; ``reaper`` (``Containment.reaper``) starts it, as the ancestor of
    everything it starts."""

    def factory(argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]) -> Child:
        return ClaudeProcess(argv, cwd=cwd, env=env, events=events, marker=new_marker(), reaper=reaper)

    return factory


class IrisEndpoint(msgspec.Struct, frozen=True):
    """How a child reaches Iris's MCP tools over HTTP: the URL on irisd's machine and the
    child's own token (minted at spawn, revoked at exit)."""

    url: str  # e.g. http://127.0.0.1:1615/mcp
    token: str


class LaunchSpec(msgspec.Struct, frozen=True):
    """What the pair wants started: the session and the permissions of the child."""

    session_id: str
    resume: bool
    permissions: str = "ask"
    allowed_tools: Sequence[str] = ()
    disallowed_tools: Sequence[str] = ()
    mcp_config: str = ""  # for a local child: the --mcp-config that gives it Iris
    system_prompt: str = ""  # appended to claude's (what the child is, how teams are reached)
    endpoint: IrisEndpoint | None = None  # for a remote child: Iris over HTTP, forwarded
    max_budget_usd: float | None = None  # the child serves one tell with this budget


class ChildCommand(msgspec.Struct, frozen=True):
    argv: list[str]
    cwd: str
    env: dict[str, str]
    preamble: bytes = b""  # written to the child's stdin first, before any turn


class Launcher(Protocol):
    """How a team's claude is started, probed and stopped (see the module docstring)."""

    @property
    def host(self) -> str:
        """The ssh destination, or "" for this machine."""
        ...

    def command(self, spec: LaunchSpec) -> ChildCommand: ...
    async def can_resume(self, session_id: str) -> bool: ...
    def stored_total(self, session_id: str) -> Spent | None:
        """What a claude resuming ``session_id`` starts its running cost from (None: not known here)."""
        ...

    def child(self, command: ChildCommand, events: trio.MemorySendChannel[ChildEvent]) -> Child: ...
    def describe_exit(self, returncode: int | None, stderr_tail: str, default: str) -> str: ...


# --- this machine -------------------------------------------------------------------------


class LocalLauncher(msgspec.Struct):
    """claude on irisd's machine, in the team's folder, with irisd's environment."""

    claude_path: str
    folder: str
    claude_config_dir: str
    environment: Callable[[], dict[str, str]]
    child_factory: ChildFactory = claude_child
    team: str = ""  # for messages

    @property
    def host(self) -> str:
        return ""

    def command(self, spec: LaunchSpec) -> ChildCommand:
        """Raises ClaudeError when claude would refuse to start (permissions: skip as root)."""
        environment = self.environment()
        if problem := root_skip_problem(self.team, spec.permissions, env=environment):
            raise ClaudeError(problem)
        argv = claude_argv(
            find_claude(self.claude_path) or self.claude_path,
            session_id=spec.session_id,
            resume=spec.resume,
            permissions=spec.permissions,
            allowed_tools=spec.allowed_tools,
            disallowed_tools=spec.disallowed_tools,
            mcp_config=spec.mcp_config,
            system_prompt=spec.system_prompt,
            max_budget_usd=spec.max_budget_usd,
        )
        return ChildCommand(argv=argv, cwd=self.folder, env=environment)

    async def can_resume(self, session_id: str) -> bool:
        transcript = session_file(Path(self.claude_config_dir), self.folder, session_id)
        # A stat, inline: a worker thread would let trio's autojump clock (tests) skip ahead.
        return os.path.exists(transcript)  # noqa: ASYNC240

    def stored_total(self, session_id: str) -> Spent | None:
        """Read inline from the end of claude's transcript (at most COST_STATE_SCAN_BYTES):
        a worker thread would let trio's autojump clock (tests) skip ahead."""
        return read_stored_total(session_file(Path(self.claude_config_dir), self.folder, session_id))

    def child(self, command: ChildCommand, events: trio.MemorySendChannel[ChildEvent]) -> Child:
        return self.child_factory(command.argv, command.cwd, command.env, events)

    def describe_exit(self, returncode: int | None, stderr_tail: str, default: str) -> str:
        return default


# --- another machine, over ssh ---------------------------------------------------------------

class SshLauncher(msgspec.Struct):
    """claude on another machine: ``ssh [options] HOST`` runs a small wrapper there that
    starts the remote claude in the team's folder (a path on that host) with the team's
    ``env`` (ssh forwards no environment). The stream-json protocol runs over the ssh
    channel unchanged. A child that needs Iris reaches it through a reverse forward of
    the same connection (``-R``), on the remote loopback, with its own token."""

    destination: str
    folder: str
    claude_path: str = "claude"
    ssh_options: Sequence[str] = ()
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    local_env: Callable[[], dict[str, str]] = lambda: dict(os.environ)
    child_factory: ChildFactory = claude_child
    forward_port: Callable[[], int] = lambda: random_forward_port()

    @property
    def host(self) -> str:
        return self.destination

    def ssh_argv(self, remote_command: str, *extra: str) -> list[str]:
        return ssh.ssh_argv(self.destination, self.ssh_options, remote_command, *extra)

    def command(self, spec: LaunchSpec) -> ChildCommand:
        folder = f"/tmp/iris-{secrets.token_hex(8)}"  # the remote side makes it (0700) or fails
        variables = {"IRIS_FOLDER": self.folder, "IRIS_CLAUDE": self.claude_path, "IRIS_DIR": folder}
        forward: list[str] = []
        mcp_config = ""
        lines = [f"{key}={value}" for key, value in self.env.items()]
        variables["IRIS_ENV_LINES"] = str(len(lines))
        if spec.endpoint is not None:
            local = _host_port(spec.endpoint.url)
            remote_port = self.forward_port()
            forward = ["-R", f"127.0.0.1:{remote_port}:{local}"]
            url = spec.endpoint.url.replace(f"//{local}", f"//127.0.0.1:{remote_port}", 1)
            mcp_config = f"{folder}/mcp.json"
            # The forward is a plain tunnel: the request names irisd as it is known here
            # (its gate refuses any other Host: DNS rebinding), not the remote port.
            lines.append(http_mcp_config(url, spec.endpoint.token, host=local))
            variables["IRIS_MCP"] = "1"
        preamble = "".join(f"{line}\n" for line in lines).encode()
        argv = claude_argv(
            self.claude_path,
            session_id=spec.session_id,
            resume=spec.resume,
            permissions=spec.permissions,
            allowed_tools=spec.allowed_tools,
            disallowed_tools=spec.disallowed_tools,
            mcp_config=mcp_config,
            system_prompt=spec.system_prompt,
            max_budget_usd=spec.max_budget_usd,
        )
        remote = ssh.remote_script(ssh.REMOTE_RUN, variables, argv)
        # ssh runs in a folder that exists here; the team's folder is on the other host.
        return ChildCommand(argv=self.ssh_argv(remote, *forward), cwd="/", env=self.local_env(), preamble=preamble)

    async def can_resume(self, session_id: str) -> bool:
        """Asks the remote host whether claude has the session's transcript there; raises
        ClaudeError with ssh's own message when the host cannot be reached."""
        variables = {"IRIS_FOLDER": self.folder, "IRIS_SESSION": session_id}
        config_dir = self.env.get("CLAUDE_CONFIG_DIR")
        if config_dir:
            variables["CLAUDE_CONFIG_DIR"] = config_dir
        argv = self.ssh_argv(ssh.remote_script(ssh.REMOTE_PROBE, variables))
        with trio.move_on_after(PROBE_TIMEOUT_S):
            result = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, stdin=subprocess.DEVNULL,
                env=self.local_env(),
            )
            answer = result.stdout.decode(errors="replace").strip()
            if result.returncode == 0 and answer in ("resumable", "new"):
                return answer == "resumable"
            raise ClaudeError(self.describe_exit(result.returncode, result.stderr.decode(errors="replace"),
                                                 f"the session check on {self.destination} failed"))
        raise ClaudeError(f"{self.destination} did not answer within {PROBE_TIMEOUT_S:g} s (ssh)")

    def stored_total(self, session_id: str) -> Spent | None:
        """Not read over ssh: the pair then goes on from its last child's total."""
        return None

    def child(self, command: ChildCommand, events: trio.MemorySendChannel[ChildEvent]) -> Child:
        return self.child_factory(command.argv, command.cwd, command.env, events)

    def version_argv(self) -> list[str]:
        """For ``iris doctor``: see ``ssh.version_argv``."""
        return ssh.version_argv(self.destination, self.ssh_options, folder=self.folder, claude_path=self.claude_path)

    def describe_exit(self, returncode: int | None, stderr_tail: str, default: str) -> str:
        return ssh.describe_exit(self.destination, returncode, stderr_tail, default)


def launcher_for(
    team: Team, config: IrisConfig, claude_config_dir: Path, child_factory: ChildFactory = claude_child
) -> Launcher:
    """The launcher of a team: over ssh if it has a host, else on this machine."""
    if team.host:
        # The remote claude gets the team's env and the remote login's own, nothing of irisd's.
        return SshLauncher(
            destination=team.host,
            folder=team.path,
            claude_path=team.claude_path or "claude",
            ssh_options=team.ssh_options,
            env=team.env,
            child_factory=child_factory,
        )
    return LocalLauncher(
        claude_path=team.claude_path or config.settings.claude_path,
        folder=team.path,
        claude_config_dir=str(claude_config_dir),
        environment=functools.partial(
            child_environment, claude_config_dir=claude_config_dir, daemon_env=config.daemon_env, team_env=team.env
        ),
        child_factory=child_factory,
        team=team.name,
    )


def random_forward_port() -> int:
    return FORWARD_PORTS[secrets.randbelow(len(FORWARD_PORTS))]


def http_mcp_config(url: str, token: str, *, host: str = "") -> str:
    """The ``--mcp-config`` that gives a child Iris over HTTP with its own token; ``host``:
    the ``Host`` header to send instead of the URL's (a remote child, through a forward)."""
    headers = {"Authorization": f"Bearer {token}"}
    if host:
        headers["Host"] = host
    server = {"type": "http", "url": url, "headers": headers}
    return json.dumps({"mcpServers": {"iris": server}})


def _host_port(url: str) -> str:
    rest = url.split("//", 1)[-1]
    return rest.split("/", 1)[0]


def read_stored_total(transcript: Path, limit: int = COST_STATE_SCAN_BYTES) -> Spent | None:
    """The last ``cost-state`` in the last ``limit`` bytes of a session's transcript;
    nothing spent when the whole transcript has none (claude then starts from zero); None
    when it is not known (none in the part read, or the file cannot be read)."""
    try:
        with transcript.open("rb") as file:
            start = max(file.seek(0, os.SEEK_END) - limit, 0)
            file.seek(start)
            found = stored_total(file.read(limit))
    except OSError:
        return None
    return Spent() if found is None and start == 0 else found
