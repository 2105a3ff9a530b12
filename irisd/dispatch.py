"""Requests to daemon operations: one ``match`` on the request type, no socket code."""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio

from iris_common import locate
from iris_common.config import IrisConfig, Team, team_unavailable
from iris_common.environment import child_environment, root_skip_problem
from iris_common.money import day_start
from iris_common.paths import IrisPaths, existing, transcript_path
from irisd import __version__
from irisd.a2a.teams import sync_a2a_teams
from irisd.budget import Budgets, RateWindow, Spending, refusal
from irisd.caller import Caller
from irisd.claude.wire import SystemLine, decode_line
from irisd.events import serve_watch
from irisd.health import rss_bytes, total_rss
from irisd.ids import with_whole_ids
from irisd.logs import recent_problems
from irisd.pool.active_tell import ActiveTell, save_tell
from irisd.pool.pair import Pair, TellLink
from irisd.pool.supervisor import Supervisor
from irisd.questions.desk import QuestionDesk
from irisd.reload import check_claude, plan_reload, read_config
from irisd.store import approvals, ids, ledger, notifications, questions, rows, sessions, tells, unsolicited
from irisd.store.facade import Store
from irisd.tell.machine import TellMachine
from protocol import PROTOCOL_VERSION
from protocol.errors import (
    BudgetError,
    ClaudeError,
    ConfigError,
    InvalidRequestError,
    IrisError,
    LoopError,
    NotFoundError,
    RateLimitedError,
    TeamUnavailableError,
)
from protocol.limits import MAX_MESSAGE_CHARS, MAX_TELL_BUDGET_USD, MAX_WAIT_MS, MIN_WAIT_MS, range_problem
from protocol.messages import (
    UNFINISHED_TELL_STATUSES,
    AnswerQuestion,
    AnswerReply,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    Ask,
    CancelTell,
    ClearCache,
    Command,
    Costs,
    CostsReply,
    CountReply,
    Decide,
    DismissQuestion,
    Event,
    FanOutEvent,
    FanOutResult,
    ForgetRule,
    GetPair,
    GetStatus,
    GetTell,
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
    ReplyStatus,
    Report,
    ReportReply,
    Request,
    ResetSession,
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
    TellInfo,
    TellMany,
    TellReply,
    TellsReply,
    TranscriptReply,
    UnsolicitedReply,
    Wake,
    WakeAll,
    Watch,
    Welcome,
)

MAX_FAN_OUT = 32
RECENT_UNSOLICITED = 10  # turns no tell asked for, shown by status
COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_-]*$")

if TYPE_CHECKING:
    from irisd.agent.runner import Agent

