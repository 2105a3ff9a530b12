"""iris-agent's actions, with the person's consent.

iris-agent is a *reader* (irisd/caller.py): it reads everything and may only *propose*
five actions, its MCP tools ``team_tell``, ``team_wake``, ``team_sleep``, ``team_cancel``
and ``team_answer``. The dispatcher hands each such request here instead of serving it:

* an action ``settings.agent.allow`` names is done at once, as the request it is, and
  recorded as an approval already allowed (by ``settings.agent.allow``), so what
  iris-agent did is listed beside what it asked;
* any other is filed as an approval of kind ``agent``: ``tool_name`` is the tool, ``input``
  the exact request irisd will serve, ``summary`` says it in words. It is pushed like a
  team's approval (``iris approvals``, the dashboard's Inbox, ``iris monitor``, the
  notifiers), and decided by the same ``iris approve`` / ``iris deny``. Allowed, irisd
  serves the stored request then (a tell without waiting for its answer: ``iris report``
  has it); denied or expired (``settings.approvalTimeout``), nothing happens.

What it may not do is refused before it gets here (caller.py): deciding approvals, any
config, reloads, tokens. Its tells are sent as ``iris-agent`` (a chain of their own: the
hop limit, the loop guard and the budgets hold; the ledger books them under
``iris-agent``). An answer is always an approval: it speaks for whoever was asked, so only
the person may let it go.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from iris_common.config import AGENT_NAME, IrisConfig
from irisd.events import EventHub
from irisd.store import approvals
from irisd.store.agent import ALLOWED_BY
from irisd.store.db import StoreError
from irisd.store.facade import Store
from protocol.errors import InvalidRequestError, IrisError
from protocol.messages import (
    AnswerQuestion,
    AnswerReply,
    ApprovalEvent,
    ApprovalInfo,
    ApprovalReply,
    CancelTell,
    Decide,
    PairReply,
    Reply,
    Request,
    Sleep,
    Tell,
    TellReply,
    Wake,
)

log = logging.getLogger("irisd.agent")

Action = Tell | Wake | Sleep | CancelTell | AnswerQuestion
TOOL_OF: dict[type[Any], str] = {
    Tell: "team_tell", Wake: "team_wake", Sleep: "team_sleep", CancelTell: "team_cancel", AnswerQuestion: "team_answer",
}
_DECODE = msgspec.json.Decoder(Action)
EXPIRED = "no decision within settings.approvalTimeout; nothing was done"
STORE_RETRY_S = 30.0  # after a failed write (the disk full, say), the expiry is tried again
MAX_SLEEP_S = 3600.0  # the stored request, as iris-agent sent it
MAX_QUOTE = 300


def _pair(from_team: str | None, to_team: str) -> str:
    return f"{from_team or 'external'}->{to_team}"


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…")


def describe(action: Action, to_team: str) -> str:
    """What ``action`` will do, in words, for the person who decides it."""
    match action:
        case Tell():
            return f"tell {action.to_team} (as iris-agent): {_quote(action.message)}"
        case Wake():
            return f"wake {_pair(action.from_team, action.to_team)}"
        case Sleep():
            force = " (force: cancel the tell it is serving)" if action.force else ""
            return f"put {_pair(action.from_team, action.to_team)} to sleep{force}"
        case CancelTell():
            return f"cancel tell {action.tell_id} (to {to_team})"
        case AnswerQuestion():
            what = f"question {action.question_id}" if action.question_id else f"what tell {action.tell_id} asked"
            return f"answer {what} of {to_team} with: {_quote(action.text)}"


def as_approved(action: Action) -> Action:
    """The request to serve once the person allowed it: nobody waits for a tell's answer
    (the decision returns; the answer is in ``iris report``)."""
    if isinstance(action, Tell | AnswerQuestion):
        return msgspec.structs.replace(action, timeout_ms=-1)
    return action


def new_approval_id() -> str:
    return "ag-" + secrets.token_hex(6)


Perform = Callable[[Request], Awaitable[Reply]]
Target = Callable[[Action], Awaitable[str]]


class AgentActions:
    """Files iris-agent's actions as approvals, and serves the allowed ones.

    ``perform`` serves a request as the dispatcher would; ``target`` checks an action can
    be done now (the team exists, the tell or question is there: IrisError if not) and
    names the team it touches."""

    def __init__(
        self,
        *,
        config: Callable[[], IrisConfig],
        store: Store,
        hub: EventHub,
        perform: Perform,
        target: Target,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config  # the current one (a reload changes settings.agent.allow)
        self.store = store
        self.hub = hub
        self.perform = perform
        self.target = target
        self._deciding = trio.Lock()  # two people deciding the same action: it is done once
        self.clock = clock  # the wall clock (approvals' times are on it)
        self._filed = trio.Event()

    async def act(self, action: Action, perform_now: Perform | None = None) -> Reply:
        """iris-agent asks to do ``action``: done now if settings.agent.allow allows it
        (``perform_now``: how, e.g. with the caller's event stream), else an approval."""
        tool = TOOL_OF[type(action)]
        to_team = await self.target(action)
        now = self.clock()
        info = ApprovalInfo(
            id=new_approval_id(), from_team=AGENT_NAME, to_team=to_team, tell_id="", tool_name=tool,
            input=msgspec.to_builtins(action), status="pending", created_at=now,
            expires_at=now + self.config().settings.approval_timeout / 1000, kind="agent",
            summary=describe(action, to_team),
        )
        if tool in self.config().settings.agent.allow and not isinstance(action, AnswerQuestion):
            done = msgspec.structs.replace(info, status="allowed", decided_at=now, decided_by=ALLOWED_BY)
            await self.store.call(approvals.insert, done, "")
            log.info("iris-agent acted", extra={"approval": info.id, "action": info.summary})
            return await (perform_now or self.perform)(action)
        await self.store.call(approvals.insert, info, "")
        log.info("iris-agent proposes", extra={"approval": info.id, "action": info.summary})
        self._publish(info)
        self._filed.set()
        return ApprovalReply(approval=info)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire iris-agent's undecided actions at settings.approvalTimeout (nothing is
        done), until cancelled."""
        task_status.started()
        while True:
            self._filed = trio.Event()
            try:
                async with self._deciding:  # not one being done right now
                    expired_now = await self.store.call(approvals.expire_agent, self.clock(), EXPIRED)
                for expired in expired_now:
                    log.info("iris-agent's action expired", extra={"approval": expired.id, "action": expired.summary})
                    self._publish(expired)
                due = await self.store.call(approvals.next_agent_expiry)
                delay = MAX_SLEEP_S if due is None else min(max(due - self.clock(), 0.0), MAX_SLEEP_S)
            except StoreError as exc:  # the disk is full, say: the undecided actions expire once it is writable
                log.warning("could not expire iris-agent's actions", extra={"error": exc.message})
                delay = STORE_RETRY_S
            with trio.move_on_after(delay):
                await self._filed.wait()

    async def decide_or(
        self, request: Decide, otherwise: Callable[[Decide], Awaitable[ApprovalReply]]
    ) -> ApprovalReply:
        """Decide ``request`` if it is a pending action of iris-agent, else ``otherwise`` (a
        team's tool use: the supervisor decides it through the pair that asked)."""
        known = await self.store.call(approvals.get, request.approval_id)
        if known is None or known.kind != "agent" or known.status != "pending":
            return await otherwise(request)
        decided = await self.decide(
            known, allow=request.allow, remember=request.remember, by=request.by or "unknown", reason=request.reason
        )
        return ApprovalReply(approval=decided)

    async def decide(
        self, approval: ApprovalInfo, *, allow: bool, remember: bool, by: str, reason: str
    ) -> ApprovalInfo:
        """The person's decision on a pending action of iris-agent: allowed, irisd does it
        now (the outcome is the approval's reason); denied, nothing happens."""
        if remember:
            raise InvalidRequestError(
                f"approval {approval.id} is an action of iris-agent: it is decided once ('--remember' is for a "
                f"team's tool use); to let iris-agent {approval.tool_name} without asking, add it to "
                "settings.agent.allow"
            )
        async with self._deciding:
            current = await self.store.call(approvals.get, approval.id)
            if current is None or current.status != "pending":
                who = f" by {current.decided_by}" if current is not None and current.decided_by else ""
                state = current.status if current is not None else "gone"
                raise InvalidRequestError(f"approval {approval.id} is already {state}{who}; nothing to decide")
            return await self._decide(current, allow=allow, by=by, reason=reason)

    async def _decide(self, approval: ApprovalInfo, *, allow: bool, by: str, reason: str) -> ApprovalInfo:
        now = self.clock()
        if now >= approval.expires_at:
            expired = msgspec.structs.replace(approval, status="expired", decided_at=now, reason=EXPIRED)
            await self._record(expired)
            raise InvalidRequestError(f"approval {approval.id} expired before it was decided; nothing was done")
        if not allow:
            return await self._record(msgspec.structs.replace(
                approval, status="denied", decided_at=now, decided_by=by, reason=reason or "denied by the person"
            ))
        action = _DECODE.decode(msgspec.json.encode(approval.input))
        if isinstance(action, AnswerQuestion):  # the person lets it go: it is their answer
            action = msgspec.structs.replace(action, by=f"{by} (proposed by iris-agent)", as_team="")
        allowed = msgspec.structs.replace(approval, status="allowed", decided_at=now, decided_by=by)
        try:
            reply = await self.perform(as_approved(action))
        except IrisError as exc:
            await self._record(msgspec.structs.replace(allowed, reason=f"failed: {exc.message}"))
            raise
        return await self._record(msgspec.structs.replace(allowed, reason=outcome(reply)))

    async def _record(self, info: ApprovalInfo) -> ApprovalInfo:
        await self.store.call(approvals.decide, info)
        self._publish(info)
        return info

    def _publish(self, info: ApprovalInfo) -> None:
        self.hub.publish(ApprovalEvent(approval=info), info.from_team, info.to_team)


def outcome(reply: Reply) -> str:
    """What serving an allowed action did, in a few words (the approval's reason)."""
    match reply:
        case PairReply(message=message) if message:
            return f"done: {message}"
        case TellReply(tell=tell) | AnswerReply(tell=tell):
            return f"done: tell {tell.id} ({tell.status})"
    return "done"
