"""Requests to daemon operations: ``HANDLERS``, a table from request type to the service
that serves it (like ``irisd.http.api.ROUTES``), and the caller's policy applied to every
request; no socket code. Tells are the tell service's (``irisd/tell/service.py``:
admission, submit, get, cancel, the end of a tell); pairs and their conversations are
``irisd/pairs.py``'s, what is kept ``irisd/records.py``'s, status ``irisd/status.py``'s,
answering a question ``irisd/questions/answering.py``'s, deciding an approval the
supervisor's. The config is ``irisd/config_holder.py``'s (``core.Services`` reloads it)."""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from irisd import __version__, policy
from irisd.caller import Caller
from irisd.config_holder import ConfigHolder
from irisd.events import EventFilter, SendEvent, no_events, serve_watch
from irisd.pairs import Pairs
from irisd.pool.supervisor import Supervisor
from irisd.questions.answering import Answering
from irisd.records import Records
from irisd.status import Status
from irisd.store import id_prefixes, ledger, unsolicited
from irisd.store.facade import Store
from irisd.tell.admission import parent_tell
from irisd.tell.command import send_command
from irisd.tell.service import TellService
from irisd.tokens import Access
from irisd.whole_ids import unknown, with_whole_ids
from protocol import PROTOCOL_VERSION, messages
from protocol.errors import InvalidRequestError, PermissionDeniedError
from protocol.messages import (
    AnswerQuestion,
    Ask,
    AskReply,
    CancelTell,
    DismissQuestion,
    GetTell,
    HttpInfo,
    HttpInfoReply,
    NotificationReply,
    ReadTranscript,
    ReadUnsolicited,
    Reply,
    Request,
    Sleep,
    Tell,
    TellReply,
    Wake,
    Watch,
    Welcome,
)

if TYPE_CHECKING:
    from irisd.agent.actions import AgentActions
    from irisd.agent.runner import Agent

log = logging.getLogger("irisd.dispatch")

ReloadConfig = Callable[[], Awaitable[list[str]]]