SendEvent = Callable[[Event], Awaitable[None]]

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
    def __init__(
        self,
        *,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        supervisor: Supervisor,
        on_notification: Callable[[], None] = lambda: None,
        http: HttpAccess | None = None,
        claude_version: str = "",
    ) -> None:
        self.config = config
        self.claude_version = claude_version  # of the local claude, read at start (and reload)
        self.config_problem = ""  # why the last reload was refused
        self._reloading = trio.Lock()
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.hub = supervisor.hub  # one hub: the pairs publish to it, watchers read it
        self.on_notification = on_notification
        self.http = http
        self.started_at = time.time()
        self.rate = RateWindow(config.settings.rate_limit)
        self.questions: QuestionDesk | None = None  # set by run_core
        self.agent: Agent | None = None

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent) -> Reply:
        """Serve one request of ``caller`` (decided by its connection: see irisd/caller.py);
        raises IrisError subclasses for the client to see."""
        request = await with_whole_ids(caller.apply(request), self._ids_starting_with)
        match request:
            case Hello():
                return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version=__version__, pid=os.getpid())
            case Tell(persist=True):
                return await self.notify(request)
            case Tell():
                return await self.tell(request, send_event)
            case Command():
                return await self.command(request, send_event)
            case GetTell(tell_id, wait_ms):
                return await self.get_tell(tell_id, wait_ms)
            case CancelTell(tell_id):
                return await self.cancel(tell_id)
            case ListTeams():
                return TeamsReply(teams=self.team_infos())
            case GetStatus():
                return await self.status()
            case ListSessions(to_team):
                return SessionsReply(sessions=await self.sessions(to_team))
            case ResetSession(to_team, from_team):
                return await self.reset_session(from_team, to_team)
            case GetPair(to_team, from_team):
                return PairReply(process=(await self.pair(from_team, to_team)).statistics())
            case Wake(to_team, from_team):
                pair = await self.pair(from_team, to_team)
                message = f"{pair.label} is still starting (it may be waiting for a free process slot)"
                with trio.move_on_after(self.config.settings.session_init_timeout / 1000):
                    message = await pair.wake()
                return PairReply(process=pair.statistics(), message=message)
            case Sleep(to_team, from_team, force):
                pair = await self.pair(from_team, to_team)
                message = await pair.sleep(force=force, reason="put to sleep on request")
                return PairReply(process=pair.statistics(), message=message)
            case WakeAll(from_team, parallel):
                self._check_from(from_team)
                errors = await self.supervisor.wake_all(from_team, parallel=parallel)
                wanted = [p for p in self.supervisor.statistics() if p.from_team == from_team]
                return PairsReply(processes=wanted, errors=errors)
            case Report(to_team, from_team, all_callers, limit):
                return await self.report(to_team, from_team, all_callers, limit)
            case ReadTranscript(tell_id):
                return await self.transcript(tell_id)
            case ClearCache(to_team, from_team):
                self.config.team(to_team)
                self._check_from(from_team)
                count = await self.store.call(tells.clear_finished, to_team, from_team)
                count += await self.store.call(unsolicited.clear_finished, to_team, from_team)
                return CountReply(count=count)
            case ListNotifications(to_team, include_done):
                if to_team is not None:
                    self.config.team(to_team)
                found = await self.store.call(notifications.listing, to_team, include_done)
                return NotificationsReply(notifications=found)
            case Watch(team):
                return await self.watch(team, send_event)
            case ListApprovals(team, include_decided):
                if team is not None:
                    self.config.team(team)
                listed = await self.store.call(approvals.listing, team, include_decided)
                return ApprovalsReply(approvals=listed)
            case Decide():
                return ApprovalReply(approval=await self.decide(request))
            case ListTells(to_team, from_team, status, limit):
                return await self.list_tells(to_team, from_team, status, limit)
            case HttpInfo(rotate, login_code):
                if self.http is None:
                    raise InvalidRequestError("this irisd has no HTTP face")
                token = self.http.rotate_owner_token() if rotate else self.http.owner_token
                code = self.http.mint_login_code() if login_code else ""
                return HttpInfoReply(url=self.http.url, token=token, login_code=code)
            case ListRules(team):
                if team is not None:
                    self.config.team(team)
                return RulesReply(rules=await self.store.call(approvals.rules, team))
            case ForgetRule(rule_id):
                rule = await self.store.call(approvals.forget, rule_id)
                if rule is None:
                    raise NotFoundError(f"no remembered rule {rule_id}; 'iris approvals rules' lists them")
                return RuleReply(rule=rule)
            case TellMany():
                return await self.tell_many(request, send_event)
            case ListQuestions(team, include_closed, for_team):
                asked = await self.store.call(questions.listing, team, include_closed, for_team)
                return QuestionsReply(questions=asked)
            case AnswerQuestion():
                return await self.answer_question(request)
            case DismissQuestion(question_id, by):
                return QuestionReply(question=await self.dismiss_question(question_id, by))
            case Costs(by, since, team):
                rows, total = await self.store.call(ledger.summary, by, since, team)
                return CostsReply(by=by, since=since, rows=rows, total=total)
            case Ask():
                if self.agent is None:
                    raise InvalidRequestError("iris-agent is not available in this irisd")
                answer = await self.agent.ask(request.question, new_session=request.new_session)
                if answer.cost_usd:  # budgets count what asking iris-agent costs
                    ask_id = "ask-" + secrets.token_hex(8)
                    await self.store.call(ledger.record_ask, ask_id, time.time(), answer.cost_usd)
                return answer
            case ReadUnsolicited(turn_id):
                return await self.unsolicited_transcript(turn_id)
            case Reload():
                return ReloadReply(changes=await self.reload())

    # --- queries -------------------------------------------------------------------------

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
                log.error("config.yaml not reloaded", extra={"error": exc.message})
                raise ConfigError(self.config_problem) from None
            plan = plan_reload(self.config, new)
            self.config, self.claude_version, self.config_problem = new, claude, ""
            if self.rate.per_minute != new.settings.rate_limit:
                self.rate = RateWindow(new.settings.rate_limit)
            sync_a2a_teams(self.supervisor.remote_teams, new, self.store)
            self.supervisor.reconfigure(new, retire=set(plan.removed), restart=set(plan.restart))
            if self.questions is not None:
                self.questions.settings = new.settings.questions
            if self.agent is not None:
                self.agent.config = new
            changes = plan.summary()
            log.info("config.yaml reloaded", extra={"changes": changes})
            return changes

    async def _ids_starting_with(self, kind: str, prefix: str) -> list[str]:
        return await self.store.call(ids.starting_with, kind, prefix)

    def team_infos(self) -> list[TeamInfo]:
        remote = {executor.team.name: executor for executor in self.supervisor.remote_teams.all()}
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
        )

    def environment_names(self, team: Team) -> list[str]:
        """The names (never the values) of the variables the team's claude gets."""
        return sorted(self.child_env(team))

    def child_env(self, team: Team) -> dict[str, str]:
        return child_environment(
            claude_config_dir=self.paths.claude_config_dir, daemon_env=self.config.daemon_env, team_env=team.env
        )

    async def sessions(self, to_team: str | None) -> list[SessionInfo]:
        if to_team is not None:
            self.config.team(to_team)
        rows = [r for r in await self.store.call(sessions.list_all) if to_team in (None, r.to_team)]
        costs = await self.store.call(ledger.by_pair)
        files = [transcript_path(self.paths, self.config.teams, r.to_team, r.session_id) for r in rows]
        remote = {name for name, team in self.config.teams.items() if team.host}
        found = []
        for row, transcript in zip(rows, await trio.to_thread.run_sync(existing, files), strict=True):
            live = self.supervisor.snapshot((row.from_team, row.to_team))
            found.append(
                SessionInfo(
                    from_team=row.from_team,
                    to_team=row.to_team,
                    session_id=row.session_id,
                    created_at=row.created_at,
                    last_used_at=row.last_used_at,
                    message_count=row.message_count,
                    status=row.status,
                    process_state=live.process.state if live else "stopped",
                    # A remote team's transcript is on its host: checked there when it resumes.
                    transcript_exists=transcript or row.to_team in remote,
                    cost_usd=costs.get((row.from_team, row.to_team), 0.0),
                )
            )
        return found

    async def report(
        self, to_team: str, from_team: str | None, all_callers: bool, limit: int
    ) -> ReportReply:
        self.config.team(to_team)
        self._check_from(from_team)
        if not 1 <= limit <= 1000:
            raise InvalidRequestError(f"limit {limit} is out of range; use 1 to 1000")
        found = await self.store.call(tells.recent, to_team, from_team, all_callers=all_callers, limit=limit)
        return ReportReply(tells=[self._live(info) for info in found])

    async def list_tells(
        self, to_team: str | None, from_team: str | None, status: str | None, limit: int
    ) -> ReportReply:
        if to_team is not None:
            self.config.team(to_team)
        if from_team not in (None, "external"):
            self._check_from(from_team)
        if not 1 <= limit <= 1000:
            raise InvalidRequestError(f"limit {limit} is out of range; use 1 to 1000")
        found = await self.store.call(tells.recent_all, to_team, from_team, status, limit)
        return ReportReply(tells=[self._live(info) for info in found])

    async def transcript(self, tell_id: str) -> TranscriptReply:
        info = await self._find(tell_id)
        entries = await self.store.call(rows.transcript, "tell_messages", "tell_id", tell_id)
        return TranscriptReply(tell=info, entries=entries)

    async def unsolicited_transcript(self, turn_id: str) -> UnsolicitedReply:
        turn = await self.store.call(unsolicited.get, turn_id)
        if turn is None:
            raise NotFoundError(f"no unsolicited turn with id {turn_id!r}; 'iris status' lists recent ones")
        entries = await self.store.call(rows.transcript, "unsolicited_messages", "turn_id", turn_id)
        return UnsolicitedReply(turn=turn, entries=entries)

    async def get_tell(self, tell_id: str, wait_ms: int) -> TellReply:
        if wait_ms:
            if not MIN_WAIT_MS <= wait_ms <= MAX_WAIT_MS:  # no -1 here: 0 already answers at once
                raise InvalidRequestError(
                    f"wait {wait_ms} ms is out of range; {seconds_hint(wait_ms)}use 0 (answer at once) or "
                    f"{MIN_WAIT_MS} to "
                    f"{MAX_WAIT_MS} ms"
                )
            active = self.supervisor.find_tell(tell_id)
            if active is not None:
                active.result_waiters += 1  # someone reads the answer when it comes
                try:
                    with trio.move_on_after(wait_ms / 1000):
                        await active.finished.wait()
                finally:
                    active.result_waiters -= 1
        info = await self._find(tell_id)
        return TellReply(status=reply_status(info), tell=info)

    async def _find(self, tell_id: str) -> TellInfo:
        active = self.supervisor.find_tell(tell_id)
        info = active.info() if active else await self.store.call(tells.get, tell_id)
        if info is None:
            raise NotFoundError(f"no tell with id {tell_id!r}; 'iris report TEAM' lists recent tells")
        return info

    def _live(self, info: TellInfo) -> TellInfo:
        """A stored tell, with the live text if it is still running."""
        active = self.supervisor.find_tell(info.id)
        return active.info() if active else info

    # --- tells ---------------------------------------------------------------------------

    async def tell(self, request: Tell, send_event: SendEvent) -> TellReply:
        tell = await self.submit(
            request.to_team,
            request.message,
            request.from_team,
            request.timeout_ms,
            parent_pair=request.parent_pair,
            listen=request.stream,
            max_budget_usd=request.max_budget_usd,
        )
        return await self._reply_when_due(tell, send_event if request.stream else None)

    async def command(self, request: Command, send_event: SendEvent) -> TellReply:
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
        tell = await self.submit(request.to_team, text, request.from_team, request.timeout_ms, kind="command")
        return await self._reply_when_due(tell, None)

    async def slash_commands(self, team: str) -> tuple[str, ...] | None:
        """The slash commands ``team``'s claude says it knows: its latest ``init`` line, as
        stored with the transcripts (so also after a restart of irisd); None before any
        claude of the team has run."""
        self.config.team(team)
        raw = await self.store.call(tells.latest_init_line, team)
        line = decode_line(raw) if raw is not None else None
        return line.commands() if isinstance(line, SystemLine) else None

    async def submit(
        self,
        to_team: str,
        message: str,
        from_team: str | None,
        timeout_ms: int,
        *,
        parent_pair: str = "",
        listen: bool = False,
        kind: str = "tell",
        max_budget_usd: float | None = None,
    ) -> ActiveTell:
        """Validate and queue a tell on its pair; returns it at once (it runs on).
        Refused before any claude turn: loops, budgets spent, a pair over its rate limit."""
        remote = self.supervisor.remote_teams.get(to_team)
        team = remote.team if remote is not None else self.config.team(to_team)
        self._check_from(from_team)
        if remote is None and (unavailable := team_unavailable(team)):
            raise TeamUnavailableError(unavailable)
        if remote is None and not team.host and (
            problem := root_skip_problem(team.name, team.permissions, env=self.child_env(team))
        ):
            raise ClaudeError(problem)  # refused before it is queued: claude would not start
        message = check_message(message)
        check_wait(timeout_ms)
        check_max_budget(max_budget_usd)
        chain_id, hops = await self._link(parent_pair, from_team, team.name, message)
        await self._check_budgets(team.name, team.daily_usd, chain_id)
        wait_s = self.rate.admit((from_team, team.name), trio.current_time())
        if wait_s is not None:
            raise RateLimitedError(
                f"{from_team or 'external'}->{team.name} sent {self.rate.per_minute} tells in the last minute "
                f"(settings.rateLimit); send this one in {wait_s:.0f} s, or raise settings.rateLimit in "
                "config.yaml and run 'iris reload'"
            )
        machine = TellMachine(
            response_timeout_s=team.response_timeout_ms / 1000,
            caller_timeout_ms=timeout_ms,
            now=trio.current_time(),
        )
        tell = ActiveTell(
            from_team=from_team,
            to_team=team.name,
            message=message,
            machine=machine,
            hub=self.hub,
            kind=kind,  # type: ignore[arg-type]
            chain_id=chain_id,
            hops=hops,
            max_budget_usd=max_budget_usd,
        )
        await self.store.call(tells.insert, tell.info())
        if listen:
            tell.listener = tell.listen()
        try:
            runner = await self.supervisor.runner(from_team, team.name)
            runner.submit(tell)  # right after: the pair cannot end in between
        except IrisError as exc:
            machine.fail(trio.current_time(), exc.message)
            await save_tell(self.store, tell)
            raise
        return tell

    async def _check_budgets(self, to_team: str, team_daily_usd: float | None, chain_id: str) -> None:
        """BudgetError if a budget is already reached (what was spent comes from the ledger)."""
        limits = Budgets(
            daily_usd=self.config.settings.budget.daily_usd,
            team_daily_usd=team_daily_usd,
            chain_usd=self.config.settings.budget.chain_usd if chain_id else None,
        )
        if not limits.any:
            return
        since = day_start(time.time())
        spending = Spending(
            today_all=await self.store.call(ledger.spent_since, since) if limits.daily_usd is not None else 0.0,
            today_team=(
                await self.store.call(ledger.spent_since, since, to_team) if limits.team_daily_usd is not None else 0.0
            ),
            chain=await self.store.call(ledger.chain_spent, chain_id) if limits.chain_usd is not None else None,
        )
        problem = refusal(to_team, spending, limits)
        if problem is not None:
            log.warning("tell refused: budget", extra={"to_team": to_team, "why": problem})
            raise BudgetError(f"not sent: {problem}")

    async def _link(
        self, parent_pair: str, from_team: str | None, to_team: str, message: str
    ) -> tuple[str, int]:
        """Chain id and hop count of a nested tell; refuses loops and chains too long."""
        if not parent_pair:
            return "", 0
        parent = self._current_tell_of(parent_pair)
        if parent is None:
            return "", 0  # the parent's tell already ended: nothing waits on this one
        ancestors = [parent, *self._ancestors(parent)]
        hops = parent.hops + 1
        limit = self.config.settings.hop_limit
        waiting = {t.to_team for t in ancestors} | {t.from_team for t in ancestors if t.from_team}
        problem = ""
        if hops > limit:
            problem = f"this tell would be hop {hops} of a chain of nested tells; the limit is {limit}"
        elif to_team in waiting:
            root = ancestors[-1].from_team or "external"
            path = " -> ".join([root, *[t.to_team for t in reversed(ancestors)]])
            problem = f"loop: {to_team} is already waiting in this chain ({path} -> {to_team})"
        if not problem:
            return parent.chain_id, hops
        refused = ActiveTell(
            from_team=from_team,
            to_team=to_team,
            message=message,
            machine=TellMachine(response_timeout_s=1, caller_timeout_ms=0, now=trio.current_time()),
            chain_id=parent.chain_id,
            hops=hops,
        )
        refused.machine.fail(trio.current_time(), problem)
        refused.note_status()
        await self.store.call(tells.insert, refused.info())
        raise LoopError(f"{problem}; answer from what you know instead of asking {to_team}")

    def _current_tell_of(self, pair_label: str) -> TellLink | None:
        from_name, _, to_name = pair_label.partition("->")
        snapshot = self.supervisor.snapshot((None if from_name in ("", "external") else from_name, to_name))
        return snapshot.current if snapshot is not None else None

    def _ancestors(self, tell: TellLink) -> list[TellLink]:
        """Unfinished tells of the same chain that wait on ``tell`` (its callers)."""
        same_chain = [
            t
            for snapshot in self.supervisor.snapshots()
            if (t := snapshot.current) is not None and t.chain_id == tell.chain_id and t.id != tell.id
        ]
        return [t for t in same_chain if t.hops < tell.hops]

    async def _reply_when_due(self, tell: ActiveTell, send_event: SendEvent | None) -> TellReply:
        try:
            if send_event is None or tell.listener is None:
                await tell.replied.wait()
            else:
                await _forward_until(tell, tell.listener, send_event)
        except BaseException:
            # The caller stopped waiting (it hung up, or its connection broke): nobody
            # will read the answer, which may then become a pending question.
            tell.caller_left = True
            raise
        info = tell.info()
        busy = self.supervisor.waiting_for_slot((tell.from_team, tell.to_team))
        if info.status == "queued" and busy:
            info.error = (
                f"all {busy} claude processes (maxProcesses) are busy; the tell stays "
                f"queued until one is free (see it with 'iris result {info.id}')"
            )
        return TellReply(status=tell.machine.reply_status(), tell=info)

    async def cancel(self, tell_id: str) -> TellReply:
        active = self.supervisor.cancel(tell_id)
        if active is None:
            info = await self._find(tell_id)  # NotFoundError for an unknown id
            return TellReply(status=reply_status(info), tell=info)
        await active.finished.wait()
        return TellReply(status=active.machine.reply_status(), tell=active.info())

    async def tell_many(self, request: TellMany, send_event: SendEvent) -> TellsReply:
        """Fan-out: one tell per team, all at once; each team's outcome is its own (one
        refused or failing target never hides the others' answers)."""
        teams = list(dict.fromkeys(t.strip() for t in request.to_teams if t.strip()))
        if not teams:
            raise InvalidRequestError("name at least one team to tell (e.g. 'alpha,beta')")
        if len(teams) > MAX_FAN_OUT:
            raise InvalidRequestError(f"{len(teams)} teams is too many for one tell; at most {MAX_FAN_OUT}")
        check_message(request.message)
        results: dict[str, FanOutResult] = {}
        client_gone = False

        async def one(team: str) -> None:
            nonlocal client_gone
            try:
                tell = await self.submit(
                    team,
                    request.message,
                    request.from_team,
                    request.timeout_ms,
                    parent_pair=request.parent_pair,
                    max_budget_usd=request.max_budget_usd,
                )
                reply = await self._reply_when_due(tell, None)
                result = FanOutResult(to_team=team, status=reply.status, tell=reply.tell)
            except IrisError as exc:
                result = FanOutResult(to_team=team, status="refused", error_code=exc.code, error=exc.message)
            results[team] = result
            if request.stream and not client_gone:
                try:
                    await send_event(FanOutEvent(result=result))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    client_gone = True  # the others run on; their answers stay readable by id

        async with trio.open_nursery() as nursery:
            for team in teams:
                nursery.start_soon(one, team)
        return TellsReply(results=[results[team] for team in teams])

    async def answer_question(self, request: AnswerQuestion) -> AnswerReply:
        """Send the answer as the next tell of the question's own pair (the conversation
        that asked), and close the question."""
        question = await self.store.call(questions.get, request.question_id)
        if question is None:
            raise NotFoundError(
                f"no question with id {request.question_id!r}; 'iris questions' lists the pending ones"
            )
        if request.as_team:
            caller = None if request.as_team == "external" else request.as_team
            if question.from_team != caller:
                raise InvalidRequestError(
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
            tell = await self.submit(question.to_team, text, question.from_team, request.timeout_ms)
        except IrisError:
            await self.store.call(questions.reopen, question.id)
            raise
        answered = await self.store.call(questions.set_answer_tell, question.id, tell.id)
        assert answered is not None
        if self.questions is not None:
            self.questions.publish(answered)
        reply = await self._reply_when_due(tell, None)
        return AnswerReply(question=answered, status=reply.status, tell=reply.tell)

    async def dismiss_question(self, question_id: str, by: str) -> QuestionInfo:
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
        """A persisted tell: committed to the database before the sender is answered."""
        self.config.team(request.to_team)
        self._check_from(request.from_team)
        message = check_message(request.message)
        if request.max_budget_usd is not None:
            raise InvalidRequestError(
                "a stored tell (persist) cannot carry a max budget yet; send it without persist to give it "
                "one, or rely on settings.budget and the team's budget.dailyUsd"
            )
        if problem := range_problem(Tell, "ttl_days", request.ttl_days):
            raise InvalidRequestError(f"a time to live of {request.ttl_days:g} days (ttl_days) is {problem}")
        created = await self.store.call(
            notifications.create,
            request.from_team,
            request.to_team,
            message,
            time.time(),
            request.ttl_days * 86400,
        )
        self.on_notification()
        return NotificationReply(notification=created)

    async def decide(self, request: Decide) -> ApprovalInfo:
        for snapshot in self.supervisor.snapshots():
            pair = self.supervisor.pairs.get(snapshot.key)
            if pair is not None and request.approval_id in snapshot.pending_approvals:
                return await pair.decide(
                    request.approval_id,
                    allow=request.allow,
                    remember=request.remember,
                    reason=request.reason,
                    by=request.by or "unknown",
                )
        known = await self.store.call(approvals.get, request.approval_id)
        if known is None:
            raise NotFoundError(f"no approval with id {request.approval_id!r}; 'iris approvals' lists the pending ones")
        who = f" by {known.decided_by}" if known.decided_by else ""
        raise InvalidRequestError(f"approval {known.id} is already {known.status}{who}; nothing to decide")

    # --- pairs and sessions ----------------------------------------------------------------

    async def pair(self, from_team: str | None, to_team: str) -> Pair:
        if self.supervisor.remote_teams.get(to_team) is None:
            self.config.team(to_team)  # UnknownTeamError, with the known teams
        self._check_from(from_team)
        return await self.supervisor.pair(from_team, to_team)  # refuses a remote team

    async def reset_session(self, from_team: str | None, to_team: str) -> SessionReply:
        pair = await self.pair(from_team, to_team)
        await pair.reset()
        for info in await self.sessions(to_team):
            if info.from_team == from_team:
                return SessionReply(session=info)
        raise NotFoundError(f"no session for {pair.label}")  # pragma: no cover - reset creates it

    async def watch(self, team: str | None, send_event: SendEvent) -> Reply:
        """Push events until the client disconnects (which ends this request)."""
        if team is not None:
            self.config.team(team)
        await serve_watch(self.hub, team, send_event)

    def _check_from(self, from_team: str | None) -> None:
        if from_team is not None:
            self.config.team(from_team)


def reply_status(info: TellInfo) -> ReplyStatus:
    if info.status in UNFINISHED_TELL_STATUSES:
        return "in_progress"
    return info.status  # type: ignore[return-value]


def check_message(message: str) -> str:
    """The message as given, or InvalidRequestError. NUL characters are refused, not
    dropped: the team would read a text other than the one sent (and claude's input and
    SQLite text do not carry them reliably)."""
    if (nul := message.find("\x00")) >= 0:
        raise InvalidRequestError(
            f"the message holds a NUL character (at position {nul}); it cannot be passed on "
            "as it is: remove it (e.g. tr -d '\\000'), or send binary data as a file"
        )
    if not message.strip():
        raise InvalidRequestError("the message is empty; say what the team should do")
    if len(message) > MAX_MESSAGE_CHARS:
        raise InvalidRequestError(
            f"the message has {len(message)} characters, over the {MAX_MESSAGE_CHARS} limit; "
            "point the team at a file instead"
        )
    return message


def check_max_budget(max_budget_usd: float | None) -> None:
    """A tell's own budget: passed to its claude as --max-budget-usd."""
    if max_budget_usd is not None and not (0 < max_budget_usd <= MAX_TELL_BUDGET_USD):
        raise InvalidRequestError(
            f"max budget {max_budget_usd!r} USD is not a budget; give a positive number of "
            f"dollars up to {MAX_TELL_BUDGET_USD:g} (e.g. 0.5), or leave it out"
        )


def check_wait(timeout_ms: int) -> None:
    if timeout_ms in (-1, 0) or MIN_WAIT_MS <= timeout_ms <= MAX_WAIT_MS:
        return
    raise InvalidRequestError(
        f"timeout {timeout_ms} ms is out of range; {seconds_hint(timeout_ms)}use -1 (return at once), "
        f"0 (wait for the answer) or {MIN_WAIT_MS} to {MAX_WAIT_MS} ms"
    )


def seconds_hint(ms: int) -> str:
    """Seconds typed where milliseconds are wanted (``5`` for 5 s) get a "did you mean"."""
    return f"did you mean {ms * 1000} ({ms} s)? " if 0 < ms < MIN_WAIT_MS and ms * 1000 <= MAX_WAIT_MS else ""


async def _forward_until(
    tell: ActiveTell, listener: trio.MemoryReceiveChannel[Event], send_event: SendEvent
) -> None:
    """Push the tell's events to the client until its caller reply is due."""
    async with trio.open_nursery() as nursery:

        async def forward() -> None:
            try:
                async for event in listener:
                    await send_event(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                tell.caller_left = True  # the client left; the tell runs on, unread

        nursery.start_soon(forward)
        await tell.replied.wait()
        nursery.cancel_scope.cancel()
    while True:  # what arrived just before the reply
        try:
            await send_event(listener.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel, trio.BrokenResourceError):
            break
    listener.close()
