"""The tell service: the one door to a live tell.

How it works
------------
``submit`` gathers the facts (the pairs' frozen snapshots, what was spent, the rate
window), asks ``admission.admit`` (pure), and either refuses (a refused nested tell is
recorded as failed) or creates the tell (``ActiveTell``), stores it and posts it to its
pair's inbox; from then on the pair's actor drives it, and ``active.save_tell`` is
where it ends, once (saved, waiters woken, then the end hook: pending questions).
The submitter waits for its reply with ``reply``; later readers use ``get`` (counted
on the tell while they wait, so an answer they will read never becomes a pending
question); ``cancel`` asks the pair and waits for the end. The pool is seen only
through ``Pool``: frozen snapshots, a tell's handle, a pair's inbox. A tell a previous
irisd left unfinished has no handle: ``end_previous_run`` ends it in the store.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec
import trio

from iris_common.a2a_tokens import is_agent_sender
from iris_common.config import AGENT_NAME, IrisConfig, Team, team_unavailable
from iris_common.environment import child_environment, root_skip_problem
from iris_common.mesh import is_mesh_sender
from iris_common.money import day_start
from iris_common.paths import IrisPaths
from irisd.budget import RateWindow, Spending
from irisd.events import EventHub, SendEvent, receive_batch, send_events, send_with_reply
from irisd.store import ledger, notifications, tells
from irisd.store.facade import Store
from irisd.tell.active import ActiveTell, OnEnd, end_tell
from irisd.tell.admission import (
    Admit,
    Candidate,
    ChainLink,
    Facts,
    PairFacts,
    PairKey,
    Refuse,
    admit,
    budgets,
    chain_of,
    chain_problem,
    chain_refusal,
    check_message,
    continued,
    parent_tell,
    persist_problem,
    result_wait_problem,
    self_tell_problem,
    stored_chain,
)
from irisd.tell.answer import answer_so_far
from irisd.tell.machine import TellMachine
from irisd.tell.transcript import Line
from protocol.errors import BudgetError, InvalidRequestError, IrisError, LoopError, NotFoundError
from protocol.messages import (
    UNFINISHED_TELL_STATUSES,
    ApprovalInfo,
    ChainRef,
    Event,
    FanOutEvent,
    FanOutResult,
    NotificationInfo,
    ReplyStatus,
    Tell,
    TellInfo,
    TellMany,
    TellPhaseEvent,
    TellReply,
    TellsReply,
    TellState,
)

MAX_FAN_OUT = 32
MAX_CHAINS_EXTENDED = 1024  # chains the person let spend beyond their budget, remembered

TellKind = Literal["tell", "command", "notification"]

log = logging.getLogger("irisd.tell")


_REPORT = "a team's report lists its recent tells ('iris report TEAM', team_report)"
# Ids of other things, given where a tell's is wanted ('iris result' of what 'iris tell --persist' printed).
_WHERE_ELSE = {
    "n-": "it is a stored tell's (--persist): 'iris notifications --all' shows it and the tell that delivered it",
    "q-": "it is a question's: 'iris questions --all' shows it",
    "a-": "it is an approval's: 'iris approvals --all' shows it",
}


class TellQueue(Protocol):
    """A pair as the service uses it: its inbox (``irisd.pool.pair.Pair``)."""

    def submit(self, tell: ActiveTell) -> None:
        """Queue ``tell``; BusyError when the pair's queue is full."""
        ...


class RemoteTeam(Protocol):
    """A team that is not a local claude (an A2A agent...: ``irisd.pool.remote``)."""

    @property
    def team(self) -> Team: ...

    @property
    def kind(self) -> str: ...  # "a2a" or "mesh"

    @property
    def where(self) -> str: ...  # for people: an agent's URL, the home irisd's name


