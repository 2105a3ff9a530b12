"""``iris doctor``: checks the set-up, one line each, with the fix.

Each check is a function of a ``Context`` returning a ``Check``; ``CHECKS`` is the
list ``iris doctor`` runs, in order. A new check (remote teams, the HTTP face) is one
more function appended to it. ``fail`` means Iris cannot work until it is fixed (the
command exits 1); ``warn`` is worth knowing but not broken (an optional part missing).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from iris_common import locate, ssh
from iris_common.config import IrisConfig, load_config, team_unavailable
from iris_common.environment import root_skip_problem
from iris_common.paths import IrisPaths, socket_dir_problem, socket_path_problem
from protocol.errors import ConfigError

Verdict = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Verdict
    detail: str
    fix: str = ""


@dataclass
class Context:
    """What the checks look at, read once (and lazily: a check that needs no config
    does not fail because the config is broken)."""

    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @cached_property
    def paths(self) -> IrisPaths:
        return IrisPaths.from_env(self.env)

    @cached_property
    def config(self) -> IrisConfig | ConfigError:
        try:
            return load_config(self.paths.config_file)
        except ConfigError as exc:
            return exc

    @cached_property
    def status(self) -> Any:
        """The running irisd's ``StatusReply``, or None when none answers (asked once)."""
        from iris_cli.client import Client
        from protocol.errors import IrisError
        from protocol.messages import GetStatus

        try:
            with Client(self.paths.socket, timeout=5) as client:
                return client.request(GetStatus())
        except (IrisError, OSError):
            return None

    @property
    def valid_config(self) -> IrisConfig | None:
        config = self.config
        return config if isinstance(config, IrisConfig) else None


def check_claude(ctx: Context) -> Check:
    config = ctx.valid_config
    configured = config.settings.claude_path if config is not None else None
    found = locate.find_claude(configured)
    if found is None:
        explicit = configured not in (None, locate.DEFAULT)
        named = f" (settings.claudePath {configured!r} is not an executable)" if explicit else ""
        return Check("claude", "fail", f"no claude CLI found{named}", locate.not_found_fix())
    try:
        ran = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("claude", "fail", f"{found} does not run: {exc}", locate.not_found_fix())
    version = ran.stdout.strip().split(" ")[0] if ran.returncode == 0 else ""
    if not version:
        detail = (ran.stderr or ran.stdout).strip()[:200]
        return Check("claude", "fail", f"'{found} --version' failed: {detail}", locate.not_found_fix())
    if problem := locate.version_problem(version):
        return Check("claude", "fail", f"claude {version} at {found}", problem)
    if version != locate.CLAUDE_VERSION:
        newer = (locate.version_of(version) or ()) > (locate.version_of(locate.CLAUDE_VERSION) or ())
        why = "newer than" if newer else "not"
        return Check(
            "claude", "warn",
            f"claude {version} at {found}, {why} {locate.CLAUDE_VERSION}, the version Iris is tested with",
            "check it before relying on it: IRIS_CLAUDE_VERSION=" + version + " scripts/test (README: 'A new claude')"
            if newer else locate.not_found_fix(),
        )
    return Check("claude", "ok", f"claude {version} at {found} (the version Iris is tested with)")


CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


def check_credentials(ctx: Context) -> Check:
    """What irisd's children will get: asked of the running irisd (its environment,
    irisd.env, each team's env), else read from what a start would give them."""
    env_file = ctx.paths.home / "irisd.env"
    login = ctx.paths.claude_config_dir / ".credentials.json"
    status = ctx.status
    if status is not None:
        given = {name for names in status.environment.values() for name in names}
        keys = [key for key in CREDENTIALS if key in given]
        via = " (through ANTHROPIC_BASE_URL)" if "ANTHROPIC_BASE_URL" in given else ""
        if keys:
            return Check("credentials", "ok", f"irisd's claude processes get {', '.join(keys)}{via}")
        if login.exists():
            return Check("credentials", "ok", f"claude is logged in ({login}); irisd's claude processes use it")
        return Check(
            "credentials", "fail", "irisd's claude processes get no ANTHROPIC_API_KEY and claude is not logged in",
            f"run 'claude' once and log in, or put ANTHROPIC_API_KEY=... in {env_file}, then 'iris reload'",
        )
    for key in CREDENTIALS:
        if ctx.env.get(key):
            return Check("credentials", "ok", f"{key} is set in this shell (irisd started from it gets it)")
    try:
        if any(line.strip().startswith(tuple(f"{key}=" for key in CREDENTIALS))
               for line in env_file.read_text().splitlines()):
            return Check("credentials", "ok", f"a key is set in {env_file} (read by the irisd service)")
    except OSError:
        pass
    if login.exists():
        return Check("credentials", "ok", f"claude is logged in ({login})")
    return Check(
        "credentials", "fail", "no ANTHROPIC_API_KEY and no claude login found",
        f"run 'claude' once and log in, or set ANTHROPIC_API_KEY (for the service: in {env_file})",
    )


