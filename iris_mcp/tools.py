"""The MCP shim's tools, without I/O: arguments, schemas, identity, and reply rendering.

How it works: each tool's arguments are a msgspec ``Struct`` (camelCase on the wire,
unknown fields refused). That one Struct gives both the JSON Schema the model sees
(``input_schema``) and the validation of what the model sent (``parse_args``), so they
cannot drift apart. The docstring of the Struct is the tool's description.

Every daemon reply is rendered by its type (``render_reply``) into text for the model
plus structured content (the reply as plain data, the shape ``iris ... --json`` prints),
so a request whose reply type the daemon changes still renders sensibly.

Identity (``Identity``, ``resolve_identity``) is derived, never taken from the model:
``--team NAME``, else the deepest configured team folder containing the shim's working
folder, else the external caller.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from iris_common.identity import sender
from iris_common.money import usd
from iris_common.text import pair_name, tail, tell_data
from iris_common.text import short as text_short
from iris_mcp.asking import InputAsk, decide_elsewhere
from protocol import session_words
from protocol.errors import InvalidRequestError
from protocol.limits import (
    MAX_WAIT_MS,
    MIN_WAIT_MS,
    BudgetUsd,
    MessageText,
    TimeoutMs,
    TtlDays,
    explain,
)
from protocol.messages import (
    FINAL_TELL_STATUSES,
    AnswerReply,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    CostRow,
    CostsReply,
    CountReply,
    Event,
    NotificationInfo,
    NotificationReply,
    NotificationsReply,
    PairReply,
    PairsReply,
    ProcessInfo,
    QuestionInfo,
    QuestionReply,
    QuestionsReply,
    Reply,
    ReportReply,
    SessionReply,
    SessionsReply,
    StatusReply,
    TeamInfo,
    TeamsReply,
    TellNotice,
    TellPhase,
    TellPhaseEvent,
    TellReply,
    TellsReply,
    TellState,
    TellText,
    TranscriptReply,
    Welcome,
)
from protocol.phases import approve_command, awaited_approval, describe
from protocol.transcript import Step, steps

# Fits common MCP client limits: the TypeScript SDK (and the many clients built on it)
# fails a request after 60 s by default, and progress notifications do not extend that
# unless the client opts in. 50 s leaves room for start-up and the reply's trip back;
# past it the caller gets the answer so far and the tell's id instead of a client error.
DEFAULT_TELL_TIMEOUT_MS = 50_000

# Caps on what goes back to the model: Claude Code warns above ~25k tokens of tool output.
MAX_PROGRESS_CHARS = 4_000
PROGRESS_INTERVAL_S = 0.2  # at most this often a progress notification for new text
MAX_LISTED_TEXT = 300
MAX_LISTED_ANSWER = 2_000
MAX_TRANSCRIPT_CHARS = 20_000
MAX_TRANSCRIPT_ENTRIES = 200


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
    command: Annotated[
        str, msgspec.Meta(min_length=1, description='The command, with or without "/", e.g. "compact".')
    ]
    args: Annotated[str, msgspec.Meta(description="The command's arguments, if any.")] = ""
    from_team: FromTeam = None
    timeout: Timeout = DEFAULT_TELL_TIMEOUT_MS


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


# --- identity ---------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """The team this shim speaks for; ``team`` None is the external caller."""

    team: str | None
    source: Literal["--team", "folder", "outside", "token", "owner"]
    cwd: str = ""
    team_path: str = ""
    pair: str = ""  # "token": the pair the claude process serves

    def describe(self) -> str:
        match self.source:
            case "--team":
                return f"you are team {self.team!r} (this Iris MCP server was started with --team)"
            case "folder":
                return f"you are team {self.team!r} (the Iris MCP server runs in its folder {self.team_path})"
            case "token":
                return (
                    f"you are team {self.team!r}: irisd started this claude process to answer for it "
                    f"({self.pair}) and knows it by its token"
                )
            case "owner":
                return "you are the owner of irisd (its owner token): the external caller, or any team you name"
            case _:
                return (
                    f"you are the external caller: this Iris MCP server runs in {self.cwd}, outside every "
                    "team's folder, and was not started with --team"
                )

    def check_from_team(self, claimed: str | None) -> str | None:
        """The team to send as (iris_common/identity.py: the rule of every front end). Over
        irisd's /mcp the connection decides (irisd/caller.py): the claim is passed on."""
        if self.source in ("token", "owner"):
            return claimed
        return sender(
            self.team, claimed, self.describe(),
            fix=f"leave fromTeam out; to speak as {claimed!r}, use Iris from that team's folder "
            f"(or 'iris mcp --team {claimed}')",
        )


