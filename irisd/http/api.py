"""``/api/...``: the daemon's requests over HTTP + JSON, as one declarative table.

Each row is one route: its method and path, the Structs of its query string and body
(validated by msgspec, described in ``/api/openapi.json``), how to build the protocol
``Request`` from them, and the ``Reply`` types it answers with. The request then goes
through the same ``Serving.dispatch`` (irisd/serving.py) as on the socket, and the reply is the same
Struct, encoded as JSON (``type`` names it). To add a route, add a row.

Errors are ``{"type": "error", "code": ..., "message": ...}``: the socket's codes and
messages, with the HTTP status each error class carries (protocol/errors.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args

import msgspec
from starlette.routing import compile_path

from irisd import __version__
from protocol.limits import (
    BudgetUsd,
    ListLimit,
    MessageText,
    ResultWaitMs,
    SlashArgs,
    SlashCommand,
    ThreadName,
    TimeoutMs,
    TtlDays,
    stored_ttl,
)
from protocol.messages import (
    AgentStats,
    AgentStatsReply,
    AnswerQuestion,
    AnswerReply,
    ApprovalReply,
    ApprovalsReply,
    ArchiveSession,
    Ask,
    AskReply,
    CancelTell,
    Command,
    CostGrouping,
    Costs,
    CostsReply,
    Decide,
    DismissQuestion,
    ErrorReply,
    Event,
    ForgetRule,
    GetHealth,
    GetPair,
    GetStatus,
    GetTell,
    HealthReply,
    ListApprovals,
    ListNotifications,
    ListQuestions,
    ListRules,
    ListSessions,
    ListTeams,
    ListTells,
    NotificationReply,
    NotificationsReply,
    PairReply,
    QuestionReply,
    QuestionsReply,
    ReadTranscript,
    Reload,
    ReloadReply,
    ReportReply,
    Request,
    ResetSession,
    RestoreSession,
    RuleReply,
    RulesReply,
    SessionReply,
    SessionsReply,
    SessionStats,
    SessionStatsReply,
    Sleep,
    StatusReply,
    TeamsReply,
    Tell,
    TellReply,
    TellStatus,
    TranscriptPage,
    TranscriptReply,
    Wake,
)

# --- bodies and query strings --------------------------------------------------------


class _In(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


FromTeam = Annotated[
    str | None,
    msgspec.Meta(description="The asking team (the owner only; a team's own token speaks as that team)."),
]


class TellBody(_In):
    """A tell's body: the fields of the wire's ``Tell``, with its types (and so its limits,
    protocol/limits.py) and its defaults."""

    message: MessageText
    from_team: FromTeam = None
    timeout_ms: TimeoutMs = 0
    persist: Annotated[bool, msgspec.Meta(description="Store durably, deliver later.")] = False
    ttl_days: TtlDays | None = None  # with persist; DEFAULT_TTL_DAYS if left out
    max_budget_usd: BudgetUsd | None = None
    thread: ThreadName = ""  # the pair's conversation ("": its default one)


class PairBody(_In):
    """A pair's process or conversation: the default one, or a thread's."""

    from_team: FromTeam = None
    thread: ThreadName = ""


class SleepBody(PairBody):
    force: bool = False


class CommandBody(_In):
    """A slash command for the pair's session (its default thread's, or ``thread``'s)."""

    command: SlashCommand
    args: SlashArgs = ""
    from_team: FromTeam = None
    timeout_ms: TimeoutMs = 0
    thread: ThreadName = ""


class ApproveBody(_In):
    remember: bool = False
    content: dict[str, Any] = {}  # an input request: the answer to its MCP server's form


class DenyBody(_In):
    reason: str = ""


class AnswerBody(_In):
    text: MessageText
    timeout_ms: TimeoutMs = 0


MAX_ASK_BODY_BYTES = 256 * 1024  # a question is at most 20,000 characters, even escaped


class AskBody(_In):
    question: Annotated[str, msgspec.Meta(description="What to ask iris-agent (at most 20,000 characters).")]
    new_session: Annotated[bool, msgspec.Meta(description="Start a new conversation with iris-agent.")] = False


class QuestionsQuery(_In):
    team: str | None = None
    all: Annotated[bool, msgspec.Meta(description="Include answered, dismissed and expired ones.")] = False


class CostsQuery(_In):
    by: CostGrouping = "team"
    since: Annotated[float, msgspec.Meta(description="Unix time; 0 for all.")] = 0.0
    team: str | None = None


class SinceQuery(_In):
    since: Annotated[float, msgspec.Meta(description="Unix time; 0 for all.")] = 0.0


