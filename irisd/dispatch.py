"""Requests to daemon operations: ``HANDLERS``, a table from request type to handler
(like ``irisd.http.api.ROUTES``), no socket code. Tells are the tell service's
(``irisd/tell/service.py``: admission, submit, get, cancel, the end of a tell); the
dispatcher reaches pairs only through the supervisor's methods and frozen snapshots."""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec
import trio

from iris_common import locate
from iris_common.config import IrisConfig, Team, team_unavailable
from iris_common.environment import child_environment
from iris_common.paths import IrisPaths, existing, transcript_path
from irisd import __version__, policy
from irisd.a2a.teams import sync_a2a_teams
from irisd.caller import Caller
from irisd.claude.wire import SystemLine, decode_line
from irisd.events import EventFilter, serve_watch
from irisd.health import rss_bytes, total_rss
from irisd.ids import with_whole_ids
from irisd.logs import recent_problems
from irisd.pool.archiver import Archiver
from irisd.pool.pair import Pair
from irisd.pool.remote import RemoteTeams
from irisd.pool.supervisor import Supervisor
from irisd.questions.desk import QuestionDesk
from irisd.reload import check_claude, plan_reload, read_config
from irisd.store import approvals, ids, ledger, notifications, questions, rows, sessions, tells, unsolicited
from irisd.store.facade import Store
from irisd.tell.admission import check_message, check_wait, parent_tell
from irisd.tell.service import SendEvent, TellService, check_sender
from protocol import PROTOCOL_VERSION
from protocol.errors import (
    ConfigError,
    InvalidRequestError,
    IrisError,
    NotFoundError,
    PermissionDeniedError,
    UnknownTeamError,
)
from protocol.health import worst
from protocol.messages import (
    AnswerQuestion,
    AnswerReply,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    ArchiveSession,
    Ask,
    AskReply,
    CancelTell,
    ClearCache,
    Command,
    Costs,
    CostsReply,
    CountReply,
    Decide,
    DismissQuestion,
    ForgetRule,
    GetHealth,
    GetPair,
    GetStatus,
    GetTell,
    HealthReply,
    Hello,
    HttpInfo,
    HttpInfoReply,
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
    PairsReply,
    QuestionInfo,
    QuestionReply,
    QuestionsReply,
    ReadTranscript,
    ReadUnsolicited,
    Reload,
    ReloadReply,
    Reply,
    Report,
    ReportReply,
    Request,
    ResetSession,
    RestoreSession,
    RuleReply,
    RulesReply,
    SessionInfo,
    SessionReply,
    SessionsReply,
    Sleep,
    StatusReply,
    TeamInfo,
    TeamsReply,
    Tell,
    TellMany,
    TellReply,
    TranscriptReply,
    UnsolicitedReply,
    Wake,
    WakeAll,
    Watch,
    Welcome,
)
from protocol.transcript import steps

RECENT_UNSOLICITED = 10  # turns no tell asked for, shown by status
RELOAD = "config.yaml reload"  # the standing problem of a refused reload (see RecentProblems)
COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_-]*$")

if TYPE_CHECKING:
    from irisd.agent.runner import Agent
    from irisd.health.monitor import HealthMonitor
    from irisd.mesh.service import MeshService

log = logging.getLogger("irisd.dispatch")


class HttpAccess(Protocol):
    """What the dispatcher needs of the HTTP face (irisd/tokens.py)."""

    @property
    def url(self) -> str: ...
    @property
    def owner_token(self) -> str: ...
    def rotate_owner_token(self) -> str: ...
    def mint_login_code(self) -> str: ...


