"""The environment of a team's claude: decided by Iris, not inherited by accident.

A child gets, in this order (later wins):

1. the variables of irisd's own environment that a claude needs, by name (``ALLOWED``,
   ``ALLOWED_PREFIXES``): home, path, user, shell, terminal, locale, time zone,
   temporary folder, proxies and certificates, ``ANTHROPIC_*`` and the model providers'
   variables claude documents (Bedrock, Vertex: ``AWS_*``, ``GOOGLE_*``, ...);
2. ``$IRIS_HOME/irisd.env`` (``KEY=VALUE`` lines), read when irisd starts;
3. the team's ``env:`` map in ``config.yaml``;
4. ``CLAUDE_CONFIG_DIR``: the folder irisd itself uses (it reads the transcripts there).

``MCP_CONNECT_TIMEOUT_MS`` is 30 s unless one of these sets it: claude waits only 5 s by default
for an MCP server to connect and then goes on without its tools, and on a busy machine Iris's
own ``/mcp`` can take longer than that to answer a child's first request.

Nothing else: not the variables of a Claude Code session or shell that started irisd
(``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_PROJECT_DIR``, ``CLAUDE_CODE_MESSAGING_*``...),
not systemd's (``NOTIFY_SOCKET``, ``LISTEN_*``), not Iris's internals.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from protocol.errors import ConfigError

ALLOWED = frozenset({
    "HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
    # Model providers and switches claude documents.
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "MAX_THINKING_TOKENS", "API_TIMEOUT_MS", "MCP_TIMEOUT",
    "MCP_TOOL_TIMEOUT", "MCP_CONNECT_TIMEOUT_MS", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "IS_SANDBOX",
})
ALLOWED_PREFIXES = (
    "LC_", "ANTHROPIC_", "SSL_CERT_", "AWS_", "GOOGLE_", "VERTEX_REGION_", "DISABLE_",
    "CLAUDE_CODE_USE_", "CLAUDE_CODE_SKIP_",
)

# Set by Iris itself; a team's env: may not override them.
RESERVED = frozenset({"CLAUDE_CONFIG_DIR", "IRIS_RUN", "NOTIFY_SOCKET"})
RESERVED_PREFIXES = ("LISTEN_", "WATCHDOG_", "IRIS_SECRET")

# claude's own default is 5 s (measured in 2.1.330; see the module's docstring).
MCP_CONNECT_TIMEOUT = ("MCP_CONNECT_TIMEOUT_MS", "30000")

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_FILE = "irisd.env"


def allowed(name: str) -> bool:
    return name in ALLOWED or name.startswith(ALLOWED_PREFIXES)


def inherited(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` a claude may have."""
    return {name: value for name, value in environ.items() if allowed(name)}


def child_environment(
    *,
    claude_config_dir: Path,
    daemon_env: Mapping[str, str] = {},
    team_env: Mapping[str, str] = {},
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of a team's claude (see the module's docstring)."""
    env = inherited(os.environ if environ is None else environ)
    env.setdefault(*MCP_CONNECT_TIMEOUT)
    env.update(daemon_env)
    env.update(team_env)
    env["CLAUDE_CONFIG_DIR"] = str(claude_config_dir)
    return env


def for_children(file_env: Mapping[str, str]) -> dict[str, str]:
    """What of irisd.env goes to the children: not irisd's own settings (``IRIS_*``,
    systemd's, ``CLAUDE_CONFIG_DIR``, which irisd applies to itself)."""
    return {
        name: value for name, value in file_env.items()
        if not (name.startswith("IRIS_") or name in RESERVED or name.startswith(RESERVED_PREFIXES))
    }


def check_name(name: str, where: str) -> None:
    """A variable a team's env: may set."""
    check_syntax(name, where)
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        why = (
            "set it in irisd's own environment: irisd reads the transcripts there"
            if name == "CLAUDE_CONFIG_DIR" else "it is irisd's own"
        )
        raise ConfigError(f"{where}: {name} cannot be set for the children; {why}")


def check_syntax(name: str, where: str) -> None:
    if not NAME.match(name):
        raise ConfigError(f"{where}: {name!r} is not a variable name; use letters, digits and '_'")


def check_value(name: str, value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: the value of {name} is not text; quote it ({name}: \"{value}\")")
    if "\x00" in value:
        raise ConfigError(f"{where}: the value of {name} holds a NUL character; remove it")
    return value


def load_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, optional ``export``, optional quotes), the
    format systemd's EnvironmentFile= reads too. A missing file is empty; a bad line
    raises ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise ConfigError(f"cannot read {path}: {why}; fix or remove it") from None
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        where = f"{path}, line {number}"
        name, equals, value = line.removeprefix("export ").partition("=")
        name = name.strip()
        if not equals:
            raise ConfigError(f"{where}: expected NAME=VALUE, got {line[:40]!r}")
        check_syntax(name, where)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif value[:1] in ("'", '"'):
            raise ConfigError(f"{where}: the value of {name} opens a quote ({value[0]}) it does not close; close it")
        found[name] = check_value(name, value, where)
    return found


def root_skip_problem(
    team: str, permissions: str, *, euid: int | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """Why ``team``'s claude would refuse to start, if it would: claude exits at once when
    ``--dangerously-skip-permissions`` (``permissions: skip``) runs as root, unless its
    environment has ``IS_SANDBOX=1`` (exactly "1": checked with claude 2.1.330)."""
    if permissions != "skip":
        return None
    euid = os.geteuid() if euid is None else euid
    env = os.environ if env is None else env
    if euid != 0 or env.get("IS_SANDBOX") == "1":
        return None
    return (
        f"team {team!r} has permissions: skip, which claude refuses to run as root; if this "
        "machine is a sandbox, set IS_SANDBOX=1 in irisd's environment (for the service: in "
        "$IRIS_HOME/irisd.env), else give the team permissions: ask (or deny); then restart irisd"
    )