def check_root_skip(ctx: Context) -> Check:
    config = ctx.valid_config
    if config is None:
        return Check("root + skip", "skip", "needs a valid config")
    local = [t for t in config.teams.values() if not t.host]  # a remote claude runs as the ssh user
    problems = [p for t in local if (p := root_skip_problem(t.name, t.permissions, env=ctx.env))]
    if problems:
        return Check("root + skip", "fail", problems[0].split(";")[0], problems[0].split("; ", 1)[1])
    return Check("root + skip", "ok", "no team has permissions: skip as root without IS_SANDBOX=1")


def check_config(ctx: Context) -> Check:
    config = ctx.config
    if isinstance(config, ConfigError):
        return Check("config", "fail", config.message)
    return Check("config", "ok", f"{ctx.paths.config_file}: {len(config.teams)} team(s): {', '.join(config.teams)}")


def check_team_folders(ctx: Context) -> Check:
    config = ctx.valid_config
    if config is None:
        return Check("team folders", "skip", "needs a valid config")
    local = [t for t in config.teams.values() if not t.host and not t.a2a]  # remote ones: see "remote teams"
    missing = [problem for t in local if (problem := team_unavailable(t))]
    if missing:
        return Check(
            "team folders", "fail", "; ".join(missing),
            "irisd serves the other teams meanwhile; a tell to such a team fails with this reason",
        )
    unwritable = [t.name for t in local if not os.access(t.path, os.W_OK)]
    if unwritable:
        return Check(
            "team folders", "warn", f"not writable for you: {', '.join(unwritable)}",
            "claude works in the team's folder; give yourself write access if it should edit files",
        )
    return Check("team folders", "ok", f"all {len(local)} local ones exist and are writable")


REMOTE_CHECK_TIMEOUT_S = 30.0


def check_remote_teams(ctx: Context) -> Check:
    """Each team with a host: ssh reaches it, its folder is there, and so is claude."""
    config = ctx.valid_config
    if config is None:
        return Check("remote teams", "skip", "needs a valid config")
    remote = [t for t in config.teams.values() if t.host]
    if not remote:
        return Check("remote teams", "skip", "no team has a host")
    found = []
    for team in remote:
        argv = ssh.version_argv(team.host, team.ssh_options, folder=team.path, claude_path=team.claude_path or "claude")
        try:
            result = subprocess.run(
                argv, capture_output=True, text=True, timeout=REMOTE_CHECK_TIMEOUT_S,
                stdin=subprocess.DEVNULL, env=ctx.env,
            )
        except subprocess.TimeoutExpired:
            return Check("remote teams", "fail", f"{team.name}: {team.host} did not answer within "
                         f"{REMOTE_CHECK_TIMEOUT_S:g} s", "check the host name and the network (try: ssh HOST true)")
        except OSError as exc:
            return Check("remote teams", "fail", f"cannot run ssh: {exc.strerror}", "install OpenSSH's client (ssh)")
        if result.returncode != 0:
            problem = ssh.describe_exit(team.host, result.returncode, result.stderr, result.stderr.strip() or "failed")
            if ssh.refused_forward(result.returncode, result.stderr) is not None:
                return Check("remote teams", "fail", f"{team.name}: {problem}",
                             f"let this login forward ports on {team.host} (sshd_config: AllowTcpForwarding yes "
                             "or remote; no 'restrict' or 'no-port-forwarding' on its key in authorized_keys)")
            return Check("remote teams", "fail", f"{team.name}: {problem}",
                         "fix the team's host, sshOptions, path or claudePath; 'ssh HOST' must work without a prompt")
        found.append(f"{team.name} ({team.host}: claude {result.stdout.strip().split(' ')[0]})")
    return Check("remote teams", "ok", ", ".join(found))


def check_a2a_teams(ctx: Context) -> Check:
    """Each A2A team's headers: every ${VAR} is set (in this shell or irisd.env), else its
    tells fail. The agent itself is not asked: a tell says what it answers."""
    from iris_common.config import expand_headers
    from iris_common.environment import ENV_FILE, load_env_file

    config = ctx.valid_config
    if config is None:
        return Check("A2A teams", "skip", "needs a valid config")
    agents = [t for t in config.teams.values() if t.a2a]
    if not agents:
        return Check("A2A teams", "skip", "no team is an A2A agent")
    env_file = ctx.paths.home / ENV_FILE
    try:
        environ = {**ctx.env, **load_env_file(env_file)}
    except ConfigError as exc:
        return Check("A2A teams", "fail", exc.message)
    for team in agents:
        try:
            expand_headers(team, environ)
        except ConfigError as exc:
            return Check("A2A teams", "fail", exc.message.split("; ")[0],
                         f"set it in {env_file} (irisd reads it), then 'iris reload'")
    return Check("A2A teams", "ok", ", ".join(f"{t.name} ({t.a2a})" for t in agents))


