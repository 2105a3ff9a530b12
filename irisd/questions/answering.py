"""Answering and dismissing a pending question, on request (``iris answer``, the
dashboard, an A2A client). An answer is the next tell of the question's own pair (the
conversation that asked): the question is closed first and reopened if the tell is
refused, so two people answering at once send one answer."""

from __future__ import annotations

import time

from irisd.questions.desk import QuestionDesk
from irisd.store import questions, tells
from irisd.store.facade import Store
from irisd.tell.admission import check_message, check_wait
from irisd.tell.service import TellService
from protocol.errors import InvalidRequestError, IrisError, NotFoundError, PermissionDeniedError
from protocol.messages import AnswerQuestion, AnswerReply, DismissQuestion, QuestionInfo, QuestionReply


class Answering:
    def __init__(self, *, store: Store, tells: TellService, desk: QuestionDesk) -> None:
        self.store = store
        self.tells = tells
        self.desk = desk

    async def question(self, question_id: str) -> QuestionInfo:
        """The question ``question_id`` (NotFoundError naming where to look)."""
        question = await self.store.call(questions.get, question_id)
        if question is None:
            raise NotFoundError(f"no question with id {question_id!r}; 'iris questions' lists the pending ones")
        return question

    async def answer(self, request: AnswerQuestion) -> AnswerReply:
        """Send the answer as the next tell of the question's own pair, and close the question."""
        if request.question_id:
            question = await self.question(request.question_id)
        elif request.tell_id:
            question = await self.asked_a_waiter(request.tell_id)
        else:
            raise InvalidRequestError("give the question's id (see 'iris questions')")
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
            raise await self.not_pending(question.id)
        try:
            tell = await self.tells.submit(question.to_team, text, question.from_team, request.timeout_ms)
        except IrisError:
            await self.store.call(questions.reopen, question.id)
            raise
        answered = await self.store.call(questions.set_answer_tell, question.id, tell.id)
        assert answered is not None
        self.desk.publish(answered)
        reply = await self.tells.reply(tell, None)
        return AnswerReply(question=answered, status=reply.status, tell=reply.tell)

    async def asked_a_waiter(self, tell_id: str) -> QuestionInfo:
        """The question a tell's answer asked the caller that waited for it, filed now that
        the caller answers it (InvalidRequestError if the answer asked nothing)."""
        info = await self.store.call(tells.get, tell_id)
        if info is None:
            raise NotFoundError(f"no tell with id {tell_id!r}; 'iris report' lists them")
        question = await self.desk.file_answered_now(info)
        if question is None:
            raise InvalidRequestError(
                f"tell {tell_id} asked nothing ({info.status}); send a new tell to the same team instead"
            )
        return question

    async def dismiss(self, request: DismissQuestion) -> QuestionReply:
        question_id = request.question_id
        if not question_id and request.tell_id:
            question_id = (await self.asked_a_waiter(request.tell_id)).id
        return QuestionReply(question=await self.dismiss_as(question_id, request.by))

    async def dismiss_as(self, question_id: str, by: str) -> QuestionInfo:
        """Close a pending question as dismissed ``by`` someone (the person, iris-agent's watcher)."""
        closed = await self.store.call(questions.close, question_id, "dismissed", time.time(), by=by or "unknown")
        if closed is None:
            raise await self.not_pending(question_id)
        self.desk.publish(closed)
        return closed

    async def pending(self, question_id: str) -> QuestionInfo:
        """The question ``question_id`` while it is pending (an IrisError naming its state if not)."""
        question = await self.question(question_id)
        if question.status != "pending":
            raise await self.not_pending(question.id)
        return question

    async def not_pending(self, question_id: str) -> IrisError:
        known = await self.store.call(questions.get, question_id)
        if known is None:
            return NotFoundError(f"no question with id {question_id!r}; 'iris questions' lists the pending ones")
        who = f" by {known.closed_by}" if known.closed_by else ""
        return InvalidRequestError(f"question {known.id} is already {known.status}{who}; nothing to do")