class Dispatcher:
    """Serves requests: ``HANDLERS`` maps each request type to the service that owns it
    (tells: ``TellService``; pairs and conversations: ``Pairs``; what is kept: ``Records``;
    ``Status``; questions: ``Answering``; approvals: ``Supervisor``). Here is only what
    every request shares: the caller's policy (irisd/policy.py decides; this gathers the
    facts) and whole ids for the prefixes a person typed. The config is the holder's
    (``core.Services`` owns it and reloads it)."""

    def __init__(
        self,
        *,
        current: ConfigHolder,
        store: Store,
        supervisor: Supervisor,
        tells: TellService,
        records: Records,
        status: Status,
        pairs: Pairs,
        answering: Answering,
        reload: ReloadConfig,
        agent: Agent | None = None,
        agent_actions: AgentActions | None = None,
        on_notification: Callable[[], None] = lambda: None,
        http: Access | None = None,
    ) -> None:
        self.current = current
        self.store = store
        self.supervisor = supervisor
        self.tells = tells
        self.records = records
        self.status = status
        self.pairs = pairs
        self.answering = answering
        self.reload = reload  # core.Services.reload: read config.yaml again and apply it
        self.agent = agent
        self.agent_actions = agent_actions  # what iris-agent proposes, and the person allows
        self.on_notification = on_notification
        self.http = http
        self.hub = supervisor.hub  # one hub: the pairs publish to it, watchers read it
        self.health = status.health

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent) -> Reply:
        """Serve one request of ``caller`` (decided by its connection: see irisd/caller.py);
        raises IrisError subclasses for the client to see."""
        asked = caller.apply(request)
        request = await with_whole_ids(asked, self._ids_starting_with, name_matches=caller.kind in policy.EVERYONE)
        # A reader of the database finds a tell's end written (held for a next tell's start
        # at most HOLD_END_S); a tell, a watch, a tell's state or lines need not wait (a held
        # tell is found from memory, its lines with it).
        if not isinstance(request, Tell | Watch | GetTell | ReadTranscript):
            await self.supervisor.write_held()
        if caller.proposes(request) and self.agent_actions is not None:  # an approval, unless allowed
            assert isinstance(request, Tell | Wake | Sleep | CancelTell | AnswerQuestion)
            return await self.agent_actions.act(request, lambda r: HANDLERS[type(r)](self, r, send_event))
        if caller.kind in policy.EVERYONE:
            return await HANDLERS[type(request)](self, request, send_event)
        try:
            await self._check_owned(request, caller)
        except PermissionDeniedError:
            if request is not asked:  # a prefix stood for it: the caller is not told it exists
                raise unknown(asked) from None
            raise
        if isinstance(request, Watch):
            wanted = policy.event_filter(caller, lambda: self._chains(caller))
            return await self.watch(request.team, send_event, wanted)
        return policy.visible(await HANDLERS[type(request)](self, request, send_event), caller, self._chains(caller))

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
                policy.check_sees(caller, policy.owned(info), f"tell {info.id}", self._chains(caller))
            case CancelTell(tell_id=tell_id):
                info = await self.tells.find(tell_id)
                policy.check_changes(caller, policy.owned(info), f"tell {info.id}", self._chains(caller))
            case DismissQuestion(question_id="", tell_id=tell_id) if tell_id:  # what a tell asked its waiter
                info = await self.tells.find(tell_id)
                policy.check_changes(caller, policy.owned(info), f"tell {info.id}", self._chains(caller))
            case AnswerQuestion(question_id="", tell_id=tell_id) if tell_id:
                info = await self.tells.find(tell_id)
                policy.check_answers(caller, info.from_team, info.id)
            case DismissQuestion(question_id=question_id):
                question = await self.answering.question(question_id)
                policy.check_changes(caller, policy.owned(question), f"question {question.id}", self._chains(caller))
            case AnswerQuestion(question_id=question_id):
                question = await self.answering.question(question_id)
                policy.check_answers(caller, question.from_team, question.id)
            case ReadUnsolicited(turn_id=turn_id):
                turn = await self.store.call(unsolicited.get, turn_id)
                if turn is not None:
                    policy.check_sees(caller, policy.owned(turn), f"turn {turn.id}", self._chains(caller))

    async def _ids_starting_with(self, kind: str, prefix: str) -> list[str]:
        return await self.store.call(id_prefixes.starting_with, kind, prefix)

    # --- the few requests served here ------------------------------------------------------

    async def perform(self, request: Request) -> Reply:
        """Serve an action of iris-agent the person allowed (nobody streams its events)."""
        return await HANDLERS[type(request)](self, request, no_events)

    async def hello(self) -> Welcome:
        return Welcome(protocol_version=PROTOCOL_VERSION, daemon_version=__version__, pid=os.getpid())

    async def tell(self, request: Tell, send_event: SendEvent) -> TellReply | NotificationReply:
        """A tell (TellService), or with ``persist`` a notification: stored by the tell
        service, then the courier looks for it."""
        if not request.persist:
            return await self.tells.tell(request, send_event)
        created = await self.tells.persist(request)
        self.on_notification()
        return NotificationReply(notification=created)

    async def ask(self, request: Ask) -> AskReply:
        if self.agent is None:
            raise InvalidRequestError("iris-agent is not available in this irisd")
        answer = await self.agent.ask(request.question, new_session=request.new_session)
        if answer.cost_usd:  # budgets count what asking iris-agent costs
            ask_id = "ask-" + secrets.token_hex(8)
            await self.store.call(ledger.record_ask, ask_id, time.time(), answer)
        return answer

    async def http_info(self, request: HttpInfo) -> HttpInfoReply:
        if self.http is None:
            raise InvalidRequestError("this irisd has no HTTP face")
        return self.http.info(request)

    async def watch(self, team: str | None, send_event: SendEvent, wanted: EventFilter | None = None) -> Reply:
        """Push events (those ``wanted`` lets through) until the client disconnects (which
        ends this request)."""
        if team is not None:
            self.current.check_team(team)
        await serve_watch(self.hub, team, send_event, wanted)

    def check_team(self, team: str) -> None:
        """A team of this config, or a remote one (of the mesh): UnknownTeamError otherwise."""
        self.current.check_team(team)


Handler = Callable[[Dispatcher, Any, SendEvent], Awaitable[Reply]]
R = TypeVar("R")


