"""Asking the person in the caller's own MCP client (MCP 2026-07-28 multi-round-trip input).

How it works: ``team_tell`` waits for its tell. When the tell stops at an approval and the
client can show a form (it declared form elicitation on a 2026-07-28 connection, and its
caller may decide approvals), the call ends with an ``input_required`` result: the form
(``approval_form``) and a ``requestState`` naming the tell and the approval (``AskState``).
The client shows the form to its person (Claude Code: a form in the session, or a
``control_request`` to its host under ``-p`` with stream-json input) and calls ``team_tell``
again with the same arguments, the person's answer and the state. The state is sealed by
the SDK's ``RequestStateBoundary`` (AES-GCM under a key of this process, bound to the tool,
its arguments and the caller) and spent once (``SpentStates``); the answer becomes the one
``Decide`` every front end sends (the first answer wins), and the call waits again for the
same tell: a tell outlives calls, no second tell is sent.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from protocol.errors import InvalidRequestError
from protocol.messages import ApprovalInfo, TellPhase

APPROVAL_KEY = "approval"  # the input request's key in inputRequests / inputResponses
APPROVE, DENY, REMEMBER = "approve", "deny", "approve and remember"
CONTINUE, STOP = "continue", "stop"  # a chain's budget (settings.budget.askToExceed)
MAX_SPENT_STATES = 4096
MAX_SHOWN_INPUT_CHARS = 2000


class AskState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a ``requestState`` names (sealed on the wire; plain here)."""

    tell_id: str
    approval_id: str
    nonce: str  # spent once: a replayed state is refused
    kind: str = "tool"  # "input": the form of one of the team's MCP servers, answered as it is
    # a fan-out (toTeams): every target as (team, tell id, why refused), to wait for them all again
    fan_out: list[tuple[str, str, str]] = []


@dataclass(frozen=True)
class InputAsk:
    """An ``input_required`` result: one form for the person, and the state to echo."""

    message: str
    schema: dict[str, Any]
    state: str
    key: str = APPROVAL_KEY


@dataclass(frozen=True)
class Asking:
    """What one ``tools/call`` brings about asking its person: whether the client can show
    a form, and on a retry the verified ``requestState`` and the answers."""

    can_ask: bool = False
    state: str | None = None
    responses: Mapping[str, Any] = field(default_factory=dict)
    spent: SpentStates | None = None  # the server's record of answered states


NO_ASKING = Asking()


@dataclass(frozen=True)
class Answer:
    """The person's decision on an approval, read from the form."""

    allow: bool
    remember: bool = False
    reason: str = ""
    content: dict[str, Any] = field(default_factory=dict)  # an input request's answer


def new_state(
    tell_id: str, approval_id: str, kind: str = "tool", fan_out: list[tuple[str, str, str]] | None = None
) -> str:
    state = AskState(tell_id, approval_id, secrets.token_hex(12), kind, fan_out or [])
    return msgspec.json.encode(state).decode()


def asks_person(phase: TellPhase) -> bool:
    """The tell waits for a person's decision this client may be asked for."""
    return phase.name == "awaiting_approval" and bool(phase.approval_id)


def read_state(text: str) -> AskState:
    """The state the SDK's boundary verified; a malformed one is refused (never a crash)."""
    try:
        return msgspec.json.decode(text, type=AskState)
    except msgspec.DecodeError:
        raise InvalidRequestError(
            "requestState does not name an Iris approval; call team_tell again without it"
        ) from None


class SpentStates:
    """The states already answered, so a replayed one is refused; bounded (the oldest go:
    the SDK's seal expires them anyway)."""

    def __init__(self, limit: int = MAX_SPENT_STATES) -> None:
        self.limit = limit
        self._spent: OrderedDict[str, None] = OrderedDict()

    def spend(self, state: AskState) -> bool:
        """True the first time ``state`` is answered, False after."""
        if state.nonce in self._spent:
            return False
        self._spent[state.nonce] = None
        while len(self._spent) > self.limit:
            self._spent.popitem(last=False)
        return True