class Dispatcher:
    """Serves requests: ``HANDLERS`` maps each request type to its handler, which calls
    the service that owns it (tells: ``TellService``; pairs: ``Supervisor``; questions,
    approvals, notifications, the store). Its own state is the config and what the last
    reload said; it changes other services only through their methods."""

    def __init__(
        self,
        *,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        supervisor: Supervisor,
        remote_teams: RemoteTeams,
        tells: TellService,
        questions: QuestionDesk | None = None,
        agent: Agent | None = None,
        mesh: MeshService | None = None,
        on_notification: Callable[[], None] = lambda: None,
        http: HttpAccess | None = None,
        claude_version: str = "",
        health: HealthMonitor | None = None,
        archiver: Archiver | None = None,
    ) -> None:
        self.config = config
        self.claude_version = claude_version  # of the local claude, read at start (and reload)
        self.config_problem = ""  # why the last reload was refused
        self._reloading = trio.Lock()
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.remote_teams = remote_teams  # A2A agents, other irisds' teams (irisd/pool/remote.py)
        self.tells = tells
        self.questions = questions
        self.agent = agent
        self.mesh = mesh  # teams on many hosts (irisd/mesh), when settings.mesh is set
        self.hub = supervisor.hub  # one hub: the pairs publish to it, watchers read it
        self.archiver = archiver or Archiver(
            config=lambda: self.config, paths=paths, store=store, pairs=supervisor.pair_nowait, hub=self.hub
        )
        self.on_notification = on_notification
        self.http = http
        self.health = health  # the health monitor (irisd/health): findings for status and /api/health
        self.started_at = time.time()

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent) -> Reply:
        """Serve one request of ``caller`` (decided by its connection: see irisd/caller.py);
        raises IrisError subclasses for the client to see."""
        request = await with_whole_ids(caller.apply(request), self._ids_starting_with)
        if caller.kind in policy.EVERYONE:
            return await HANDLERS[type(request)](self, request, send_event)
        await self._check_owned(request, caller)
        if isinstance(request, Watch):
            wanted = policy.event_filter(caller, lambda: self._chains(caller))
            return await self.watch(request.team, send_event, wanted)
        return self._visible(await HANDLERS[type(request)](self, request, send_event), caller)

    # --- what a caller may touch (irisd/policy.py decides; here are the facts) --------------

    def _chains(self, caller: Caller) -> frozenset[str]:
        """The chain a child's pair is serving now (none for other callers)."""
        link = parent_tell(caller.pair, self.supervisor.snapshots()) if caller.kind == "child" else None
        return frozenset({link.chain_id}) if link is not None and link.chain_id else frozenset()

    async def _check_owned(self, request: Request, caller: Caller) -> None:
        """PermissionDeniedError if ``request`` names a tell (or what hangs on one) that is
        not ``caller``'s: before anything is waited for or changed."""
        match request:
            case GetTell(tell_id=tell_id) | ReadTranscript(tell_id=tell_id):
                info = await self.tells.find(tell_id)
                policy.check_sees(caller, _owned(info), f"tell {info.id}", self._chains(caller))
            case CancelTell(tell_id=tell_id):
                info = await self.tells.find(tell_id)
                policy.check_changes(caller, _owned(info), f"tell {info.id}", self._chains(caller))
            case DismissQuestion(question_id="", tell_id=tell_id) if tell_id:  # what a tell asked its waiter
                info = await self.tells.find(tell_id)
                policy.check_changes(caller, _owned(info), f"tell {info.id}", self._chains(caller))
            case AnswerQuestion(question_id="", tell_id=tell_id) if tell_id:
                info = await self.tells.find(tell_id)
                policy.check_answers(caller, info.from_team, info.id)
            case DismissQuestion(question_id=question_id):
                question = await self._question(question_id)
                policy.check_changes(caller, _owned(question), f"question {question.id}", self._chains(caller))
            case AnswerQuestion(question_id=question_id):
                question = await self._question(question_id)
                policy.check_answers(caller, question.from_team, question.id)
            case ReadUnsolicited(turn_id=turn_id):
                turn = await self.store.call(unsolicited.get, turn_id)
                if turn is not None:
                    policy.check_sees(caller, _owned(turn), f"turn {turn.id}", self._chains(caller))

    def _visible(self, reply: Reply, caller: Caller) -> Reply:
        """``reply`` with only what ``caller`` may see of its lists."""
        chains = self._chains(caller)

        def seen(thing: _HasPair) -> bool:
            return policy.sees(caller, _owned(thing), chains)

        match reply:
            case ReportReply():
                return ReportReply(tells=[t for t in reply.tells if seen(t)])
            case QuestionsReply():
                return QuestionsReply(questions=[q for q in reply.questions if seen(q)])
            case ApprovalsReply():
                return ApprovalsReply(approvals=[a for a in reply.approvals if seen(a)])
            case NotificationsReply():
                return NotificationsReply(notifications=[n for n in reply.notifications if seen(n)])
            case SessionsReply():
                return SessionsReply(sessions=[s for s in reply.sessions if seen(s)])
            case PairsReply():
                return msgspec.structs.replace(reply, processes=[p for p in reply.processes if seen(p)])
            case StatusReply() if caller.kind in ("child", "agent", "remote"):
                return msgspec.structs.replace(
                    reply,
                    processes=[p for p in reply.processes if seen(p)],
                    unsolicited=[u for u in reply.unsolicited if seen(u)],
                )
        return reply

    async def _question(self, question_id: str) -> QuestionInfo:
        question = await self.store.call(questions.get, question_id)
        if question is None:
            raise NotFoundError(f"no question with id {question_id!r}; 'iris questions' lists the pending ones")
        return question

    # --- small handlers --------------------------------------------------------------------

    async def hello(self) -> Welcome:
        return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version=__version__, pid=os.getpid())

    async def tell(self, request: Tell, send_event: SendEvent) -> TellReply | NotificationReply:
        """A tell (TellService), or with ``persist`` a notification (the courier's)."""
        if request.persist:
            return await self.notify(request)
        return await self.tells.tell(request, send_event)

    async def teams(self) -> TeamsReply:
        return TeamsReply(teams=self.team_infos())

    async def get_pair(self, request: GetPair) -> PairReply:
        return PairReply(process=(await self.pair(request.from_team, request.to_team)).statistics())

    async def wake(self, request: Wake) -> PairReply:
        pair = await self.pair(request.from_team, request.to_team)
        message = f"{pair.label} is still starting (it may be waiting for a free process slot)"
        with trio.move_on_after(self.config.settings.session_init_timeout / 1000):
            message = await pair.wake()
        return PairReply(process=pair.statistics(), message=message)

    async def sleep(self, request: Sleep) -> PairReply:
        pair = await self.pair(request.from_team, request.to_team)
        message = await pair.sleep(force=request.force, reason="put to sleep on request")
        return PairReply(process=pair.statistics(), message=message)

    async def wake_all(self, request: WakeAll) -> PairsReply:
        self._check_from(request.from_team)
        errors = await self.supervisor.wake_all(request.from_team, parallel=request.parallel)
        wanted = [  # not the stopped pairs of a team a reload removed
            p for p in self.supervisor.statistics()
            if p.from_team == request.from_team and (p.to_team in self.config.teams or self.remote_teams.get(p.to_team))
        ]
        return PairsReply(processes=wanted, errors=errors)

    async def clear_cache(self, request: ClearCache) -> CountReply:
        if (remote := self.remote_teams.get(request.to_team)) is not None:
            raise InvalidRequestError(
                f"{request.to_team} is a remote team ({remote.kind}: {remote.where}): its conversations are "
                "kept where it lives, not here"
            )
        self.config.team(request.to_team)
        self._check_from(request.from_team)
        count = await self.store.call(tells.clear_finished, request.to_team, request.from_team)
        count += await self.store.call(unsolicited.clear_finished, request.to_team, request.from_team)
        return CountReply(count=count)

    async def notifications(self, request: ListNotifications) -> NotificationsReply:
        if request.to_team is not None:
            self.check_team(request.to_team)
        found = await self.store.call(notifications.listing, request.to_team, request.include_done)
        return NotificationsReply(notifications=found)

    async def approvals(self, request: ListApprovals) -> ApprovalsReply:
        if request.team is not None:
            self.check_team(request.team)
        listed = await self.store.call(approvals.listing, request.team, request.include_decided)
        return ApprovalsReply(approvals=listed)

    async def http_info(self, request: HttpInfo) -> HttpInfoReply:
        if self.http is None:
            raise InvalidRequestError("this irisd has no HTTP face")
        token = self.http.rotate_owner_token() if request.rotate else self.http.owner_token
        code = self.http.mint_login_code() if request.login_code else ""
        return HttpInfoReply(url=self.http.url, token=token, login_code=code)

    async def rules(self, request: ListRules) -> RulesReply:
        if request.team is not None:
            self.check_team(request.team)
        return RulesReply(rules=await self.store.call(approvals.rules, request.team))

    async def forget_rule(self, request: ForgetRule) -> RuleReply:
        rule = await self.store.call(approvals.forget, request.rule_id)
        if rule is None:
            raise NotFoundError(f"no remembered rule {request.rule_id}; 'iris approvals rules' lists them")
        return RuleReply(rule=rule)

    async def list_questions(self, request: ListQuestions) -> QuestionsReply:
        if request.team is not None and self.remote_teams.get(request.team) is None:
            self._check_from(request.team)  # asked by or of it: a sender ('a2a:NAME') is one too
        asked = await self.store.call(questions.listing, request.team, request.include_closed, request.for_team)
        return QuestionsReply(questions=asked)

    async def costs(self, request: Costs) -> CostsReply:
        rows, total = await self.store.read(ledger.summary, request.by, request.since, request.team)
        if request.team is not None and not rows:  # a removed team's costs still count
            self.check_team(request.team)
        return CostsReply(by=request.by, since=request.since, rows=rows, total=total)

    async def ask(self, request: Ask) -> AskReply:
        if self.agent is None:
            raise InvalidRequestError("iris-agent is not available in this irisd")
        answer = await self.agent.ask(request.question, new_session=request.new_session)
        if answer.cost_usd:  # budgets count what asking iris-agent costs
            ask_id = "ask-" + secrets.token_hex(8)
            await self.store.call(ledger.record_ask, ask_id, time.time(), answer)
        return answer

    # --- queries -------------------------------------------------------------------------

    async def reload_reply(self) -> ReloadReply:
        return ReloadReply(changes=await self.reload())

    async def reload(self) -> list[str]:
        """Read config.yaml (and irisd.env) again and apply the difference (irisd/reload.py).
        Invalid: ConfigError with the reason, and irisd keeps the config it had (``iris
        status`` says so until a reload works)."""
        async with self._reloading:  # one at a time: SIGHUP, the CLI and the dashboard may race
            try:
                new, _ = await trio.to_thread.run_sync(read_config, self.paths)
                claude = await trio.to_thread.run_sync(check_claude, new)
            except ConfigError as exc:
                self.config_problem = f"{exc.message} (irisd goes on with the config it had)"
                # With its reason, in status and Health while it stands (a good reload settles it).
                log.error(f"config.yaml not reloaded: {exc.message}", extra={"error": exc.message, "stands": RELOAD})
                raise ConfigError(self.config_problem) from None
            plan = plan_reload(self.config, new)
            self.config, self.claude_version, self.config_problem = new, claude, ""
            recent_problems.settled(RELOAD)
            self.tells.reconfigure(new)
            sync_a2a_teams(self.remote_teams, new, self.store)
            if self.mesh is not None:
                self.mesh.reconfigure(new)
            self.supervisor.reconfigure(new, retire=set(plan.removed), restart=set(plan.restart))
            if self.questions is not None:
                self.questions.reconfigure(new)
            if self.agent is not None:
                self.agent.reconfigure(new)
            if self.health is not None:
                self.health.reconfigure(new)
            changes = plan.summary()
            log.info("config.yaml reloaded", extra={"changes": changes})
            return changes

    async def _ids_starting_with(self, kind: str, prefix: str) -> list[str]:
        return await self.store.call(ids.starting_with, kind, prefix)

    def team_infos(self) -> list[TeamInfo]:
        remote = {executor.team.name: executor for executor in self.remote_teams.all()}
        local = [
            TeamInfo(name=t.name, path=t.path, description=t.description, color=t.color, host=t.host,
                     unavailable=team_unavailable(t))
            for t in self.config.teams.values()
            if t.name not in remote
        ]
        far = [
            TeamInfo(name=e.team.name, path=e.team.path, description=e.team.description, color=e.team.color,
                     kind=e.kind, remote=e.where)
            for e in remote.values()
        ]
        return sorted([*local, *far], key=lambda t: t.name)

    async def status(self) -> StatusReply:
        processes = self.supervisor.statistics()
        return StatusReply(
            pid=os.getpid(),
            daemon_version=__version__,
            started_at=self.started_at,
            socket_path=str(self.paths.socket),
            config_path=self.config.source,
            teams=self.team_infos(),
            processes=processes,
            max_processes=self.config.settings.max_processes,
            pending_approvals=sum(len(s.pending_approvals) for s in self.supervisor.snapshots()),
            http_url=self.http.url if self.http is not None else "",
            environment={name: self.environment_names(team) for name, team in self.config.teams.items()},
            unsolicited=await self.store.call(unsolicited.recent, RECENT_UNSOLICITED),
            memory_rss=rss_bytes(os.getpid()),
            children_rss=total_rss(p.pid for p in processes if p.pid is not None),
            recent_errors=recent_problems.entries(),
            claude_version=self.claude_version,
            claude_tested=locate.CLAUDE_VERSION,
            config_problem=self.config_problem,
            findings=await self.health.look() if self.health is not None else [],
            recoveries=list(self.health.recoveries) if self.health is not None else [],
        )

    async def health_reply(self) -> HealthReply:
        found = await self.health.look() if self.health is not None else []
        recoveries = list(self.health.recoveries) if self.health is not None else []
        return HealthReply(status="ok", worst=worst(found), findings=found, recoveries=recoveries,
                           checked_at=time.time())

    def environment_names(self, team: Team) -> list[str]:
        """The names (never the values) of the variables the team's claude gets."""
        return sorted(self.child_env(team))

    def child_env(self, team: Team) -> dict[str, str]:
        return child_environment(
            claude_config_dir=self.paths.claude_config_dir, daemon_env=self.config.daemon_env, team_env=team.env
        )

    async def list_sessions(self, to_team: str | None, *, archived: bool = False) -> SessionsReply:
        return SessionsReply(sessions=await self.sessions(to_team, archived=archived))

    async def sessions(self, to_team: str | None, *, archived: bool | None = None) -> list[SessionInfo]:
        """The pairs' conversations (with ``to_team``): the archived ones only, the others
        only, or (None) all."""
        if to_team is not None:
            self.check_team(to_team)
        rows = [r for r in await self.store.call(sessions.list_all) if to_team in (None, r.to_team)
                and archived in (None, r.status == sessions.ARCHIVED)]
        costs = await self.store.read(ledger.by_pair)
        files = [transcript_path(self.paths, self.config.teams, r.to_team, r.session_id) for r in rows]
        remote = {name for name, team in self.config.teams.items() if team.host}
        found = []
        for row, transcript in zip(rows, await trio.to_thread.run_sync(existing, files), strict=True):
            live = self.supervisor.snapshot((row.from_team, row.to_team))
            found.append(
                msgspec.structs.replace(
                    sessions.info(row),
                    process_state=live.process.state if live else "stopped",
                    # A remote team's transcript is on its host: checked there when it resumes.
                    transcript_exists=transcript or row.to_team in remote,
                    cost_usd=costs.get((row.from_team, row.to_team), 0.0),
                )
            )
        return found

    async def archive_session(self, from_team: str | None, to_team: str) -> SessionReply:
        """Archive the pair's conversation now (refused while it has work)."""
        self.check_team(to_team)
        self._check_from(from_team)
        await self.archiver.archive((from_team, to_team), time.time(), why="by hand ('iris session archive')")
        return SessionReply(session=await self._session(from_team, to_team))

    async def restore_session(self, from_team: str | None, to_team: str) -> SessionReply:
        """Restore an archived conversation (a new one with settings.sessions.restore: fresh)."""
        self.check_team(to_team)
        self._check_from(from_team)
        fresh = self.config.settings.sessions.restore == "fresh"
        restored = await self.archiver.restore((from_team, to_team), time.time(), fresh=fresh,
                                               why="by hand ('iris session restore')")
        if restored is None:
            label = f"{from_team or 'external'}->{to_team}"
            raise InvalidRequestError(f"the conversation of {label} is not archived; 'iris sessions --archived' "
                                      "lists those that are")
        return SessionReply(session=await self._session(from_team, to_team))

    async def _session(self, from_team: str | None, to_team: str) -> SessionInfo:
        for info in await self.sessions(to_team):
            if info.from_team == from_team:
                return info
        raise NotFoundError(f"{from_team or 'external'}->{to_team} has no conversation yet; 'iris sessions' lists them")

    async def report(
        self, to_team: str, from_team: str | None, all_callers: bool, limit: int
    ) -> ReportReply:
        self._check_from(from_team)
        found = await self.store.read(tells.recent, to_team, from_team, all_callers=all_callers, limit=limit)
        if not found:
            try:
                self.check_team(to_team)
            except UnknownTeamError:  # a team removed from config.yaml keeps its history
                if not await self.store.call(tells.recent, to_team, None, all_callers=True, limit=1):
                    raise
        return ReportReply(tells=[self.tells.live(info) for info in found])

    async def list_tells(
        self, to_team: str | None, from_team: str | None, status: str | None, limit: int
    ) -> ReportReply:
        if to_team is not None:
            self.check_team(to_team)
        if from_team not in (None, "external"):
            self._check_from(from_team)
        found = await self.store.read(tells.recent_all, to_team, from_team, status, limit)
        return ReportReply(tells=[self.tells.live(info) for info in found])

    async def transcript(self, tell_id: str, as_steps: bool = False) -> TranscriptReply:
        info = await self.tells.find(tell_id)
        entries = await self.store.read(rows.transcript, "tell_messages", "tell_id", tell_id)
        if as_steps:  # the dashboard: the one reading of the lines, not the lines
            return TranscriptReply(tell=info, entries=[], steps=steps(entries, info))
        return TranscriptReply(tell=info, entries=entries)

    async def unsolicited_transcript(self, turn_id: str) -> UnsolicitedReply:
        turn = await self.store.call(unsolicited.get, turn_id)
        if turn is None:
            raise NotFoundError(f"no unsolicited turn with id {turn_id!r}; 'iris status' lists recent ones")
        entries = await self.store.read(rows.transcript, "unsolicited_messages", "turn_id", turn_id)
        return UnsolicitedReply(turn=turn, entries=entries)

    # --- tells and questions ----------------------------------------------------------------

    async def command(self, request: Command) -> TellReply:
        name = request.command.strip().removeprefix("/")
        if not COMMAND_NAME.match(name):
            raise InvalidRequestError(
                f"{request.command!r} is not a slash command name; use e.g. 'compact' or '/compact'"
            )
        known = await self.slash_commands(request.to_team)
        if known is not None and name not in known:
            raise InvalidRequestError(
                f"/{name} is not a command of team {request.to_team}'s claude (as it said at its last start; "
                f"a tell refreshes it); it knows: {', '.join(sorted(known))}"
            )
        text = f"/{name} {request.args.strip()}".strip()
        tell = await self.tells.submit(request.to_team, text, request.from_team, request.timeout_ms, kind="command")
        return await self.tells.reply(tell, None)

    async def slash_commands(self, team: str) -> tuple[str, ...] | None:
        """The slash commands ``team``'s claude says it knows: its latest ``init`` line, as
        stored with the transcripts (so also after a restart of irisd); None before any
        claude of the team has run."""
        self.config.team(team)
        raw = await self.store.call(tells.latest_init_line, team)
        line = decode_line(raw) if raw is not None else None
        return line.commands() if isinstance(line, SystemLine) else None

    async def answer_question(self, request: AnswerQuestion) -> AnswerReply:
        """Send the answer as the next tell of the question's own pair (the conversation
        that asked), and close the question."""
        if request.question_id:
            question = await self.store.call(questions.get, request.question_id)
        elif request.tell_id:
            question = await self._asked_a_waiter(request.tell_id)
        else:
            raise InvalidRequestError("give the question's id (see 'iris questions')")
        if question is None:
            raise NotFoundError(
                f"no question with id {request.question_id!r}; 'iris questions' lists the pending ones"
            )
        if request.as_team:
            caller = None if request.as_team == "external" else request.as_team
            if question.from_team != caller:
                raise PermissionDeniedError(
                    f"question {question.id} was asked of {question.from_team or 'external'}, not of "
                    f"{request.as_team}; only that caller (or a person with 'iris answer') can answer it"
                )
        text = check_message(request.text)
        check_wait(request.timeout_ms)
        closed = await self.store.call(
            questions.close, question.id, "answered", time.time(), by=request.by or "unknown", answer=text
        )
        if closed is None:
            raise await self._not_pending(question.id)
        try:
            tell = await self.tells.submit(question.to_team, text, question.from_team, request.timeout_ms)
        except IrisError:
            await self.store.call(questions.reopen, question.id)
            raise
        answered = await self.store.call(questions.set_answer_tell, question.id, tell.id)
        assert answered is not None
        if self.questions is not None:
            self.questions.publish(answered)
        reply = await self.tells.reply(tell, None)
        return AnswerReply(question=answered, status=reply.status, tell=reply.tell)

    async def _asked_a_waiter(self, tell_id: str) -> QuestionInfo:
        """The question a tell's answer asked the caller that waited for it, filed now that
        the caller answers it (InvalidRequestError if the answer asked nothing)."""
        info = await self.store.call(tells.get, tell_id)
        if info is None:
            raise NotFoundError(f"no tell with id {tell_id!r}; 'iris report' lists them")
        question = await self.questions.file_answered_now(info) if self.questions is not None else None
        if question is None:
            raise InvalidRequestError(
                f"tell {tell_id} asked nothing ({info.status}); send a new tell to the same team instead"
            )
        return question

    async def dismiss_question(self, request: DismissQuestion) -> QuestionReply:
        question_id = request.question_id
        if not question_id and request.tell_id:
            question_id = (await self._asked_a_waiter(request.tell_id)).id
        return QuestionReply(question=await self._dismiss(question_id, request.by))

    async def _dismiss(self, question_id: str, by: str) -> QuestionInfo:
        closed = await self.store.call(questions.close, question_id, "dismissed", time.time(), by=by or "unknown")
        if closed is None:
            raise await self._not_pending(question_id)
        if self.questions is not None:
            self.questions.publish(closed)
        return closed

    async def _not_pending(self, question_id: str) -> IrisError:
        known = await self.store.call(questions.get, question_id)
        if known is None:
            return NotFoundError(f"no question with id {question_id!r}; 'iris questions' lists the pending ones")
        who = f" by {known.closed_by}" if known.closed_by else ""
        return InvalidRequestError(f"question {known.id} is already {known.status}{who}; nothing to do")

    async def notify(self, request: Tell) -> NotificationReply:
        """A persisted tell: stored by the tell service, then the courier looks for it."""
        created = await self.tells.persist(request)
        self.on_notification()
        return NotificationReply(notification=created)

    async def decide(self, request: Decide) -> ApprovalReply:
        """Answer a pending approval, through the pair whose claude asked."""
        return ApprovalReply(approval=await self._decide(request))

    async def _decide(self, request: Decide) -> ApprovalInfo:
        for snapshot in self.supervisor.snapshots():
            pair = self.supervisor.pair_nowait(snapshot.key)
            if pair is not None and request.approval_id in snapshot.pending_approvals:
                return await pair.decide(
                    request.approval_id,
                    allow=request.allow,
                    remember=request.remember,
                    reason=request.reason,
                    by=request.by or "unknown",
                    content=request.content,
                )
        known = await self.store.call(approvals.get, request.approval_id)
        if known is None:
            raise NotFoundError(f"no approval with id {request.approval_id!r}; 'iris approvals' lists the pending ones")
        who = f" by {known.decided_by}" if known.decided_by else ""
        raise InvalidRequestError(f"approval {known.id} is already {known.status}{who}; nothing to decide")

    # --- pairs and sessions ----------------------------------------------------------------

    async def pair(self, from_team: str | None, to_team: str) -> Pair:
        self.check_team(to_team)  # UnknownTeamError, with the known teams
        self._check_from(from_team)
        return await self.supervisor.pair(from_team, to_team)  # refuses a remote team

    async def reset_session(self, from_team: str | None, to_team: str) -> SessionReply:
        pair = await self.pair(from_team, to_team)
        await pair.reset()
        for info in await self.sessions(to_team):
            if info.from_team == from_team:
                return SessionReply(session=info)
        raise NotFoundError(f"no session for {pair.label}")  # pragma: no cover - reset creates it

    async def watch(self, team: str | None, send_event: SendEvent, wanted: EventFilter | None = None) -> Reply:
        """Push events (those ``wanted`` lets through) until the client disconnects (which
        ends this request)."""
        if team is not None:
            self.check_team(team)
        await serve_watch(self.hub, team, send_event, wanted)

    def check_team(self, team: str) -> None:
        """A team of this config, or a remote one (of the mesh): UnknownTeamError otherwise."""
        self.remote_teams.team(self.config, team)

    def _check_from(self, from_team: str | None) -> None:
        check_sender(self.config, from_team, sending=False)  # a filter, or a pair's other end


