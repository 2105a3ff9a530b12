"""The configuration file: decoding into Structs and validation with actionable errors.

The format is the original Iris ``config.yaml`` (camelCase keys, times in ms), so
existing configs load unchanged::

    settings:
      responseTimeout: 120000
      maxProcesses: 10
    teams:
      backend:
        path: /home/me/src/backend     # alias: project
        description: The API server

Every mistake raises ``ConfigError`` naming the file, the key and the fix; callers
never get a half-valid config.
"""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from iris_common.environment import check_name, check_syntax, check_value
from iris_common.mesh import Mesh, MeshConfig, check_mesh
from protocol.errors import ConfigError, UnknownTeamError

PermissionMode = Literal["ask", "deny", "skip"]
PERMISSION_MODES: tuple[str, ...] = typing.get_args(PermissionMode)

AGENT_NAME = "iris-agent"  # Iris's own assistant: never a team
TEAM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MINUTE_MS = 60_000


# No setting means anything past this (31 years in ms): a larger number would break the
# messages that carry it (msgpack and SQLite stop at 64 bits; ``iris status`` failed).
MAX_SETTING = 10**12


def _at_least(minimum: int, fix: str = "") -> msgspec.Meta:
    return msgspec.Meta(ge=minimum, le=MAX_SETTING, extra={"fix": fix} if fix else {})


# The numeric settings' limits, on their types: decoding the file checks them, and
# ``_explain`` words a value out of range ("key 'settings.maxProcesses' is 0; it must be
# at least 1") with the fix a field declares.
Milliseconds = typing.Annotated[int, _at_least(1000)]
Usd = typing.Annotated[float, msgspec.Meta(ge=0, extra={"fix": "use 0 or more (or leave it out)"})]
Count = typing.Annotated[int, _at_least(1)]
Port = typing.Annotated[
    int, msgspec.Meta(ge=0, le=65535, extra={"fix": "use a port from 1 to 65535, or 0 for any free port"})
]
PerMinute = typing.Annotated[int, _at_least(1, "use at least 1 tell per minute (or leave it out for no limit)")]
Days = typing.Annotated[float, msgspec.Meta(gt=0)]
Share = typing.Annotated[
    float, msgspec.Meta(gt=0, le=1, extra={"fix": "use a share above 0 and at most 1 (0.8: warn once 80% is spent)"})
]
Percent = typing.Annotated[
    int, msgspec.Meta(ge=0, le=100, extra={"fix": "use a percent from 1 to 100, or 0 to never compact"})
]
Spares = typing.Annotated[
    int, msgspec.Meta(ge=0, le=8, extra={"fix": "use 0 (no spare) to 8 started claudes per team"})
]
Tokens = typing.Annotated[int, _at_least(1000, "use the model's context window in tokens, e.g. 200000")]


class SessionsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """How Iris keeps long conversations useful (irisd/pool/compaction.py)."""

    compact_at: Percent = 70  # a tell ending above this percent of the context window: /compact before the next
    context_window: Tokens | None = None  # the model's window in tokens; None: what claude says, else a table
    archive_after_days: Days = 90.0  # a pair unused this long is archived (its claude stopped, its history kept)
    restore: typing.Literal["resume", "fresh"] = "resume"  # a tell to an archived pair: resume it, or start anew
    delete_archived_after_days: Days | None = None  # archived this long: its claude transcript is deleted (None: never)
    spares: Spares = 0  # started, idle claudes per team, each ready to be a new pair's (irisd/pool/spares.py)


class TeamSessionsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    compact_at: Percent | None = None  # the team's own threshold (settings.sessions.compactAt by default)
    spares: Spares | None = None  # the team's own count (settings.sessions.spares by default)


class BudgetConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """Spending limits in USD, from what claude reports per tell. None: no limit."""

    daily_usd: Usd | None = None  # all teams together since local midnight (per team: that team)
    chain_usd: Usd | None = None  # one chain of nested tells (settings only)
    # settings only: a chain about to be refused by chainUsd asks the person first whether it
    # may go on, for up to this much more (true: chainUsd more); false: refused, as before
    ask_to_exceed: bool | Usd = False


class QuestionsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """Pending questions: which answers count as asking, and how long they stay open."""

    enabled: bool = True
    patterns: list[str] = []  # extra regular expressions (case-insensitive) that mark a question
    builtin: bool = True  # false: only ``patterns`` count
    ttl: Milliseconds = 7 * 24 * 60 * MINUTE_MS  # ms until an unanswered question expires
    answer_within: Milliseconds = 10 * MINUTE_MS  # with settings.agent.watch: iris-agent looks after this long


class HealthConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """The health monitor (irisd/health): when a fact becomes a finding, and whether
    irisd may act on the safe ones itself. Times in ms; checked every healthCheckInterval."""

    stuck_after: Milliseconds = 5 * MINUTE_MS  # a running tell that printed nothing this long is stuck
    cancel_after: Milliseconds = 30 * MINUTE_MS  # with recover: a tell silent this long is cancelled
    approval_after: Milliseconds = 2 * MINUTE_MS  # an approval waiting this long for a person
    question_after: Milliseconds = 60 * MINUTE_MS  # a question waiting this long for an answer
    budget_share: Share = 0.8  # a daily budget spent this far (0..1) is nearly spent
    memory_factor: typing.Annotated[float, msgspec.Meta(ge=1)] = 3.0  # times the median memory of the others
    memory_floor_mb: typing.Annotated[int, _at_least(0)] = 512  # ... and at least this much (small ones never count)
    recover: bool = False  # irisd restarts crash-looping pairs and cancels tells past cancelAfter
    recover_after: Milliseconds = MINUTE_MS  # a failed pair waits this long before irisd restarts it (doubling)


class NotifyConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """Telling a person who is not looking: approvals, questions, health warnings."""

    webhook: str = ""  # an http(s) URL that gets a JSON POST for each (ntfy, Slack-compatible, your own)
    desktop: bool = True  # a desktop notification over D-Bus, where a session bus has one
    every: Milliseconds = 10 * MINUTE_MS  # the same thing is said again at most this often


# What iris-agent may do (irisd/agent/actions.py): its tools that change something. Each is an
# approval for the person unless settings.agent.allow names it; an answer always is one (it
# speaks for whoever was asked).
AgentAct = typing.Literal["team_tell", "team_wake", "team_sleep", "team_cancel"]


class AgentConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """iris-agent: what it may do without asking, and its watcher (irisd/agent)."""

    allow: list[AgentAct] = []  # its actions the person allows without an approval each time
    watch: bool = False  # classify pending questions the asking team leaves unanswered (questions.answerWithin)
    daily_usd: Usd | None = 1.0  # the watcher's own budget since local midnight (None: no limit)


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    response_timeout: Milliseconds = 120_000
    idle_timeout: Milliseconds = 30 * MINUTE_MS
    max_processes: Count = 10
    health_check_interval: typing.Annotated[int, _at_least(100)] = 30_000
    session_init_timeout: Milliseconds = 30_000
    # A tell to a remote team (another irisd of the mesh, an A2A agent) not held there this long
    # fails "not sent" (or, sent but unconfirmed, is answered in progress): its caller waits
    # until then, so that a tell it was told about never exists only in this irisd's memory.
    handoff_timeout: Milliseconds = 30_000
    claude_path: str = "claude"
    queue_limit: Count = 100
    hop_limit: Count = 4  # nested tells: how deep a chain may go
    retention_days: Days = 30.0  # finished tells (and transcripts) older than this are pruned
    retention_keep: typing.Annotated[int, _at_least(0)] = 200  # ... but the newest this many of each pair are kept
    permissions: PermissionMode = "ask"  # default for teams that say nothing
    approval_timeout: Milliseconds = 10 * MINUTE_MS  # no decision in time means deny
    allowed_tools: list[str] = []  # Claude Code rule syntax, e.g. "Bash(git status)", "Read"
    disallowed_tools: list[str] = []
    http_port: Port = 1615  # irisd's HTTP face (API, dashboard, MCP for its children); 0: any free port
    http_host: str = "127.0.0.1"  # loopback by default; another address exposes it (token still required)
    # Load the MCP SDK (0.5-1.5 s of CPU) in the background once irisd is ready. Off: /mcp
    # answers what a claude child sends without it (irisd/http/mcp.py); it loads at the
    # first request that needs it (a form's answer, an older client).
    preload_mcp: bool = False
    budget: BudgetConfig = msgspec.field(default_factory=BudgetConfig)
    rate_limit: PerMinute | None = None  # tells per minute per pair
    questions: QuestionsConfig = msgspec.field(default_factory=QuestionsConfig)
    mesh: MeshConfig | None = None  # teams on many hosts (iris_common/mesh.py)
    health: HealthConfig = msgspec.field(default_factory=HealthConfig)
    notify: NotifyConfig = msgspec.field(default_factory=NotifyConfig)
    sessions: SessionsConfig = msgspec.field(default_factory=SessionsConfig)
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)


class TeamBudgetConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    daily_usd: Usd | None = None  # spent on tells to this team since local midnight


class TeamConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    path: str = ""
    project: str = ""  # the seeds' name for path; either may be given
    description: str = ""
    idle_timeout: Milliseconds | None = None
    response_timeout: Milliseconds | None = None
    skip_permissions: bool | None = None  # the seeds' switch: true is permissions: skip
    permissions: PermissionMode | None = None
    allowed_tools: list[str] | None = None  # replaces the global list when given
    disallowed_tools: list[str] | None = None
    color: str = ""
    env: dict[str, Any] = {}  # variables for the team's claude (checked in _validate_team)
    budget: TeamBudgetConfig | None = None
    host: str = ""  # an ssh destination: the team runs on that machine ('path' is a path there)
    ssh_options: list[str] = []  # extra ssh arguments, e.g. ["-p", "2222"]
    claude_path: str = ""  # the team's claude (on its host): default settings.claudePath, or "claude"
    a2a: str = ""  # an A2A agent as the team: the URL of its agent card (no path, no claude)
    headers: dict[str, str] = {}  # sent with every request to the A2A agent (its auth); ${VAR} from irisd's env
    a2a_prompt: str = ""  # how an A2A message reaches the team's claude (A2A_PROMPT_FIELDS); "": as sent
    sessions: TeamSessionsConfig | None = None


# What an A2A team may say besides 'a2a' and 'headers': the rest is about a claude.
# (No 'budget': A2A carries no cost, so there is nothing for one to count.)
A2A_KEYS = frozenset({"a2a", "headers", "description", "color", "responseTimeout"})
A2A_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110)
ENV_REFERENCE = re.compile(r"\$\{([^}]*)\}")


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    settings: Settings | None = None
    # Decoded team by team (see _decode_team) so errors can name the team.
    teams: dict[Any, Any] | None = None


