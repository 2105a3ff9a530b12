"""The MCP shim's tools, without I/O: their arguments, schemas and table.

How it works: each tool's arguments are a msgspec ``Struct`` (camelCase on the wire,
unknown fields refused). That one Struct gives both the JSON Schema the model sees
(``input_schema``) and the validation of what the model sent (``parse_args``), so they
cannot drift apart. The docstring of the Struct is the tool's description.

Who the shim speaks for is ``iris_mcp.identity``; how a reply reads for the model,
``iris_mcp.render``; what a streaming tell has shown so far, ``iris_mcp.watch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

from protocol.errors import InvalidRequestError
from protocol.limits import (
    MAX_WAIT_MS,
    MIN_WAIT_MS,
    BudgetUsd,
    MessageText,
    SlashArgs,
    SlashCommand,
    ThreadName,
    TimeoutMs,
    TtlDays,
    explain,
)

# Fits common MCP client limits: the TypeScript SDK (and the many clients built on it)
# fails a request after 60 s by default, and progress notifications do not extend that
# unless the client opts in. 50 s leaves room for start-up and the reply's trip back;
# past it the caller gets the answer so far and the tell's id instead of a client error.
DEFAULT_TELL_TIMEOUT_MS = 50_000


# --- arguments --------------------------------------------------------------------

FromTeam = Annotated[
    str | None,
    msgspec.Meta(
        description="Your own team. Optional: Iris knows who you are (see team_getTeamName); "
        "if given it must be that team."
    ),
]
Team = Annotated[str, msgspec.Meta(min_length=1, description="The team's name, as listed by team_teams.")]
TellId = Annotated[
    str, msgspec.Meta(min_length=1, description="The tell's id (tellId returned by team_tell).")
]
Timeout = Annotated[  # the wire's range (protocol/limits.py); only the default is the MCP's own
    TimeoutMs,
    msgspec.Meta(
        description="Milliseconds to wait for the answer: -1 returns at once with the tell's id, "
        f"0 waits until the answer is complete, N ({MIN_WAIT_MS} to {MAX_WAIT_MS}) waits up to N ms and then "
        f"returns the answer so far while the team works on. Default {DEFAULT_TELL_TIMEOUT_MS}.",
    ),
]


class _Args(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class TellArgs(_Args):
    """Send a message to another team's Claude Code agent and get its answer. Each
    (your team, that team) pair keeps its own conversation, so follow-up messages keep
    their context. By default it waits up to 50 s; if the team is still working you get
    the answer so far and a tellId: fetch the rest with team_result. Use timeout -1 to
    send without waiting, or persist=true to queue a message durably for later delivery
    (fire-and-forget, survives restarts). toTeams asks several teams at once (each
    answer labelled with its team)."""

    message: Annotated[MessageText, msgspec.Meta(min_length=1)]
    to_team: Annotated[str, msgspec.Meta(description="The team to tell (see team_teams).")] = ""
    to_teams: Annotated[
        list[str],
        msgspec.Meta(description="Several teams to tell at once (instead of toTeam); each answers on its own."),
    ] = []
    from_team: FromTeam = None
    timeout: Timeout = DEFAULT_TELL_TIMEOUT_MS
    persist: Annotated[
        bool,
        msgspec.Meta(
            description="Store the message durably and deliver it when the team is free, "
            "without waiting for an answer (a notification)."
        ),
    ] = False
    ttl_days: TtlDays | None = None  # with persist; DEFAULT_TTL_DAYS if left out
    max_budget_usd: BudgetUsd | None = None
    thread: ThreadName = ""  # another conversation with the team, e.g. "auth-refactor"


class IsAwakeArgs(_Args):
    """Is a team's Claude process for your conversation with it running (awake) or
    stopped (asleep)? Without a team: every team, plus how many processes run."""

    team: Annotated[str | None, msgspec.Meta(description="One team; omit for all teams.")] = None
    from_team: FromTeam = None


class WakeArgs(_Args):
    """Start a team's Claude process for your conversation with it now, so the next
    team_tell answers without start-up delay."""

    team: Team
    from_team: FromTeam = None


class SleepArgs(_Args):
    """Stop a team's Claude process for your conversation with it (the conversation is
    kept and resumes on the next team_tell). A busy process is left alone unless force."""

    team: Team
    from_team: FromTeam = None
    force: Annotated[
        bool, msgspec.Meta(description="Stop it even while it answers (that tell is interrupted).")
    ] = False


class WakeAllArgs(_Args):
    """Start the Claude processes of every configured team for your conversations with them."""

    from_team: FromTeam = None
    parallel: Annotated[
        bool, msgspec.Meta(description="Start them all at once (default) rather than one after another.")
    ] = True


class ReportArgs(_Args):
    """Recent tells between you and a team: each message, its status and (the start of)
    its answer, newest first. Read one in full with team_result or team_cache_read."""

    team: Team
    from_team: FromTeam = None
    all_callers: Annotated[
        bool, msgspec.Meta(description="Include tells to that team from every caller, not only you.")
    ] = False
    limit: Annotated[int, msgspec.Meta(ge=1, le=200, description="How many tells, at most.")] = 20


class CommandArgs(_Args):
    """Run a Claude Code slash command in your conversation with a team, e.g. "compact"
    to shrink a long conversation. It waits its turn behind that pair's tells."""

    team: Team
    command: SlashCommand
    args: SlashArgs = ""
    from_team: FromTeam = None
    timeout: Timeout = DEFAULT_TELL_TIMEOUT_MS
    thread: ThreadName = ""  # the conversation of that thread ("": the default one)