def not_here(team: str, remote: RemoteTeam, why: str) -> InvalidRequestError:
    """The refusal, for a remote team, of what only a team of this irisd has (a claude
    process, a conversation kept here): where the team is, and ``why``."""
    return InvalidRequestError(f"{team} is a remote team ({remote.kind}: {remote.where}): {why}")


class RemoteTeams(Protocol):
    """The registry of remote teams (``irisd.pool.remote.RemoteTeams``)."""

    def get(self, team: str) -> RemoteTeam | None: ...

    def team(self, config: IrisConfig, name: str) -> Team: ...


class Pool(Protocol):
    """The pool of pairs as the service sees it (``irisd.pool.supervisor.Supervisor``)."""

    async def runner(self, from_team: str | None, to_team: str, thread: str = "") -> TellQueue:
        """Whoever runs the thread's tells (its claude's actor, or a remote team's pair)."""
        ...

    def snapshots(self) -> Sequence[PairFacts]: ...
    def find_tell(self, tell_id: str) -> ActiveTell | None: ...
    def cancel(self, tell_id: str) -> ActiveTell | None:
        """Post a cancel to the pair that holds the tell; None if none does."""
        ...

    def waiting_for_slot(self, key: PairKey) -> int: ...

    async def write_held(self, tell_id: str | None = None) -> None:
        """Have the pairs write what they hold (a tell's end held for a next tell's start);
        with ``tell_id``, the pair that holds that tell's end."""
        ...

    async def ask_budget(self, tell_id: str, question: str, details: dict[str, Any]) -> BudgetAsked | None:
        """Ask the person whether the chain of the running tell ``tell_id`` may go on beyond
        its budget (None: no local pair runs it)."""
        ...


class BudgetAsked(Protocol):
    """The approval desk's record of a budget question (``irisd.pool.approvals.Pending``)."""

    @property
    def info(self) -> ApprovalInfo: ...
    @property
    def done(self) -> trio.Event | None: ...


def check_sender(config: IrisConfig, from_team: str | None, *, sending: bool = True) -> None:
    """Refuse a sender that is no team here. iris-agent, an outside A2A agent ("a2a:NAME",
    its token named it) and a team of another irisd of the mesh ("team@irisd") are senders too; the
    latter only on a mesh when ``sending`` (a filter may name one from a past mesh)."""
    if from_team is None or is_agent_sender(from_team) or from_team == AGENT_NAME:
        return  # (iris-agent's tells: irisd/agent/actions.py, with the person's consent)
    if not is_mesh_sender(from_team):
        config.team(from_team)
    elif sending and config.mesh is None:
        raise InvalidRequestError(
            f"sender {from_team!r} names a team of another irisd (team@irisd), but this irisd is on no mesh "
            "(settings.mesh); send as one of its teams, or leave the sender out"
        )


