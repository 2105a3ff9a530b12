"""The A2A face in process: its ASGI app and the service behind it, over a fake core that
answers the dispatcher's requests (tells it moves on by hand), on trio's virtual clock.
The real claude answering through it is in tests/e2e/test_a2a_inbound.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from iris_common import a2a_tokens
from iris_common.config import IrisConfig, parse_config
from irisd import policy
from irisd.a2a.inbound.service import A2AService
from irisd.caller import Caller
from irisd.http.a2a import A2AFace, handles
from irisd.http.gate import Refusals
from irisd.tokens import Access
from protocol import errors
from protocol.errors import BusyError, NotFoundError, RateLimitedError
from protocol.messages import (
    CancelTell,
    Event,
    GetTell,
    ListQuestions,
    ListTeams,
    ListTells,
    QuestionsReply,
    Reply,
    ReportReply,
    Request,
    TeamInfo,
    TeamsReply,
    Tell,
    TellInfo,
    TellReply,
    TellState,
    TellText,
    Watch,
    Watching,
)

SendEvent = Callable[[Event], Awaitable[None]]


class FakeCore:
    """Just enough of the dispatcher: tells it keeps, and the events a Watch sees."""

    def __init__(self) -> None:
        self.tells: dict[str, TellInfo] = {}
        self.watchers: list[SendEvent] = []
        self.requests: list[tuple[Request, Caller]] = []
        self.submitted = trio.Event()
        self.moved = trio.Event()  # set at each move: a reader waiting on a tell (GetTell wait_ms) looks again

    async def dispatch(self, request: Request, caller: Caller, send_event: SendEvent) -> Reply:
        request = caller.apply(request)
        self.requests.append((request, caller))
        match request:
            case ListTeams():
                return TeamsReply(teams=[TeamInfo(name="alpha", path="/a"), TeamInfo(name="beta", path="/b")])
            case Watch():
                self.watchers.append(send_event)
                try:
                    await send_event(Watching(team=request.team))
                    await trio.sleep_forever()
                finally:
                    self.watchers.remove(send_event)
            case Tell(message="full"):
                raise BusyError("the pair alpha's queue is full (50 tells wait); try again later")
            case Tell():
                info = TellInfo(
                    id=f"t{len(self.tells) + 1}",
                    from_team=request.from_team,
                    to_team=request.to_team,
                    message=request.message,
                    status="queued",
                    created_at=1000.0 + len(self.tells),
                )
                self.tells[info.id] = info
                self.submitted.set()
                return TellReply(status="in_progress", tell=info)
            case GetTell(tell_id=tell_id):
                if tell_id == "bug":
                    raise RuntimeError("a bug")
                if (error := errors._BY_CODE.get(tell_id)) is not None:
                    raise error(f"refused: {tell_id}")
                if tell_id not in self.tells:
                    raise NotFoundError(f"no tell with id {tell_id!r}")
                policy.check_sees(caller, _owned(self.tells[tell_id]), f"tell {tell_id}")  # the core's policy
                while request.wait_ms and self.tells[tell_id].status in ("queued", "running"):
                    await self.moved.wait()  # as the core's reader of an answer waits for its end
                return TellReply(status="in_progress", tell=self.tells[tell_id])
            case ListTells():
                found = [
                    t for t in self.tells.values()
                    if request.from_team in (None, t.from_team) and policy.sees(caller, _owned(t))
                ]
                return ReportReply(tells=sorted(found, key=lambda t: -t.created_at))
            case ListQuestions():
                return QuestionsReply(questions=[])
            case CancelTell(tell_id=tell_id):
                policy.check_changes(caller, _owned(self.tells[tell_id]), f"tell {tell_id}")
                await self.move(tell_id, "interrupted")
                return TellReply(status="interrupted", tell=self.tells[tell_id])
        raise AssertionError(f"unexpected {request!r}")

    async def move(self, tell_id: str, status: str, text: str = "") -> None:
        info = self.tells[tell_id]
        self.tells[tell_id] = msgspec.structs.replace(
            info,
            status=status,
            text=info.text + text,
            finished_at=2000.0 if status in ("completed", "interrupted") else None,
        )
        self.moved.set()
        self.moved = trio.Event()
        for send in list(self.watchers):
            if text:
                await send(TellText(tell_id=tell_id, text=text))
            await send(TellState(tell_id=tell_id, status=status))  # type: ignore[arg-type]


def _owned(info: TellInfo) -> policy.Owned:
    return policy.Owned(info.from_team, info.to_team, info.chain_id)


def config() -> IrisConfig:
    return parse_config(b"teams:\n  alpha: {path: /tmp}\n  beta: {path: /tmp}\n", source="c.yaml")


class Client:
    """ASGI requests to the face, as hypercorn makes them, through the gate's refusals (as
    the HTTP app serves it: what the face refuses before a call is read, the gate answers)."""

    def __init__(self, face: A2AFace, token: str = "") -> None:
        self.face = Refusals(face, jsonrpc=handles)
        self.token = token

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        wanted = {"a2a-version": "1.0", **(headers or {})}
        if self.token:
            wanted["authorization"] = f"Bearer {self.token}"
        scope: dict[str, Any] = {
            "type": "http",
            "method": method,
            "path": path,
            "query_string": b"",
            "headers": [(k.lower().encode(), v.encode()) for k, v in wanted.items()],
            "client": ("127.0.0.1", 5000),
        }
        sent_body = False
        status, out_headers, chunks = 0, {}, bytearray()

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await trio.sleep_forever()
            raise AssertionError  # pragma: no cover

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status, out_headers
            if message["type"] == "http.response.start":
                status = message["status"]
                out_headers = {k.decode(): v.decode() for k, v in message["headers"]}
            else:
                chunks.extend(message.get("body", b""))

        await self.face(scope, receive, send)
        return status, out_headers, bytes(chunks)

    async def rpc(self, method: str, params: Any, **headers: str) -> tuple[int, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        status, _, data = await self.request("POST", "/a2a/alpha", body, headers)
        return status, json.loads(data)


@pytest.fixture
def access(tmp_path: Path) -> Access:
    found = Access.open(tmp_path)
    found.url = "http://127.0.0.1:1615"
    return found


@pytest.fixture
def core() -> FakeCore:
    return FakeCore()


def failed_auth(scope: Any) -> None:
    pass


@pytest.fixture
def face(core: FakeCore, access: Access) -> A2AFace:
    async def teams() -> list[TeamInfo]:
        reply = await core.dispatch(ListTeams(), Caller(), _drop)
        assert isinstance(reply, TeamsReply)
        return reply.teams

    return A2AFace(A2AService(core.dispatch, config), access, teams, failed_auth)


async def _drop(event: Event) -> None:
    pass


MESSAGE = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}


async def test_the_cards_are_public_and_name_each_teams_endpoint(face: A2AFace) -> None:
    anyone = Client(face)
    status, headers, body = await anyone.request("GET", "/a2a/beta/.well-known/agent-card.json")
    card = json.loads(body)
    assert status == 200 and card["name"] == "beta" and headers["content-type"] == "application/json"
    assert card["supportedInterfaces"][0]["url"] == "http://127.0.0.1:1615/a2a/beta"
    root = json.loads((await anyone.request("GET", "/.well-known/agent-card.json"))[2])
    assert root["name"] == "alpha"
    assert (await anyone.request("GET", "/a2a/gamma/.well-known/agent-card.json"))[0] == 404
    status, _, body = await anyone.request("GET", "/a2a/bta/.well-known/agent-card.json")
    assert status == 404 and b"no team 'bta' here; did you mean /a2a/beta? the agents here are: alpha, beta" in body
    assert (await anyone.request("POST", "/.well-known/agent-card.json"))[0] == 405
    assert (await anyone.request("GET", "/a2a/alpha"))[0] == 405
    assert (await anyone.request("GET", "/a2a/alpha/else"))[0] == 404


async def test_a_call_to_the_agents_url_with_a_slash_joined_is_served_not_redirected(
    face: A2AFace, access: Access
) -> None:
    # What an HTTP client makes of "/" joined to the card's URL (the A2A TCK's httpx does).
    body = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}}).encode()
    status, headers, data = await Client(face, access.owner_token).request("POST", "/a2a/alpha/", body)
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(data)["id"] == 4 and "result" in json.loads(data)


async def test_methods_need_a_token_and_a_childs_is_refused(face: A2AFace, access: Access, tmp_path: Path) -> None:
    status, answer = await Client(face).rpc("ListTasks", {})
    assert status == 401 and "iris a2a token" in answer["error"]["message"]
    status, answer = await Client(face, "wrong").rpc("ListTasks", {})
    assert status == 401 and "not valid" in answer["error"]["message"]
    child = access.mint(Caller.child(team="beta", pair="beta->alpha"))
    status, answer = await Client(face, child).rpc("ListTasks", {})
    assert status == 403 and "team_tell" in answer["error"]["message"]
    agent = a2a_tokens.issue(a2a_tokens.tokens_file(tmp_path), "crm")
    assert (await Client(face, agent).rpc("ListTasks", {}))[0] == 200
    a2a_tokens.revoke(a2a_tokens.tokens_file(tmp_path), "crm")
    status, answer = await Client(face, agent).rpc("ListTasks", {})
    assert status == 401 and "revoked" in answer["error"]["message"] and "iris a2a token" in answer["error"]["message"]
    assert (await Client(face, access.owner_token).rpc("ListTasks", {}))[0] == 200


async def test_failed_authentications_are_limited_like_the_rest_of_the_face(core: FakeCore, access: Access) -> None:
    def limited(scope: Any) -> None:
        raise RateLimitedError("too many failed authentications from 127.0.0.1; try again in 60 s")

    face = A2AFace(A2AService(core.dispatch, config), access, _no_teams, limited)
    status, answer = await Client(face, "wrong").rpc("ListTasks", {})
    assert status == 429 and answer["error"]["code"] == errors.REFUSED and "too many" in answer["error"]["message"]


async def _no_teams() -> list[TeamInfo]:
    return []


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        (b"{nope", {}, -32700),
        # JSON nested past msgspec's depth is a parse error, not irisd failing (-32603).
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"x": ' + b"[" * 100_000 + b"]" * 100_000
         + b"}}", {}, -32700),
        (b'{"id": 1, "method": "GetTask"}', {}, -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}', {}, -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}', {"a2a-version": "0.3"}, -32009),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}', {"a2a-version": ""}, -32009),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "Nope"}', {}, -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTaskPushNotificationConfig"}', {}, -32003),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}', {}, -32004),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 3}}', {}, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t9"}}', {}, -32001),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 0}}', {}, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 101}}', {}, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t1", "historyLength": -1}}', {}, -32602),
        # Not Unicode: in the call itself a parse error, in its params an invalid request.
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetT\xffask"}', {}, -32700),
        (rb'{"jsonrpc": "2.0", "id": 1, "method": "GetTask\ud800"}', {}, -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "\xff"}}', {}, -32600),
    ],
)
async def test_json_rpc_and_a2a_errors_have_their_codes(
    face: A2AFace, access: Access, body: bytes, headers: dict[str, str], code: int
) -> None:
    status, _, data = await Client(face, access.owner_token).request("POST", "/a2a/alpha", body, headers)
    answer = json.loads(data)
    assert status == 200 and answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code, answer
    if code == -32001:
        assert answer["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize("code", sorted(errors._BY_CODE))
async def test_every_iris_error_is_answered_with_the_json_rpc_code_its_class_carries(
    face: A2AFace, access: Access, code: str
) -> None:
    error = errors._BY_CODE[code]
    status, answer = await Client(face, access.owner_token).rpc("GetTask", {"id": code})
    assert answer["error"]["code"] == error.jsonrpc_code
    assert answer["error"]["message"].endswith(f"refused: {code}") or code == "not_found"  # "no task ..."
    assert status == (error.http_status if error.http_status in (401, 403) else 200)


async def test_a_full_queue_rejects_the_message_as_a_task(face: A2AFace, access: Access) -> None:
    """Iris refusing for now is a REJECTED task with the reason, not -32603 irisd failed."""
    message = {**MESSAGE, "parts": [{"text": "full"}]}
    status, answer = await Client(face, access.owner_token).rpc("SendMessage", {"message": message})
    task = answer["result"]["task"]
    assert status == 200 and task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "queue is full" in task["status"]["message"]["parts"][0]["text"]


async def test_send_message_waits_for_the_answer_and_returns_the_task(
    face: A2AFace, core: FakeCore, access: Access
) -> None:
    client = Client(face, access.owner_token)
    answers: list[Any] = []

    async def send() -> None:
        answers.append(await client.rpc("SendMessage", {"message": MESSAGE}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await core.submitted.wait()
        await core.move("t1", "running")
        await core.move("t1", "completed", "the answer")
    _, answer = answers[0]
    task = answer["result"]["task"]
    assert task["id"] == "t1" and task["contextId"] == "external->alpha"
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "the answer"}]
    sent = next(r for r, _ in core.requests if isinstance(r, Tell))
    assert sent.timeout_ms == -1 and sent.from_team is None and sent.message == "hello"


async def test_a_streamed_answer_comes_as_task_status_chunks_and_end(
    face: A2AFace, core: FakeCore, tmp_path: Path
) -> None:
    client = Client(face, a2a_tokens.issue(a2a_tokens.tokens_file(tmp_path), "crm"))
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "SendStreamingMessage", "params": {"message": MESSAGE}})
    result: list[Any] = []

    async def stream() -> None:
        result.append(await client.request("POST", "/a2a/alpha", body.encode()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream)
        await core.submitted.wait()
        await core.move("t1", "running")
        await core.move("t1", "running", "one ")
        await core.move("t1", "running", "two")
        await core.move("t1", "completed")
    status, headers, data = result[0]
    assert status == 200 and headers["content-type"] == "text/event-stream"
    frames = [json.loads(line.removeprefix("data: ")) for line in data.decode().split("\n\n") if line]
    assert {f["id"] for f in frames} == {9}
    events = [f["result"] for f in frames]
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert events[0]["task"]["contextId"] == "a2a:crm->alpha"
    assert events[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [(c["artifact"]["parts"][0]["text"], c.get("append", False), c.get("lastChunk", False)) for c in chunks] == [
        ("one ", False, False),
        ("two", True, True),
    ]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert core.tells["t1"].from_team == "a2a:crm"  # the token said who, not a field


async def test_return_immediately_then_cancel(face: A2AFace, core: FakeCore, access: Access) -> None:
    client = Client(face, access.owner_token)
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task = (await client.rpc("SendMessage", params))[1]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    cancelled = (await client.rpc("CancelTask", {"id": task["id"]}))[1]["result"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    again = (await client.rpc("CancelTask", {"id": task["id"]}))[1]
    assert again["error"]["code"] == -32002


async def test_an_agent_sees_only_its_own_tasks(face: A2AFace, core: FakeCore, access: Access, tmp_path: Path) -> None:
    path = a2a_tokens.tokens_file(tmp_path)
    mine, theirs = Client(face, a2a_tokens.issue(path, "a")), Client(face, a2a_tokens.issue(path, "b"))
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task_id = (await mine.rpc("SendMessage", params))[1]["result"]["task"]["id"]
    for method in ("GetTask", "CancelTask"):  # the core's refusal, a 403 as on every face
        status, refused = await theirs.rpc(method, {"id": task_id})
        assert status == 403 and refused["error"]["code"] == -32600, refused
        assert "the A2A agent 'a2a:b' may not read tell" in refused["error"]["message"]
    assert (await theirs.rpc("ListTasks", {}))[1]["result"]["tasks"] == []
    listed = (await mine.rpc("ListTasks", {}))[1]["result"]
    assert [t["id"] for t in listed["tasks"]] == [task_id] and listed["nextPageToken"] == ""
    assert "artifacts" not in listed["tasks"][0]
    owner = Client(face, access.owner_token)
    assert (await owner.rpc("GetTask", {"id": task_id}))[1]["result"]["id"] == task_id


async def test_list_tasks_pages_newest_first(face: A2AFace, core: FakeCore, access: Access) -> None:
    client = Client(face, access.owner_token)
    for i in range(3):
        params = {"message": {**MESSAGE, "messageId": f"m{i}"}, "configuration": {"returnImmediately": True}}
        await client.rpc("SendMessage", params)
    first = (await client.rpc("ListTasks", {"pageSize": 2}))[1]["result"]
    assert [t["id"] for t in first["tasks"]] == ["t3", "t2"] and first["totalSize"] == 3
    rest = (await client.rpc("ListTasks", {"pageSize": 2, "pageToken": first["nextPageToken"]}))[1]["result"]
    assert [t["id"] for t in rest["tasks"]] == ["t1"] and rest["nextPageToken"] == ""
    working = (await client.rpc("ListTasks", {"status": "TASK_STATE_WORKING"}))[1]["result"]
    assert working["tasks"] == [] and working["totalSize"] == 0


async def test_a_message_to_a_finished_task_or_another_context_is_refused(
    face: A2AFace, core: FakeCore, access: Access
) -> None:
    client = Client(face, access.owner_token)
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task_id = (await client.rpc("SendMessage", params))[1]["result"]["task"]["id"]
    await core.move(task_id, "completed", "done")
    follow_up = {**MESSAGE, "messageId": "m2", "taskId": task_id}
    assert (await client.rpc("SendMessage", {"message": follow_up}))[1]["error"]["code"] == -32004
    elsewhere = {**MESSAGE, "contextId": "a2a:someone->alpha"}
    assert (await client.rpc("SendMessage", {"message": elsewhere}))[1]["error"]["code"] == -32602
    assert (await client.rpc("SendMessage", {"message": {**MESSAGE, "taskId": "t404"}}))[1]["error"]["code"] == -32001


async def test_an_agent_cannot_decide_an_approval_and_says_who_can(
    face: A2AFace, core: FakeCore, tmp_path: Path
) -> None:
    client = Client(face, a2a_tokens.issue(a2a_tokens.tokens_file(tmp_path), "crm"))
    params = {"message": MESSAGE, "configuration": {"returnImmediately": True}}
    task_id = (await client.rpc("SendMessage", params))[1]["result"]["task"]["id"]
    core.tells[task_id] = msgspec.structs.replace(core.tells[task_id], approval_id="ap1")
    await core.move(task_id, "awaiting_approval")
    got = (await client.rpc("GetTask", {"id": task_id}))[1]["result"]
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answer = {**MESSAGE, "messageId": "m2", "taskId": task_id, "parts": [{"text": "allow"}]}
    status, refused = await client.rpc("SendMessage", {"message": answer})
    assert status == 200 and refused["error"]["code"] == -32004
    assert "only the owner of this Iris decides" in refused["error"]["message"]


async def test_a_bug_answers_a_json_rpc_internal_error_not_a_traceback(face: A2AFace, access: Access) -> None:
    status, answer = await Client(face, access.owner_token).rpc("GetTask", {"id": "bug"})
    assert status == 200 and answer["error"]["code"] == -32603
    assert "RuntimeError: a bug" in answer["error"]["message"] and "see the irisd log" in answer["error"]["message"]


async def test_a_streamed_answer_that_is_data_ends_with_the_data_replacing_the_text(
    face: A2AFace, core: FakeCore, access: Access
) -> None:
    client = Client(face, access.owner_token)
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage", "params": {"message": MESSAGE}})
    result: list[Any] = []

    async def stream() -> None:
        result.append(await client.request("POST", "/a2a/alpha", body.encode()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream)
        await core.submitted.wait()
        await core.move("t1", "running", "```json\n")
        await core.move("t1", "running", '{"count": 42}\n```')
        await core.move("t1", "completed")
    frames = [json.loads(line.removeprefix("data: ")) for line in result[0][2].decode().split("\n\n") if line]
    updates = [f["result"]["artifactUpdate"] for f in frames if "artifactUpdate" in f["result"]]
    assert updates[0]["artifact"]["parts"] == [{"text": "```json\n"}]
    assert updates[-1]["artifact"]["parts"] == [{"data": {"count": 42}, "mediaType": "application/json"}]
    assert "append" not in updates[-1] and updates[-1]["lastChunk"] is True
    task = (await client.rpc("GetTask", {"id": "t1"}))[1]["result"]
    assert task["artifacts"][0]["parts"] == [{"data": {"count": 42}, "mediaType": "application/json"}]
    assert task["status"]["message"]["parts"] == [{"text": '```json\n{"count": 42}\n```'}]