def check_socket_folder(ctx: Context) -> Check:
    folder = ctx.paths.socket.parent
    problem = socket_dir_problem(folder)
    if problem is not None:
        return Check("socket folder", "fail", problem.split(";")[0], problem.split("; ", 1)[1])
    if (too_long := socket_path_problem(ctx.paths.socket)) is not None:
        what, fix = too_long.split("; ", 1)
        return Check("socket folder", "fail", what, fix)
    state = "is safe (yours, 0700)" if folder.exists() else "does not exist yet (irisd creates it 0700)"
    return Check("socket folder", "ok", f"{folder} {state}")


def check_daemon(ctx: Context) -> Check:
    from iris_cli.client import Client
    from protocol.errors import IrisError

    try:
        with Client(ctx.paths.socket, timeout=5) as client:
            welcome = client.connect()
    except IrisError as exc:
        if exc.code == "daemon_not_running":
            return Check("irisd", "warn", f"not running on {ctx.paths.socket}",
                         "start it: 'iris daemon start' (or 'irisd' in a terminal)")
        return Check("irisd", "fail", exc.message)
    except OSError as exc:
        return Check("irisd", "fail", f"{ctx.paths.socket}: {exc}", "see 'iris daemon logs'")
    return Check("irisd", "ok", f"running (pid {welcome.pid}, version {welcome.daemon_version})")


def check_http(ctx: Context) -> Check:
    """irisd's HTTP face (API, dashboard, MCP for its children): its URL, and /health."""
    import urllib.request

    from iris_cli.client import Client
    from protocol.errors import IrisError
    from protocol.messages import GetStatus, StatusReply

    try:
        with Client(ctx.paths.socket, timeout=5) as client:
            status = client.request(GetStatus())
    except (IrisError, OSError):
        return Check("HTTP face", "skip", "needs a running irisd")
    assert isinstance(status, StatusReply)
    if not status.http_url:
        return Check("HTTP face", "warn", "irisd serves no HTTP face", "see 'iris daemon logs' for why")
    try:
        with urllib.request.urlopen(status.http_url.rstrip("/") + "/health", timeout=5) as answer:
            healthy = answer.status == 200
    except OSError as exc:
        return Check("HTTP face", "fail", f"{status.http_url}/health does not answer: {exc}",
                     "see 'iris daemon logs'; settings.httpPort / httpHost choose where it listens")
    if not healthy:
        return Check("HTTP face", "fail", f"{status.http_url}/health is not ok", "see 'iris daemon logs'")
    return Check("HTTP face", "ok", f"{status.http_url} answers ('iris dashboard' opens it)")


def check_service(ctx: Context) -> Check:
    from iris_cli.daemon_control import Layout, irisd_command

    layout = Layout.from_env(ctx.env)
    if not layout.service_file.exists():
        return Check("systemd unit", "warn", "not installed (optional)",
                     "'iris daemon install' starts irisd at login")
    unit = layout.service_file.read_text(errors="replace")
    ours = irisd_command()[0]
    if ours not in unit:
        return Check("systemd unit", "warn", f"{layout.service_file} runs another irisd than {ours}",
                     "'iris daemon install' rewrites it for this installation")
    return Check("systemd unit", "ok", f"{layout.service_file} runs this installation's irisd")