def approval_form(
    to_team: str, approval_id: str, phase: TellPhase, approval: ApprovalInfo | None
) -> tuple[str, dict[str, Any]]:
    """The form's message and schema: which team wants to run what, and where; the person
    approves, denies, or approves and remembers (that exact request, for that pair)."""
    if approval is not None:
        tool = approval.tool_name
        if tool == "Bash" and isinstance(approval.input.get("command"), str):
            what = f"{tool} `{approval.input['command']}`"
        else:
            what = f"{tool} {json.dumps(approval.input, ensure_ascii=False)}"
        team = approval.to_team
    else:
        what = f"{phase.tool} `{phase.detail}`" if phase.detail else phase.tool
        team = to_team
    if len(what) > MAX_SHOWN_INPUT_CHARS:
        what = what[: MAX_SHOWN_INPUT_CHARS - 1] + "…"
    message = (
        f"Iris: {team} wants to run {what} in {team}'s folder (approval {approval_id}). "
        f"'{REMEMBER}' allows this exact request again without asking."
    )
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": [APPROVE, DENY, REMEMBER],
                "description": f"Let {team} run it?",
            },
            "reason": {
                "type": "string",
                "title": "Reason (when denying)",
                "description": f"{team}'s model reads it",
            },
        },
        "required": ["decision"],
    }
    return message, schema


def input_form(approval: ApprovalInfo) -> tuple[str, dict[str, Any]]:
    """An input request's form as its MCP server asked it (its schema passed through, checked
    by irisd when answered), the message saying which team's server asks."""
    message = (
        f"Iris: {approval.to_team}'s MCP server {approval.tool_name} asks for your input "
        f"(input request {approval.id}): {approval.message}"
    )
    return message, approval.schema or {"type": "object", "properties": {}}


def budget_form(approval: ApprovalInfo) -> tuple[str, dict[str, Any]]:
    """A chain of nested tells reached its budget (settings.budget.askToExceed): go on?"""
    message = f"Iris (approval {approval.id}): {approval.message}"
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": [CONTINUE, STOP],
                "description": "Let the chain spend more?",
            },
        },
        "required": ["decision"],
    }
    return message, schema


def read_input(response: Mapping[str, Any] | None) -> Answer | None:
    """The person's answer to an input request's form: accept (its content), decline, or
    None (cancel, nothing): then it stays for the other front ends."""
    if not response:
        return None
    match response.get("action"):
        case "accept":
            content = response.get("content")
            return Answer(allow=True, content=dict(content) if isinstance(content, Mapping) else {})
        case "decline":
            return Answer(allow=False)
    return None


def read_answer(response: Mapping[str, Any] | None) -> Answer | None:
    """The person's decision, or None when they made none (cancel, decline, an empty or
    unknown choice): the approval then stays for the other front ends."""
    if not response or response.get("action") != "accept":
        return None
    content = response.get("content")
    if not isinstance(content, Mapping):
        return None
    decision = content.get("decision")
    reason = content.get("reason")
    reason = reason.strip() if isinstance(reason, str) else ""
    match decision:
        case "approve" | "continue":
            return Answer(allow=True)
        case "stop":
            return Answer(allow=False, reason=reason or "the person stopped the chain at its budget")
        case "approve and remember":
            return Answer(allow=True, remember=True)
        case "deny":
            return Answer(allow=False, reason=reason)
    return None


ASK_PERSON = "ask your person"


def ask_your_person(approval_id: str, kind: str = "tool") -> str:
    """What the calling model tells its person when an approval waits for them: the one
    wording of the progress messages, of a reply that ends while the tell waits, and of a
    form the person left unanswered. An input request (``kind`` "input") is answered field
    by field."""
    if kind == "input":
        return (
            f"{ASK_PERSON} to answer input request {approval_id} with `iris approve {approval_id} "
            f"--field NAME=VALUE` (`iris approvals` shows the fields) or decline it with `iris deny {approval_id}` "
            "(or to answer it in the dashboard or `iris monitor`); team_approve (with content) / team_deny "
            "answer it if they let you"
        )
    return (
        f"{ASK_PERSON} to run `iris approve {approval_id}` or `iris deny {approval_id}` (or to decide it "
        "in the dashboard or `iris monitor`); team_approve / team_deny decide it if they let you"
    )