class Team(msgspec.Struct, frozen=True, kw_only=True):
    """A validated team: its folder is absolute and resolved (whether it exists now is
    ``team_unavailable``'s question)."""

    name: str
    path: str
    description: str = ""
    color: str = ""
    idle_timeout_ms: int
    response_timeout_ms: int
    permissions: PermissionMode = "ask"
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    env: dict[str, str] = {}  # added to its claude's environment (iris_common/environment.py)
    daily_usd: float | None = None  # the team's own budget (budget.dailyUsd)
    host: str = ""  # "" for this machine; else an ssh destination (path is on that host)
    ssh_options: tuple[str, ...] = ()
    claude_path: str = ""
    a2a: str = ""  # an A2A agent's card URL: the team is that agent (path is "")
    headers: dict[str, str] = {}  # for the agent's requests, ${VAR} not yet expanded (irisd does)
    silence_ms: int | None = None  # an A2A agent saying nothing this long fails the tell (None: no limit)
    a2a_prompt: str = ""  # checked: holds {text}, no other field than A2A_PROMPT_FIELDS
    compact_at: int = 70  # percent of the context window (sessions.compactAt, the team's or the global)
    restore: typing.Literal["resume", "fresh"] = "resume"  # settings.sessions.restore
    spares: int = 0  # started, idle claudes kept for new pairs (sessions.spares, the team's or the global)

    @property
    def skip_permissions(self) -> bool:
        return self.permissions == "skip"


def team_unavailable(team: Team) -> str:
    """Why ``team`` cannot answer now, with the fix; "" when it can. Checked when asked
    (a tell, ``iris status``), so creating the folder makes the team available at once,
    and one missing folder never keeps irisd or the other teams from running. (A team
    on another host is checked when its claude starts, over ssh.)"""
    if team.a2a or team.host or os.path.isdir(team.path):
        return ""
    problem = "is not a folder" if os.path.exists(team.path) else "does not exist"
    return (
        f"team {team.name!r} is unavailable: its folder {team.path} {problem}; "
        "create it, or fix teams." + team.name + ".path in config.yaml"
    )


class IrisConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The whole validated configuration, as the daemon uses it."""

    source: str
    settings: Settings
    teams: dict[str, Team]
    daemon_env: dict[str, str] = {}  # from $IRIS_HOME/irisd.env, for every claude child
    mesh: Mesh | None = None  # settings.mesh, validated

    def team(self, name: str) -> Team:
        try:
            return self.teams[name]
        except KeyError:
            raise UnknownTeamError.for_name(name, list(self.teams)) from None


def load_config(path: Path) -> IrisConfig:
    """Read, decode and validate ``path``; raises ConfigError with the fix."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"config file {path} does not exist; create it with 'iris init --team NAME=FOLDER' "
            "(see README 'Configuration'), or set IRIS_HOME to the folder that holds it"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    config = parse_config(raw, source=str(path))
    if not config.teams and config.mesh is None:  # on a mesh, the teams may all be elsewhere
        raise ConfigError(
            f"{path}: no teams are configured, so there is nobody to tell; add one under 'teams:' "
            "(e.g. 'iris init --force --team backend=~/src/api' writes one)"
        )
    return config


def parse_config(raw: bytes, *, source: str) -> IrisConfig:
    """Decode and validate YAML text; ``source`` names the file in error messages."""
    if not raw.strip():
        config = Config()
    else:
        try:
            data = yaml.load(raw, Loader=_UniqueKeyLoader)
        except _DuplicateKey as exc:
            raise ConfigError(f"{source}: {exc}") from None
        except yaml.MarkedYAMLError as exc:
            raise ConfigError(f"{source}{_yaml_problem(exc)}") from None
        except (yaml.YAMLError, ValueError) as exc:
            raise ConfigError(f"{source}: not valid YAML: {exc}") from None
        try:
            config = msgspec.convert(data, type=Config)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"{source}: {_explain(str(exc), data=data, struct=Config)}") from None
    return _validate(config, source)