def _on(kind: type[R], handle: Callable[[Dispatcher, R, SendEvent], Awaitable[Reply]]) -> tuple[type[Any], Handler]:
    """One row of ``HANDLERS`` (typed: the handler takes that request type)."""
    return kind, handle


# Every request type and who serves it (a test checks that none is missing).
HANDLERS: dict[type[Any], Handler] = dict(
    [
        _on(messages.Hello, lambda d, r, e: d.hello()),
        _on(messages.Tell, lambda d, r, e: d.tell(r, e)),
        _on(messages.TellMany, lambda d, r, e: d.tells.tell_many(r, e)),
        _on(messages.Command, lambda d, r, e: send_command(r, config=d.current.config, store=d.store, service=d.tells)),
        _on(messages.GetTell, lambda d, r, e: d.tells.get(r.tell_id, r.wait_ms, e if r.stream else None)),
        _on(messages.CancelTell, lambda d, r, e: d.tells.cancel(r.tell_id)),
        _on(messages.ListTeams, lambda d, r, e: d.status.teams()),
        _on(messages.GetStatus, lambda d, r, e: d.status.status()),
        _on(messages.GetHealth, lambda d, r, e: d.status.health_reply()),
        _on(messages.ListSessions, lambda d, r, e: d.pairs.list_sessions(r.to_team, archived=r.archived)),
        _on(messages.ArchiveSession, lambda d, r, e: d.pairs.archive_session(r.from_team, r.to_team, r.thread)),
        _on(messages.RestoreSession, lambda d, r, e: d.pairs.restore_session(r.from_team, r.to_team, r.thread)),
        _on(messages.ResetSession, lambda d, r, e: d.pairs.reset_session(r.from_team, r.to_team, r.thread)),
        _on(messages.GetPair, lambda d, r, e: d.pairs.get(r.from_team, r.to_team, r.thread)),
        _on(messages.Wake, lambda d, r, e: d.pairs.wake(r)),
        _on(messages.Sleep, lambda d, r, e: d.pairs.sleep(r)),
        _on(messages.WakeAll, lambda d, r, e: d.pairs.wake_all(r)),
        _on(messages.ClearCache, lambda d, r, e: d.pairs.clear_cache(r)),
        _on(messages.Report, lambda d, r, e: d.records.report(r)),
        _on(messages.ListTells, lambda d, r, e: d.records.list_tells(r)),
        _on(messages.ReadTranscript, lambda d, r, e: d.records.transcript(r, e)),
        _on(messages.ReadUnsolicited, lambda d, r, e: d.records.unsolicited_transcript(r, e)),
        _on(messages.ListNotifications, lambda d, r, e: d.records.notifications(r)),
        _on(messages.ListApprovals, lambda d, r, e: d.records.approvals(r)),
        _on(messages.ListRules, lambda d, r, e: d.records.rules(r)),
        _on(messages.ForgetRule, lambda d, r, e: d.records.forget_rule(r.rule_id)),
        _on(messages.ListQuestions, lambda d, r, e: d.records.questions(r)),
        _on(messages.Costs, lambda d, r, e: d.records.costs(r)),
        _on(messages.SessionStats, lambda d, r, e: d.records.session_stats(r)),
        _on(messages.AgentStats, lambda d, r, e: d.records.agent_stats(r)),
        _on(messages.Decide, lambda d, r, e: d.agent_actions.decide_or(r, d.supervisor.decide) if d.agent_actions
            else d.supervisor.decide(r)),
        _on(messages.AnswerQuestion, lambda d, r, e: d.answering.answer(r)),
        _on(messages.DismissQuestion, lambda d, r, e: d.answering.dismiss(r)),
        _on(messages.Watch, lambda d, r, e: d.watch(r.team, e)),
        _on(messages.HttpInfo, lambda d, r, e: d.http_info(r)),
        _on(messages.Ask, lambda d, r, e: d.ask(r)),
        _on(messages.Reload, lambda d, r, e: _reload_reply(d)),
    ]
)


async def _reload_reply(dispatcher: Dispatcher) -> messages.ReloadReply:
    return messages.ReloadReply(changes=await dispatcher.reload())
