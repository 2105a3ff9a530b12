"""The pure part of asking the person in their MCP client (iris_mcp/asking.py)."""

from __future__ import annotations

import msgspec
import pytest

from iris_mcp.asking import (
    Answer,
    AskState,
    SpentStates,
    approval_form,
    ask_your_person,
    new_state,
    read_answer,
    read_state,
)
from protocol.errors import InvalidRequestError
from protocol.messages import ApprovalInfo, TellPhase

PHASE = TellPhase(name="awaiting_approval", tool="Bash", detail="rm -rf build", approval_id="ap-1")


def approval(**fields: object) -> ApprovalInfo:
    base: dict[str, object] = {
        "id": "ap-1", "from_team": "frontend", "to_team": "backend", "tell_id": "t-1", "tool_name": "Bash",
        "input": {"command": "rm -rf build"}, "status": "pending", "created_at": 0.0, "expires_at": 600.0,
    }
    return ApprovalInfo(**{**base, **fields})  # type: ignore[arg-type]


def test_the_form_names_the_team_the_tool_and_its_whole_input() -> None:
    message, schema = approval_form("backend", "ap-1", PHASE, approval())
    assert message.startswith("Iris: backend wants to run Bash `rm -rf build` in backend's folder (approval ap-1).")
    assert schema["required"] == ["decision"]
    assert schema["properties"]["decision"]["enum"] == ["approve", "deny", "approve and remember"]
    long = "x" * 500
    write = approval(tool_name="Write", input={"file_path": "a", "content": long})
    message, _ = approval_form("backend", "ap-1", PHASE, write)
    assert f'Write {{"file_path": "a", "content": "{long}"}}' in message  # not the phase's 80-character summary


def test_without_the_approval_the_form_falls_back_to_the_phase() -> None:
    message, _ = approval_form("backend", "ap-1", PHASE, None)
    assert "backend wants to run Bash `rm -rf build`" in message


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ({"action": "accept", "content": {"decision": "approve"}}, Answer(allow=True)),
        ({"action": "accept", "content": {"decision": "approve and remember"}}, Answer(allow=True, remember=True)),
        ({"action": "accept", "content": {"decision": "deny", "reason": " no "}}, Answer(allow=False, reason="no")),
        ({"action": "accept", "content": {"decision": "maybe"}}, None),
        ({"action": "accept"}, None),
        ({"action": "decline"}, None),
        ({"action": "cancel"}, None),
        (None, None),
    ],
)
def test_only_an_accepted_known_choice_decides(response: dict[str, object] | None, answer: Answer | None) -> None:
    assert read_answer(response) == answer


def test_a_state_names_the_tell_and_the_approval_and_is_spent_once() -> None:
    state = read_state(new_state("t-1", "ap-1"))
    assert (state.tell_id, state.approval_id) == ("t-1", "ap-1")
    assert read_state(new_state("t-1", "ap-1")).nonce != state.nonce
    spent = SpentStates(limit=2)
    assert spent.spend(state) and not spent.spend(state)
    for nonce in ("a", "b"):
        assert spent.spend(AskState("t", "a", nonce))
    assert spent.spend(state)  # bounded: the oldest were forgotten (the seal's expiry covers them)


def test_a_malformed_state_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(InvalidRequestError, match="call team_tell again without it"):
        read_state('{"tell": 1}')


def test_the_model_is_told_the_commands_that_decide() -> None:
    said = ask_your_person("ap-1")
    assert "`iris approve ap-1`" in said and "`iris deny ap-1`" in said


def test_an_input_request_is_answered_field_by_field_and_each_kind_is_listed_in_its_words() -> None:
    from iris_mcp.render import ask_person, render_approval

    said = ask_your_person("ap-2", "input")
    assert "`iris approve ap-2 --field NAME=VALUE`" in said and "`iris deny ap-2`" in said
    waiting = TellPhase(name="awaiting_approval", tool="asker", server="asker", detail="Which?", approval_id="ap-2")
    assert "--field NAME=VALUE" in ask_person(waiting) and "--field" not in ask_person(PHASE)
    base = ApprovalInfo(id="", from_team="a", to_team="web", tell_id="t", tool_name="", input={}, status="pending",
                        created_at=0, expires_at=1)
    asked = msgspec.structs.replace(base, id="ap-2", tool_name="asker", kind="input", message="Which database?",
                                    schema={"type": "object", "properties": {"name": {"type": "string"}}})
    assert render_approval(asked).startswith("ap-2: a->web's MCP server asker asks for input: Which database?")
    budget = msgspec.structs.replace(base, id="ap-3", tool_name="chainUsd", kind="budget",
                                     message="Continue for $1 more?")
    assert render_approval(budget) == "ap-3: a->web: Continue for $1 more? [pending]"
    agent = msgspec.structs.replace(base, id="ap-4", tool_name="team_wake", kind="agent", summary="wake a->web")
    assert render_approval(agent).startswith("ap-4: iris-agent proposes to wake a->web [pending]")