class _HasPair(Protocol):
    @property
    def from_team(self) -> str | None: ...
    @property
    def to_team(self) -> str: ...


def _owned(thing: _HasPair) -> policy.Owned:
    """The facts policy decides on: a tell's own chain, or (questions, approvals, turns,
    notifications) the pair only."""
    return policy.Owned(thing.from_team, thing.to_team, getattr(thing, "chain_id", ""))


Handler = Callable[[Dispatcher, Any, SendEvent], Awaitable[Reply]]
R = TypeVar("R")


def _on(kind: type[R], handle: Callable[[Dispatcher, R, SendEvent], Awaitable[Reply]]) -> tuple[type[Any], Handler]:
    """One row of ``HANDLERS`` (typed: the handler takes that request type)."""
    return kind, handle


# Every request type and who serves it (a test checks that none is missing).
HANDLERS: dict[type[Any], Handler] = dict(
    [
        _on(Hello, lambda d, r, e: d.hello()),
        _on(Tell, lambda d, r, e: d.tell(r, e)),
        _on(TellMany, lambda d, r, e: d.tells.tell_many(r, e)),
        _on(Command, lambda d, r, e: d.command(r)),
        _on(GetTell, lambda d, r, e: d.tells.get(r.tell_id, r.wait_ms, e if r.stream else None)),
        _on(CancelTell, lambda d, r, e: d.tells.cancel(r.tell_id)),
        _on(ListTeams, lambda d, r, e: d.teams()),
        _on(GetStatus, lambda d, r, e: d.status()),
        _on(ListSessions, lambda d, r, e: d.list_sessions(r.to_team, archived=r.archived)),
        _on(ArchiveSession, lambda d, r, e: d.archive_session(r.from_team, r.to_team)),
        _on(RestoreSession, lambda d, r, e: d.restore_session(r.from_team, r.to_team)),
        _on(ResetSession, lambda d, r, e: d.reset_session(r.from_team, r.to_team)),
        _on(GetPair, lambda d, r, e: d.get_pair(r)),
        _on(Wake, lambda d, r, e: d.wake(r)),
        _on(Sleep, lambda d, r, e: d.sleep(r)),
        _on(WakeAll, lambda d, r, e: d.wake_all(r)),
        _on(Report, lambda d, r, e: d.report(r.to_team, r.from_team, r.all_callers, r.limit)),
        _on(ReadTranscript, lambda d, r, e: d.transcript(r.tell_id, r.steps)),
        _on(ClearCache, lambda d, r, e: d.clear_cache(r)),
        _on(ListNotifications, lambda d, r, e: d.notifications(r)),
        _on(Watch, lambda d, r, e: d.watch(r.team, e)),
        _on(ListApprovals, lambda d, r, e: d.approvals(r)),
        _on(Decide, lambda d, r, e: d.decide(r)),
        _on(ListTells, lambda d, r, e: d.list_tells(r.to_team, r.from_team, r.status, r.limit)),
        _on(HttpInfo, lambda d, r, e: d.http_info(r)),
        _on(ListRules, lambda d, r, e: d.rules(r)),
        _on(ForgetRule, lambda d, r, e: d.forget_rule(r)),
        _on(ListQuestions, lambda d, r, e: d.list_questions(r)),
        _on(AnswerQuestion, lambda d, r, e: d.answer_question(r)),
        _on(DismissQuestion, lambda d, r, e: d.dismiss_question(r)),
        _on(Costs, lambda d, r, e: d.costs(r)),
        _on(Ask, lambda d, r, e: d.ask(r)),
        _on(ReadUnsolicited, lambda d, r, e: d.unsolicited_transcript(r.turn_id)),
        _on(Reload, lambda d, r, e: d.reload_reply()),
        _on(GetHealth, lambda d, r, e: d.health_reply()),
    ]
)