class CacheReadArgs(_Args):
    """Everything a team's Claude printed while answering one tell (its transcript:
    tool calls, results, text). Give a tellId, or a team for your latest tell to it."""

    tell_id: Annotated[
        str | None, msgspec.Meta(description="The tell to read (from team_tell or team_report).")
    ] = None
    team: Annotated[
        str | None, msgspec.Meta(description="Without tellId: read your latest tell to this team.")
    ] = None
    from_team: FromTeam = None


class CacheClearArgs(_Args):
    """Forget the finished tells (and their transcripts) between you and a team. The
    conversation itself is kept."""

    team: Team
    from_team: FromTeam = None


class TeamsArgs(_Args):
    """The configured teams: name, description, folder, and whether the Claude process
    of your conversation with each is running."""


class GetTeamNameArgs(_Args):
    """Who you are in Iris: the team this server speaks for (or the external caller),
    and how that was decided."""


class ResultArgs(_Args):
    """The status and answer of a tell by id: the answer so far while it runs, the full
    answer once it completed."""

    tell_id: TellId
    wait: Annotated[
        int,
        msgspec.Meta(
            ge=0, le=MAX_WAIT_MS, description="Wait up to this many ms for the tell to end (0: no wait)."
        ),
    ] = 0


class CancelArgs(_Args):
    """Cancel a tell: drop it if it is still queued, interrupt the team if it is answering."""

    tell_id: TellId


ApprovalId = Annotated[
    str, msgspec.Meta(min_length=1, description="The approval's id, as listed by team_approvals.")
]


class ApprovalsArgs(_Args):
    """Requests of teams to use a tool (run a command, edit a file) that wait for a
    person's decision: which team, which tool, with what input. Show them to your user;
    decide only as your user tells you, with team_approve or team_deny."""

    team: Annotated[
        str | None, msgspec.Meta(description="Only requests of or for this team (default: all).")
    ] = None
    all: Annotated[bool, msgspec.Meta(description="Include decided and expired ones.")] = False


class ApproveArgs(_Args):
    """Allow a team's pending tool use (see team_approvals). Only on your user's word."""

    approval_id: ApprovalId
    remember: Annotated[
        bool,
        msgspec.Meta(description="Also allow the same request of that pair from now on, without asking."),
    ] = False
    content: Annotated[
        dict[str, Any] | None,
        msgspec.Meta(description="For a team's MCP server asking for input: your user's answer to its form "
                     "(field: value; team_approvals shows the fields). team_deny declines it."),
    ] = None


class DenyArgs(_Args):
    """Refuse a team's pending tool use (see team_approvals). The team's model reads the reason."""

    approval_id: ApprovalId
    reason: Annotated[str, msgspec.Meta(description="Why, for the team's model.")] = ""


class QuestionsArgs(_Args):
    """Questions teams asked in answers nobody was waiting for (a tell sent with timeout
    -1 or persist, or one that outlasted its wait): by default the pending ones asked of
    you. Answer one with team_answer; the answer continues that conversation."""

    team: Annotated[str | None, msgspec.Meta(description="Only questions of or for this team.")] = None
    all: Annotated[bool, msgspec.Meta(description="Include answered, dismissed and expired ones.")] = False
    all_callers: Annotated[
        bool, msgspec.Meta(description="Questions asked of every caller, not only of you.")
    ] = False


class AnswerArgs(_Args):
    """Answer a pending question asked of you (see team_questions): the text is sent as
    your next message in that same conversation, and the team's reply comes back."""

    question_id: Annotated[str, msgspec.Meta(min_length=1, description="The question's id (from team_questions).")]
    text: Annotated[str, msgspec.Meta(min_length=1, description="Your answer.")]
    timeout: Timeout = DEFAULT_TELL_TIMEOUT_MS


class CostsArgs(_Args):
    """What tells cost, as claude reported it (USD, tokens, turns), summed per team,
    pair (asker->answerer), chain of nested tells, or day."""

    by: Annotated[
        Literal["team", "pair", "chain", "day"], msgspec.Meta(description="How to group: team, pair, chain or day.")
    ] = "team"
    since_hours: Annotated[
        float, msgspec.Meta(ge=0, description="Only the last N hours (0: everything recorded).")
    ] = 0
    team: Annotated[str | None, msgspec.Meta(description="Only tells to or from this team.")] = None


class StatusArgs(_Args):
    """irisd's state: its teams, every pair's claude process (state, pid, queue, current
    tell) and how many approvals wait."""


