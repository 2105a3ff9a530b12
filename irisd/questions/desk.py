"""The question desk: turns answers nobody read into pending questions, and expires them.

``on_tell_end`` is each tell's end hook, called at the one place a tell ends
(``irisd.tell.active.save_tell``), before anyone waiting on the tell runs. It decides with two pure functions: did
anyone wait for this answer (``nobody_waiting``), and does it end by asking its caller
something (``Detector.detect``). A question is stored, then pushed on the event stream
as a ``QuestionEvent``. Answering and dismissing are ``answering.py``'s (an answer
is a tell of the same pair); ``run`` expires pending questions when their TTL is up.
"""

from __future__ import annotations

import logging
import secrets
import time

import trio

from iris_common.config import IrisConfig
from irisd.events import EventHub
from irisd.questions.detector import Detector, context_of, nobody_waiting
from irisd.store import questions
from irisd.store.facade import Store
from irisd.tell.active import ActiveTell
from protocol.messages import QuestionEvent, QuestionInfo, TellInfo

log = logging.getLogger("irisd.questions")

MAX_SLEEP_S = 3600.0


def new_question_id() -> str:
    return "q-" + secrets.token_hex(6)


class QuestionDesk:
    def __init__(self, *, config: IrisConfig, store: Store, hub: EventHub) -> None:
        self.store = store
        self.hub = hub
        self._wakeup = trio.Event()
        self.reconfigure(config)

    def reconfigure(self, config: IrisConfig) -> None:
        """Settings (and patterns) of a reloaded config.yaml, for the next tells that end."""
        self.settings = config.settings.questions
        self.detector = Detector(self.settings.patterns, builtin=self.settings.builtin)

    async def on_tell_end(self, tell: ActiveTell) -> QuestionInfo | None:
        """Record a pending question if ``tell`` completed, nobody reads its answer, and
        the answer ends by asking something. Returns the question, if any."""
        if not self.settings.enabled or tell.kind == "command" or tell.machine.status != "completed":
            return None
        unread = nobody_waiting(
            kind=tell.kind,
            caller_got_end=tell.machine.caller_got_end,
            caller_left=tell.caller_left,
            result_waiters=tell.result_waiters,
        )
        if not unread:
            return None
        question = self._question(tell.info())
        if question is None:
            return None
        await self.store.call(questions.insert, question)
        log.info("pending question", extra={"question": question.id, "tell": tell.id, "rule": question.pattern})
        self.publish(question)
        self._wakeup.set()
        return question

    async def file_answered_now(self, tell: TellInfo) -> QuestionInfo | None:
        """The question a completed tell's answer asked a caller that waited for it (so none
        was filed), recorded as its caller answers it now: the caller's answer closes it at
        once, and it links the two tells (an A2A task goes on as the answer). None if the
        answer asks nothing. Published only once answered: it never waits for a person."""
        if tell.status != "completed":
            return None
        if (known := await self.store.call(questions.of_tell, tell.id)) is not None:
            return known  # recorded already (answered or declined once): closing it again is refused
        question = self._question(tell)
        if question is not None:
            await self.store.call(questions.insert, question)
        return question

    def _question(self, tell: TellInfo) -> QuestionInfo | None:
        """What ``tell``'s answer asks, as a pending question; None if it asks nothing."""
        found = self.detector.detect(tell.text)
        if found is None:
            return None
        now = time.time()
        return QuestionInfo(
            id=new_question_id(),
            from_team=tell.from_team,
            to_team=tell.to_team,
            session_id=tell.session_id,
            tell_id=tell.id,
            question=found.question,
            context=context_of(tell.text),
            confidence=found.confidence,
            pattern=found.pattern,
            status="pending",
            created_at=now,
            expires_at=now + self.settings.ttl / 1000,
        )

    def publish(self, question: QuestionInfo) -> None:
        self.hub.publish(QuestionEvent(question=question), question.from_team, question.to_team)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire pending questions at their TTL, until cancelled."""
        task_status.started()
        while True:
            self._wakeup = trio.Event()
            for expired in await self.store.call(questions.expire, time.time()):
                self.publish(expired)
            due = await self.store.call(questions.next_expiry)
            delay = MAX_SLEEP_S if due is None else min(max(due - time.time(), 0.0) + 0.01, MAX_SLEEP_S)
            with trio.move_on_after(delay):
                await self._wakeup.wait()
