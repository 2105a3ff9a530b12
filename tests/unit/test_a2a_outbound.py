"""An A2A agent as a team, the pure parts: its config, its card, the task states as the
tell's, the message Iris sends, the SSE reader."""

from __future__ import annotations

import msgspec
import pytest

from iris_common.config import IrisConfig, expand_headers, parse_config, team_unavailable
from irisd.a2a.card import card_url, check_card
from irisd.a2a.client import SseParser
from irisd.a2a.message import outbound_request
from irisd.a2a.task import POLL_FIRST_S, POLL_MAX_S, Ending, TaskFollower, next_poll_delay
from protocol import a2a
from protocol.errors import A2AAgentError, ConfigError

S = a2a.TaskState


def parse(text: str) -> IrisConfig:
    return parse_config(text.encode(), source="config.yaml")


# --- config -------------------------------------------------------------------------------


def test_an_a2a_team_has_a_url_headers_and_no_folder() -> None:
    config = parse("""
teams:
  helper:
    a2a: https://agent.example/.well-known/agent-card.json
    headers: {Authorization: "Bearer ${HELPER_TOKEN}", X-Team: iris}
    description: a foreign agent
""")
    team = config.team("helper")
    assert team.a2a == "https://agent.example/.well-known/agent-card.json" and team.path == ""
    assert team.description == "a foreign agent"
    assert team_unavailable(team) == ""  # no folder to miss
    assert team.silence_ms is None  # an agent may work long without a word, unless told otherwise
    timed = parse("teams:\n  h: {a2a: 'http://agent', responseTimeout: 5000}\n").team("h")
    assert timed.silence_ms == 5000
    assert expand_headers(team, {"HELPER_TOKEN": "s3cret"}) == {"Authorization": "Bearer s3cret", "X-Team": "iris"}
    with pytest.raises(ConfigError, match=r"uses \$\{HELPER_TOKEN\}, which is not set in irisd's environment"):
        expand_headers(team, {})