def resolve_identity(explicit: str | None, cwd: str, teams: list[TeamInfo]) -> Identity:
    """``--team`` wins; else the deepest team folder holding ``cwd`` (real paths compared)."""
    if explicit is not None:
        return Identity(explicit, "--team", cwd)
    here = Path(os.path.realpath(cwd))
    best: tuple[int, TeamInfo] | None = None
    for team in teams:
        if not team.path:  # an A2A agent: no folder to be in
            continue
        root = Path(os.path.realpath(os.path.expanduser(team.path)))
        if (here == root or root in here.parents) and (best is None or len(root.parts) > best[0]):
            best = (len(root.parts), team)
    if best is None:
        return Identity(None, "outside", cwd)
    return Identity(best[1].name, "folder", cwd, best[1].path)


# --- rendering --------------------------------------------------------------------


@dataclass(frozen=True)
class ToolOutput:
    text: str
    data: dict[str, Any]
    is_error: bool = False
    ask: InputAsk | None = None  # instead of a result: ask the client's person first (MCP input_required)

    def structured(self) -> dict[str, Any]:
        """The structured content, standing on its own.

        Claude Code hands the model ``structuredContent`` INSTEAD of the text when a
        successful result has both (anthropics/claude-code#55677, #79944; seen here with
        2.1.330), so the data carries the text too, as ``summary``, unless it already
        holds it (a tell's answer is its ``text``; an error's, its message).
        """
        error = self.data.get("error")
        held = (self.data.get("text"), error.get("message") if isinstance(error, dict) else None)
        if not self.text or self.text in held:
            return self.data
        return {"summary": self.text, **self.data}


def plain(value: object) -> Any:
    return msgspec.to_builtins(value)


def short(text: str, limit: int = MAX_LISTED_TEXT) -> str:
    return text_short(text, limit)


ASK_PERSON = "ask your person to run"


def ask_person(phase: TellPhase) -> str:
    """For the calling model: a tell that waits for an approval (its own, or the one of
    the tell ahead of it: ``describe`` then names the command) waits for a person."""
    approval = awaited_approval(phase)
    if approval is None:
        return ""
    fields = " --field NAME=VALUE" if approval.server else ""  # an MCP server's form: answered field by field
    command = "that command" if approval is not phase else (
        f"'{approve_command(approval.approval_id)}{fields}' or 'iris deny {approval.approval_id[:10]}'")
    return f" ({ASK_PERSON} {command}; team_approve / team_deny decide it if they let you)"


