"""The A2A methods of one team, served through the dispatcher like any other front end.

Every step is a request to ``dispatch(request, caller, send_event)``: a message is a
``Tell`` sent at once (``timeout_ms=-1``), an answer to a question is ``AnswerQuestion``,
an approval is ``Decide``, cancelling is ``CancelTell`` (or ``DismissQuestion``), reading
is ``GetTell``/``ListTells``/``ListQuestions``. A task is followed on the team's event
stream (``Watch``, subscribed before the tell is sent, so no event is missed) and ends,
for A2A, at a terminal or an interrupted state.

The internal ``Watch`` runs as the owner (a reader may not watch): only events of the
caller's own tell ever reach the client. Cancelling a method (the client left) cancels
the following, never the tell: it runs on, and its answer stays readable by id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import cast

import trio

from iris_common.config import IrisConfig, a2a_prompt
from irisd.a2a.inbound import mapping
from irisd.a2a.inbound.mapping import A2AError, TaskView
from irisd.caller import OWNER, Caller, Dispatch
from irisd.events import SendEvent, no_events
from irisd.questions.detector import Detector
from protocol import a2a
from protocol.errors import BudgetError, BusyError, IrisError, LoopError
from protocol.limits import MAX_WAIT_MS
from protocol.messages import (
    FINAL_TELL_STATUSES,
    AnswerQuestion,
    AnswerReply,
    CancelTell,
    ChainRef,
    Decide,
    DismissQuestion,
    Event,
    GetTell,
    ListQuestions,
    ListTells,
    QuestionInfo,
    QuestionsReply,
    Reply,
    ReportReply,
    Request,
    Tell,
    TellInfo,
    TellReply,
    TellState,
    TellText,
    Watch,
    Watching,
)

Emit = Callable[[a2a.StreamResponse], Awaitable[None]]

WATCH_BUFFER = 1000
MAX_CHAIN = 50  # tells followed through answered questions
LIST_LIMIT = 1000  # tells read for ListTasks (ListTells' own maximum)
DEFAULT_PAGE_SIZE = 50



def sender_of(caller: Caller) -> str | None:
    """Who the caller's tells are from: an agent's ``a2a:NAME``, the owner's None (external)."""
    return caller.team if caller.kind == "agent" else None


def translate(exc: IrisError) -> A2AError:
    """Iris's errors as A2A codes: each class's own (protocol/errors.py)."""
    return A2AError.of(exc)


