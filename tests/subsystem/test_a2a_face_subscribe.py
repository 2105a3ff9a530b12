"""SubscribeToTask as the A2A TCK checks it (STREAM-SUB-002, STREAM-SUB-003): a subscription
to a task that waits for its client's answer lasts until the answer carries the task to its
end; one to a finished task is a JSON-RPC error, never an SSE stream or a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing

from irisd.a2a.inbound.service import A2AService
from irisd.caller import Caller
from irisd.http.a2a import A2AFace
from irisd.tokens import Access
from protocol.messages import (
    AnswerQuestion,
    AnswerReply,
    ListQuestions,
    ListTeams,
    QuestionEvent,
    QuestionInfo,
    QuestionsReply,
    Reply,
    Request,
    TeamInfo,
    TeamsReply,
    Tell,
    TellReply,
)
from subsystem.test_a2a_face import MESSAGE, Client, FakeCore, SendEvent, _drop, config, failed_auth


class AskingCore(FakeCore):
    """The fake dispatcher, with pending questions: an answer is the next tell of the pair."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[QuestionInfo] = []

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent) -> Reply:
        match request:
            case ListQuestions():
                return QuestionsReply(questions=list(self.questions))
            case AnswerQuestion(question_id=question_id, text=text):
                asked = next(q for q in self.questions if q.id == question_id)
                reply = await super().dispatch(Tell(to_team=asked.to_team, message=text), caller, send_event)
                assert isinstance(reply, TellReply)
                answered = msgspec.structs.replace(asked, status="answered", answer_tell_id=reply.tell.id)
                await self.question(answered)
                return AnswerReply(question=answered, status="in_progress", tell=reply.tell)
        return await super().dispatch(request, caller, send_event)

    async def question(self, question: QuestionInfo) -> None:
        self.questions = [q for q in self.questions if q.id != question.id] + [question]
        for send in list(self.watchers):
            await send(QuestionEvent(question=question))

    async def ask(self, tell_id: str) -> None:
        info = self.tells[tell_id]
        await self.question(
            QuestionInfo(
                id="q1",
                from_team=info.from_team,
                to_team=info.to_team,
                session_id="s",
                tell_id=tell_id,
                question=info.text,
                context=info.text,
                confidence=0.95,
                status="pending",
                created_at=1.0,
                expires_at=9e9,
            )
        )


def frames(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(chunk.removeprefix(b"data: ")) for chunk in data.split(b"\n\n") if chunk]


def state(frame: dict[str, Any]) -> str:
    result = frame["result"]
    return str((result.get("task") or result["statusUpdate"])["status"]["state"])


async def test_a_subscription_to_a_task_that_asks_lasts_until_the_answer_ends_it(tmp_path: Path) -> None:
    core = AskingCore()
    face = _face(core, tmp_path)
    client = Client(face, face.access.owner_token)
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task_id = (await client.rpc("SendMessage", params))[1]["result"]["task"]["id"]
    await core.move(task_id, "completed", "Do you want me to go ahead?")
    await core.ask(task_id)
    streamed: list[tuple[int, dict[str, str], bytes]] = []
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": task_id}})

    async def subscribe() -> None:
        streamed.append(await client.request("POST", "/a2a/alpha", body.encode()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(subscribe)
        await trio.testing.wait_all_tasks_blocked()
        assert not streamed  # still open while the task waits for its answer
        answer = {**MESSAGE, "messageId": "m2", "taskId": task_id, "parts": [{"text": "yes"}]}
        nursery.start_soon(client.rpc, "SendMessage", {"message": answer})
        await trio.testing.wait_all_tasks_blocked()
        await core.move("t2", "running")
        await core.move("t2", "completed", "done")
    status, headers, data = streamed[0]
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = frames(data)
    assert state(events[0]) == "TASK_STATE_INPUT_REQUIRED" and events[0]["result"]["task"]["id"] == task_id
    assert state(events[-1]) == "TASK_STATE_COMPLETED"
    assert events[-1]["result"]["statusUpdate"]["taskId"] == task_id
    assert [e["result"]["artifactUpdate"]["artifact"]["parts"] for e in events if "artifactUpdate" in e["result"]] == [
        [{"text": "done"}]
    ]


async def test_a_subscription_to_a_finished_task_is_a_json_rpc_error(tmp_path: Path) -> None:
    core = AskingCore()
    face = _face(core, tmp_path)
    client = Client(face, face.access.owner_token)
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task_id = (await client.rpc("SendMessage", params))[1]["result"]["task"]["id"]
    await core.move(task_id, "completed", "done")
    body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "SubscribeToTask", "params": {"id": task_id}})
    status, headers, data = await client.request("POST", "/a2a/alpha", body.encode())
    assert status == 200 and headers["content-type"] == "application/json"
    error = json.loads(data)["error"]
    assert error["code"] == -32004 and "TASK_STATE_COMPLETED" in error["message"]


def _face(core: FakeCore, tmp_path: Path) -> A2AFace:
    access = Access.open(tmp_path)
    access.url = "http://127.0.0.1:1615"

    async def teams() -> list[TeamInfo]:
        reply = await core.dispatch(ListTeams(), Caller(), _drop)
        assert isinstance(reply, TeamsReply)
        return reply.teams

    return A2AFace(A2AService(core.dispatch, config), access, teams, failed_auth)
