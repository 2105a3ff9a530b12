"""Every message on the irisd socket, as msgspec Structs.

Three tagged unions, one per direction and kind:

* ``Request``: client -> daemon. The first request on a connection must be ``Hello``.
* ``Reply``: daemon -> client, exactly one per request (``ErrorReply`` on failure).
* ``Event``: daemon -> client, pushed before the reply of a streaming request
  (``Tell(stream=True)``, ``Watch``).

Compatibility rules: new fields get defaults; a field's type never changes; a new
message is a new tag. ``Hello`` carries ``PROTOCOL_VERSION`` so both sides can refuse
a peer they do not understand.

The handshake's and a tell's messages are in ``core_messages``, ``iris status``'s in
``status_messages`` (the CLI's hot paths import those alone); all are re-exported here.

No ``from __future__ import annotations`` here (nor in ``core_messages``, ``status_messages``
and ``health``): msgspec reads a Struct's annotations when it first encodes or decodes
one, and each string annotation costs a ``compile()``: the decoders of every request and
every reply and event took 10 to 17 ms to make with them, 2.5 to 3 ms without.
"""

from typing import Any, Literal, TypeGuard, get_args

import msgspec

# The handshake's and a tell's messages, and the base of every message, live in
# ``core_messages`` (what ``iris tell`` creates); they are this module's as much as the rest.
from protocol.core_messages import ANSWERED_STATUSES as ANSWERED_STATUSES
from protocol.core_messages import FINAL_TELL_STATUSES as FINAL_TELL_STATUSES
from protocol.core_messages import UNFINISHED_TELL_STATUSES as UNFINISHED_TELL_STATUSES
from protocol.core_messages import ChainRef as ChainRef
from protocol.core_messages import ErrorReply as ErrorReply
from protocol.core_messages import Hello as Hello
from protocol.core_messages import PhaseName as PhaseName
from protocol.core_messages import ReplyStatus as ReplyStatus
from protocol.core_messages import Tell as Tell
from protocol.core_messages import TellInfo as TellInfo
from protocol.core_messages import TellKind as TellKind
from protocol.core_messages import TellNotice as TellNotice
from protocol.core_messages import TellPhase as TellPhase
from protocol.core_messages import TellPhaseEvent as TellPhaseEvent
from protocol.core_messages import TellReply as TellReply
from protocol.core_messages import TellState as TellState
from protocol.core_messages import TellStatus as TellStatus
from protocol.core_messages import TellText as TellText
from protocol.core_messages import Welcome as Welcome
from protocol.core_messages import _Event, _Message
from protocol.health import Finding, Recovery
from protocol.limits import (
    BudgetUsd,
    ListLimit,
    MessageText,
    ResultWaitMs,
    SlashArgs,
    SlashCommand,
    ThreadName,
    TimeoutMs,
)
from protocol.status_messages import GetStatus as GetStatus
from protocol.status_messages import LogEntry as LogEntry
from protocol.status_messages import ProcessInfo as ProcessInfo
from protocol.status_messages import ProcessState as ProcessState
from protocol.status_messages import StatusReply as StatusReply
from protocol.status_messages import TeamInfo as TeamInfo
from protocol.status_messages import UnsolicitedInfo as UnsolicitedInfo

# --- shared records -------------------------------------------------------------


class SessionInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A pair's persistent conversation."""

    from_team: str | None
    to_team: str
    session_id: str
    created_at: float
    last_used_at: float
    message_count: int = 0
    status: str = "active"
    process_state: ProcessState = "stopped"
    transcript_exists: bool = True
    cost_usd: float = 0.0  # spent on the pair's tells, as the cost ledger has it
    # How full the conversation is: the tokens the model read for its last answer, against
    # the model's context window (irisd/pool/compaction.py); None before the first answer.
    context_tokens: int | None = None
    context_window: int | None = None
    # Its compactions (Iris's between tells, a /compact, claude's own near a full context):
    # how many, the last one's time, trigger ("iris", "manual", "auto"), tokens before and
    # after, and the conversation's message count when it ran.
    compactions: int = 0
    last_compacted_at: float | None = None
    compact_trigger: str = ""
    compact_tokens_before: int | None = None
    compact_tokens_after: int | None = None
    compact_messages_before: int | None = None
    archived_at: float | None = None  # with status "archived": since when (settings.sessions.archiveAfterDays)
    files_deleted: bool = False  # its claude transcript was deleted (settings.sessions.deleteArchivedAfterDays)
    thread: str = ""  # which of the pair's conversations ("": the default thread)


