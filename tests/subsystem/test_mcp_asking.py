"""team_tell asking the person, in process: the SDK's client and server, a scripted link
standing in for irisd. What the requestState is bound to (the caller) and that an answer
resumes the same tell."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import mcp_types as types
import msgspec
import pytest
import trio
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from fakes.scripted_irisd import APPROVAL as GATED
from fakes.scripted_irisd import WAITING
from iris_mcp.shim import Shim, build_server
from protocol.messages import (
    ApprovalReply,
    ApprovalsReply,
    Decide,
    Event,
    GetTell,
    ListApprovals,
    Reply,
    Request,
    Tell,
    TellInfo,
    TellPhaseEvent,
    TellReply,
)

APPROVAL = msgspec.structs.replace(GATED, to_team="beta")  # the scripted irisd's approval a-1, asked by beta
DONE = TellInfo(id="t-1", from_team="alpha", to_team="beta", message="m", status="completed", text="done")


class ApprovalLink:
    """irisd as the shim sees it: the tell waits for approval a-1 until it is decided."""

    def __init__(self) -> None:
        self.sent: list[Request] = []

    async def call(
        self,
        request: Request,
        *,
        idempotent: bool,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        start_daemon: bool = True,
    ) -> Reply:
        self.sent.append(request)
        match request:
            case Tell():
                assert on_event is not None
                await on_event(TellPhaseEvent(tell_id="t-1", phase=WAITING))
                await trio.sleep_forever()
            case ListApprovals():
                return ApprovalsReply(approvals=[APPROVAL])
            case Decide():
                return ApprovalReply(approval=APPROVAL)
            case GetTell():
                return TellReply(status="completed", tell=DONE)
        raise AssertionError(f"unexpected {request}")


async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "approve"})


async def test_an_answer_resumes_the_same_tell_and_is_bound_to_its_caller() -> None:
    link = ApprovalLink()
    caller = ["owner"]
    server = build_server(Shim(link, team="alpha"), principal=lambda ctx: caller[0])
    arguments = {"toTeam": "beta", "message": "m", "timeout": 0}
    async with Client(server, elicitation_callback=approve) as client:
        with trio.fail_after(10):
            asked = await client.session.call_tool("team_tell", arguments, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult) and asked.request_state is not None
        yes = types.ElicitResult(action="accept", content={"decision": "approve"})
        answer: types.InputResponses = {"approval": yes}
        state = asked.request_state

        caller[0] = "someone else"
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool("team_tell", arguments, input_responses=answer, request_state=state)
        assert not any(isinstance(r, Decide) for r in link.sent)

        caller[0] = "owner"
        with trio.fail_after(10):
            done = await client.session.call_tool("team_tell", arguments, input_responses=answer, request_state=state)
    assert isinstance(done, types.CallToolResult) and not done.is_error
    assert done.structured_content["text"] == "done"
    decided = [r for r in link.sent if isinstance(r, Decide)]
    assert decided == [Decide(approval_id="a-1", allow=True, by="alpha (Claude Code)")]
    waits = [r for r in link.sent if isinstance(r, GetTell)]
    assert waits and all(r.tell_id == "t-1" and r.stream for r in waits)
    assert sum(isinstance(r, Tell) for r in link.sent) == 1  # the retry never sends a second tell