def check_claude_code(ctx: Context) -> Check:
    """Is 'iris mcp' registered with Claude Code (user scope, or this folder's project
    or local scope)? Read from claude's own files; running 'claude mcp get' is slow."""
    from iris_cli.mcp_cmd import SERVER_NAME

    # claude keeps its state (and user-scope MCP servers) in $CLAUDE_CONFIG_DIR/.claude.json,
    # or in ~/.claude.json when that variable is not set.
    custom = ctx.env.get("CLAUDE_CONFIG_DIR")
    state = Path(custom) / ".claude.json" if custom else Path.home() / ".claude.json"
    found: list[tuple[str, dict[str, Any]]] = []
    data = _read_json(state)
    if isinstance(data.get("mcpServers"), dict) and SERVER_NAME in data["mcpServers"]:
        found.append(("user", data["mcpServers"][SERVER_NAME]))
    local = data.get("projects", {}).get(str(Path.cwd()), {}) if isinstance(data.get("projects"), dict) else {}
    if isinstance(local, dict) and SERVER_NAME in (local.get("mcpServers") or {}):
        found.append(("local", local["mcpServers"][SERVER_NAME]))
    project = _read_json(Path.cwd() / ".mcp.json")
    if isinstance(project.get("mcpServers"), dict) and SERVER_NAME in project["mcpServers"]:
        found.append(("project", project["mcpServers"][SERVER_NAME]))
    if not found:
        return Check("Claude Code", "warn", "'iris mcp' is not registered (optional)",
                     "'iris mcp install' gives every Claude Code session the team_* tools")
    scope, entry = found[0]
    command = str(entry.get("command", "")) if isinstance(entry, dict) else ""
    if command and os.sep in command and not os.access(command, os.X_OK):
        return Check("Claude Code", "fail", f"registered ({scope} scope) with {command}, which does not exist",
                     "'iris mcp install' registers this installation")
    return Check("Claude Code", "ok", f"'iris mcp' registered ({', '.join(s for s, _ in found)} scope)")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check_mesh(ctx: Context) -> Check:
    """settings.mesh: the server reachable with JetStream, this irisd's name not taken by
    another running irisd, its clock close to the server's."""
    config = ctx.valid_config
    if config is None:
        return Check("mesh", "skip", "needs a valid config")
    if config.mesh is None:
        return Check("mesh", "skip", "no settings.mesh (this irisd is on no mesh)")
    from iris_common.mesh_probe import look

    status = ctx.status
    return judge_mesh(config.mesh.name, look(config.mesh), getattr(status, "pid", None))


def judge_mesh(name: str, view: Any, running_pid: int | None) -> Check:
    """The verdict on a ``MeshView`` (pure, for the tests)."""
    from iris_common.mesh import reachable
    from iris_common.mesh_probe import SKEW_LIMIT_S

    if view.problem:
        fix = view.fix or ("start it with JetStream (nats-server -js -sd DIR)" if "JetStream" in view.problem
                           else "start the NATS server, or fix settings.mesh.url and the credentials in config.yaml")
        return Check("mesh", "fail", view.problem, fix)
    mine = view.homes.get(name)
    if mine is not None and reachable(mine, view.read_at) and running_pid is not None and mine.pid != running_pid:
        return Check("mesh", "fail", f"another irisd ({mine.host}, pid {mine.pid}) is on the mesh as `{name}`",
                     "give this irisd another settings.mesh.name: each irisd's name must be unique")
    skewed = [(home.name, home.skew_s) for home in view.homes.values()
              if home.skew_s is not None and abs(home.skew_s) > SKEW_LIMIT_S and reachable(home, view.read_at)]
    if skewed:
        words = ", ".join(f"{who} {skew:+.1f} s" for who, skew in skewed)
        return Check("mesh", "warn", f"clocks off the NATS server's: {words}",
                     "run NTP (e.g. systemd-timesyncd) on those hosts; 'since' and 'last seen' use their clocks")
    up = sum(1 for home in view.homes.values() if reachable(home, view.read_at))
    return Check("mesh", "ok", f"NATS at {view.server} with JetStream; {up} irisd(s) up, {len(view.teams)} team(s); "
                               f"this irisd is `{name}`")


def check_health(ctx: Context) -> Check:
    """What the running irisd's health monitor finds wrong, worst first, with the fixes."""
    status = ctx.status
    if status is None:
        return Check("health", "skip", "irisd is not running: nothing to watch")
    findings = status.findings
    if not findings:
        return Check("health", "ok", "irisd's health monitor finds nothing wrong")
    verdict: Verdict = "fail" if findings[0].severity == "error" else "warn"
    detail = "; ".join(f"{f.severity}: {f.summary}" for f in findings)
    fix = "; ".join(dict.fromkeys(f.fix for f in findings if f.fix))
    return Check("health", verdict, detail, fix)


CHECKS: list[Callable[[Context], Check]] = [
    check_claude,
    check_credentials,
    check_config,
    check_team_folders,
    check_remote_teams,
    check_a2a_teams,
    check_mesh,
    check_root_skip,
    check_socket_folder,
    check_daemon,
    check_health,
    check_http,
    check_service,
    check_claude_code,
]


def run_checks(ctx: Context | None = None, checks: list[Callable[[Context], Check]] | None = None) -> list[Check]:
    """Every check, in order; a check that raises is reported as failed, never a traceback."""
    ctx = ctx or Context()
    results = []
    for check in CHECKS if checks is None else checks:
        try:
            results.append(check(ctx))
        except Exception as exc:  # a broken check must not hide the others
            results.append(Check(check.__name__.removeprefix("check_"), "fail", f"the check itself failed: {exc}"))
    return results