def render_tell(reply: TellReply) -> ToolOutput:
    """A tell's answer for the model; anything but a plain answer says what to do next."""
    info, status = reply.tell, reply.status
    data = tell_data(reply)
    if status == "completed":
        if info.kind == "command":  # with what it printed ("Compacted"), if anything
            said = f": {info.text}" if info.text else "."
            return ToolOutput(f"{info.message} ran in {pair_name(info.from_team, info.to_team)}{said}", data)
        return ToolOutput(info.text or "(the team answered with no text)", data)
    if status == "in_progress":
        if not info.text:
            waits: str = info.status
            if info.phase is not None:
                waits = describe(info.phase) + ask_person(info.phase)
            text = (
                f"Sent to {info.to_team} (tellId {info.id}); it is {waits}. "
                f"Fetch the answer later with team_result {{\"tellId\": \"{info.id}\"}}."
            )
        else:
            text = (
                f"{info.to_team} is still working (tellId {info.id}). The answer so far:\n\n{info.text}\n\n"
                f"Fetch the rest with team_result {{\"tellId\": \"{info.id}\"}}."
            )
        waiting = info.approval_id or (info.phase.approval_id if info.phase is not None else "")
        if waiting:  # its own, or one of a tell further down its chain
            text += f"\nThe tell waits: {decide_elsewhere(waiting)}."
        return ToolOutput(text, data)
    reason = f": {info.error}" if info.error else ""
    text = f"The tell to {info.to_team} {status.replace('_', ' ')}{reason} (tellId {info.id})."
    if info.text:
        text += f"\nWhat it said before that:\n\n{info.text}"
    return ToolOutput(text, data, is_error=True)


def render_cancelled(reply: TellReply) -> ToolOutput:
    """What a cancel did: the tell is interrupted now, or had already ended."""
    info = reply.tell
    if reply.cancelled:
        text = f"Cancelled tell {info.id} to {info.to_team}."
    else:
        text = f"Tell {info.id} to {info.to_team} had already ended ({info.status}); nothing to cancel."
    if info.text:
        text += f" What it had said:\n\n{info.text}"
    return ToolOutput(text, tell_data(reply))


def render_process(process: ProcessInfo, message: str = "") -> str:
    pair = pair_name(process.from_team, process.to_team)
    awake = "awake" if process.state not in ("stopped", "failed") else "asleep"
    details: list[str] = [process.state]
    if process.pid is not None:
        details.append(f"pid {process.pid}")
    if process.queued:
        details.append(f"{process.queued} queued")
    if process.reason:
        details.append(process.reason)
    line = f"{pair}: {awake} ({', '.join(details)})"
    return f"{message}. {line}" if message else line


def render_pair(reply: PairReply) -> ToolOutput:
    return ToolOutput(render_process(reply.process, reply.message), plain(reply))


def render_pairs(reply: PairsReply) -> ToolOutput:
    lines = [render_process(p) for p in reply.processes]
    lines += [f"{team}: not woken: {why}" for team, why in sorted(reply.errors.items())]
    return ToolOutput("\n".join(lines) or "no teams configured", plain(reply), is_error=bool(reply.errors))


def render_report(reply: ReportReply) -> ToolOutput:
    if not reply.tells:
        return ToolOutput("no tells yet", plain(reply))
    lines = []
    for tell in reply.tells:
        line = f"- {tell.id} [{tell.status}] {pair_name(tell.from_team, tell.to_team)}: {short(tell.message)}"
        if tell.text:
            line += f"\n  answer: {short(tell.text)}"
        if tell.error:
            line += f"\n  error: {short(tell.error)}"
        lines.append(line)
    data = plain(reply)
    for tell in data["tells"]:  # the list is for finding a tell; team_result has all of it
        if len(tell.get("text", "")) > MAX_LISTED_ANSWER:
            tell["text"] = tell["text"][:MAX_LISTED_ANSWER] + "…"
            tell["text_truncated"] = True
    return ToolOutput("\n".join(lines), data)


def step_line(step: Step) -> str:
    """One step of a transcript (protocol/transcript.py) in a line, for a model."""
    match step.kind:
        case "text":
            return f"assistant: {short(step.text)}"
        case "tool":
            return f"calls {step.tool} {short(json.dumps(step.input, ensure_ascii=False), 150)}"
        case "result":
            return f"tool {'error' if step.is_error else 'result'}: {short(step.text, 150)}"
        case "end":
            return f"result ({step.subtype}): {short(step.answer)}"
        case _:
            return short(step.text)


