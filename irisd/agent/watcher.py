"""iris-agent's watcher, the trio side: question events in, one look per due question.

The decisions are irisd/agent/watch.py's. ``run`` reads the pending questions at start and
then every ``QuestionEvent`` of the hub; each pending one is due ``answerWithin`` after it
was filed; when one comes due, ``look`` asks iris-agent (one turn, in the pair's own
session), stores the turn and its verdict, and acts on it: ``none`` dismisses the question
(by iris-agent, with the reason), ``team`` with a suggestion files an approval for the
person to send it (irisd/agent/actions.py), ``person`` leaves it for the person. Its cost
goes to the ledger under iris-agent. Looks run one at a time, in this object's nursery.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

import msgspec
import trio

from iris_common.config import IrisConfig
from irisd.agent.actions import AgentActions
from irisd.agent.watch import Due, parse_verdict, prompt_for, skip_reason
from irisd.events import EventHub
from irisd.store import agent, ledger, questions
from irisd.store.facade import Store
from protocol.errors import IrisError
from protocol.messages import AnswerQuestion, ApprovalReply, AskReply, QuestionEvent, QuestionInfo

log = logging.getLogger("irisd.agent.watch")

Look = Callable[[str, str | None], Awaitable[AskReply]]  # iris-agent's turn: prompt, session -> reply
Dismiss = Callable[[str, str], Awaitable[QuestionInfo]]  # question id, by -> the closed question
MAX_SLEEP_S = 3600.0


def local_midnight(now: float) -> float:
    return datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


class Watcher:
    def __init__(
        self,
        *,
        config: Callable[[], IrisConfig],
        store: Store,
        hub: EventHub,
        look: Look,
        actions: AgentActions,
        dismiss: Dismiss,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self.hub = hub
        self._look = look
        self.actions = actions
        self.dismiss = dismiss
        self.clock = clock  # the wall clock (questions' times are on it)
        self.due = Due()
        self._changed = trio.Event()
        self.looks = 0  # turns taken (statistics)

    def watching(self) -> bool:
        return self.config().settings.agent.watch

    def offer(self, question: QuestionInfo) -> None:
        """A question filed, answered or closed: due for a look if pending and watched."""
        if question.status != "pending" or question.agent is not None:  # closed, or looked at already
            self.due.drop(question.id)
        elif self.watching():
            within = self.config().settings.questions.answer_within / 1000
            left = max(question.created_at + within - self.clock(), 0.0)
            self.due.add(question.id, trio.current_time() + left)
        self._changed.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch until cancelled (a look under way stops with its claude)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._timer)
            while not self.hub.closed:
                with self.hub.subscribe_kinds(QuestionEvent) as events:  # before reading the store: none missed
                    try:
                        for question in await self.store.call(questions.listing, None, False):
                            self.offer(question)
                    except IrisError as exc:  # the database refuses: the questions filed from now on are watched
                        log.warning("iris-agent could not read the pending questions", extra={"error": exc.message})
                    task_status.started()
                    task_status = trio.TASK_STATUS_IGNORED
                    while batch := await events.wait_batch():
                        for event in batch:
                            if isinstance(event, QuestionEvent):
                                self.offer(event.question)
                await trio.sleep(1.0)  # dropped for falling behind: subscribe again, read the store again
            nursery.cancel_scope.cancel()  # the hub closed: irisd is stopping

    async def _timer(self) -> None:
        while True:
            self._changed = trio.Event()
            for question_id in self.due.pop_due(trio.current_time()):
                try:
                    await self.look(question_id)
                except IrisError as exc:  # the database refuses writes (or claude failed): looked at once only
                    log.warning("iris-agent could not look at a question", extra={"question": question_id,
                                                                                   "error": exc.message})
            deadline = self.due.next_deadline()
            with trio.move_on_at(deadline if deadline is not None else trio.current_time() + MAX_SLEEP_S):
                await self._changed.wait()

    async def look(self, question_id: str) -> QuestionInfo | None:
        """iris-agent's one turn on a due question, unless ``skip_reason`` says not; the
        question as it is afterwards (None if it did not look)."""
        settings = self.config().settings.agent
        question = await self.store.call(questions.get, question_id)
        looked = await self.store.call(agent.looked_at, question_id)
        spent = await self.store.call(agent.spent_since, local_midnight(self.clock()))
        why = skip_reason(question, watch=settings.watch, looked=looked, spent_usd=spent, budget_usd=settings.daily_usd)
        if why is not None or question is None:
            log.info("iris-agent does not look at a question", extra={"question": question_id, "why": why})
            return None
        session_id = await self.store.call(agent.session_of, question.from_team, question.to_team)
        shown = prompt_for(question)
        try:
            reply = await self._look(shown, session_id)
        except IrisError as exc:
            log.warning("iris-agent could not look at a question", extra={"question": question_id, "why": exc.message})
            return None
        self.looks += 1
        now = self.clock()
        verdict = parse_verdict(reply.text, at=now, cost_usd=reply.cost_usd)
        await self.store.call(
            agent.record_turn, question, session_id=reply.session_id, now=now, shown=shown, said=reply.text,
            verdict=verdict,
        )
        if reply.cost_usd:  # budgets count it, as an ask
            await self.store.call(ledger.record_ask, "watch-" + secrets.token_hex(8), now, reply)
        log.info("iris-agent classified a question", extra={
            "question": question_id, "classification": verdict.classification if verdict else "",
            "confidence": verdict.confidence if verdict else None, "cost_usd": reply.cost_usd,
        })
        if verdict is None:
            return await self.store.call(questions.get, question_id)
        if verdict.classification == "none":
            return await self._dismissed(question, verdict.reason)
        if verdict.classification == "team" and verdict.suggestion:
            proposal = AnswerQuestion(question_id=question.id, text=verdict.suggestion, by="iris-agent")
            try:
                filed = await self.actions.act(proposal)
            except IrisError as exc:
                log.warning("iris-agent's suggestion was refused", extra={"question": question_id, "why": exc.message})
            else:
                if isinstance(filed, ApprovalReply):
                    verdict = msgspec.structs.replace(verdict, approval_id=filed.approval.id)
                    await self.store.call(agent.set_verdict, question.id, verdict)
        shown_question = await self.store.call(questions.get, question_id)
        if shown_question is not None:
            self.hub.publish(QuestionEvent(question=shown_question), shown_question.from_team, shown_question.to_team)
        return shown_question

    async def _dismissed(self, question: QuestionInfo, reason: str) -> QuestionInfo | None:
        try:
            return await self.dismiss(question.id, f"iris-agent (not a question: {reason or 'no reason given'})")
        except IrisError:  # answered or dismissed meanwhile: nothing to do
            return await self.store.call(questions.get, question.id)