class FromQuery(_In):
    from_team: FromTeam = None


class WaitQuery(_In):
    wait_ms: ResultWaitMs = 0


class TellsQuery(_In):
    team: Annotated[str | None, msgspec.Meta(description="Only tells to this team.")] = None
    from_team: Annotated[str | None, msgspec.Meta(description="Only tells from this team ('external').")] = None
    status: TellStatus | None = None
    limit: ListLimit = 50


class TeamAllQuery(_In):
    team: str | None = None
    all: Annotated[bool, msgspec.Meta(description="Include decided / delivered ones.")] = False


class TranscriptQuery(_In):
    steps: Annotated[bool, msgspec.Meta(description="The steps (what claude did) instead of the raw lines.")] = False


class TeamQuery(_In):
    team: str | None = None


class SessionsQuery(_In):
    team: str | None = None
    archived: Annotated[bool, msgspec.Meta(description="Only the archived conversations.")] = False


class StatsQuery(_In):
    team: Annotated[str | None, msgspec.Meta(description="Only the pairs to or from this team.")] = None
    since: Annotated[float, msgspec.Meta(description="Unix time; 0 for all.")] = 0.0


class EventsQuery(_In):
    team: Annotated[str | None, msgspec.Meta(description="Only events of tells to or from this team.")] = None


# --- the table -----------------------------------------------------------------------

Build = Callable[[Mapping[str, str], Any, Any], Request]