class _DuplicateKey(yaml.YAMLError):
    pass


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """', line L, column C: not valid YAML: what': PyYAML's own text names the file
    '<byte string>' and spreads over five lines."""
    mark = exc.problem_mark or exc.context_mark
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    what = exc.problem or exc.context or "it cannot be read"
    if "'\\t'" in what:
        what += " (indent with spaces, not tabs)"
    elif exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
        at = exc.context_mark  # where what it complains about began: an open quote, a bracket
        what += f" ({exc.context} at line {at.line + 1}, column {at.column + 1})"
    return f"{where}: not valid YAML: {what}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice (plain YAML keeps the last one
    silently, so a second team named like the first would replace it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(
                    f"key {key!r} is given twice (lines {seen[key]} and {line}); keep one of them"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_TEAM_KEYS = frozenset(field.encode_name for field in msgspec.structs.fields(TeamConfig))


def _decode_team(name: str, value: Any, source: str) -> TeamConfig:
    if value is None:
        value = {}
    if isinstance(value, dict) and "a2a" in value:
        if not isinstance(value["a2a"], str) or not value["a2a"].strip():
            raise ConfigError(
                f"{source}: key 'teams.{name}.a2a' must be the URL of the agent's card, "
                "e.g. 'https://agent.example.com/.well-known/agent-card.json'"
            )
        takes = f"an A2A team takes only {', '.join(sorted(A2A_KEYS))}"
        # A key no team has is a typo ('header'): say that, rather than "cannot apply".
        typos = sorted(str(key) for key in value if key not in A2A_KEYS and key not in _TEAM_KEYS)
        if typos:
            raise ConfigError(
                f"{source}: unknown key 'teams.{name}.{typos[0]}'; check its spelling "
                f"(keys are camelCase, e.g. responseTimeout); {takes}"
            )
        extra = sorted(str(key) for key in value if key not in A2A_KEYS)
        if extra:
            raise ConfigError(
                f"{source}: team {name!r} is an A2A agent ('a2a'), so {', '.join(repr(k) for k in extra)} "
                f"cannot apply (they are about a claude in a folder, or a budget, and A2A reports no cost); "
                f"{takes}"
            )
    try:
        return msgspec.convert(value, TeamConfig)
    except msgspec.ValidationError as exc:
        why = _explain(str(exc), prefix=f"teams.{name}", data=value, struct=TeamConfig)
        raise ConfigError(f"{source}: {why}") from None


_RANGE = re.compile(r"Expected `(?:int|float|number)` (>=|>|<=|<) (\S+)$")
_BOUND_WORDS = {">=": "at least", ">": "more than", "<=": "at most", "<": "less than"}


def _explain(msgspec_message: str, prefix: str = "", data: Any = None, struct: type | None = None) -> str:
    """Turn msgspec's "... - at `$.teams.a.path`" into "key 'teams.a.path': ..."; a number
    out of its declared range into "key 'settings.maxProcesses' is 0; it must be at least
    1", with the fix its type declares (``data``: what was decoded, ``struct`` its type)."""
    problem, _, where = msgspec_message.partition(" - at `")
    path = [p for p in where.rstrip("`").removeprefix("$").split(".") if p]
    key = ".".join(p for p in (prefix, ".".join(path)) if p)
    if (bound := _RANGE.match(problem)) and key:
        value, fix = _value_at(data, path), _fix_at(struct, path)
        limit = bound[2] if bound[2].lstrip("-").isdigit() else f"{float(bound[2]):g}"  # an int's bound whole
        return f"key {key!r} is {value}; it must be {_BOUND_WORDS[bound[1]]} {limit}" + (f"; {fix}" if fix else "")
    unknown = re.match(r"Object contains unknown field `(.+)`", problem)
    if unknown:
        field = unknown.group(1)
        full = f"{key}.{field}" if key else field
        return f"unknown key {full!r}; check its spelling (keys are camelCase, e.g. responseTimeout)"
    if not key:
        return f"{problem}; the file must be a mapping with 'settings' and 'teams'"
    if problem.startswith("Invalid enum value") and key.endswith("permissions"):
        return f"key {key!r}: {problem[0].lower()}{problem[1:]}; use one of: {' | '.join(PERMISSION_MODES)}"
    if problem.startswith("Invalid enum value") and re.fullmatch(r"settings\.agent\.allow\[\d+\]", key):
        return (
            f"key {key!r}: {problem[0].lower()}{problem[1:]}; iris-agent may be allowed only: "
            f"{', '.join(typing.get_args(AgentAct))} (deciding approvals and config are never its)"
        )
    return f"key {key!r}: {problem[0].lower()}{problem[1:]}"


def _value_at(data: Any, path: list[str]) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _fix_at(struct: type | None, path: list[str]) -> str:
    """The ``fix`` the field at ``path`` (names as in the file) declares in its Meta, if any."""
    kind: msgspec.inspect.Type | None = msgspec.inspect.type_info(struct) if struct is not None else None
    for part in path:
        while isinstance(kind, msgspec.inspect.Metadata | msgspec.inspect.UnionType):
            kind = kind.type if isinstance(kind, msgspec.inspect.Metadata) else next(
                (t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType)), None
            )
        if not isinstance(kind, msgspec.inspect.StructType):
            return ""
        kind = next((f.type for f in kind.fields if f.encode_name == part), None)
    while isinstance(kind, msgspec.inspect.UnionType):
        kind = next((t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType)), None)
    if isinstance(kind, msgspec.inspect.Metadata):
        return str((kind.extra or {}).get("fix", ""))
    return ""