class SessionsArgs(_Args):
    """The pairs' persistent conversations: which pairs exist, their session ids, turns,
    last use, what they cost, how full each is (its context against the model's window)
    and its compactions."""

    team: Annotated[str | None, msgspec.Meta(description="Only the conversations with this team.")] = None
    archived: Annotated[bool, msgspec.Meta(description="The archived conversations (only those).")] = False


@dataclass(frozen=True)
class ToolDef:
    name: str
    title: str
    args: type[_Args]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    @property
    def description(self) -> str:
        return " ".join((self.args.__doc__ or "").split())


TOOLS: tuple[ToolDef, ...] = (
    ToolDef("team_tell", "Tell a team", TellArgs),
    ToolDef("team_isAwake", "Is a team awake?", IsAwakeArgs, read_only=True, idempotent=True),
    ToolDef("team_wake", "Wake a team", WakeArgs, idempotent=True),
    ToolDef("team_sleep", "Put a team to sleep", SleepArgs, idempotent=True),
    ToolDef("team_wake_all", "Wake every team", WakeAllArgs, idempotent=True),
    ToolDef("team_report", "Recent tells with a team", ReportArgs, read_only=True, idempotent=True),
    ToolDef("team_command", "Slash command for a team", CommandArgs),
    ToolDef("team_cache_read", "Read a tell's transcript", CacheReadArgs, read_only=True, idempotent=True),
    ToolDef("team_cache_clear", "Forget finished tells", CacheClearArgs, destructive=True, idempotent=True),
    ToolDef("team_teams", "List the teams", TeamsArgs, read_only=True, idempotent=True),
    ToolDef("team_getTeamName", "Who am I?", GetTeamNameArgs, read_only=True, idempotent=True),
    ToolDef("team_result", "A tell's answer", ResultArgs, read_only=True, idempotent=True),
    ToolDef("team_cancel", "Cancel a tell", CancelArgs, destructive=True, idempotent=True),
    ToolDef("team_approvals", "Tool uses waiting for a decision", ApprovalsArgs, read_only=True, idempotent=True),
    ToolDef("team_approve", "Allow a team's tool use", ApproveArgs, destructive=True),
    ToolDef("team_deny", "Refuse a team's tool use", DenyArgs, destructive=True),
    ToolDef("team_questions", "Questions waiting for an answer", QuestionsArgs, read_only=True, idempotent=True),
    ToolDef("team_answer", "Answer a team's question", AnswerArgs),
    ToolDef("team_costs", "What tells cost", CostsArgs, read_only=True, idempotent=True),
    ToolDef("team_status", "Iris's state", StatusArgs, read_only=True, idempotent=True),
    ToolDef("team_sessions", "The pairs' conversations", SessionsArgs, read_only=True, idempotent=True),
)
# The tools of `iris mcp --read-only` (iris-agent's): they read Iris's state, never change it.
READ_ONLY_TOOLS = tuple(t.name for t in TOOLS if t.read_only and t.name != "team_getTeamName")
# ... and what iris-agent may propose over irisd's /mcp (its own token): irisd files each call
# as an approval for the person (irisd/agent/actions.py) unless settings.agent.allow allows it.
AGENT_PROPOSES = ("team_tell", "team_wake", "team_sleep", "team_cancel", "team_answer")
# The tools a claude child that Iris started may use without a person's say:
# never the ones that decide approvals (a team must not approve its own requests).
CHILD_ALLOWED_TOOLS = tuple(t.name for t in TOOLS if t.name not in ("team_approve", "team_deny"))
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def input_schema(args: type[_Args]) -> dict[str, Any]:
    """The tool's JSON Schema: msgspec's, inlined, with optional fields shown plainly.

    Optional fields accept null (models send it) but are advertised as their plain type:
    some MCP clients handle ``anyOf`` poorly, and an omitted field means the same.
    """
    (schema,), components = msgspec.json.schema_components([args], ref_template="{name}")
    body: dict[str, Any] = dict(components[schema["$ref"]])
    body.pop("title", None)
    body.pop("description", None)
    properties = body.setdefault("properties", {})
    for name, prop in properties.items():
        options = prop.pop("anyOf", None)
        if options is not None:
            (plain,) = [o for o in options if o.get("type") != "null"]
            prop.update(plain)
        if prop.get("default", 0) is None:
            del prop["default"]
        if "enum" in prop and "type" not in prop and all(isinstance(v, str) for v in prop["enum"]):
            prop["type"] = "string"  # msgspec leaves it out for a Literal; some clients want it
        properties[name] = prop
    return body


def parse_args(tool: ToolDef, arguments: dict[str, Any] | None) -> Any:
    """Validate the model's arguments; InvalidRequestError says what is wrong and how to fix it."""
    try:
        return msgspec.convert(arguments or {}, tool.args, strict=False)
    except msgspec.ValidationError as exc:
        fields = ", ".join(input_schema(tool.args).get("properties", {})) or "none"
        raise InvalidRequestError(
            f"invalid arguments for {tool.name}: {explain(exc, [tool.args]) or exc}. Its arguments: {fields}."
        ) from None