class ApiRoute(msgspec.Struct, frozen=True):
    method: str
    path: str  # with {name} parameters
    build: Build  # (path parameters, query Struct or None, body Struct or None) -> Request
    replies: tuple[type[msgspec.Struct], ...]
    summary: str
    query: type[_In] | None = None
    body: type[_In] | None = None
    max_body: int | None = None  # bytes; None: the HTTP face's own limit (irisd.http.app.MAX_BODY_BYTES)
    operation: str = ""  # the OpenAPI operationId, where the one made from the path is taken

    @property
    def params(self) -> list[str]:
        """The names of the path's parameters."""
        return list(compile_path(self.path)[2])

    @property
    def operation_id(self) -> str:
        if self.operation:
            return self.operation
        words = re.sub(r"[{}]", "", self.path).strip("/").split("/")[1:]
        return self.method.lower() + "".join(w.capitalize() for w in re.split(r"[^A-Za-z0-9]", "_".join(words)) if w)


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("GET", "/api/status", lambda p, q, b: GetStatus(), (StatusReply,), "The daemon, its pairs and processes"),
    ApiRoute("GET", "/api/health", lambda p, q, b: GetHealth(), (HealthReply,),
             "What the health monitor finds wrong, each finding with its evidence and fix",
             operation="getHealthFindings"),  # getHealth is /health's
    ApiRoute("GET", "/api/teams", lambda p, q, b: ListTeams(), (TeamsReply,), "The configured teams"),
    ApiRoute(
        "POST", "/api/reload", lambda p, q, b: Reload(), (ReloadReply,),
        "Read config.yaml again and apply it without a restart (an invalid file is refused: 500, code config)",
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/tell",
        lambda p, q, b: Tell(
            to_team=p["team"],
            message=b.message,
            from_team=b.from_team,
            timeout_ms=b.timeout_ms,
            persist=b.persist,
            ttl_days=stored_ttl(b.persist, b.ttl_days),
            max_budget_usd=b.max_budget_usd,
            thread=b.thread,
        ),
        (TellReply, NotificationReply),
        "Tell a team; the answer (TellReply), or with persist a NotificationReply",
        body=TellBody,
    ),
    ApiRoute(
        "GET",
        "/api/teams/{team}/status",
        lambda p, q, b: GetPair(to_team=p["team"], from_team=q.from_team),
        (PairReply,),
        "The caller's pair with a team: its process",
        query=FromQuery,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/wake",
        lambda p, q, b: Wake(to_team=p["team"], from_team=b.from_team, thread=b.thread),
        (PairReply,),
        "Start the pair's claude now",
        body=PairBody,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/sleep",
        lambda p, q, b: Sleep(to_team=p["team"], from_team=b.from_team, force=b.force, thread=b.thread),
        (PairReply,),
        "Stop the pair's claude (a busy one only with force)",
        body=SleepBody,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/command",
        lambda p, q, b: Command(to_team=p["team"], command=b.command, args=b.args, from_team=b.from_team,
                                timeout_ms=b.timeout_ms, thread=b.thread),
        (TellReply,),
        "A slash command (such as compact) for the pair's session, through its queue: the tell that ran it",
        body=CommandBody,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/session/reset",
        lambda p, q, b: ResetSession(to_team=p["team"], from_team=b.from_team, thread=b.thread),
        (SessionReply,),
        "Start a fresh conversation for the pair",
        body=PairBody,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/session/archive",
        lambda p, q, b: ArchiveSession(to_team=p["team"], from_team=b.from_team, thread=b.thread),
        (SessionReply,),
        "Archive the pair's conversation (its claude stops; the next tell restores it)",
        body=PairBody,
    ),
    ApiRoute(
        "POST",
        "/api/teams/{team}/session/restore",
        lambda p, q, b: RestoreSession(to_team=p["team"], from_team=b.from_team, thread=b.thread),
        (SessionReply,),
        "Restore an archived conversation",
        body=PairBody,
    ),
    ApiRoute(
        "GET",
        "/api/tells",
        lambda p, q, b: ListTells(to_team=q.team, from_team=q.from_team, status=q.status, limit=q.limit),
        (ReportReply,),
        "Recent tells across every pair, newest first",
        query=TellsQuery,
    ),
    ApiRoute(
        "GET",
        "/api/tells/{id}",
        lambda p, q, b: GetTell(tell_id=p["id"], wait_ms=q.wait_ms),
        (TellReply,),
        "A tell's status and (partial) answer",
        query=WaitQuery,
    ),
    ApiRoute(
        "POST", "/api/tells/{id}/cancel", lambda p, q, b: CancelTell(tell_id=p["id"]), (TellReply,), "Cancel a tell"
    ),
    ApiRoute(
        "GET",
        "/api/tells/{id}/transcript",
        lambda p, q, b: ReadTranscript(tell_id=p["id"], steps=q.steps, paged=True),
        (TranscriptReply,),
        "Every line claude printed during a tell, or (steps=true) what claude did, read from them "
        "(streamed: written as irisd reads it, the tell last)",
        query=TranscriptQuery,
    ),
    ApiRoute(
        "GET",
        "/api/approvals",
        lambda p, q, b: ListApprovals(team=q.team, include_decided=q.all),
        (ApprovalsReply,),
        "Tool uses waiting for a decision",
        query=TeamAllQuery,
    ),
    ApiRoute(
        "POST",
        "/api/approvals/{id}/approve",
        lambda p, q, b: Decide(
            approval_id=p["id"], allow=True, remember=b.remember, by="owner (HTTP API)", content=b.content
        ),
        (ApprovalReply,),
        "Allow a pending tool use (or answer an MCP server's form: content)",
        body=ApproveBody,
    ),
    ApiRoute(
        "POST",
        "/api/approvals/{id}/deny",
        lambda p, q, b: Decide(approval_id=p["id"], allow=False, reason=b.reason, by="owner (HTTP API)"),
        (ApprovalReply,),
        "Refuse a pending tool use",
        body=DenyBody,
    ),
    ApiRoute(
        "GET",
        "/api/approvals/rules",
        lambda p, q, b: ListRules(team=q.team),
        (RulesReply,),
        "The requests remembered with 'approve and remember'",
        query=TeamQuery,
    ),
    ApiRoute(
        "POST",
        "/api/approvals/rules/{id}/forget",
        lambda p, q, b: ForgetRule(rule_id=p["id"]),
        (RuleReply,),
        "Ask again for a remembered request",
    ),
    ApiRoute(
        "GET",
        "/api/questions",
        lambda p, q, b: ListQuestions(team=q.team, include_closed=q.all),
        (QuestionsReply,),
        "Questions teams asked while nobody waited for their answer",
        query=QuestionsQuery,
    ),
    ApiRoute(
        "POST",
        "/api/questions/{id}/answer",
        lambda p, q, b: AnswerQuestion(
            question_id=p["id"], text=b.text, timeout_ms=b.timeout_ms, by="owner (HTTP API)"
        ),
        (AnswerReply,),
        "Answer a pending question: the next tell of the same pair",
        body=AnswerBody,
    ),
    ApiRoute(
        "POST",
        "/api/questions/{id}/dismiss",
        lambda p, q, b: DismissQuestion(question_id=p["id"], by="owner (HTTP API)"),
        (QuestionReply,),
        "Dismiss a pending question",
    ),
    ApiRoute(
        "GET",
        "/api/costs",
        lambda p, q, b: Costs(by=q.by, since=q.since, team=q.team),
        (CostsReply,),
        "What tells cost, summed by team, pair, chain or day",
        query=CostsQuery,
    ),
    ApiRoute(
        "GET",
        "/api/agent/stats",
        lambda p, q, b: AgentStats(since=q.since),
        (AgentStatsReply,),
        "iris-agent's work: questions detected, its classifications and their fate, its actions, its cost",
        query=SinceQuery,
    ),
    ApiRoute(
        "POST",
        "/api/ask",
        lambda p, q, b: Ask(question=b.question, new_session=b.new_session),
        (AskReply,),
        "Ask iris-agent about the teams, tells, costs and questions (it only reads; may take a while)",
        body=AskBody,
        max_body=MAX_ASK_BODY_BYTES,
    ),
    ApiRoute(
        "GET",
        "/api/notifications",
        lambda p, q, b: ListNotifications(to_team=q.team, include_done=q.all),
        (NotificationsReply,),
        "Persisted tells and their delivery",
        query=TeamAllQuery,
    ),
    ApiRoute(
        "GET",
        "/api/sessions",
        lambda p, q, b: ListSessions(to_team=q.team, archived=q.archived),
        (SessionsReply,),
        "The pairs' conversations: how full each is, its compactions (archived: only the archived ones)",
        query=SessionsQuery,
    ),
    ApiRoute(
        "GET",
        "/api/sessions/stats",
        lambda p, q, b: SessionStats(team=q.team, since=q.since),
        (SessionStatsReply,),
        "Each pair's figures (tells, tokens, cost, first and last use, compactions, mean and p95 tell time), "
        "the most active first, and its tells and cost per day",
        query=StatsQuery,
    ),
)