class A2AService:
    def __init__(self, dispatch: Dispatch, config: Callable[[], IrisConfig], *, watch: Dispatch | None = None) -> None:
        self._dispatch = dispatch
        # The Watch under a call is no request of its own: irisd's drain must not wait for it
        # (the HTTP face passes the serve path's uncounted ``dispatch``).
        self._watch = watch or dispatch
        self._config = config
        self._detector: tuple[object, Detector] | None = None

    async def call(self, request: Request, caller: Caller, send_event: SendEvent = no_events) -> Reply:
        try:
            return await self._dispatch(request, caller, send_event)
        except IrisError as exc:
            raise translate(exc) from None

    # --- reading tasks -------------------------------------------------------------------

    def asks(self, text: str) -> bool:
        """Whether an answer ends by asking its caller something (the question desk's rule)."""
        settings = self._config().settings.questions
        if not settings.enabled:
            return False
        if self._detector is None or self._detector[0] is not settings:
            self._detector = (settings, Detector(settings.patterns, builtin=settings.builtin))
        return self._detector[1].detect(text) is not None

    async def _tell(self, tell_id: str, caller: Caller, team: str) -> TellInfo:
        reply = await self.call(GetTell(tell_id=tell_id), caller)
        info = cast(TellReply, reply).tell
        if not mapping.on_agent(info, team):
            raise A2AError(a2a.TASK_NOT_FOUND, f"no task {tell_id!r} on agent {team!r}", taskId=tell_id)
        return info

    async def _questions(self, caller: Caller, team: str) -> dict[str, QuestionInfo]:
        """The questions of the caller's tells to ``team``, by the tell that asked."""
        reply = await self.call(ListQuestions(team=team, include_closed=True), caller)
        return {q.tell_id: q for q in reversed(cast(QuestionsReply, reply).questions) if q.to_team == team}

    async def view(self, caller: Caller, team: str, task_id: str) -> TaskView:
        if not task_id:
            raise A2AError(a2a.INVALID_PARAMS, "id is empty; give the task's id")
        try:
            tells = [await self._tell(task_id, caller, team)]
        except A2AError as exc:
            if exc.code == a2a.TASK_NOT_FOUND:
                raise A2AError(a2a.TASK_NOT_FOUND, f"no task {task_id!r} on agent {team!r}", taskId=task_id) from None
            raise
        questions = await self._questions(caller, team)
        while (q := questions.get(tells[-1].id)) and q.status == "answered" and q.answer_tell_id:
            if len(tells) >= MAX_CHAIN:
                break
            tells.append(await self._tell(q.answer_tell_id, caller, team))
        return self._view(tells, questions.get(tells[-1].id))

    def _view(self, tells: list[TellInfo], question: QuestionInfo | None) -> TaskView:
        latest = tells[-1]
        asks = latest.status == "completed" and question is None and self.asks(latest.text)
        return TaskView(
            tells=tells, question=question, asks=asks, context_id=mapping.context_of(tells[0].from_team, latest.to_team)
        )

    async def get(self, caller: Caller, team: str, params: a2a.GetTaskRequest) -> a2a.Task:
        return mapping.to_task(await self.view(caller, team, params.id), history_length=params.history_length)

    async def list_tasks(self, caller: Caller, team: str, params: a2a.ListTasksRequest) -> a2a.ListTasksResponse:
        size = DEFAULT_PAGE_SIZE if params.page_size is None else params.page_size  # its range: a2a.PageSize
        after = mapping.parse_iso(params.status_timestamp_after) if params.status_timestamp_after else None
        reply = await self.call(ListTells(to_team=team, from_team=sender_of(caller), limit=LIST_LIMIT), caller)
        infos = [t for t in cast(ReportReply, reply).tells if t.kind == "tell"]
        by_id = {t.id: t for t in infos}
        questions = await self._questions(caller, team)
        answers = {q.answer_tell_id for q in questions.values() if q.answer_tell_id}
        views = []
        for info in infos:
            if info.id in answers:
                continue  # part of the task whose question it answered
            tells = [info]
            while (q := questions.get(tells[-1].id)) and q.answer_tell_id in by_id and len(tells) < MAX_CHAIN:
                tells.append(by_id[q.answer_tell_id])
            views.append(self._view(tells, questions.get(tells[-1].id)))
        wanted = [
            v
            for v in views
            if (not params.context_id or v.context_id == params.context_id)
            and (params.status in (None, a2a.TaskState.UNSPECIFIED) or v.state == params.status)
            and (after is None or mapping.status_time(v) >= after)
        ]
        wanted.sort(key=mapping.sort_key, reverse=True)
        rest = mapping.after_token(wanted, params.page_token)
        page = rest[:size]
        return a2a.ListTasksResponse(
            tasks=[
                mapping.to_task(
                    v, history_length=params.history_length, include_artifacts=bool(params.include_artifacts)
                )
                for v in page
            ],
            next_page_token=mapping.page_token(page[-1]) if len(rest) > size else "",
            page_size=size,
            total_size=len(wanted),
        )

    # --- sending ---------------------------------------------------------------------------

    async def send(
        self, caller: Caller, team: str, params: a2a.SendMessageRequest, emit: Emit | None = None
    ) -> a2a.SendMessageResponse:
        """SendMessage (``emit`` None) or SendStreamingMessage (each event to ``emit``)."""
        message = params.message
        if not message.message_id:
            raise A2AError(a2a.INVALID_PARAMS, "message.messageId is empty; give each message a unique id")
        text = mapping.message_text(message)
        prompt = self._prompt(caller, team, message, text)
        config = params.configuration or a2a.SendMessageConfiguration()
        if message.task_id:
            view = await self._continue(caller, team, message, text, prompt, emit)
            return a2a.SendMessageResponse(task=mapping.to_task(view, history_length=config.history_length))
        context = mapping.context_of(sender_of(caller), team)
        if message.context_id and message.context_id != context:
            raise A2AError(
                a2a.INVALID_PARAMS,
                f"contextId {message.context_id!r} is not a conversation of yours with {team}: you have one, "
                f"{context!r}; send it, or leave contextId out",
                contextId=message.context_id,
            )
        chain = mapping.incoming_chain(message.metadata, params.metadata)
        # The chain's hop limit and loop guard are admission's, as for every tell: a refusal
        # is a LoopError, which rejects the task below.
        across = ChainRef(chain_id=chain.chain_id, hops=chain.hops, path=chain.path) if chain is not None else None
        async with self._watching(team) as events:
            try:
                tell = Tell(to_team=team, message=prompt, timeout_ms=-1, across=across)
                reply = await self._dispatch(tell, caller, no_events)
            except (BudgetError, BusyError, LoopError) as exc:  # Iris refuses (a full queue too): REJECTED
                return await self._rejected(context, exc.message, emit)
            except IrisError as exc:
                raise translate(exc) from None
            view = self._view([cast(TellReply, reply).tell], None)
            if emit is not None:
                await emit(a2a.StreamResponse(task=mapping.to_task(view)))
            elif config.return_immediately:
                return a2a.SendMessageResponse(task=mapping.to_task(view, history_length=config.history_length))
            view = await self._follow(events, caller, team, view, emit)
        return a2a.SendMessageResponse(task=mapping.to_task(view, history_length=config.history_length))

    async def _rejected(self, context: str, why: str, emit: Emit | None) -> a2a.SendMessageResponse:
        task = mapping.rejected_task("rejected-" + secrets.token_hex(8), context, why, time.time())
        if emit is not None:
            await emit(a2a.StreamResponse(task=task))
        return a2a.SendMessageResponse(task=task)

    def _prompt(self, caller: Caller, team: str, message: a2a.Message, text: str) -> str:
        """The tell's text: the message as the team's a2aPrompt frames it (as sent without one)."""
        found = self._config().teams.get(team)
        template = found.a2a_prompt if found is not None else ""
        return a2a_prompt(template, text, message_id=message.message_id, sender=sender_of(caller) or "owner")

    async def _continue(
        self, caller: Caller, team: str, message: a2a.Message, text: str, prompt: str, emit: Emit | None
    ) -> TaskView:
        """A message to an existing task: the answer it waits for (an approval, or its question).
        An approval is read from ``text`` as sent; an answer goes on as ``prompt``."""
        view = await self.view(caller, team, message.task_id)
        if message.context_id and message.context_id != view.context_id:
            raise A2AError(
                a2a.INVALID_PARAMS,
                f"task {view.id} belongs to context {view.context_id!r}, not {message.context_id!r}",
                taskId=view.id,
            )
        state = view.state
        if state in a2a.TERMINAL_STATES:
            raise A2AError(
                a2a.UNSUPPORTED_OPERATION,
                f"task {view.id} is {state.value}: it takes no more messages; send a new message (the same "
                "contextId continues the conversation)",
                taskId=view.id,
            )
        if state != a2a.TaskState.INPUT_REQUIRED:
            raise A2AError(
                a2a.UNSUPPORTED_OPERATION,
                f"task {view.id} is {state.value} and waits for no input; follow it (GetTask, SubscribeToTask) "
                "or cancel it",
                taskId=view.id,
            )
        latest = view.latest
        async with self._watching(team) as events:
            if latest.status == "awaiting_approval":
                if not caller.is_owner:
                    raise A2AError(
                        a2a.UNSUPPORTED_OPERATION,
                        f"task {view.id} waits for approval {latest.approval_id}, which only the owner of this Iris "
                        "decides",
                        taskId=view.id,
                    )
                decided = mapping.decision(text)
                if decided is None:
                    raise A2AError(a2a.INVALID_PARAMS, "answer an approval with 'allow' or 'deny REASON'")
                allow, reason = decided
                await self.call(
                    Decide(approval_id=latest.approval_id, allow=allow, reason=reason, by="the owner, over A2A"), caller
                )
                tells = view.tells
            elif view.question is not None and view.question.status == "pending":
                reply = await self.call(
                    AnswerQuestion(question_id=view.question.id, text=prompt, timeout_ms=-1, by="A2A"), caller
                )
                tells = [*view.tells, cast(AnswerReply, reply).tell]
            else:  # asked while its client waited (no question was filed): the answer carries the task on
                reply = await self.call(
                    AnswerQuestion(tell_id=latest.id, text=prompt, timeout_ms=-1, by="A2A"), caller
                )
                tells = [*view.tells, cast(AnswerReply, reply).tell]
            view = self._view(tells, None)
            if emit is not None:
                await emit(a2a.StreamResponse(task=mapping.to_task(view)))
            return await self._follow(events, caller, team, view, emit)

    async def subscribe(self, caller: Caller, team: str, params: a2a.SubscribeToTaskRequest, emit: Emit) -> None:
        await self.view(caller, team, params.id)  # TaskNotFound before anything is streamed
        async with self._watching(team) as events:
            view = await self.view(caller, team, params.id)  # again, now that no event can be missed
            if view.state in a2a.TERMINAL_STATES:
                raise A2AError(
                    a2a.UNSUPPORTED_OPERATION,
                    f"task {view.id} is {view.state.value}: there is nothing left to stream; GetTask reads it",
                    taskId=view.id,
                )
            await emit(a2a.StreamResponse(task=mapping.to_task(view)))
            # Unlike SendStreamingMessage, a subscription lasts while the task waits for its
            # client (INPUT_REQUIRED): the answer, sent with SendMessage, carries it on.
            while view.state not in a2a.TERMINAL_STATES:
                if view.state in a2a.INTERRUPTED_STATES:
                    moved = await self._until_moved(events, caller, team, view)
                    if moved is None:
                        return  # irisd dropped the watch; the client subscribes again
                    if moved.latest.id == view.latest.id and moved.state in a2a.TERMINAL_STATES:
                        await emit(self._status(moved, moved.state, mapping.status_message(moved)))
                        return  # cancelled, or its question dismissed or expired
                    view = moved
                view = await self._follow(events, caller, team, view, emit)

    async def _until_moved(
        self, events: trio.MemoryReceiveChannel[Event], caller: Caller, team: str, view: TaskView
    ) -> TaskView | None:
        """While the task waits for its client: the task once it moves on (answered, decided,
        cancelled, expired), or None if the watch ends first."""
        async for event in events:
            if isinstance(event, TellText):
                continue  # a tell's text moves no task on
            now = await self.view(caller, team, view.id)
            if now.state != view.state or now.latest.id != view.latest.id:
                return now
        return None

    async def cancel(self, caller: Caller, team: str, params: a2a.CancelTaskRequest) -> a2a.Task:
        view = await self.view(caller, team, params.id)
        if view.state in a2a.TERMINAL_STATES:
            raise A2AError(a2a.TASK_NOT_CANCELABLE, f"task {view.id} is already {view.state.value}", taskId=view.id)
        latest = view.latest
        if latest.status == "completed":
            if view.question is None:  # asked while its client waited: declining it is the cancel
                await self.call(DismissQuestion(tell_id=latest.id, by="A2A"), caller)
            elif view.question.status != "pending":
                raise A2AError(
                    a2a.TASK_NOT_CANCELABLE,
                    f"task {view.id} asked a question that is no longer pending; nothing runs to cancel",
                    taskId=view.id,
                )
            else:
                await self.call(DismissQuestion(question_id=view.question.id, by="A2A"), caller)
        else:
            await self.call(CancelTell(tell_id=latest.id), caller)
        return mapping.to_task(await self.view(caller, team, params.id))

    # --- following a tell ------------------------------------------------------------------------

    @asynccontextmanager
    async def _watching(self, team: str) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """The team's events from now on; the channel ends if irisd drops the watch."""
        send, receive = trio.open_memory_channel[Event](WATCH_BUFFER)
        ready = trio.Event()

        async def push(event: Event) -> None:
            if isinstance(event, Watching):
                ready.set()
            else:
                await send.send(event)

        async def watch() -> None:
            async with send:
                try:
                    await self._watch(Watch(team=team), OWNER, push)
                except IrisError:
                    ready.set()  # dropped (irisd stops, or we fell behind): the reader polls instead

        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await ready.wait()
            try:
                yield receive
            except Exception as exc:  # the caller's error, not the nursery's: raised as it is, ungrouped
                failure = exc
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _follow(
        self,
        events: trio.MemoryReceiveChannel[Event],
        caller: Caller,
        team: str,
        view: TaskView,
        emit: Emit | None,
    ) -> TaskView:
        """Follow the task's latest tell to a terminal or interrupted state; stream its
        progress to ``emit`` (the answer in chunks, one held back to mark the last)."""
        tell_id, root = view.latest.id, view.id
        held: str | None = None
        chunks = 0
        stop = approval = False
        # A subscription can find the tell it follows already ended (its events gone by). Not
        # so an approval: a caller that just decided one holds the tell as it was before.
        if view.latest.status not in FINAL_TELL_STATUSES:
            async with trio.open_nursery() as nursery:
                # The client waits for this answer, so it is read: an answer that asks files no
                # pending question (questions are for answers nobody waits for). The task reads
                # INPUT_REQUIRED all the same, and the client's reply goes on in the conversation.
                nursery.start_soon(self._reading, caller, tell_id)
                async for event in events:
                    match event:
                        case TellState(tell_id=tid, status=status) if tid == tell_id:
                            if status == "running" and emit is not None:
                                await emit(self._status(view, a2a.TaskState.WORKING, None))
                            approval = status == "awaiting_approval"
                            stop = approval or status in FINAL_TELL_STATUSES
                        case TellText(tell_id=tid, text=text) if tid == tell_id and emit is not None:
                            if held is not None:
                                await emit(self._chunk(view, held, append=chunks > 0, last=False))
                                chunks += 1
                            held = text
                    if stop:
                        # Ended: the reader returns by itself once the end is saved (the question
                        # desk counted it as a reader then). Waiting for a person: it stops reading.
                        if approval:
                            nursery.cancel_scope.cancel()
                        break
        view = await self.view(caller, team, root)
        if emit is not None:
            state = view.state
            if state == a2a.TaskState.COMPLETED:
                whole = mapping.answer_artifact(view)
                if whole.parts[0].text is None:  # data or a file: it replaces the text streamed so far
                    await emit(self._update(view, whole, append=False, last=True))
                else:
                    rest = held if chunks else view.latest.text
                    await emit(self._chunk(view, rest or "", append=chunks > 0, last=True))
            await emit(self._status(view, state, mapping.status_message(view)))
        return view

    async def _reading(self, caller: Caller, tell_id: str) -> None:
        """Wait for the tell as a reader of its answer while the client follows it (events
        carry the rest). An error here (irisd stopping) only ends the waiting."""
        try:
            await self._wait_settled(caller, tell_id)
        except A2AError:
            pass

    async def _wait_settled(self, caller: Caller, tell_id: str) -> None:
        """Wait until the tell ends or waits for approval, counted meanwhile as a reader of its
        answer: an answer that asks makes no pending question then (the task still reads
        INPUT_REQUIRED, and the client's reply records the question as answered)."""
        while True:
            reply = await self.call(GetTell(tell_id=tell_id, wait_ms=MAX_WAIT_MS), caller)
            if cast(TellReply, reply).tell.status not in ("queued", "running"):
                return

    @staticmethod
    def _status(view: TaskView, state: a2a.TaskState, message: a2a.Message | None) -> a2a.StreamResponse:
        return a2a.StreamResponse(
            status_update=a2a.TaskStatusUpdateEvent(
                task_id=view.id,
                context_id=view.context_id,
                status=a2a.TaskStatus(state=state, message=message, timestamp=mapping.iso(time.time())),
            )
        )

    @classmethod
    def _chunk(cls, view: TaskView, text: str, *, append: bool, last: bool) -> a2a.StreamResponse:
        return cls._update(view, mapping.answer_artifact(view, text), append=append, last=last)

    @staticmethod
    def _update(view: TaskView, artifact: a2a.Artifact, *, append: bool, last: bool) -> a2a.StreamResponse:
        return a2a.StreamResponse(
            artifact_update=a2a.TaskArtifactUpdateEvent(
                task_id=view.id, context_id=view.context_id, artifact=artifact, append=append, last_chunk=last
            )
        )