class TellService:
    def __init__(
        self,
        *,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        pool: Pool,
        remote_teams: RemoteTeams,
        hub: EventHub | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        self.config = config
        self.paths = paths
        self.store = store
        self.pool = pool
        self.remote_teams = remote_teams
        self.hub = hub
        self.on_end = on_end  # given to every tell: called once when it ends
        self.rate = RateWindow(config.settings.rate_limit)
        # What the person let each chain spend beyond settings.budget.chainUsd (askToExceed);
        # in memory (after a restart the person is asked again), the oldest chains forgotten.
        self.chain_extra: OrderedDict[str, float] = OrderedDict()

    def reconfigure(self, config: IrisConfig) -> None:
        """A reloaded config.yaml: read by the next tells (a changed rate limit starts afresh)."""
        self.config = config
        if self.rate.per_minute != config.settings.rate_limit:
            self.rate = RateWindow(config.settings.rate_limit)

    # --- submit ------------------------------------------------------------------------

    async def submit(
        self,
        to_team: str,
        message: str,
        from_team: str | None,
        timeout_ms: int,
        *,
        parent_pair: str = "",
        listen: bool = False,
        kind: TellKind = "tell",
        max_budget_usd: float | None = None,
        across: ChainRef | None = None,
        thread: str = "",
    ) -> ActiveTell:
        """Admit and queue a tell on its pair's ``thread`` (its own conversation; "" the
        pair's default one); returns it at once (it runs on). A thread is its pair's for
        every check below (the same budgets, rate and chain). Refused
        before any claude turn (an IrisError saying why): an unknown or unavailable team,
        a request out of range, a loop or a chain too long, a budget spent, a pair over
        its rate limit, a full queue."""
        remote = self.remote_teams.get(to_team)
        team = self.remote_teams.team(self.config, to_team)
        check_sender(self.config, from_team)
        candidate = Candidate(from_team, team.name, message, timeout_ms, max_budget_usd, parent_pair, across, kind)
        pairs = self.pool.snapshots()
        parent = parent_tell(parent_pair, pairs)
        chain_id = chain_of(parent, across)[0]

        async def decide() -> Admit | Refuse:
            now = trio.current_time()
            return admit(
                candidate,
                Facts(
                    settings=self.config.settings,
                    pairs=pairs,
                    spending=await self._spending(team, chain_id),
                    rate=self.rate,
                    now=now,
                    team_daily_usd=team.daily_usd,
                    unavailable=team_unavailable(team) if remote is None else "",
                    launch_problem=self._launch_problem(team) if remote is None else "",
                    chain_extra_usd=self.chain_extra.get(chain_id, 0.0),
                ),
            )

        decision = await decide()
        if isinstance(decision, Refuse) and decision.exceed_usd is not None and parent is not None:
            if await self._may_exceed(parent.id, chain_id, decision, to_team=team.name):
                decision = await decide()  # with the chain's budget grown
            else:
                decision = msgspec.structs.replace(
                    decision, message=f"{decision.message} (you were asked to let it go on and did not)"
                )
        now = trio.current_time()
        if isinstance(decision, Refuse):
            await self._refused(candidate, decision, parent)
            raise decision.exception()
        self.rate.record((from_team, team.name), now)
        tell = ActiveTell(
            from_team=from_team,
            to_team=team.name,
            message=message,
            machine=TellMachine(
                response_timeout_s=team.response_timeout_ms / 1000, caller_timeout_ms=timeout_ms, now=now
            ),
            hub=self.hub,
            kind=kind,
            chain_id=decision.chain_id,
            hops=decision.hops,
            path=decision.path,
            max_budget_usd=max_budget_usd,
            on_end=self.on_end,
            parent=self.pool.find_tell(parent.id) if parent is not None else None,
            thread=thread,
        )
        await self.store.call(tells.insert, tell.info())
        if listen:
            tell.listen_as_caller()
        try:
            runner = await self.pool.runner(from_team, team.name, thread)
            runner.submit(tell)  # right after: the pair cannot end in between
        except IrisError as exc:
            await end_tell(self.store, tell, exc.message)
            raise
        return tell

    async def _may_exceed(self, tell_id: str, chain_id: str, refused: Refuse, *, to_team: str) -> bool:
        """settings.budget.askToExceed: the chain reached its budget as the claude of tell
        ``tell_id`` sends its next tell; ask the person (an approval of kind ``budget`` on that
        tell, shown up its chain, so the session that asked sees it as a form) and wait. Yes:
        the chain may spend ``refused.exceed_usd`` more."""
        more = refused.exceed_usd
        assert more is not None
        details = {"chain_id": chain_id, "more_usd": more, "next_team": to_team}
        asked = await self.pool.ask_budget(tell_id, refused.question, details)
        if asked is None or asked.done is None:
            return False
        await asked.done.wait()
        if asked.info.status != "allowed":
            return False
        self.chain_extra[chain_id] = self.chain_extra.get(chain_id, 0.0) + more
        self.chain_extra.move_to_end(chain_id)
        while len(self.chain_extra) > MAX_CHAINS_EXTENDED:
            self.chain_extra.popitem(last=False)
        log.info("the person let a chain spend beyond its budget", extra={"chain_id": chain_id, "more_usd": more})
        return True

    async def _spending(self, team: Team, chain_id: str) -> Spending:
        """What was spent, as far as a budget is set (read from the ledger)."""
        limits = budgets(self.config.settings, team.daily_usd, chain_id)
        if not limits.any:
            return Spending()
        since = day_start(time.time())
        return Spending(
            today_all=await self.store.call(ledger.spent_since, since) if limits.daily_usd is not None else 0.0,
            today_team=(
                await self.store.call(ledger.spent_since, since, team.name)
                if limits.team_daily_usd is not None
                else 0.0
            ),
            chain=await self.store.call(ledger.chain_spent, chain_id) if limits.chain_usd is not None else None,
        )

    def _launch_problem(self, team: Team) -> str:
        """Why a local claude of ``team`` would refuse to start (a remote one is checked there).
        Only ``permissions: skip`` can (``root_skip_problem``): no other team's environment
        is built for it on every tell."""
        if team.host or team.permissions != "skip":
            return ""
        env = child_environment(
            claude_config_dir=self.paths.claude_config_dir, daemon_env=self.config.daemon_env, team_env=team.env
        )
        return root_skip_problem(team.name, team.permissions, env=env) or ""

    async def _refused(self, candidate: Candidate, refusal: Refuse, parent: ChainLink | None) -> None:
        """Record a refused tell that must be seen in its chain's history (a loop, a hop
        too many); log a budget's refusal."""
        if issubclass(refusal.error, BudgetError):
            log.warning("tell refused: budget", extra={"to_team": candidate.to_team, "why": refusal.message})
        if not refusal.recorded:
            return
        chain_id, hops = chain_of(parent, candidate.across)
        refused = ActiveTell(
            from_team=candidate.from_team,
            to_team=candidate.to_team,
            message=candidate.message,
            machine=TellMachine(response_timeout_s=1, caller_timeout_ms=0, now=trio.current_time()),
            kind=candidate.kind,
            chain_id=chain_id,
            hops=hops,
        )
        await self.store.call(tells.insert, refused.info())
        await end_tell(self.store, refused, refusal.recorded)

    async def persist(self, request: Tell) -> NotificationInfo:
        """A persisted tell (a notification): admitted (``persist_problem``; not to its own
        sender; its chain's hop limit) and committed to the database with its chain before
        the sender is answered; the courier delivers it later through ``submit``, which
        checks the chain again (``across``). A chain's refusal is recorded as a failed tell."""
        team = self.remote_teams.team(self.config, request.to_team)  # a remote team is delivered to through its pair
        if request.from_team is not None:
            self.config.team(request.from_team)
        if problem := persist_problem(request):
            raise InvalidRequestError(problem)
        if problem := self_tell_problem(request.from_team, team.name):
            raise LoopError(problem)
        parent = parent_tell(request.parent_pair, self.pool.snapshots())
        chain = stored_chain(continued(parent, request.across), request.from_team)
        if chain is not None and (problem := chain_problem(chain, team.name, self.config.settings.hop_limit)):
            candidate = Candidate(request.from_team, team.name, request.message, 0, across=chain, kind="notification")
            refusal = chain_refusal(problem, team.name)
            await self._refused(candidate, refusal, None)
            raise refusal.exception()
        return await self.store.call(
            notifications.create,
            request.from_team,
            team.name,
            request.message,
            time.time(),
            request.ttl_days * 86400,
            chain,
        )

    # --- the caller's reply ----------------------------------------------------------------

    async def tell(self, request: Tell, send_event: SendEvent) -> TellReply:
        """A tell, answered when its caller's wait says (pushing its events if it streams)."""
        tell = await self.submit(
            request.to_team,
            request.message,
            request.from_team,
            request.timeout_ms,
            parent_pair=request.parent_pair,
            listen=request.stream,
            max_budget_usd=request.max_budget_usd,
            across=request.across,
            thread=request.thread,
        )
        if request.announce and not request.stream:
            info = tell.info()
            try:
                await send_event(TellState(tell_id=info.id, status=info.status, from_team=info.from_team,
                                           to_team=info.to_team))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                tell.caller_leaves()  # gone already: the tell runs on, readable by id
                raise
        return await self.reply(tell, send_event if request.stream else None)

    async def reply(self, tell: ActiveTell, send_event: SendEvent | None) -> TellReply:
        """Wait until the submitter's reply is due (the end, or its wait is up), pushing
        the tell's events to ``send_event`` meanwhile if it listens. Cancelled (the
        caller hung up): the tell runs on, and its caller counts as gone."""
        try:
            if send_event is None or tell.listener is None:
                await tell.replied.wait()
            else:
                await _forward_until(tell, tell.listener, send_event)
        except BaseException:
            tell.caller_leaves()  # nobody reads the answer: it may become a pending question
            raise
        info = tell.info()
        busy = self.pool.waiting_for_slot((tell.from_team, tell.to_team, tell.thread))
        if info.status == "queued" and busy:
            info.error = (
                f"all {busy} claude processes (maxProcesses) are busy; the tell stays "
                f"queued until one is free (see it with 'iris result {info.id}')"
            )
        return TellReply(status=tell.machine.reply_status(), tell=info)

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

        async def waits(event: Event) -> None:
            """While a target waits: its state and phase (its text comes whole, in its FanOutEvent)."""
            nonlocal client_gone
            if client_gone or not isinstance(event, TellState | TellPhaseEvent):
                return
            try:
                await send_event(event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                client_gone = True  # the others run on; their answers stay readable by id

        async def one(team: str) -> None:
            nonlocal client_gone
            try:
                tell = await self.submit(
                    team,
                    request.message,
                    request.from_team,
                    request.timeout_ms,
                    parent_pair=request.parent_pair,
                    listen=request.stream,
                    max_budget_usd=request.max_budget_usd,
                    thread=request.thread,
                )
                reply = await self.reply(tell, waits if request.stream else None)
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

    # --- get, cancel -------------------------------------------------------------------------

    async def get(self, tell_id: str, wait_ms: int = 0, send_event: SendEvent | None = None) -> TellReply:
        """A tell's status and answer; with ``wait_ms``, after waiting up to that long for
        its end (as a reader of its answer), pushing its events to ``send_event`` meanwhile
        if given (its current phase first)."""
        if problem := result_wait_problem(wait_ms):
            raise InvalidRequestError(problem)
        if wait_ms and (active := self.pool.find_tell(tell_id)) is not None:
            if send_event is None:
                await self._read_end(active, wait_ms / 1000)
            else:
                await _follow(active, wait_ms / 1000, send_event)
        info = await self.find(tell_id)
        return TellReply(status=reply_status(info), tell=info)

    def end_awaited(self, tell_id: str) -> None:
        """Somebody will wait for the end of tell ``tell_id`` to be written once it is
        answered (``end_written``): it is written at once, as the answer leaves, not held
        for its pair's next tell and written when asked."""
        active = self.pool.find_tell(tell_id)
        if active is not None:
            active.end_awaited = True

    async def end_written(self, tell_id: str) -> None:
        """Until the end of tell ``tell_id`` is written (at once if it is not running here),
        as a reader of its answer: for one that acts on the answer where this irisd cannot
        take it back (a mesh home sends the final result then)."""
        active = self.pool.find_tell(tell_id)
        if active is not None:
            await self._read_end(active, math.inf)

    async def _read_end(self, active: ActiveTell, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the end of ``active`` to be written, as a reader of
        its answer. A reader's tell is not held for its pair's next tell (``waited_for``);
        one held before the reader came is written now (its pair's, no other). (No yield between the two unless
        something was held: the pair cannot start holding it unseen in between.)"""
        await self.pool.write_held(active.id)
        await active.wait_result(timeout_s)

    async def cancel(self, tell_id: str) -> TellReply:
        """Cancel a queued or running tell and wait for its end; a tell that already
        ended is answered as it is."""
        active = self.pool.cancel(tell_id)
        if active is None:
            info = await self.find(tell_id)  # NotFoundError for an unknown id
            return TellReply(status=reply_status(info), tell=info)
        await self._read_end(active, math.inf)
        info = active.info()  # it may have ended otherwise as the cancel came
        return TellReply(status=active.machine.reply_status(), tell=info, cancelled=info.status == "interrupted")

    async def find(self, tell_id: str) -> TellInfo:
        """A tell by id: live if it runs, else as stored (NotFoundError if unknown)."""
        active = self.pool.find_tell(tell_id)
        info = active.info() if active else await self.store.call(tells.get, tell_id)
        if info is None:
            raise NotFoundError(f"no tell with id {tell_id!r}; {_WHERE_ELSE.get(tell_id[:2], _REPORT)}")
        return info

    def unwritten(self, tell_id: str) -> list[Line]:
        """The lines of a running tell not written yet (it writes them with its state,
        ``irisd/tell/transcript.py``), for a reader to add after those the database holds."""
        active = self.pool.find_tell(tell_id)
        return active.transcript.unwritten() if active is not None else []

    def live(self, info: TellInfo) -> TellInfo:
        """A stored tell, with the live text if it is still running."""
        active = self.pool.find_tell(info.id)
        return active.info() if active else info


async def end_previous_run(store: Store) -> int:
    """At start-up, before any tell: the tells a previous irisd left unfinished have no
    handle any more; they end ``interrupted`` in the store, each keeping the answer its
    stored lines hold. Returns how many."""
    return await store.call(tells.interrupt_unfinished, time.time(), answer_so_far)


def reply_status(info: TellInfo) -> ReplyStatus:
    if info.status in UNFINISHED_TELL_STATUSES:
        return "in_progress"
    return info.status  # type: ignore[return-value]


async def _follow(tell: ActiveTell, timeout_s: float, send_event: SendEvent) -> None:
    """Wait up to ``timeout_s`` for the end of a tell someone else submitted, pushing its
    events meanwhile, its current phase first (a caller resuming its wait sees at once
    that the tell waits for an approval), what waits at once in one write where the face
    can. A client that left just stops the pushing."""
    with tell.listen() as listener:
        if not tell.machine.is_final:
            await send_event(TellPhaseEvent(tell_id=tell.id, phase=tell.phase))
        async with trio.open_nursery() as nursery:

            async def forward() -> None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    ended = False
                    while not ended:
                        batch, ended = await receive_batch(listener)
                        await send_events(send_event, batch)

            nursery.start_soon(forward)
            await tell.wait_result(timeout_s)
            nursery.cancel_scope.cancel()


async def _forward_until(tell: ActiveTell, listener: trio.MemoryReceiveChannel[Event], send_event: SendEvent) -> None:
    """Push the tell's events to the client until its caller reply is due, when its
    listener ends (``ActiveTell.reply_due``). The events waiting when the forwarder wakes
    (published in one step of the pair: a state and a phase, a text and the end) go out
    together, in one write where the face can; the last ones go in the reply's write. A
    client that left raises trio.BrokenResourceError (the tell runs on, unread)."""
    with listener:
        while True:
            batch, ended = await receive_batch(listener)
            if not ended:
                await send_events(send_event, batch)
            elif tell.replied.is_set() or tell.end_announced:  # the reply follows at once
                await send_with_reply(send_event, batch)
                break
            else:  # dropped: it read too slowly; its reply says the rest
                await send_events(send_event, batch)
                break
    await tell.replied.wait()