def _validate(config: Config, source: str) -> IrisConfig:
    s = config.settings or Settings()
    if not s.http_host.strip() or any(c in s.http_host for c in "/ "):
        raise ConfigError(
            f"{source}: key 'settings.httpHost' is {s.http_host!r}; use an address such as 127.0.0.1"
        )
    for index, pattern in enumerate(s.questions.patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"{source}: key 'settings.questions.patterns[{index}]' ({pattern!r}) is not a valid "
                f"regular expression: {exc}"
            ) from None
    _check_health(s.health, source)
    _check_notify(s.notify, source)
    if not s.claude_path.strip():
        raise ConfigError(f"{source}: key 'settings.claudePath' is empty; use 'claude' or a path")
    teams = {
        str(name): _validate_team(str(name), _decode_team(str(name), value, source), s, source)
        for name, value in (config.teams or {}).items()
    }
    mesh = check_mesh(s.mesh, teams, source) if s.mesh is not None else None
    return IrisConfig(source=source, settings=s, teams=teams, mesh=mesh)


def team_name_problem(name: str) -> str:
    """Why ``name`` cannot name a team ("" if it can)."""
    if TEAM_NAME.match(name):
        return ""
    return (
        "a team name must start with an ASCII letter or digit and hold only "
        "ASCII letters (a-z, A-Z), digits (0-9), '.', '_' and '-', at most 64 characters"
    )


def _check_health(h: HealthConfig, source: str) -> None:
    """What the types cannot say (their limits are on HealthConfig's fields)."""
    if h.cancel_after < h.stuck_after:
        raise ConfigError(
            f"{source}: key 'settings.health.cancelAfter' ({h.cancel_after}) is shorter than "
            f"'settings.health.stuckAfter' ({h.stuck_after}); a tell is cancelled only after it was found "
            "stuck: make cancelAfter the longer one"
        )


def _check_notify(n: NotifyConfig, source: str) -> None:
    if n.webhook and not re.match(r"^https?://[^\s/]+", n.webhook):
        raise ConfigError(
            f"{source}: key 'settings.notify.webhook' is {n.webhook!r}; use an http:// or https:// URL "
            "(e.g. https://ntfy.sh/my-topic), or leave it out"
        )