def render_transcript(reply: TranscriptReply) -> ToolOutput:
    tell = reply.tell
    pair = pair_name(tell.from_team, tell.to_team)
    header = f"tell {tell.id} [{tell.status}] {pair}: {short(tell.message)}"
    # One line per step; the raw JSON stays with the daemon ('iris cache read --raw'): the
    # model reads this data, and raw transcripts run to megabytes.
    lines = [(step, step_line(step)) for step in steps(reply.entries, tell) if step.kind != "thinking"]  # what it did
    entries = [{"at": step.at, "kind": step.kind, "line": line} for step, line in lines]
    data: dict[str, Any] = {"tell": plain(tell), "entries": entries[-MAX_TRANSCRIPT_ENTRIES:]}
    if len(entries) > MAX_TRANSCRIPT_ENTRIES:
        data["entries_truncated"] = True
    body = "\n".join(line for _, line in lines)
    return ToolOutput(tail(f"{header}\n{body}", MAX_TRANSCRIPT_CHARS), data)


def render_teams(status: StatusReply, me: str | None) -> ToolOutput:
    """Every team with its description and the state of the caller's process to it."""
    mine = {p.to_team: p for p in status.processes if p.from_team == me}
    rows = []
    for team in status.teams:
        process = mine.get(team.name)
        state = process.state if process is not None else "stopped"
        rows.append({**plain(team), "state": state, "awake": state not in ("stopped", "failed")})
    lines = [
        f"- {r['name']}{' (you)' if r['name'] == me else ''}: {r.get('description') or 'no description'} "
        f"[{'awake' if r['awake'] else 'asleep'}] {r['path']}"
        for r in rows
    ]
    text = "\n".join(lines) if lines else "no teams configured; add them under 'teams:' in config.yaml"
    return ToolOutput(text, {"teams": rows, "you": me})


def render_awake(status: StatusReply, me: str | None) -> ToolOutput:
    teams = render_teams(status, me).data["teams"]
    running = sum(p.pid is not None for p in status.processes)
    lines = [f"{t['name']}: {'awake' if t['awake'] else 'asleep'} ({t['state']})" for t in teams]
    lines.append(f"{running} of at most {status.max_processes} Claude processes run")
    pool = {"processes": running, "max_processes": status.max_processes}
    return ToolOutput("\n".join(lines), {"teams": {t["name"]: t for t in teams}, "pool": pool})


def render_notification(info: NotificationInfo) -> str:
    return (
        f"notification {info.id} for {info.to_team}: {info.status}"
        f"{f' (tell {info.tell_id})' if info.tell_id else ''}{f': {info.error}' if info.error else ''}"
    )


def render_approval(a: ApprovalInfo) -> str:
    """One approval, readable: who wants which tool with what input, and its state."""
    what = json.dumps(a.input, ensure_ascii=False)
    if a.tool_name == "Bash" and isinstance(a.input.get("command"), str):
        what = f"$ {a.input['command']}"
    state = a.status if a.status == "pending" else f"{a.status} by {a.decided_by or '-'}"
    reason = f" ({a.reason})" if a.reason else ""
    if a.kind == "input":
        from protocol.forms import describe_form

        return (f"{a.id}: {pair_name(a.from_team, a.to_team)}'s MCP server {a.tool_name} asks for input: "
                f"{a.message} (fields: {describe_form(a.schema) or 'none'}) [{state}{reason}]")
    return f"{a.id}: {pair_name(a.from_team, a.to_team)} wants {a.tool_name}: {what} [{state}{reason}]"


def render_question(q: QuestionInfo) -> str:
    asked_of = q.from_team or "external"
    state = q.status if q.status == "pending" else f"{q.status}{f' by {q.closed_by}' if q.closed_by else ''}"
    return f"{q.id}: {q.to_team} asks {asked_of} [{state}]: {q.question}"


def render_answer(reply: AnswerReply) -> ToolOutput:
    told = render_tell(TellReply(status=reply.status, tell=reply.tell))
    data = {"question": plain(reply.question), **told.data}
    return ToolOutput(f"Answered {reply.question.id}. {reply.tell.to_team} replied:\n\n{told.text}", data,
                      is_error=told.is_error)