class TranscriptEntry(msgspec.Struct, kw_only=True):
    """One line claude printed during a tell, kept raw (JSON text)."""

    at: float
    type: str
    raw: str


StepKind = Literal["start", "text", "thinking", "tool", "result", "approval", "notice", "end", "other"]


class Step(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing claude did during a tell, read from its lines by ``protocol.transcript``
    (the one reading of them: the CLI, the MCP tools and the dashboard render steps).
    ``text`` says it in words (a tool: its name and input in a line; a result: the tool's
    whole output; end: outcome, time and cost)."""

    kind: StepKind
    at: float = 0.0
    text: str = ""
    tool: str = ""  # tool, approval: the tool's name
    tool_id: str = ""  # tool, result, approval: the tool call's id (a result and an approval name theirs)
    input: Any = None  # tool, approval: the tool's input
    is_error: bool = False  # result: the tool failed; end: the turn failed
    answer: str = ""  # end: claude's result text
    subtype: str = ""  # end: claude's own word for the outcome (success, error_max_turns, ...)
    duration_s: float | None = None  # end: how long the turn took
    turns: int | None = None  # end: the model turns it took
    cost_usd: float | None = None  # end: what the tell cost (claude's running total when the tell is not known)
    input_tokens: int | None = None  # end
    output_tokens: int | None = None  # end


class NotificationInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A persisted fire-and-forget tell."""

    id: str
    from_team: str | None
    to_team: str
    message: str
    # refused: its chain refused it at delivery (the hop limit, a loop), for good
    status: Literal["pending", "delivering", "delivered", "expired", "refused"]
    created_at: float
    expires_at: float
    attempts: int = 0
    tell_id: str = ""
    error: str = ""
    chain: ChainRef | None = None  # the chain it was sent in; None: it starts one when delivered


ApprovalStatus = Literal["pending", "allowed", "denied", "expired"]
# What a person decides: a tool use (``tool``), a form one of the team's own MCP servers
# asks its person to fill in (``input``: allowed = answered, denied = declined), or whether a
# chain of nested tells may spend beyond its budget (``budget``: settings.budget.askToExceed),
# or an action iris-agent proposes (``agent``).
ApprovalKind = Literal["tool", "agent", "input", "budget"]
QuestionStatus = Literal["pending", "answered", "expired", "dismissed"]
CostGrouping = Literal["team", "pair", "chain", "day"]


AgentClassification = Literal["person", "team", "none"]


class AgentVerdict(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What iris-agent's watcher made of a pending question nobody answered in time:
    one for the ``person``, one the asked ``team`` can answer (with the answer it
    ``suggestion``s, filed as an approval, ``approval_id``), or ``none`` (no question)."""

    classification: AgentClassification
    confidence: float
    reason: str = ""
    suggestion: str = ""
    approval_id: str = ""
    at: float = 0.0
    cost_usd: float | None = None
    said: str = ""  # what iris-agent answered, whole (the start of it, if long)


class QuestionInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A team's answer that ended by asking its caller something, when nobody was
    waiting for that answer (a pending question)."""

    id: str
    from_team: str | None  # the asking pair's caller: the one the question is for
    to_team: str  # the team that asked
    session_id: str
    tell_id: str  # the tell whose answer asked
    question: str  # the asking sentence(s)
    context: str  # the end of the answer, for a person to judge
    confidence: float
    status: QuestionStatus
    created_at: float
    expires_at: float
    pattern: str = ""  # which rule matched
    closed_at: float | None = None
    closed_by: str = ""
    answer: str = ""
    answer_tell_id: str = ""
    agent: AgentVerdict | None = None  # iris-agent's watcher, when it looked (settings.agent.watch)


class CostRow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Summed figures of the tells in one group (a team, a pair, a chain, a day)."""

    key: str
    tells: int = 0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    num_turns: int = 0
    duration_ms: int = 0
    maintenance_usd: float = 0.0  # of cost_usd: compactions Iris ran on the group's conversations


class PairStats(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One conversation over its life (a pair's, or one of its threads'), from the cost
    ledger and the store (``iris sessions --stats``)."""

    from_team: str | None
    to_team: str
    thread: str = ""  # which of the pair's conversations ("": its default one)
    tells: int = 0  # tells the ledger has figures for (compactions not counted)
    messages: int = 0  # the conversation's exchanges now (the store; a reset starts it again)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0  # tells and maintenance
    maintenance_usd: float = 0.0  # of cost_usd: compactions Iris ran
    first_used_at: float | None = None  # the first tell's start (finish minus claude's time)
    last_used_at: float | None = None  # the last tell's (or compaction's) finish
    lifetime_s: float = 0.0  # last use minus first use
    compactions: int = 0
    mean_tell_ms: float = 0.0  # claude's time per tell (the result line's duration_ms)
    p95_tell_ms: int = 0  # nearest rank: 95 % of the tells took at most this
    status: str = ""  # the conversation's (active, compact_pending, archived); "" if it has none now


class PairDay(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One conversation's tells and cost on one day (local time), for the chart per day."""

    from_team: str | None
    to_team: str
    thread: str = ""
    day: str  # YYYY-MM-DD
    tells: int = 0
    cost_usd: float = 0.0


class FanOutResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One target of a fan-out tell: its answer, or why it has none."""

    to_team: str
    status: Literal["completed", "timed_out", "interrupted", "failed", "in_progress", "refused"]
    tell: TellInfo | None = None
    error_code: str = ""
    error: str = ""


class ApprovalInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A team's request to use a tool, and what was decided. Of kind ``input``: one of
    the team's MCP servers (``tool_name``) asks for ``message`` with a form
    (``schema``: MCP's ``requestedSchema``); ``content`` is what the person answered."""

    id: str
    from_team: str | None
    to_team: str
    tell_id: str
    tool_name: str
    input: dict[str, Any]
    status: ApprovalStatus
    created_at: float
    expires_at: float
    suggestions: list[Any] = []
    decided_at: float | None = None
    decided_by: str = ""
    reason: str = ""
    remembered: bool = False
    # "agent": an action iris-agent proposes (tool_name is its tool, e.g. "team_wake", input the
    # request irisd runs once the person allows it; from_team is "iris-agent"), said in ``summary``.
    kind: ApprovalKind = "tool"
    summary: str = ""
    message: str = ""  # input: what the MCP server asks
    schema: dict[str, Any] = {}  # input: the form (a flat object of primitive fields)
    content: dict[str, Any] = {}  # input, answered: the person's answer


class RuleInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A request a pair may make without asking again (``iris approve --remember``)."""

    id: str  # the id of the approval that made it
    from_team: str | None
    to_team: str
    tool_name: str
    input: dict[str, Any]
    created_at: float
# --- requests -------------------------------------------------------------------


class TellMany(_Message, tag="tell_many"):
    """Fan-out: the same message to several teams at once, each its own pair and tell.
    With ``stream``, a ``FanOutEvent`` is pushed as each one is answered."""

    to_teams: list[str]
    message: MessageText
    from_team: str | None = None
    timeout_ms: TimeoutMs = 0
    stream: bool = False
    parent_pair: str = ""
    max_budget_usd: BudgetUsd | None = None
    thread: ThreadName = ""  # the same thread of each pair ("": each pair's default conversation)


class GetTell(_Message, tag="get_tell"):
    """A tell's status and answer; with ``wait_ms`` > 0, wait up to that long for its end
    (with ``stream``, pushing its events meanwhile: its current phase first, then as for a
    streaming ``Tell``; the MCP tools resume a wait this way)."""

    tell_id: str
    wait_ms: ResultWaitMs = 0
    stream: bool = False


class CancelTell(_Message, tag="cancel_tell"):
    tell_id: str


class Command(_Message, tag="command"):
    """A slash command (``/compact`` ...) for the pair's session, through its queue."""

    to_team: str
    command: SlashCommand
    args: SlashArgs = ""
    from_team: str | None = None
    timeout_ms: TimeoutMs = 0
    thread: ThreadName = ""  # "": the pair's default conversation


class ListTeams(_Message, tag="list_teams"):
    pass


class GetHealth(_Message, tag="get_health"):
    """What the health monitor finds wrong now (``GET /api/health``)."""


class ListSessions(_Message, tag="list_sessions"):
    to_team: str | None = None
    archived: bool = False  # the archived conversations (only those); else the others


class SessionStats(_Message, tag="session_stats"):
    """Each pair's figures (tells, tokens, cost, use, compactions, tell times), the most
    active first, and their tells and cost per day; ``team``: pairs to or from it."""

    team: str | None = None
    since: float = 0.0  # epoch s: only ledger rows that finished since then


class ArchiveSession(_Message, tag="archive_session"):
    """Archive the pair's conversation now: its claude stops, its history stays, and the
    next tell restores it (settings.sessions.restore). Refused while the pair has work."""

    to_team: str
    from_team: str | None = None
    thread: ThreadName = ""  # "": the pair's default conversation


class RestoreSession(_Message, tag="restore_session"):
    """Restore an archived conversation (the next tell resumes it; or starts a new one
    with settings.sessions.restore: fresh)."""

    to_team: str
    from_team: str | None = None
    thread: ThreadName = ""


class ResetSession(_Message, tag="reset_session"):
    """Start a fresh conversation for the pair's thread (the child is stopped if idle)."""

    to_team: str
    from_team: str | None = None
    thread: ThreadName = ""  # "": the pair's default conversation


class GetPair(_Message, tag="get_pair"):
    to_team: str
    from_team: str | None = None
    thread: ThreadName = ""


class Wake(_Message, tag="wake"):
    to_team: str
    from_team: str | None = None
    thread: ThreadName = ""


class WakeAll(_Message, tag="wake_all"):
    from_team: str | None = None
    parallel: bool = True


class Sleep(_Message, tag="sleep"):
    to_team: str
    from_team: str | None = None
    force: bool = False
    thread: ThreadName = ""


class Report(_Message, tag="report"):
    """Recent tells of a pair (or of every pair to ``to_team`` when from_team is omitted
    and ``all_callers`` is set)."""

    to_team: str
    from_team: str | None = None
    all_callers: bool = False
    limit: ListLimit = 20


class ReadTranscript(_Message, tag="read_transcript"):
    """A tell's transcript. With ``paged`` (every face of Iris asks so) the lines (or steps)
    come in ``TranscriptPage`` events, each a bounded piece read from the database and sent
    before the next is read, and the ``TranscriptReply`` after them holds the tell and no
    lines: irisd holds one page at a time however long the transcript. Without it irisd
    joins the same pages into one reply (a client of protocol 1 that knows no pages; the
    reply must fit in one frame). With ``packed`` too, a page's lines come as they are stored
    (``TranscriptPage.packed``), which irisd sends without decoding them."""

    tell_id: str
    steps: bool = False  # the steps (``TranscriptReply.steps``) instead of the raw lines
    paged: bool = False
    packed: bool = False


class ClearCache(_Message, tag="clear_cache"):
    """Forget finished tells (and their transcripts) of a pair."""

    to_team: str
    from_team: str | None = None


class ListNotifications(_Message, tag="list_notifications"):
    to_team: str | None = None
    include_done: bool = False


class Watch(_Message, tag="watch"):
    """Receive events (tells starting, their text, their ends) until disconnecting."""

    team: str | None = None


class ListApprovals(_Message, tag="list_approvals"):
    team: str | None = None
    include_decided: bool = False


class ListTells(_Message, tag="list_tells"):
    """Recent tells across every pair, newest first, optionally filtered. ``from_team``
    "external" matches the external caller (no team)."""

    to_team: str | None = None
    from_team: str | None = None
    status: TellStatus | None = None
    limit: ListLimit = 50


class HttpInfo(_Message, tag="http_info"):
    """irisd's HTTP face: its URL and the owner's token (owner only; ``rotate`` makes a
    new token, which logs every browser out; ``login_code`` asks for a single-use code
    that logs a browser in, valid for two minutes)."""

    rotate: bool = False
    login_code: bool = False


class Decide(_Message, tag="decide"):
    """Allow or deny a pending approval. ``remember`` turns an allow into a rule for the
    pair, so the same request is not asked again. An input request (kind ``input``):
    ``allow`` answers it with ``content`` (checked against its form), deny declines it."""

    approval_id: str
    allow: bool
    remember: bool = False
    reason: str = ""
    by: str = ""
    content: dict[str, Any] = {}


class ListRules(_Message, tag="list_rules"):
    """The remembered rules (of pairs with ``team`` on either side)."""

    team: str | None = None


class ForgetRule(_Message, tag="forget_rule"):
    """Stop allowing a remembered request without asking (its id: ``RuleInfo.id``)."""

    rule_id: str
class ReadUnsolicited(_Message, tag="read_unsolicited"):
    """Every line a pair's claude printed during one unsolicited turn (``u-...`` id); with
    ``paged``, in ``TranscriptPage`` events as ``ReadTranscript``'s, the reply without them
    (with ``packed`` too, packed as ``ReadTranscript``'s)."""

    turn_id: str
    paged: bool = False
    packed: bool = False


class ListQuestions(_Message, tag="list_questions"):
    """Pending questions (with ``include_closed``, answered, dismissed and expired ones
    too) of or for ``team``; ``for_team`` only those asked of the pair's caller ``for_team``
    (``external`` for no team)."""

    team: str | None = None
    include_closed: bool = False
    for_team: str = ""


class AnswerQuestion(_Message, tag="answer_question"):
    """Answer a pending question: ``text`` becomes the next tell of the same pair.
    ``as_team`` (set by the MCP server to its caller's identity, ``external`` for none)
    limits the answer to questions asked of that caller. ``tell_id`` instead of
    ``question_id``: answer what that tell's answer asked a caller that waited for it (no
    question was filed then); the question is recorded as answered at once."""

    question_id: str = ""
    text: MessageText = ""  # required in fact: the serve path checks the limits on the types
    timeout_ms: TimeoutMs = 0
    by: str = ""
    as_team: str = ""
    tell_id: str = ""


class DismissQuestion(_Message, tag="dismiss_question"):
    """Close a pending question unanswered. ``tell_id`` instead of ``question_id``: decline
    what that tell's answer asked a caller that waited for it (recorded as dismissed)."""

    question_id: str = ""
    by: str = ""
    tell_id: str = ""


class Costs(_Message, tag="costs"):
    """The cost ledger, summed per team, pair, chain or day, since ``since`` (epoch s)."""

    by: CostGrouping = "team"
    since: float = 0.0
    team: str | None = None


class Ask(_Message, tag="ask"):
    """A question for iris-agent, the assistant that answers from Iris's read-only data."""

    question: str
    new_session: bool = False


class Reload(_Message, tag="reload"):
    """Read config.yaml again and apply what changed, without a restart (the owner only).
    An invalid file is refused with the reason; irisd keeps the config it had."""


class AgentStats(_Message, tag="agent_stats"):
    """iris-agent's work since ``since`` (epoch s, 0 for all): questions detected, what its
    watcher classified and what became of them, the actions it proposed and their fate,
    and what it cost (``iris questions --stats``, ``GET /api/agent/stats``)."""

    since: float = 0.0


Request = (
    Hello
    | Tell
    | GetTell
    | CancelTell
    | Command
    | ListTeams
    | GetStatus
    | ListSessions
    | SessionStats
    | ResetSession
    | ArchiveSession
    | RestoreSession
    | GetPair
    | Wake
    | WakeAll
    | Sleep
    | Report
    | ReadTranscript
    | ClearCache
    | ListNotifications
    | Watch
    | ListApprovals
    | Decide
    | ListTells
    | HttpInfo
    | ListRules
    | ForgetRule
    | TellMany
    | ListQuestions
    | AnswerQuestion
    | DismissQuestion
    | Costs
    | Ask
    | ReadUnsolicited
    | Reload
    | GetHealth
    | AgentStats
)


# --- replies --------------------------------------------------------------------


class TeamsReply(_Message, tag="teams_reply"):
    teams: list[TeamInfo]


class HealthReply(_Message, tag="health_reply"):
    # No defaults: every field is always on the wire (GET /api/health's readers rely on it).
    status: Literal["ok"]  # irisd answers (as GET /health says)
    worst: Literal["ok", "info", "warning", "error"]  # the most severe finding's severity
    findings: list[Finding]  # worst first
    recoveries: list[Recovery]  # newest first
    checked_at: float  # wall clock of the check


class SessionsReply(_Message, tag="sessions_reply"):
    sessions: list[SessionInfo]


class SessionStatsReply(_Message, tag="session_stats_reply"):
    pairs: list[PairStats]  # the most active (most tells) first
    days: list[PairDay]  # oldest first


class SessionReply(_Message, tag="session_reply"):
    session: SessionInfo


class PairReply(_Message, tag="pair_reply"):
    process: ProcessInfo
    message: str = ""  # what happened, for a person ("already awake", "busy: not stopped")


class PairsReply(_Message, tag="pairs_reply"):
    processes: list[ProcessInfo]
    errors: dict[str, str] = {}  # team -> why it could not be woken


class ReportReply(_Message, tag="report_reply"):
    tells: list[TellInfo]


class TranscriptReply(_Message, tag="transcript_reply"):
    tell: TellInfo
    entries: list[TranscriptEntry]  # the lines claude printed (none when the steps were asked for)
    steps: list[Step] = []  # with ``ReadTranscript(steps=True)``: what claude did, read from the lines


class TranscriptPage(_Event, tag="transcript_page"):
    """A piece of a paged ``ReadTranscript``'s (or ``ReadUnsolicited``'s) answer, in order:
    some of the lines, or with ``steps`` some of the steps. ``protocol.transcript.join`` puts
    the pieces together. Asked ``packed``: the lines in ``packed`` (then ``entries`` after
    them, if any), the msgpack of their ``list[TranscriptEntry]`` as irisd stores them;
    ``protocol.transcript.entries`` reads both."""

    entries: list[TranscriptEntry] = []
    steps: list[Step] = []
    packed: bytes = b""


class ReloadReply(_Message, tag="reload_reply"):
    changes: list[str]  # what the reload did, in words ("team web added", ...)


class CountReply(_Message, tag="count_reply"):
    count: int


class NotificationReply(_Message, tag="notification_reply"):
    notification: NotificationInfo


class NotificationsReply(_Message, tag="notifications_reply"):
    notifications: list[NotificationInfo]


class ApprovalsReply(_Message, tag="approvals_reply"):
    approvals: list[ApprovalInfo]


class ApprovalReply(_Message, tag="approval_reply"):
    approval: ApprovalInfo


class HttpInfoReply(_Message, tag="http_info_reply"):
    url: str
    token: str
    login_code: str = ""
class UnsolicitedReply(_Message, tag="unsolicited_reply"):
    turn: UnsolicitedInfo
    entries: list[TranscriptEntry]


class RulesReply(_Message, tag="rules_reply"):
    rules: list[RuleInfo]


class RuleReply(_Message, tag="rule_reply"):
    rule: RuleInfo
class QuestionsReply(_Message, tag="questions_reply"):
    questions: list[QuestionInfo]


class QuestionReply(_Message, tag="question_reply"):
    question: QuestionInfo


class AnswerReply(_Message, tag="answer_reply"):
    """The question, now answered, and the tell that carried the answer to the team."""

    question: QuestionInfo
    status: ReplyStatus
    tell: TellInfo


class TellsReply(_Message, tag="tells_reply"):
    """A fan-out's results, in the order the teams were named."""

    results: list[FanOutResult]


class CostsReply(_Message, tag="costs_reply"):
    by: CostGrouping
    since: float
    rows: list[CostRow]
    total: CostRow


class AskReply(_Message, tag="ask_reply"):
    text: str
    session_id: str = ""
    tools: list[str] = []  # the Iris tools iris-agent called for this answer
    cost_usd: float | None = None
    is_error: bool = False
    # what this answer took, as a tell's (the cost ledger's ``iris ask`` row sums them)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    num_turns: int | None = None
    duration_ms: int | None = None


class ClassifiedRow(msgspec.Struct, kw_only=True):
    """The questions iris-agent's watcher put in one class, and what became of them."""

    classification: str  # person, team, none; "" for a turn it said no verdict in
    count: int = 0
    confidence: float = 0.0  # the mean
    answered: int = 0  # by the person, a team, or an answer it suggested and the person allowed
    dismissed: int = 0  # by the person, or by iris-agent itself (none)
    expired: int = 0
    pending: int = 0


class ActionRow(msgspec.Struct, kw_only=True):
    """iris-agent's actions of one tool (team_wake, ...), by how each was decided."""

    tool: str
    proposed: int = 0  # filed as approvals for the person
    allowed: int = 0  # ... and allowed by the person
    denied: int = 0
    expired: int = 0
    pending: int = 0
    automatic: int = 0  # done at once: settings.agent.allow allowed it


class AgentStatsReply(_Message, tag="agent_stats_reply"):
    since: float
    tells_completed: int = 0  # tells that completed: what the question detector read
    questions: int = 0  # of them, answers that asked their caller with nobody waiting
    questions_by_status: dict[str, int] = {}
    looked: int = 0  # questions the watcher classified
    classified: list[ClassifiedRow] = []
    actions: list[ActionRow] = []
    asks: int = 0  # 'iris ask' and dashboard chats that cost something
    ask_usd: float = 0.0
    watch_usd: float = 0.0  # the watcher's turns
    tells_usd: float = 0.0  # tells iris-agent sent (as iris-agent)

    @property
    def detection_rate(self) -> float:
        return self.questions / self.tells_completed if self.tells_completed else 0.0


Reply = (
    Welcome
    | ErrorReply
    | TellReply
    | TeamsReply
    | StatusReply
    | SessionsReply
    | SessionStatsReply
    | SessionReply
    | PairReply
    | PairsReply
    | ReportReply
    | TranscriptReply
    | CountReply
    | NotificationReply
    | NotificationsReply
    | ApprovalsReply
    | ApprovalReply
    | HttpInfoReply
    | RulesReply
    | RuleReply
    | QuestionsReply
    | QuestionReply
    | AnswerReply
    | TellsReply
    | CostsReply
    | AskReply
    | UnsolicitedReply
    | ReloadReply
    | HealthReply
    | AgentStatsReply
)


# --- events ---------------------------------------------------------------------


class Watching(_Event, tag="watching"):
    """The first event of a ``Watch``: the subscription is in place, every later event
    reaches this watcher (a script, or a test, can start acting once it sees this)."""

    team: str | None = None


class ApprovalEvent(_Event, tag="approval_event"):
    """An approval was requested or decided."""

    approval: ApprovalInfo


class HealthEvent(_Event, tag="health_event"):
    """irisd acted on a health finding itself (``settings.health.recover``)."""

    recovery: Recovery


class UnsolicitedEvent(_Event, tag="unsolicited_event"):
    """A pair's claude started (``running``) or ended a turn that no tell asked for."""

    turn: UnsolicitedInfo


class ProcessEvent(_Event, tag="process_state"):
    """A pair's claude process changed state (spawning, idle, processing, stopped, ...)."""

    process: ProcessInfo


SessionChange = Literal["archived", "restored", "files_deleted"]


class SessionEvent(_Event, tag="session_event"):
    """A pair's conversation was archived, restored, or its files deleted (``change``)."""

    session: SessionInfo
    change: SessionChange
    detail: str = ""  # why: "unused for 90 days", "by hand", "a tell came", ...


class QuestionEvent(_Event, tag="question_event"):
    """A pending question appeared, or was answered, dismissed or expired."""

    question: QuestionInfo


class FanOutEvent(_Event, tag="fan_out_event"):
    """One target of a streaming ``TellMany`` has its result."""

    result: FanOutResult


Event = (
    Watching
    | TellText
    | TellState
    | TellNotice
    | TellPhaseEvent
    | ApprovalEvent
    | UnsolicitedEvent
    | ProcessEvent
    | QuestionEvent
    | FanOutEvent
    | HealthEvent
    | SessionEvent
    | TranscriptPage
)

ServerMessage = Reply | Event

# Every pushed event type, new ones included: an event never ends a request.
EVENT_TYPES: tuple[type, ...] = get_args(Event)


def is_event(message: ServerMessage) -> TypeGuard[Event]:
    return isinstance(message, _Event)