def _validate_team(name: str, team: TeamConfig, settings: Settings, source: str) -> Team:
    where = f"{source}: team {name!r}"
    if problem := team_name_problem(name):
        raise ConfigError(f"{where}: {problem}")
    if name == AGENT_NAME:
        raise ConfigError(f"{where}: {AGENT_NAME!r} is Iris's own assistant ('iris ask'); give the team another name")
    if team.a2a.strip() or team.headers:
        return _validate_a2a_team(name, team, settings, where)
    if team.path and team.project and _expand(team.path) != _expand(team.project):
        raise ConfigError(f"{where}: 'path' and 'project' differ; keep only 'path'")
    given = team.path or team.project
    if not given:
        raise ConfigError(f"{where}: key 'teams.{name}.path' is missing; set it to the project folder")
    remote = _check_remote(name, team, where)
    expanded = given if remote else _expand(given)
    if not expanded.startswith("/"):
        on = f" on {team.host}" if remote else ""
        raise ConfigError(
            f"{where}: path {given!r} is relative; write the absolute path of the project folder{on}"
        )
    permissions = team.permissions or settings.permissions
    if team.skip_permissions is not None:
        # false only rules out skipping: the team keeps its own mode, else the global one
        not_skip: PermissionMode = settings.permissions if settings.permissions != "skip" else "ask"
        implied: PermissionMode = "skip" if team.skip_permissions else (team.permissions or not_skip)
        if team.permissions is not None and team.permissions != implied:
            raise ConfigError(
                f"{where}: skipPermissions: {str(team.skip_permissions).lower()} contradicts "
                f"permissions: {team.permissions}; keep only 'permissions'"
            )
        permissions = implied
    daily_usd = team.budget.daily_usd if team.budget is not None else None
    if team.color and not re.fullmatch(r"#[0-9A-Fa-f]{3}(?:[0-9A-Fa-f]{3})?", team.color):
        raise ConfigError(f"{where}: color {team.color!r} is not a hex color such as '#FF6B9D'")
    _check_a2a_prompt(team.a2a_prompt, f"{where}, key 'teams.{name}.a2aPrompt'")
    env_where = f"{where}, key 'teams.{name}.env'"
    for variable, value in team.env.items():
        check_name(str(variable), env_where)
        check_value(str(variable), value, env_where)
    return Team(
        name=name,
        path=expanded if remote else os.path.realpath(expanded),
        host=team.host.strip(),
        ssh_options=tuple(team.ssh_options),
        claude_path=team.claude_path.strip(),
        description=team.description,
        color=team.color,
        idle_timeout_ms=team.idle_timeout if team.idle_timeout is not None else settings.idle_timeout,
        response_timeout_ms=(
            team.response_timeout if team.response_timeout is not None else settings.response_timeout
        ),
        permissions=permissions,
        allowed_tools=tuple(team.allowed_tools if team.allowed_tools is not None else settings.allowed_tools),
        disallowed_tools=tuple(
            team.disallowed_tools if team.disallowed_tools is not None else settings.disallowed_tools
        ),
        env={str(variable): value for variable, value in team.env.items()},
        daily_usd=daily_usd,
        a2a_prompt=team.a2a_prompt,
        compact_at=(
            team.sessions.compact_at
            if team.sessions is not None and team.sessions.compact_at is not None
            else settings.sessions.compact_at
        ),
        restore=settings.sessions.restore,
        spares=(
            team.sessions.spares
            if team.sessions is not None and team.sessions.spares is not None
            else settings.sessions.spares
        ),
    )