@pytest.mark.parametrize(
    ("team", "expected"),
    [
        ("{a2a: ''}", "key 'teams.h.a2a' must be the URL of the agent's card"),
        ("{a2a: ftp://agent}", r"a2a 'ftp://agent' is not an http\(s\) URL"),
        ("{a2a: 'http:///x'}", r"is not an http\(s\) URL"),
        ("{a2a: http://agent, path: /tmp}", "'path' cannot apply .* an A2A team takes only a2a, color, description"),
        ("{a2a: http://agent, permissions: skip, env: {A: b}}", "'env', 'permissions' cannot apply"),
        ("{a2a: http://agent, budget: {dailyUsd: 1}}", "'budget' cannot apply"),
        # A misspelt key is a typo, not a claude team's key: say so, as for any team.
        ("{a2a: http://agent, header: {A: b}}", r"unknown key 'teams.h.header'; check its spelling .* takes only"),
        ("{path: /tmp, headers: {A: b}}", "'headers' is only for an A2A agent; add 'a2a: URL'"),
        ("{a2a: http://agent, headers: {'A B': c}}", "header name 'teams.h.headers.A B' is not a valid HTTP header"),
        ("{a2a: http://agent, headers: {A: '${1X}'}}", "'1X' is not a variable name"),
        ("{a2a: http://agent, headers: {A: \"x\\ny\"}}", "holds a line break"),
        ("{a2a: http://agent, responseTimeout: 10}", "'teams.h.responseTimeout' is 10; it must be at least 1000"),
    ],
)
def test_a2a_team_mistakes_name_the_key_and_the_fix(team: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        parse(f"teams:\n  h: {team}\n")


# --- the card -------------------------------------------------------------------------------


def card(**changes: object) -> bytes:
    body: dict[str, object] = {
        "name": "Far agent",
        "description": "d",
        "supportedInterfaces": [
            {"url": "http://far/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://far/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"},
        ],
        "version": "1",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
    body.update(changes)
    return msgspec.json.encode(body)


def test_a_card_gives_its_json_rpc_interface_and_whether_it_streams() -> None:
    facts = check_card(card(), url="http://far/card", team="far")
    bare = msgspec.json.encode({"name": "n", "supportedInterfaces": msgspec.json.decode(card())["supportedInterfaces"]})
    assert check_card(bare, url="u", team="far").rpc_url == "http://far/rpc"  # what Iris does not use may be missing
    assert (facts.name, facts.rpc_url, facts.tenant, facts.streaming) == ("Far agent", "http://far/rpc", "t1", True)
    assert not check_card(card(capabilities={}), url="u", team="far").streaming


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"<html>", "is not JSON; check that 'teams.far.a2a' is the URL of the agent card"),
        (
            msgspec.json.encode({"name": "old", "url": "http://far/"}),
            r"is an A2A 0.x card \(a top-level 'url', no 'supportedInterfaces'\); Iris speaks A2A 1.0",
        ),
        (msgspec.json.encode({"name": 3}), "is not an A2A 1.0 agent card .*Expected `str`, got `int`"),
        (card(supportedInterfaces=[]), r"offers no JSON-RPC interface of A2A 1.x \(it offers: nothing\)"),
        (
            card(supportedInterfaces=[{"url": "http://x", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]),
            r"offers no JSON-RPC interface of A2A 1.x \(it offers: JSONRPC 0.3\)",
        ),
        (card(name=" "), "has no name"),
        (
            card(supportedInterfaces=[{"url": "ws://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]),
            "gives JSON-RPC URL 'ws://x', which is not http",
        ),
    ],
)
def test_a_card_iris_cannot_use_says_why(raw: bytes, expected: str) -> None:
    with pytest.raises(A2AAgentError, match=f"team 'far': the agent card at http://far/card {expected}"):
        check_card(raw, url="http://far/card", team="far")


def test_the_card_url_may_be_the_agents_base_url() -> None:
    assert card_url("https://a.example") == "https://a.example/.well-known/agent-card.json"
    assert card_url("https://a.example/agents/x/") == "https://a.example/agents/x/.well-known/agent-card.json"
    assert card_url("https://a.example/card.json") == "https://a.example/card.json"


# --- task states as the tell's ----------------------------------------------------------------


def status(state: a2a.TaskState, text: str = "") -> a2a.TaskStatus:
    message = a2a.Message(message_id="m", role=a2a.Role.AGENT, parts=[a2a.Part(text=text)]) if text else None
    return a2a.TaskStatus(state=state, message=message)


def task(state: a2a.TaskState, text: str = "", artifacts: list[str] | None = None) -> a2a.Task:
    return a2a.Task(
        id="t1", context_id="c1", status=status(state, text),
        artifacts=[a2a.Artifact(artifact_id=f"a{i}", parts=[a2a.Part(text=t)]) for i, t in enumerate(artifacts or [])],
    )


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (S.SUBMITTED, None),
        (S.WORKING, None),
        (S.COMPLETED, Ending("completed", "the answer")),
        (S.INPUT_REQUIRED, Ending("completed", "Which colour?", open_task="t1")),
        (S.FAILED, Ending("failed", "the answer", "agent X failed the task: Which colour?")),
        (S.REJECTED, Ending("failed", "the answer", "agent X rejected the task: Which colour?")),
        (S.CANCELED, Ending("interrupted", "the answer", "agent X cancelled the task: Which colour?")),
    ],
)
def test_each_a2a_state_is_a_state_of_the_tell(state: a2a.TaskState, expected: Ending | None) -> None:
    follower = TaskFollower("agent X")
    follower.task(task(state, "Which colour?", ["the answer"]))
    assert follower.ending == expected
    assert follower.started == (state != S.SUBMITTED)
    assert (follower.task_id, follower.context_id) == ("t1", "c1")


def test_auth_required_fails_with_the_fix_and_a_silent_failure_says_so() -> None:
    follower = TaskFollower("agent X")
    follower.task(task(S.AUTH_REQUIRED))
    ending = follower.ending
    assert ending is not None and ending.status == "failed"
    assert "wants authentication; give it the credentials it needs in the team's 'headers'" in ending.error
    follower = TaskFollower("agent X")
    follower.task(task(S.FAILED))
    assert follower.ending == Ending("failed", "", "agent X failed the task: it gave no reason")


def test_a_stream_builds_the_answer_from_artifact_chunks() -> None:
    follower = TaskFollower("agent X")
    follower.stream(a2a.StreamResponse(task=task(S.SUBMITTED)))
    assert not follower.started
    follower.stream(a2a.StreamResponse(status_update=a2a.TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=status(S.WORKING))))
    assert follower.started and follower.text == ""

    def chunk(text: str, *, append: bool, artifact: str = "a") -> a2a.StreamResponse:
        event = a2a.TaskArtifactUpdateEvent(
            task_id="t1", context_id="c1", artifact=a2a.Artifact(artifact_id=artifact, parts=[a2a.Part(text=text)]),
            append=append,
        )
        return a2a.StreamResponse(artifact_update=event)

    follower.stream(chunk("echo", append=False))
    follower.stream(chunk(" #1", append=True))
    assert follower.text == "echo #1"
    follower.stream(chunk("second", append=False, artifact="b"))
    assert follower.text == "echo #1\n\nsecond"
    follower.stream(chunk("replaced", append=False))  # not appended: the artifact starts over
    assert follower.text == "replaced\n\nsecond"
    follower.stream(a2a.StreamResponse(status_update=a2a.TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=status(S.COMPLETED))))
    assert follower.ending == Ending("completed", "replaced\n\nsecond")


