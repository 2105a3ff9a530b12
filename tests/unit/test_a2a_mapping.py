"""Iris things as A2A things: states, tasks, messages in, chains, tokens, the card."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
import pytest

from iris_common import a2a_tokens
from irisd.a2a.inbound import mapping
from irisd.a2a.inbound.mapping import A2AError, TaskView
from irisd.caller import Caller
from protocol import a2a
from protocol.errors import InvalidRequestError, NotFoundError, PermissionDeniedError
from protocol.messages import (
    AnswerQuestion,
    CancelTell,
    ChainRef,
    Decide,
    GetStatus,
    ListQuestions,
    ListTells,
    QuestionInfo,
    TeamInfo,
    Tell,
    TellInfo,
    TellPhase,
    Watch,
)

T0 = 1_764_000_000.0


def tell(status: str, **fields: object) -> TellInfo:
    values: dict[str, object] = {
        "id": "t1",
        "from_team": "a2a:crm",
        "to_team": "alpha",
        "message": "hi",
        "status": status,
        "created_at": T0,
    }
    values.update(fields)
    return msgspec.convert(values, TellInfo)


def question(status: str, **fields: object) -> QuestionInfo:
    values: dict[str, object] = {
        "id": "q1",
        "from_team": "a2a:crm",
        "to_team": "alpha",
        "session_id": "s",
        "tell_id": "t1",
        "question": "Go?",
        "context": "",
        "confidence": 0.9,
        "status": status,
        "created_at": T0,
        "expires_at": T0 + 1,
    }
    values.update(fields)
    return msgspec.convert(values, QuestionInfo)


@pytest.mark.parametrize(
    ("info", "q", "asks", "state"),
    [
        (tell("queued"), None, False, a2a.TaskState.SUBMITTED),
        (tell("running"), None, False, a2a.TaskState.WORKING),
        (tell("awaiting_approval"), None, False, a2a.TaskState.INPUT_REQUIRED),
        (tell("completed", text="done"), None, False, a2a.TaskState.COMPLETED),
        (tell("completed", text="Go?"), None, True, a2a.TaskState.INPUT_REQUIRED),
        (tell("completed", text="Go?"), question("pending"), True, a2a.TaskState.INPUT_REQUIRED),
        (tell("completed", text="Go?"), question("dismissed"), True, a2a.TaskState.CANCELED),
        (tell("completed", text="Go?"), question("expired"), True, a2a.TaskState.COMPLETED),
        (tell("failed", error="claude exited", started_at=T0), None, False, a2a.TaskState.FAILED),
        (tell("timed_out", started_at=T0), None, False, a2a.TaskState.FAILED),
        (
            tell("failed", error="loop: alpha is already waiting in this chain (a -> alpha)"),
            None,
            False,
            a2a.TaskState.REJECTED,
        ),
        (
            tell("failed", error="this tell would be hop 5 of a chain of nested tells; the limit is 4"),
            None,
            False,
            a2a.TaskState.REJECTED,
        ),
        (tell("interrupted"), None, False, a2a.TaskState.CANCELED),
    ],
)
def test_tell_states_map_to_task_states(
    info: TellInfo, q: QuestionInfo | None, asks: bool, state: a2a.TaskState
) -> None:
    assert mapping.task_state(info, q, asks) is state


def test_a_completed_task_carries_its_answer_as_artifact_and_message() -> None:
    view = TaskView([tell("completed", text="the answer", finished_at=T0 + 2.5)], context_id="a2a:crm->alpha")
    task = mapping.to_task(view)
    assert task.id == "t1" and task.context_id == "a2a:crm->alpha"
    assert task.status.timestamp == "2025-11-24T16:00:02.500Z"
    assert task.status.message is not None and task.status.message.parts[0].text == "the answer"
    assert task.artifacts != msgspec.UNSET and task.artifacts[0].parts[0].text == "the answer"
    assert [m.role for m in task.history or []] == [a2a.Role.USER, a2a.Role.AGENT]
    assert mapping.to_task(view, history_length=0).history is msgspec.UNSET
    assert len(mapping.to_task(view, history_length=1).history or []) == 1
    assert mapping.to_task(view, include_artifacts=False).artifacts is msgspec.UNSET
    with pytest.raises(msgspec.ValidationError, match="historyLength"):  # the type holds the limit
        msgspec.convert({"id": "t1", "historyLength": -1}, a2a.GetTaskRequest)


def test_a_task_continued_through_its_question_reads_as_one() -> None:
    first = tell("completed", text="Go?")
    second = tell("running", id="t2", message="yes")
    view = TaskView([first, second], question=None, context_id="a2a:crm->alpha")
    task = mapping.to_task(view)
    assert task.id == "t1" and task.status.state is a2a.TaskState.WORKING
    assert [m.parts[0].text for m in task.history or []] == ["hi", "Go?", "yes"]


def test_awaiting_approval_says_what_waits_and_how_to_answer() -> None:
    phase = TellPhase(name="awaiting_approval", tool="Bash", detail="rm -rf build", approval_id="ap1")
    view = TaskView([tell("awaiting_approval", approval_id="ap1", phase=phase)])
    message = mapping.status_message(view)
    assert message is not None
    assert "Bash (rm -rf build)" in (message.parts[0].text or "") and "iris approve ap1" in (
        message.parts[0].text or ""
    )
    assert mapping.decision("Allow, fine") == (True, "fine")
    assert mapping.decision("no: too risky") == (False, "too risky")
    assert mapping.decision("maybe") is None


def message(*parts: a2a.Part, role: a2a.Role = a2a.Role.USER) -> a2a.Message:
    return a2a.Message(message_id="m", role=role, parts=list(parts))


def test_message_parts_become_the_tells_text() -> None:
    text = mapping.message_text(
        message(
            a2a.Part(text="Look at this"),
            a2a.Part(data={"k": 1}, media_type="application/json"),
            a2a.Part(url="https://x/y.txt", filename="y.txt"),
            a2a.Part(raw=b"plain bytes", media_type="text/plain", filename="n.txt"),
        )
    )
    assert text.split("\n\n") == [
        "Look at this",
        '```json\n{\n "k": 1\n}\n```',
        "(file y.txt at https://x/y.txt)",
        "```n.txt\nplain bytes\n```",
    ]


@pytest.mark.parametrize(
    ("msg", "code"),
    [
        (message(a2a.Part(raw=b"\x89PNG", media_type="image/png")), a2a.CONTENT_TYPE_NOT_SUPPORTED),
        (message(a2a.Part(raw=b"\xff\xfe")), a2a.CONTENT_TYPE_NOT_SUPPORTED),
        (message(), a2a.INVALID_PARAMS),
        (message(a2a.Part()), a2a.INVALID_PARAMS),
        (message(a2a.Part(text="hi"), role=a2a.Role.AGENT), a2a.INVALID_PARAMS),
    ],
)
def test_what_claude_cannot_read_is_refused_never_dropped(msg: a2a.Message, code: int) -> None:
    with pytest.raises(A2AError) as raised:
        mapping.message_text(msg)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("1.0", True),
        ("1.0.3", True),
        (" 1.0 ", True),
        (None, False),
        ("", False),
        ("0.3", False),
        ("2.0", False),
        ("1", True),  # a missing minor is 0
        ("10", False),
        ("1.1", False),
    ],
)
def test_only_version_1_0_is_spoken_and_no_header_means_0_3(header: str | None, ok: bool) -> None:
    if ok:
        mapping.check_version(header)
        return
    with pytest.raises(A2AError) as raised:
        mapping.check_version(header)
    assert raised.value.code == a2a.VERSION_NOT_SUPPORTED and "A2A-Version: 1.0" in raised.value.message


def chain(**fields: object) -> a2a.IrisChain | None:
    return mapping.incoming_chain({"iris": {"chainId": "c", **fields}})


def test_an_iris_chain_in_the_metadata_is_read_within_its_limits() -> None:
    # (Its hop limit and loop guard are admission's: tests/unit/test_admission.py.)
    assert mapping.incoming_chain(None, {"other": 1}) is None
    assert mapping.incoming_chain(None, {"iris": {"chainId": "r"}}) == a2a.IrisChain(chain_id="r")
    assert chain(hops=1, path=["alpha", "web"]) == a2a.IrisChain(chain_id="c", hops=1, path=["alpha", "web"])
    for broken in ({"hops": "x"}, {"hops": -1}, {"path": ["web"] * 65}):
        with pytest.raises(A2AError) as raised:
            chain(**broken)
        assert raised.value.code == a2a.INVALID_PARAMS and "metadata.iris is not an Iris chain" in raised.value.message


def test_page_tokens_are_cursors_over_the_sorted_tasks() -> None:
    views = [TaskView([tell("completed", id=f"t{i}", finished_at=T0 + i)]) for i in range(5)]
    views.sort(key=mapping.sort_key, reverse=True)
    token = mapping.page_token(views[1])
    assert [v.id for v in mapping.after_token(views, token)] == ["t2", "t1", "t0"]
    assert mapping.after_token(views, "") == views
    with pytest.raises(A2AError):
        mapping.after_token(views, "%%%")


def test_the_card_is_the_team_over_json_rpc_with_a_bearer_token() -> None:
    card = mapping.card(TeamInfo(name="alpha", path="/p", description="Alpha"), "http://127.0.0.1:1/a2a/alpha", "1.2")
    assert card.supported_interfaces == [
        a2a.AgentInterface(url="http://127.0.0.1:1/a2a/alpha", protocol_binding="JSONRPC", protocol_version="1.0")
    ]
    assert card.capabilities.streaming is True and card.skills[0].description == "Alpha"
    assert card.security_requirements[0].schemes == {"bearer": a2a.StringList()}


# --- tokens and callers --------------------------------------------------------------------------


def test_agent_tokens_are_kept_as_digests_in_a_private_file_and_revocable(tmp_path: Path) -> None:
    path = a2a_tokens.tokens_file(tmp_path)
    seen = a2a_tokens.AgentTokens(path)
    token = a2a_tokens.issue(path, "crm-bot", now=T0)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and token not in path.read_text()
    assert seen.name_for(token) == "crm-bot" and seen.name_for("guess") is None
    again = a2a_tokens.issue(path, "crm-bot", now=T0 + 1)  # a new token replaces the old one
    assert seen.name_for(token) is None and seen.name_for(again) == "crm-bot"
    a2a_tokens.revoke(path, "crm-bot")
    assert seen.name_for(again) is None
    with pytest.raises(NotFoundError, match="no A2A token named 'crm-bot'"):
        a2a_tokens.revoke(path, "crm-bot")
    with pytest.raises(InvalidRequestError, match="not an agent name"):
        a2a_tokens.issue(path, "a b")


def test_a_broken_token_file_grants_nothing_and_says_so_in_irisd_log_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Agents get 401 "this needs a token": the owner must learn why somewhere (iris status
    # shows the log's recent errors).
    path = a2a_tokens.tokens_file(tmp_path)
    seen = a2a_tokens.AgentTokens(path)
    token = a2a_tokens.issue(path, "crm-bot", now=T0)
    path.write_text("{broken")
    assert seen.name_for(token) is None and seen.name_for(token) is None
    said = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(said) == 1 and f"{path} is not a valid A2A token file" in said[0], said


def test_an_agent_speaks_as_itself_and_sends_only_what_a2a_needs() -> None:
    agent = Caller.agent("crm")
    sent = agent.apply(Tell(to_team="alpha", message="hi", parent_pair="x->y"))
    assert isinstance(sent, Tell) and sent.from_team == "a2a:crm" and sent.parent_pair == ""
    with pytest.raises(PermissionDeniedError, match="fromTeam 'beta' is refused"):
        agent.apply(Tell(to_team="alpha", message="hi", from_team="beta"))
    with pytest.raises(PermissionDeniedError):
        agent.apply(Tell(to_team="alpha", message="hi", persist=True))
    listed = agent.apply(ListTells())
    assert isinstance(listed, ListTells) and listed.from_team == "a2a:crm"
    asked = agent.apply(ListQuestions())
    assert isinstance(asked, ListQuestions) and asked.for_team == "a2a:crm"
    answered = agent.apply(AnswerQuestion(question_id="q", text="x", as_team="external"))
    assert isinstance(answered, AnswerQuestion) and answered.as_team == "a2a:crm"
    assert agent.apply(CancelTell(tell_id="t")) == CancelTell(tell_id="t")
    # Another Iris's chain is the A2A face's to pass on; a team's claude cannot claim one.
    came = ChainRef(chain_id="far", hops=1)
    assert isinstance(sent := agent.apply(Tell(to_team="alpha", message="hi", across=came)), Tell)
    assert sent.across == came
    child = Caller.child(team="beta", pair="alpha->beta").apply(Tell(to_team="gamma", message="hi", across=came))
    assert isinstance(child, Tell) and child.across is None and child.parent_pair == "alpha->beta"
    for refused in (Decide(approval_id="a", allow=True), GetStatus(), Watch()):
        with pytest.raises(PermissionDeniedError, match="A2A agent 'a2a:crm' may not send"):
            agent.apply(refused)


@pytest.mark.parametrize(
    ("answer", "part"),
    [
        ("plain words", a2a.Part(text="plain words")),
        (
            '```json\n{"key": "value", "count": 42}\n```',
            a2a.Part(data={"key": "value", "count": 42}, media_type="application/json"),
        ),
        ("```json out.json\n[1, 2]\n```", a2a.Part(data=[1, 2], filename="out.json", media_type="application/json")),
        (
            "```output.txt\nline one\nline two\n```",
            a2a.Part(raw=b"line one\nline two", filename="output.txt", media_type="text/plain"),
        ),
        (
            "(file output.txt at https://example.com/output.txt)",
            a2a.Part(url="https://example.com/output.txt", filename="output.txt", media_type="text/plain"),
        ),
        ("```json\nnot json\n```", a2a.Part(text="```json\nnot json\n```")),
        ("```python\nx = 1\n```", a2a.Part(text="```python\nx = 1\n```")),
        ("Here it is:\n```json\n{}\n```", a2a.Part(text="Here it is:\n```json\n{}\n```")),
        ("```a.txt\nx\n```\nand\n```b.txt\ny\n```", a2a.Part(text="```a.txt\nx\n```\nand\n```b.txt\ny\n```")),
    ],
)
def test_an_answer_that_is_only_data_or_a_file_is_that_part(answer: str, part: a2a.Part) -> None:
    assert mapping.answer_parts(answer) == [part]


def test_answer_parts_read_back_what_message_text_wrote() -> None:
    sent = [
        a2a.Part(data={"k": [1, 2]}, media_type="application/json"),
        a2a.Part(raw=b"some text", filename="notes.txt", media_type="text/plain"),
        a2a.Part(url="https://x.example/report.md", filename="report.md", media_type="text/markdown"),
    ]
    for part in sent:
        assert mapping.answer_parts(mapping.message_text(message(part))) == [part]


def test_a_context_is_a_thread_of_the_callers_pair() -> None:
    assert mapping.context_of("a2a:crm", "alpha") == "a2a:crm->alpha"  # the default thread, as before
    assert mapping.context_of("a2a:crm", "alpha", "ctx-1") == "ctx-1"
    assert mapping.thread_of("", "a2a:crm", "alpha") == ""
    assert mapping.thread_of("a2a:crm->alpha", "a2a:crm", "alpha") == ""
    uuid = "0b8f6a3e-4c2d-4f7a-9a61-3d2f1c0e9b77"
    assert mapping.thread_of(uuid, "a2a:crm", "alpha") == uuid
    with pytest.raises(mapping.A2AError) as refused:  # another caller's default context is no thread of this one's
        mapping.thread_of("a2a:erp->alpha", "a2a:crm", "alpha")
    assert refused.value.code == a2a.INVALID_PARAMS
    assert "e.g. auth-refactor" in refused.value.message and "'a2a:crm->alpha' (or none)" in refused.value.message