def render_costs(reply: CostsReply) -> ToolOutput:
    def counted(n: int, thing: str) -> str:
        return f"{n} {thing}" if n == 1 else f"{n} {thing}s"

    def line(row: CostRow) -> str:
        return (
            f"- {row.key}: {usd(row.cost_usd)} over {counted(row.tells, 'tell')} ({row.input_tokens} input, "
            f"{row.output_tokens} output, {row.cache_read_tokens} cache-read tokens; {counted(row.num_turns, 'turn')})"
        )

    lines = [line(row) for row in reply.rows] or ["no costs recorded"]
    lines.append(f"total: {usd(reply.total.cost_usd)} over {counted(reply.total.tells, 'tell')}")
    return ToolOutput("\n".join(lines), plain(reply))


def render_fan_out(reply: TellsReply) -> ToolOutput:
    """Every target's answer under its team's name; an error only if none answered."""
    parts, results = [], []
    for result in reply.results:
        if result.tell is not None:
            told = render_tell(TellReply(status=result.status if result.status != "refused" else "failed",
                                         tell=result.tell))
            parts.append(f"## {result.to_team} ({result.status})\n{told.text}")
            results.append({**told.data, "status": result.status})
            results[-1].pop("message", None)
        else:
            parts.append(f"## {result.to_team} (refused)\n{result.error}")
            results.append({"to_team": result.to_team, "status": "refused",
                            "error": {"code": result.error_code, "message": result.error}})
    none_answered = all(r.status not in ("completed", "in_progress") for r in reply.results)
    return ToolOutput("\n\n".join(parts), {"results": results}, is_error=none_answered)


def render_status(status: StatusReply) -> ToolOutput:
    lines = [f"irisd {status.daemon_version} (pid {status.pid}), {len(status.teams)} teams, "
             f"{status.pending_approvals} approvals waiting"]
    lines += [render_process(p) + (f", tell {p.current_tell}" if p.current_tell else "") for p in status.processes]
    lines += [f"health {f.severity}: {f.summary} (fix: {f.fix})" for f in status.findings]
    return ToolOutput("\n".join(lines), plain(status))


def render_reply(reply: Reply) -> ToolOutput:
    """Any daemon reply as tool output, by its type."""
    match reply:
        case TellReply():
            return render_tell(reply)
        case PairReply():
            return render_pair(reply)
        case PairsReply():
            return render_pairs(reply)
        case ReportReply():
            return render_report(reply)
        case TranscriptReply():
            return render_transcript(reply)
        case CountReply(count):
            return ToolOutput(f"done ({count})", plain(reply))
        case NotificationReply(notification):
            text = render_notification(notification) + ". It will be delivered when the team is free."
            return ToolOutput(text, plain(reply))
        case NotificationsReply(notifications):
            text = "\n".join(render_notification(n) for n in notifications) or "no notifications"
            return ToolOutput(text, plain(reply))
        case ApprovalsReply(approvals):
            text = "\n\n".join(render_approval(a) for a in approvals) or "no approvals waiting"
            return ToolOutput(text, plain(reply))
        case ApprovalReply(approval):
            return ToolOutput(render_approval(approval), plain(reply))
        case TeamsReply(teams):
            return ToolOutput("\n".join(f"- {t.name}: {t.description}" for t in teams), plain(reply))
        case QuestionsReply(questions):
            text = "\n\n".join(render_question(q) for q in questions) or "no pending questions"
            return ToolOutput(text, plain(reply))
        case QuestionReply(question):
            return ToolOutput(render_question(question), plain(reply))
        case AnswerReply():
            return render_answer(reply)
        case CostsReply():
            return render_costs(reply)
        case TellsReply():
            return render_fan_out(reply)
        case StatusReply():
            return render_status(reply)
        case SessionsReply(sessions):
            lines = [
                f"- {pair_name(s.from_team, s.to_team)}: session {s.session_id}, {s.message_count} turns, "
                f"{s.process_state}, cost {usd(s.cost_usd)}, context {session_words.context(s)}, "
                f"compactions {session_words.compactions(s)}" + (f", {s.status}" if s.status != "active" else "")
                for s in sessions
            ]
            return ToolOutput("\n".join(lines) or "no conversations yet", plain(reply))
        case SessionReply() | Welcome():
            return ToolOutput(json.dumps(plain(reply), indent=1), plain(reply))
    return ToolOutput(f"irisd answered with {type(reply).__name__}", {"type": type(reply).__name__})