def test_a_direct_message_completes_and_foreign_events_are_refused() -> None:
    follower = TaskFollower("agent X")
    follower.send_result(a2a.SendMessageResponse(message=a2a.Message(
        message_id="m", role=a2a.Role.AGENT, context_id="c9", parts=[a2a.Part(text="hi "), a2a.Part(data={"a": 1})])))
    assert follower.ending == Ending("completed", 'hi {"a":1}') and follower.context_id == "c9"
    follower = TaskFollower("agent X")
    follower.task(task(S.WORKING))
    with pytest.raises(A2AAgentError, match="sent an event of task t2 while Iris follows task t1"):
        follower.status_update(a2a.TaskStatusUpdateEvent(task_id="t2", context_id="c1", status=status(S.WORKING)))
    with pytest.raises(A2AAgentError, match="none of task, message, statusUpdate, artifactUpdate"):
        follower.stream(a2a.StreamResponse())
    with pytest.raises(A2AAgentError, match="neither a task nor a message"):
        follower.send_result(a2a.SendMessageResponse())


def test_polling_backs_off_while_nothing_changes() -> None:
    delays = [first := next_poll_delay(None, changed=False)]
    for _ in range(6):
        delays.append(next_poll_delay(delays[-1], changed=False))
    assert first == POLL_FIRST_S and delays[1:4] == [0.5, 1.0, 2.0] and delays[-1] == POLL_MAX_S
    assert next_poll_delay(POLL_MAX_S, changed=True) == POLL_FIRST_S


# --- the message Iris sends ------------------------------------------------------------------------


def test_the_message_carries_the_chain_the_context_and_the_open_task() -> None:
    request = outbound_request(
        tell_id="t-1", message_id="t-1", text="hello", from_team="web", to_team="far", chain_id="", hops=0,
        context_id="c1", open_task="task-7", tenant="t1", streaming=False,
    )
    wire = msgspec.json.decode(a2a.encoder.encode(request))
    message = wire["message"]
    assert message["role"] == "ROLE_USER" and message["parts"] == [{"text": "hello"}]
    assert message["contextId"] == "c1" and message["taskId"] == "task-7" and message["messageId"] == "t-1"
    assert message["metadata"] == {"iris": {"chainId": "t-1", "path": ["web", "far"]}}  # hops 0: left out
    assert wire["tenant"] == "t1" and wire["configuration"]["returnImmediately"] is True
    nested = outbound_request(
        tell_id="t-2", message_id="t-2", text="x", from_team=None, to_team="far", chain_id="chain-9", hops=2,
        context_id="", open_task="", tenant="", streaming=True,
    )
    wire = msgspec.json.decode(a2a.encoder.encode(nested))
    assert wire["message"]["metadata"]["iris"] == {"chainId": "chain-9", "hops": 2, "path": ["external", "far"]}
    # A nested tell sends the whole chain's teams, so the far side's loop guard sees them all.
    deep = outbound_request(
        tell_id="t-3", message_id="t-3", text="x", from_team="beta", to_team="far", chain_id="chain-9", hops=2,
        context_id="", open_task="", tenant="", streaming=True, path=("alpha", "beta", "far"),
    )
    wire = msgspec.json.decode(a2a.encoder.encode(deep))
    assert wire["message"]["metadata"]["iris"]["path"] == ["alpha", "beta", "far"]
    assert "contextId" not in wire["message"] and "taskId" not in wire["message"]
    assert "returnImmediately" not in wire["configuration"]  # a stream brings the task at once


# --- server-sent events ----------------------------------------------------------------------------


def test_sse_events_end_at_a_blank_line_and_join_data_lines() -> None:
    parser = SseParser(limit=100)
    lines = [": a comment", "event: x", "data: {\"a\":", "data: 1}", "", "", "data:2"]
    assert [parser.line(line) for line in lines] == [None, None, None, None, '{"a":\n1}', None, None]
    assert parser.end() == "2"
    with pytest.raises(A2AAgentError, match="over 0 MiB"):
        SseParser(limit=3).line("data: 1234")
