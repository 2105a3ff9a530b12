"""An A2A agent as a team: one tell is one A2A task (a ``RemoteExecutor``).

For each tell: fetch and check the agent's card; send the message (streaming when the
card says so, else SendMessage and GetTask polling) in the pair's context, or as the
reply to the task the agent left waiting for input; report the task's states and text
to the tell (``TaskFollower`` decides what they mean); keep the context for the pair's
next tell. Cancelling the tell sends CancelTask, shielded and bounded.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Mapping

import httpx2
import trio

from iris_common.config import Team, expand_headers
from irisd.a2a.card import CardFacts, card_url
from irisd.a2a.client import CONNECT_TIMEOUT_S, AgentClient, AgentRpcError
from irisd.a2a.message import outbound_request
from irisd.a2a.task import Ending, TaskFollower, next_poll_delay
from irisd.pool.remote import RemoteTell, TellReport
from irisd.store import a2a_contexts
from irisd.store.a2a_contexts import A2AContext
from irisd.store.facade import Store
from protocol import a2a
from protocol.errors import A2AAgentError

log = logging.getLogger("irisd.a2a")

CANCEL_GRACE_S = 5.0  # CancelTask, on the way out of a cancelled tell
CARD_TTL_S = 300.0  # a card is fetched again after this long, or after a tell to the agent failed
# The agent no longer has the task it asked input for (it restarted, or the task ended):
# the reply goes out as a new message of the same context instead.
STALE_TASK_CODES = frozenset({a2a.TASK_NOT_FOUND, a2a.INVALID_PARAMS, a2a.UNSUPPORTED_OPERATION})


class A2AExecutor:
    """Runs the tells of one team that is an A2A agent."""

    def __init__(
        self,
        team: Team,
        *,
        store: Store,
        environ: Mapping[str, str],
        transport: httpx2.AsyncBaseTransport | None = None,  # tests: an agent in process
    ) -> None:
        self._team = team
        self._transport = transport
        self.store = store
        self.environ = dict(environ)  # for the ${VAR}s of its headers
        self.card_url = card_url(team.a2a)
        # All three cost more than a tell to a fast agent (a TLS context 70 ms, the card a
        # round trip, a client and its connection about a millisecond of CPU), so they are
        # kept: the context and the client (its connections kept alive) for the executor's
        # life, the card a while.
        self._tls: ssl.SSLContext | None = None
        self._http: httpx2.AsyncClient | None = None
        self._card: tuple[CardFacts, float] | None = None
        self.unreachable = ""  # why the last tell could not reach the agent ("" once one did): the health monitor's

    @property
    def team(self) -> Team:
        return self._team

    @property
    def kind(self) -> str:
        return "a2a"

    @property
    def where(self) -> str:
        return self._team.a2a

    async def run(self, tell: RemoteTell, report: TellReport) -> None:
        """Carry ``tell`` to the agent until the task ends; A2AAgentError (or ConfigError for
        a header whose variable is unset) fails the tell with the fix."""
        headers = expand_headers(self._team, self.environ)
        http = await self._client()
        client = AgentClient(http, team=self._team.name, card_url=self.card_url, headers=headers)
        try:
            await self._run(client, tell, report)
        except A2AAgentError as exc:
            self._card = None  # the agent may have changed: read its card again next time
            if isinstance(exc.__context__, httpx2.TransportError):  # no connection, no answer in time
                self.unreachable = exc.message  # (the client's pool drops a broken connection itself)
            raise
        self.unreachable = ""

    async def _client(self) -> httpx2.AsyncClient:
        """The executor's HTTP client, made at its first tell (tells at once share it)."""
        if self._http is None:
            if self._tls is None and self._transport is None:
                self._tls = await trio.to_thread.run_sync(ssl.create_default_context)
            if self._http is None:  # another tell may have made it meanwhile
                verify: ssl.SSLContext | bool = self._tls or True
                self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(CONNECT_TIMEOUT_S), follow_redirects=True,
                                                verify=verify, transport=self._transport)
        return self._http

    async def _card_of(self, client: AgentClient) -> CardFacts:
        now = trio.current_time()
        if self._card is None or now - self._card[1] > CARD_TTL_S:
            self._card = (await client.fetch_card(), now)
        return self._card[0]

    async def _run(self, client: AgentClient, tell: RemoteTell, report: TellReport) -> None:
        """One tell: the card, the pair's context, the exchange, and its wind-up."""
        card = await self._card_of(client)
        saved = await self.store.call(a2a_contexts.get, tell.from_team, self._team.name, self._team.a2a)
        follower = TaskFollower(client.agent)
        try:
            try:
                ending = await self._exchange(client, card, tell, saved, follower, report, tell.id)
            except AgentRpcError as exc:
                if not saved.open_task or follower.task_id or exc.rpc_code not in STALE_TASK_CODES:
                    raise
                log.info("the task that asked for input is gone; asking anew in its context",
                         extra={"team": self._team.name, "task": saved.open_task, "error": exc.message})
                saved = A2AContext(context_id=saved.context_id)
                ending = await self._exchange(client, card, tell, saved, follower, report, tell.id + "-1")
        finally:
            with trio.CancelScope(shield=True):
                await self._wind_up(client, card, tell, saved, follower)
        # A2A carries no cost: what Iris paid for the tell is nothing, and the ledger counts it so.
        await report.finished(ending.status, ending.text, ending.error, cost_usd=0.0)

    async def _exchange(
        self,
        client: AgentClient,
        card: CardFacts,
        tell: RemoteTell,
        saved: A2AContext,
        follower: TaskFollower,
        report: TellReport,
        message_id: str,
    ) -> Ending:
        params = outbound_request(
            tell_id=tell.id, message_id=message_id, text=tell.message, from_team=tell.from_team,
            to_team=tell.to_team, chain_id=tell.chain_id, hops=tell.hops, path=tell.path, context_id=saved.context_id,
            open_task=saved.open_task, tenant=card.tenant, streaming=card.streaming,
        )
        silence = self._team.silence_ms
        progress = _Progress(report, card, silence_s=silence / 1000 if silence is not None else None)
        if card.streaming:
            async def on_event(event: a2a.StreamResponse) -> bool:
                follower.stream(event)
                await progress.update(follower, heard=True)
                return follower.ending is not None

            await client.stream_message(card, params, on_event)
            if follower.ending is None and not follower.task_id:
                raise A2AAgentError(f"{client.agent} closed its stream before naming a task or answering")
        else:
            follower.send_result(await client.send_message(card, params))
            await progress.update(follower)
        # Polling: the card does not stream, or the stream closed before the task ended.
        delay: float | None = None
        changed = True
        while (ending := follower.ending) is None:
            delay = next_poll_delay(delay, changed=changed)
            await trio.sleep(delay)
            before = (follower.state, follower.text)
            follower.task(await client.get_task(card, follower.task_id))
            changed = (follower.state, follower.text) != before
            await progress.update(follower, heard=changed)
        return ending

    async def _wind_up(
        self, client: AgentClient, card: CardFacts, tell: RemoteTell, saved: A2AContext, follower: TaskFollower
    ) -> None:
        """Whatever ended the tell: an unfinished task is cancelled at the agent, and the
        pair's context (and a task waiting for input) is kept for its next tell."""
        ending = follower.ending
        if follower.task_id and ending is None:
            with trio.move_on_after(CANCEL_GRACE_S) as waited:
                try:
                    await client.cancel_task(card, follower.task_id)
                    log.info("cancelled the task at the agent", extra={"team": self._team.name, "tell": tell.id})
                except A2AAgentError as exc:
                    log.warning("could not cancel the task at the agent",
                                extra={"team": self._team.name, "tell": tell.id, "error": exc.message})
            if waited.cancelled_caught:
                log.warning("the agent did not answer CancelTask in time", extra={"team": self._team.name})
        context = A2AContext(
            context_id=follower.context_id or saved.context_id,
            open_task=ending.open_task if ending is not None else "",
        )
        if context != saved:
            await self.store.call(
                a2a_contexts.put, tell.from_team, self._team.name, self._team.a2a, context, time.time()
            )


class _Progress:
    """What the tell has been told so far, so each change is reported once."""

    def __init__(self, report: TellReport, card: CardFacts, *, silence_s: float | None) -> None:
        self.report = report
        self.card = card
        self.silence_s = silence_s
        self._started = False
        self._text = ""
        self._state: a2a.TaskState | None = None

    async def update(self, follower: TaskFollower, *, heard: bool = True) -> None:
        """Report what changed; ``heard``: the agent said something (an event, a change),
        which restarts the tell's silence limit (the team's responseTimeout, if given)."""
        if follower.task_id:
            await self.report.accepted()  # the agent holds a task for it (once is enough)
        if follower.state != self._state:
            self._state = follower.state
            if follower.state == a2a.TaskState.SUBMITTED:
                self.report.phase(f"queued at {self.card.name}", queued=True)
            elif follower.started and follower.ending is None:
                self.report.phase(f"{self.card.name} is working on it")
        if follower.ending is not None:
            return  # reported whole by finished()
        if follower.started and not self._started:
            self._started = True
            await self.report.started(silence_s=self.silence_s)
        elif self._started and (follower.text != self._text or (heard and self.silence_s is not None)):
            self._text = follower.text
            await self.report.text(self._text)