@dataclass
class TellWatch:
    """What a streaming tell has shown so far: its id, status and text, and when the next
    progress notification is due. Time is an argument (``now``), so it is tested without
    sleeping."""

    to_team: str
    interval: float = PROGRESS_INTERVAL_S
    tell_id: str | None = None
    status: str = ""
    parts: list[str] = field(default_factory=list)
    notice: str = ""  # the latest TellNotice (claude retrying the API), shown until text comes
    phase: str = ""  # what the tell waits for, in words (irisd's TellPhase)
    progress: float = 0.0  # strictly increasing, one step per notification (MCP requires it)
    waiting: TellPhase | None = None  # the approval the tell waits for now, if any
    _last_sent: float = -math.inf

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, event: Event, now: float) -> str | None:
        """Take one pushed event; the progress message to send now, or None."""
        match event:
            case TellText(tell_id=tell_id, text=text):
                self.tell_id = tell_id
                self.parts.append(text)
                if now - self._last_sent < self.interval:
                    return None  # the next one carries this text too
            case TellState(tell_id=tell_id, status=status):
                self.tell_id = tell_id
                if status != "awaiting_approval":
                    self.waiting = None
                if status == self.status:
                    return None
                self.status = status
                if status in FINAL_TELL_STATUSES:
                    return None  # the result itself follows at once
            case TellNotice(tell_id=tell_id, text=text):
                self.tell_id = tell_id
                self.notice = text
            case TellPhaseEvent(tell_id=tell_id, phase=phase):
                self.tell_id = tell_id
                self.waiting = phase if phase.name == "awaiting_approval" and phase.approval_id else None
                said = describe(phase) + ask_person(phase)
                if said == self.phase or (self.parts and phase.name == "answering"):
                    return None
                self.phase = said
                self.notice = ""
            case _:
                return None  # an event this shim does not know yet: not worth a notification
        self._last_sent = now
        self.progress += 1
        return self.message()

    def message(self) -> str:
        if self.parts and ASK_PERSON not in self.phase:
            return tail(self.text, MAX_PROGRESS_CHARS)
        if self.notice:
            return self.notice
        if self.phase:
            return f"{self.to_team}: {self.phase}"
        match self.status:
            case "queued":
                return f"queued for {self.to_team}"
            case "running":
                return f"{self.to_team} is working on it"
        return f"{self.to_team}: {self.status}"

    def next_step(self) -> str:
        if self.tell_id is None:
            return f'see team_report {{"team": "{self.to_team}"}}'
        return f'fetch it with team_result {{"tellId": "{self.tell_id}"}}'

    def lost_message(self) -> str:
        return (
            f"the connection to irisd broke while the tell to {self.to_team} was under way; it may "
            f"have been delivered and answered, so it was not sent again: {self.next_step()}"
        )


def render_unanswered(watch: TellWatch, waited_s: float) -> ToolOutput:
    """irisd missed the tell's own deadline (it should never): say what is known."""
    text = f"irisd did not answer within {waited_s:g} s; the tell may still be running: {watch.next_step()}."
    if watch.parts:
        text += f"\nThe answer so far:\n\n{watch.text}"
    data = {"id": watch.tell_id, "status": "in_progress", "text": watch.text, "to_team": watch.to_team}
    return ToolOutput(text, data, is_error=True)


def error_output(message: str, code: str) -> ToolOutput:
    return ToolOutput(message, {"error": {"code": code, "message": message}}, is_error=True)
