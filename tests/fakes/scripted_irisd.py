"""irisd as Iris's MCP tools see it, scripted by the team a request names: shared by the
fast-path tests of the stdio ``iris mcp`` (a ``Link``) and of irisd's ``/mcp`` (a
``Serving``), which compare each fast answer with the MCP SDK's for the same requests.

``echo`` answers (one text event first), ``behind`` says first that it is queued (and its
text, with ``behind_text``), ``late`` answers after 40 s, ``slow`` runs until cancelled,
``gated`` waits for approval a-1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from protocol.messages import (
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    CancelTell,
    Decide,
    Event,
    GetTell,
    ListApprovals,
    Reply,
    Request,
    Tell,
    TellInfo,
    TellPhase,
    TellPhaseEvent,
    TellReply,
    TellState,
    TellText,
)

WAITING = TellPhase(name="awaiting_approval", tool="Bash", detail="ls", approval_id="a-1")
APPROVAL = ApprovalInfo(
    id="a-1", from_team="alpha", to_team="gated", tell_id="t-1", tool_name="Bash", input={"command": "ls"},
    status="pending", created_at=0.0, expires_at=600.0,
)


def info(tell_id: str, to_team: str, text: str, status: Any = "completed") -> TellInfo:
    return TellInfo(id=tell_id, from_team="alpha", to_team=to_team, message="m", status=status, text=text)


class ScriptedIrisd:
    def __init__(self, *, echo_text: str = "hello", behind_text: bool = True) -> None:
        self.echo_text = echo_text
        self.behind_text = behind_text
        self.slow_running = trio.Event()
        self.cancelled = trio.Event()

    async def reply(self, request: Request, on_event: Callable[[Event], Awaitable[None]] | None) -> Reply:
        match request:
            case Tell(to_team="echo"):
                if on_event is not None:
                    await on_event(TellText(tell_id="t-2", text=self.echo_text))
                return TellReply(status="completed", tell=info("t-2", "echo", self.echo_text))
            case Tell(to_team="behind"):  # queued behind another tell: progress says so at once
                if on_event is not None:
                    await on_event(TellPhaseEvent(tell_id="t-4", phase=TellPhase(name="queued", ahead=1)))
                    if self.behind_text:
                        await on_event(TellText(tell_id="t-4", text="hello"))
                return TellReply(status="completed", tell=info("t-4", "behind", "hello"))
            case Tell(to_team="late"):
                await trio.sleep(40)
                return TellReply(status="completed", tell=info("t-5", "late", "at last"))
            case Tell(to_team="slow"):
                assert on_event is not None
                await on_event(TellState(tell_id="t-3", status="running"))
                self.slow_running.set()
                await trio.sleep_forever()
            case Tell(to_team="gated"):
                assert on_event is not None
                await on_event(TellPhaseEvent(tell_id="t-1", phase=WAITING))
                await trio.sleep_forever()
            case CancelTell():
                self.cancelled.set()
                return TellReply(status="completed", tell=info("t-3", "slow", "", "cancelled"), cancelled=True)
            case ListApprovals():
                return ApprovalsReply(approvals=[APPROVAL])
            case Decide():
                return ApprovalReply(approval=APPROVAL)
            case GetTell():
                return TellReply(status="completed", tell=info("t-1", "gated", "done"))
        raise AssertionError(f"unexpected {request}")