def by_path() -> dict[str, list[ApiRoute]]:
    """The table's rows grouped by path (a path may take several methods), in table order."""
    grouped: dict[str, list[ApiRoute]] = {}
    for route in ROUTES:
        grouped.setdefault(route.path, []).append(route)
    return grouped


# --- OpenAPI ----------------------------------------------------------------------------


def openapi() -> dict[str, Any]:
    """The API's OpenAPI 3.1 description, generated from the Structs the routes use."""
    ref = "#/components/schemas/{name}"
    watched = [kind for kind in get_args(Event) if kind is not TranscriptPage]  # pages come in a transcript's body
    types: list[Any] = [ErrorReply, *watched]
    for route in ROUTES:
        types += [*route.replies, *(t for t in (route.query, route.body) if t is not None)]
    unique = list(dict.fromkeys(types))
    schemas, components = msgspec.json.schema_components(unique, ref_template=ref)
    by_type = dict(zip(unique, schemas, strict=True))
    error = {"description": "an error (see code)", "content": _json(by_type[ErrorReply])}
    paths: dict[str, dict[str, Any]] = {}
    inlined: set[str] = set()  # query Structs become parameters, not schemas
    for route in ROUTES:
        parameters: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in route.params
        ]
        if route.query is not None:
            component = components[route.query.__name__]
            parameters += [
                {"name": name, "in": "query", "required": False, "schema": schema}
                for name, schema in component.get("properties", {}).items()
            ]
            inlined.add(route.query.__name__)
        replies = [by_type[r] for r in route.replies]
        reply = replies[0] if len(replies) == 1 else {"oneOf": replies}
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "parameters": parameters,
            "responses": {
                "200": {"description": "the reply", "content": _json(reply)},
                "default": error,
            },
        }
        if route.body is not None:
            operation["requestBody"] = {"required": False, "content": _json(by_type[route.body])}
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    paths["/health"] = {
        "get": {
            "operationId": "getHealth",
            "summary": "irisd is up (no authentication; says nothing else)",
            "security": [],
            "responses": {"200": {"description": '{"status": "ok"}'}},
        }
    }
    paths["/api/events"] = {
        "get": {
            "operationId": "getEvents",
            "summary": "WebSocket: every message is one Event as JSON (tell_text, tell_state, tell_notice, "
            "approval_event, process_state, question_event, ...). A client that cannot keep up is closed "
            "with code 1013; irisd stopping closes with 1001.",
            "parameters": [
                {"name": "team", "in": "query", "required": False, "schema": {"type": "string"}},
            ],
            "responses": {"101": {"description": "switching to the WebSocket protocol"}, "default": error},
        }
    }
    for name in inlined:
        del components[name]
    components["Event"] = {"oneOf": [by_type[e] for e in watched]}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "irisd",
            "version": __version__,
            "description": "The daemon's requests over HTTP: the same Structs as its Unix socket protocol. "
            "Authenticate with 'Authorization: Bearer TOKEN' ('iris http token') or the login cookie "
            "('iris dashboard').",
        },
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "iris_session"},
            },
        },
        "security": [{"bearer": []}, {"cookie": []}],
        "paths": paths,
    }


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}