def _validate_a2a_team(name: str, team: TeamConfig, settings: Settings, where: str) -> Team:
    """A team that is an A2A agent: its card's URL and the headers its auth needs."""
    url = team.a2a.strip()
    if not url:
        raise ConfigError(
            f"{where}: 'headers' is only for an A2A agent; add 'a2a: URL' (its agent card) or remove 'headers'"
        )
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or rest.startswith("/") or any(c.isspace() for c in url):
        raise ConfigError(
            f"{where}: a2a {team.a2a!r} is not an http(s) URL; write the agent card's URL, e.g. "
            "'https://agent.example.com/.well-known/agent-card.json' (or the agent's base URL)"
        )
    for header, value in team.headers.items():
        key = f"'teams.{name}.headers.{header}'"
        if not A2A_HEADER_NAME.match(str(header)):
            raise ConfigError(f"{where}: header name {key} is not a valid HTTP header name")
        if "\n" in value or "\r" in value:
            raise ConfigError(f"{where}: key {key} holds a line break; a header value is one line")
        for variable in ENV_REFERENCE.findall(value):
            check_syntax(variable, f"{where}, key {key} (in ${{{variable}}})")
    if team.color and not re.fullmatch(r"#[0-9A-Fa-f]{3}(?:[0-9A-Fa-f]{3})?", team.color):
        raise ConfigError(f"{where}: color {team.color!r} is not a hex color such as '#FF6B9D'")
    return Team(
        name=name,
        path="",
        # An agent may work long without a word: only a timeout given for it applies.
        silence_ms=team.response_timeout,
        a2a=url,
        headers={str(header): value for header, value in team.headers.items()},
        description=team.description,
        color=team.color,
        idle_timeout_ms=settings.idle_timeout,
        response_timeout_ms=settings.response_timeout,
    )


def expand_headers(team: Team, environ: dict[str, str]) -> dict[str, str]:
    """The A2A team's headers with each ``${VAR}`` replaced from ``environ``; ConfigError
    naming the variable when one is not set (so a secret never sits in config.yaml)."""
    expanded: dict[str, str] = {}
    for header, value in team.headers.items():
        missing = [v for v in ENV_REFERENCE.findall(value) if v not in environ]
        if missing:
            raise ConfigError(
                f"team {team.name!r}: header {header!r} uses ${{{missing[0]}}}, which is not set in irisd's "
                f"environment; set it there or in $IRIS_HOME/irisd.env, then 'iris reload'"
            )
        expanded[header] = ENV_REFERENCE.sub(lambda m: environ[m.group(1)], value)
    return expanded


# What a team's a2aPrompt may name: the message's text, the A2A client's messageId, and who
# sent it (the agent's name, or "owner"). E.g. "From the A2A agent {sender}:\n\n{text}".
A2A_PROMPT_FIELDS = ("{text}", "{messageId}", "{sender}")


def _check_a2a_prompt(template: str, where: str) -> None:
    if not template:
        return
    if "{text}" not in template:
        raise ConfigError(f"{where}: it must hold {{text}}, where the message goes, e.g. 'From {{sender}}: {{text}}'")
    unknown = sorted(set(re.findall(r"\{\w+\}", template)) - set(A2A_PROMPT_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: {', '.join(unknown)} is no field; it may hold {', '.join(A2A_PROMPT_FIELDS)}")


def a2a_prompt(template: str, text: str, *, message_id: str, sender: str) -> str:
    """The tell an A2A message becomes for a team with ``template`` (its a2aPrompt)."""
    if not template:
        return text
    fields = {"{messageId}": message_id, "{sender}": sender, "{text}": text}
    # One pass, so a message that itself holds "{sender}" is left as it is.
    return re.sub(r"\{(?:text|messageId|sender)\}", lambda m: fields[m.group(0)], template)


def _check_remote(name: str, team: TeamConfig, where: str) -> bool:
    """Is the team on another host? Checks what only a remote team may say."""
    host = team.host.strip()
    if not host:
        if team.ssh_options:
            raise ConfigError(f"{where}: 'sshOptions' is only for a team with a 'host'; add host or remove it")
        return False
    if host.startswith("-") or any(c.isspace() for c in host):
        raise ConfigError(
            f"{where}: host {team.host!r} is not an ssh destination; write e.g. 'build-box' or 'me@10.0.0.5'"
        )
    for key, value in team.env.items():  # sent to the remote side one line each
        if "\n" in str(value) or "\r" in str(value):
            raise ConfigError(
                f"{where}: key 'teams.{name}.env.{key}' holds a line break; a remote team's values are one line"
            )
    return True


def _expand(path: str) -> str:
    return os.path.expanduser(path)
