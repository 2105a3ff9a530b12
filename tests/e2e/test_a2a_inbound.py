"""Every team an A2A agent, from outside: the official a2a-sdk client (under trio.run) and
raw HTTP against a real irisd, whose team is the real claude answering through the
scripted model. One daemon serves the module; each test uses its own agent token (its
own pair, so its own conversation) unless it is about the owner's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)

from harness import Http, Iris, started, wait_for
from protocol.messages import GetTell, ListTells, TellReply
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


ALPHA = "The alpha project: answers questions about alpha"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    with started(tmp_path_factory.mktemp("a2a"), model_url=model.base_url, claude=claude_bin,
                 teams={"alpha": {"description": ALPHA}, "beta": {}}) as iris:
        yield iris


def agent_token(iris: Iris, name: str) -> str:
    answer = iris.cli_json("a2a", "token", "--name", name)
    assert answer["sender"] == f"a2a:{name}"
    return str(answer["token"])


@asynccontextmanager
async def sdk_client(iris: Iris, token: str, team: str = "alpha", *, streaming: bool = True) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        client = await create_client(
            f"{iris.http_url}/a2a/{team}", client_config=ClientConfig(httpx_client=http, streaming=streaming)
        )
        yield client


def user_message(text: str, message_id: str, **fields: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=message_id, parts=[Part(text=text)], **fields)
    )


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in events]


def final_task(events: list[StreamResponse]) -> Any:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def rpc(iris: Iris, method: str, params: dict[str, Any], *, token: str | None = None, **headers: str) -> Any:
    http = Http(iris)
    if token is not None:
        http.token = token
    wanted = {"A2A-Version": "1.0", "Content-Type": "application/json", **headers}
    status, _, body = http.request(
        "POST", "/a2a/alpha", {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=wanted
    )
    return status, json.loads(body)


# --- the a2a-sdk client ----------------------------------------------------------------------------


def test_the_sdk_sends_and_the_answer_is_a_tell_of_the_agent(shared: Iris) -> None:
    token = agent_token(shared, "sender")

    async def main() -> list[StreamResponse]:
        async with sdk_client(shared, token, streaming=False) as client:
            return await collect(client.send_message(user_message("hello alpha", "m-1")))

    events = trio.run(main)
    task = final_task(events)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "echo #1: hello alpha"
    assert task.context_id == "a2a:sender->alpha"
    # The task is a tell: findable by its id, sent by the agent its token names.
    tell = shared.request(GetTell(tell_id=task.id))
    assert isinstance(tell, TellReply) and tell.tell.from_team == "a2a:sender" and tell.tell.to_team == "alpha"
    assert "echo #1: hello alpha" in json.dumps(shared.cli_json("result", task.id))


def test_the_sdk_streams_the_answer_in_chunks_and_the_same_context_continues_the_session(shared: Iris) -> None:
    token = agent_token(shared, "streamer")

    async def main() -> tuple[list[StreamResponse], list[StreamResponse]]:
        async with sdk_client(shared, token) as client:
            first = await collect(client.send_message(user_message("@chunks:3 @slow:400 one two three", "s-1")))
            context = final_task(first).context_id
            second = await collect(client.send_message(user_message("again", "s-2", context_id=context)))
            return first, second

    first, second = trio.run(main)
    chunks = [e.artifact_update for e in first if e.HasField("artifact_update")]
    # The text as it streamed in (irisd's watchers get it in batches: at most one every 0.25 s).
    texts = [c.artifact.parts[0].text for c in chunks]
    assert len(texts) >= 2 and "".join(texts) == "echo #1: one two three", texts
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    states = [e.status_update.status.state for e in first if e.HasField("status_update")]
    assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    # The second message answers "#2": the same claude conversation, as the session shows.
    done = [e for e in second if e.HasField("status_update")][-1].status_update
    assert done.status.message.parts[0].text == "echo #2: again"
    tells = shared.request(ListTells(from_team="a2a:streamer"))
    assert len({t.session_id for t in tells.tells}) == 1


def test_the_sdk_gets_lists_and_cancels(shared: Iris) -> None:
    token = agent_token(shared, "canceller")

    async def main() -> tuple[Any, Any, Any, Any]:
        async with sdk_client(shared, token, streaming=False) as client:
            request = user_message("@hang wait forever", "c-1")
            request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
            sent = final_task(await collect(client.send_message(request)))
            listed = await client.list_tasks(ListTasksRequest())
            cancelled = await client.cancel_task(CancelTaskRequest(id=sent.id))
            got = await client.get_task(GetTaskRequest(id=sent.id))
            return sent, listed, cancelled, got

    sent, listed, cancelled, got = trio.run(main)
    assert sent.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert [t.id for t in listed.tasks] == [sent.id] and listed.next_page_token == ""
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert got.status.state == TaskState.TASK_STATE_CANCELED
    tell = shared.request(GetTell(tell_id=sent.id))
    assert isinstance(tell, TellReply) and tell.tell.status == "interrupted"


def test_an_answer_that_asks_is_input_required_and_the_reply_continues_the_task(shared: Iris) -> None:
    token = agent_token(shared, "asker")

    async def main() -> tuple[Any, Any, Any, list[Any]]:
        async with sdk_client(shared, token, streaming=False) as client:
            asked = final_task(await collect(client.send_message(user_message("@ask deploy", "q-1"))))
            pending = [q for q in shared.cli_json("questions") if q["tell_id"] == asked.id]
            reply = user_message("yes, go", "q-2", task_id=asked.id)
            continued = final_task(await collect(client.send_message(reply)))
            got = await client.get_task(GetTaskRequest(id=asked.id))
            return asked, continued, got, pending

    asked, continued, got, pending = trio.run(main)
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert asked.status.message.parts[0].text == "Do you want me to go ahead? (echo #1: deploy)"
    # The client waited for that answer (a blocking SendMessage): no pending question was filed
    # for a person; its reply recorded the question as answered, linking the task's two tells.
    assert pending == []
    (answered,) = [q for q in shared.cli_json("questions", "--all") if q["tell_id"] == asked.id]
    assert answered["status"] == "answered" and answered["answer_tell_id"] and answered["closed_by"] == "A2A"
    assert continued.id == asked.id and continued.status.state == TaskState.TASK_STATE_COMPLETED
    assert continued.artifacts[0].parts[0].text == "echo #2: yes, go"
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert [m.parts[0].text for m in got.history] == [
        "@ask deploy",
        "Do you want me to go ahead? (echo #1: deploy)",
        "yes, go",
        "echo #2: yes, go",
    ]


def test_subscribe_follows_a_running_task_to_its_end(shared: Iris) -> None:
    token = agent_token(shared, "subscriber")

    async def main() -> list[StreamResponse]:
        async with sdk_client(shared, token) as client:
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as raw:
                body = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "role": "ROLE_USER",
                            "messageId": "sub-1",
                            "parts": [{"text": "@slow:300 a b c d"}],
                        },
                        "configuration": {"returnImmediately": True},
                    },
                }
                sent = (
                    await raw.post(f"{shared.http_url}/a2a/alpha", json=body, headers={"A2A-Version": "1.0"})
                ).json()
            task_id = sent["result"]["task"]["id"]
            return await collect(client.subscribe(SubscribeToTaskRequest(id=task_id)))

    events = trio.run(main)
    assert events[0].HasField("task")
    last = events[-1]
    assert last.HasField("status_update") and last.status_update.status.state == TaskState.TASK_STATE_COMPLETED


# --- tokens and errors over raw HTTP --------------------------------------------------------------


def test_no_method_answers_without_a_valid_token_and_a_childs_kind_of_token_never(shared: Iris) -> None:
    for token in ("", "not-a-token"):
        status, answer = rpc(shared, "ListTasks", {}, token=token)
        assert status == 401 and answer["error"]["code"] == -32600, answer
        assert "iris a2a token" in answer["error"]["message"]
    token = agent_token(shared, "revoked")
    assert rpc(shared, "ListTasks", {}, token=token)[0] == 200
    shared.cli("a2a", "revoke", "revoked")
    assert rpc(shared, "ListTasks", {}, token=token)[0] == 401
    # The card is public: discovery comes before credentials.
    status, card = Http(shared).json("GET", "/a2a/beta/.well-known/agent-card.json", auth=False)
    assert status == 200 and card["name"] == "beta"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    status, root = Http(shared).json("GET", "/.well-known/agent-card.json", auth=False)
    assert root["name"] == "alpha" and root["supportedInterfaces"][0]["url"].endswith("/a2a/alpha")
    assert root["capabilities"]["streaming"] is True


def test_an_agent_sees_only_its_own_tasks(shared: Iris) -> None:
    mine, theirs = agent_token(shared, "private-a"), agent_token(shared, "private-b")
    _, sent = rpc(
        shared,
        "SendMessage",
        {"message": {"role": "ROLE_USER", "messageId": "p", "parts": [{"text": "x"}]}},
        token=mine,
    )
    task_id = sent["result"]["task"]["id"]
    status, answer = rpc(shared, "GetTask", {"id": task_id}, token=theirs)  # the core's policy: 403
    assert status == 403 and answer["error"]["code"] == -32600 and "not one of yours" in answer["error"]["message"]
    assert rpc(shared, "ListTasks", {}, token=theirs)[1]["result"]["tasks"] == []
    # The owner sees every task of the team.
    owned = rpc(shared, "GetTask", {"id": task_id})[1]
    assert owned["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a2a_errors_carry_their_codes(shared: Iris) -> None:
    msg = {"role": "ROLE_USER", "messageId": "e", "parts": [{"text": "hi"}]}
    assert rpc(shared, "SendMessage", {"message": msg}, **{"A2A-Version": "0.3"})[1]["error"]["code"] == -32009
    assert rpc(shared, "NoSuchMethod", {})[1]["error"]["code"] == -32601
    assert rpc(shared, "GetTask", {"id": 5})[1]["error"]["code"] == -32602
    assert rpc(shared, "CreateTaskPushNotificationConfig", {})[1]["error"]["code"] == -32003
    assert rpc(shared, "GetTask", {"id": "missing"})[1]["error"]["code"] == -32001
    binary = {**msg, "parts": [{"raw": "dGNr", "mediaType": "application/x-unsupported"}]}
    assert rpc(shared, "SendMessage", {"message": binary})[1]["error"]["code"] == -32005
    done = rpc(shared, "SendMessage", {"message": msg})[1]["result"]["task"]
    assert rpc(shared, "CancelTask", {"id": done["id"]})[1]["error"]["code"] == -32002
    again = {**msg, "messageId": "e2", "taskId": done["id"]}
    assert rpc(shared, "SendMessage", {"message": again})[1]["error"]["code"] == -32004
    wrong = {**msg, "messageId": "e3", "taskId": done["id"], "contextId": "a2a:someone->alpha"}
    assert rpc(shared, "SendMessage", {"message": wrong})[1]["error"]["code"] == -32602
    status, _, body = Http(shared).request(
        "POST", "/a2a/alpha", b"{not json", headers={"A2A-Version": "1.0", "Content-Type": "application/json"}
    )
    assert status == 200 and json.loads(body)["error"]["code"] == -32700


def test_a_message_from_another_iris_continues_its_chain_and_one_closing_a_loop_is_rejected(shared: Iris) -> None:
    came = {"chainId": "far-1", "hops": 1, "path": ["web", "remote-alpha"]}
    msg = {"role": "ROLE_USER", "messageId": "c", "parts": [{"text": "hi"}], "metadata": {"iris": came}}
    task = rpc(shared, "SendMessage", {"message": msg})[1]["result"]["task"]
    told = shared.request(GetTell(tell_id=task["id"]))
    assert isinstance(told, TellReply) and (told.tell.chain_id, told.tell.hops) == ("far-1", 2)
    chain = {"chainId": "c-1", "hops": 1, "path": ["web", "alpha"]}
    msg = {"role": "ROLE_USER", "messageId": "l", "parts": [{"text": "hi"}], "metadata": {"iris": chain}}
    task = rpc(shared, "SendMessage", {"message": msg})[1]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert task["status"]["message"]["parts"][0]["text"].startswith("loop: alpha is already waiting")


def test_a_tool_awaiting_approval_is_input_required_and_only_the_owner_decides_it(shared: Iris) -> None:
    write = '@tool:Bash {"command": "echo hi > made.txt"}'
    agent = agent_token(shared, "approver")
    msg = {"role": "ROLE_USER", "messageId": "w", "parts": [{"text": write}]}
    task = rpc(shared, "SendMessage", {"message": msg}, token=agent)[1]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    said = task["status"]["message"]["parts"][0]["text"]
    assert said.startswith("The team asks to use Bash") and "iris approve" in said
    answer = {"role": "ROLE_USER", "messageId": "w2", "taskId": task["id"], "parts": [{"text": "allow"}]}
    refused = rpc(shared, "SendMessage", {"message": answer}, token=agent)[1]
    assert refused["error"]["code"] == -32004 and "only the owner" in refused["error"]["message"]
    done = rpc(shared, "SendMessage", {"message": answer})[1]["result"]["task"]  # the owner's token
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"].startswith("tool Bash said:")
    (approval,) = shared.cli_json("approvals", "--all")
    assert approval["status"] == "allowed" and approval["decided_by"] == "the owner, over A2A"


def test_cancelling_a_task_that_waits_on_its_question_dismisses_the_question(shared: Iris) -> None:
    agent = agent_token(shared, "dismisser")
    msg = {"role": "ROLE_USER", "messageId": "d", "parts": [{"text": "@ask drop the table"}]}
    # Sent without waiting (returnImmediately): nobody reads the answer, so it is a pending question.
    sent = rpc(shared, "SendMessage", {"message": msg, "configuration": {"returnImmediately": True}}, token=agent)
    task_id = sent[1]["result"]["task"]["id"]
    wait_for(lambda: [q for q in shared.cli_json("questions") if q["tell_id"] == task_id], 120, "its question")
    task = rpc(shared, "GetTask", {"id": task_id}, token=agent)[1]["result"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    cancelled = rpc(shared, "CancelTask", {"id": task["id"]}, token=agent)[1]["result"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    (question,) = [q for q in shared.cli_json("questions", "--all") if q["tell_id"] == task["id"]]
    assert question["status"] == "dismissed" and question["from_team"] == "a2a:dismisser"
    assert rpc(shared, "CancelTask", {"id": task["id"]}, token=agent)[1]["error"]["code"] == -32002


def test_cancelling_a_task_whose_waiting_client_was_asked_declines_the_question(shared: Iris) -> None:
    agent = agent_token(shared, "decliner")
    msg = {"role": "ROLE_USER", "messageId": "w", "parts": [{"text": "@ask drop the index"}]}
    task = rpc(shared, "SendMessage", {"message": msg}, token=agent)[1]["result"]["task"]  # it waits: read
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert not [q for q in shared.cli_json("questions", "--all") if q["tell_id"] == task["id"]]
    cancelled = rpc(shared, "CancelTask", {"id": task["id"]}, token=agent)[1]["result"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    (question,) = [q for q in shared.cli_json("questions", "--all") if q["tell_id"] == task["id"]]
    assert question["status"] == "dismissed" and question["closed_by"] == "A2A"


# --- contexts are threads ------------------------------------------------------------------------


def test_a_client_that_opens_two_contexts_has_two_conversations(shared: Iris) -> None:
    token = agent_token(shared, "threads")

    async def main() -> list[Any]:
        async with sdk_client(shared, token, streaming=False) as client:
            tasks = []
            for text, message_id, context in [
                ("one", "t-1", "ctx-one"), ("two", "t-2", "ctx-two"), ("one again", "t-3", "ctx-one"),
                ("default", "t-4", ""), ("two again", "t-5", "ctx-two"),
            ]:
                fields = {"context_id": context} if context else {}
                tasks.append(final_task(await collect(client.send_message(user_message(text, message_id, **fields)))))
            return tasks

    one, two, one_again, default, two_again = trio.run(main)
    answers = [t.artifacts[0].parts[0].text for t in (one, two, one_again, default, two_again)]
    # Each context counts its own turns: a claude session of its own.
    assert answers == ["echo #1: one", "echo #1: two", "echo #2: one again", "echo #1: default", "echo #2: two again"]
    assert [t.context_id for t in (one, two, one_again, default)] == [
        "ctx-one", "ctx-two", "ctx-one", "a2a:threads->alpha"
    ]
    # Each is a thread of the agent's pair, with its own session.
    tells = {t.id: shared.request(GetTell(tell_id=t.id)).tell for t in (one, two, one_again, default)}
    assert [tells[t.id].thread for t in (one, two, default)] == ["ctx-one", "ctx-two", ""]
    assert tells[one.id].session_id == tells[one_again.id].session_id != tells[two.id].session_id
    # ListTasks by context keeps them apart.
    _, listed = rpc(shared, "ListTasks", {"contextId": "ctx-one"}, token=token)
    assert {t["id"] for t in listed["result"]["tasks"]} == {one.id, one_again.id}


def test_a_context_id_that_cannot_be_a_thread_is_refused_with_one_that_can(shared: Iris) -> None:
    token = agent_token(shared, "badctx")
    msg = {"role": "ROLE_USER", "messageId": "b-1", "parts": [{"text": "hi"}], "contextId": "a2a:someone->alpha"}
    _, answer = rpc(shared, "SendMessage", {"message": msg}, token=token)
    error = answer["error"]
    assert error["code"] == -32602
    assert "contextId 'a2a:someone->alpha' cannot name a conversation here" in error["message"]
    assert "a UUID" in error["message"] and "'a2a:badctx->alpha' (or none)" in error["message"]
