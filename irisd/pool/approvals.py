"""The permission desk of one pair: claude's ``can_use_tool`` requests become approvals
that a person (or a policy) decides. Owned and driven by the pair's actor.

* ``deny`` teams: every request is denied at once, with a message the model can read.
* a rule remembered for the pair (``iris approve --remember``) allows an identical
  request (same tool, same input) at once. It lives in Iris's store only: claude is
  never given a permission update, so nothing changes its mode, its directories or the
  team's settings files, and forgetting the rule is complete.
* otherwise an approval is stored and announced; the tell shows ``awaiting_approval``
  (its response timeout paused) until ``decide`` — or until ``approvalTimeout``, which
  denies. If the tell ends or the child dies first, the approval expires.

One of the team's own MCP servers asking its person for input (claude passes the form
on as a control request of subtype ``elicitation``) is an approval of kind ``input``,
kept and decided the same way: allowing it answers the form with the person's
``content`` (checked against the server's ``requested_schema``), denying it and
``approvalTimeout`` answer ``decline``. The tell's phase says ``waiting for your input``.

A chain of nested tells about to be refused by its budget (``settings.budget.askToExceed``)
asks too: an approval of kind ``budget`` on the tell whose claude sends the next tell
(``ask_budget``); whoever waits for it (the tell service) is woken by ``done`` when it is
decided, times out (no) or expires (no).
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from irisd.claude.wire import ControlRequestLine
from irisd.events import EventHub
from irisd.store import approvals
from irisd.store.db import StoreError
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell.active import ActiveTell
from irisd.tell.machine import Action
from protocol.errors import NotFoundError
from protocol.forms import check_content
from protocol.messages import ApprovalEvent, ApprovalInfo, TellPhase
from protocol.phases import TOOL_DETAIL_CHARS, tool_summary

log = logging.getLogger("irisd.approvals")

Send = Callable[[bytes], Awaitable[None]]
Apply = Callable[[ActiveTell, list[Action]], Awaitable[None]]
_encoder = msgspec.json.Encoder()


def new_approval_id() -> str:
    """Unguessable: 128 random bits, so one id says nothing about another."""
    return "a-" + secrets.token_hex(16)


def permission_response(request_id: str, decision: dict[str, Any]) -> bytes:
    """The stdin line that answers a ``can_use_tool`` control request (or any other)."""
    message = {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": decision},
    }
    return _encoder.encode(message) + b"\n"


def declined_input(line: ControlRequestLine) -> bytes:
    """The stdin line that declines an MCP server's input request at once: no tell is
    waiting for it (an unsolicited turn), and unanswered, claude would wait for ever."""
    return permission_response(line.request_id, {"action": "decline"})


class Pending(msgspec.Struct):
    info: ApprovalInfo
    request_id: str
    tell: ActiveTell
    deadline: float  # monotonic
    done: trio.Event | None = None  # a budget's: set once it is decided or expired (``info`` then says how)


class ApprovalDesk:
    def __init__(
        self,
        *,
        from_team: str | None,
        to_team: str,
        mode: str,
        timeout_s: float,
        store: Store,
        hub: EventHub | None,
        writes: PendingWrites | None = None,
    ) -> None:
        self.from_team = from_team
        self.to_team = to_team
        self.mode = mode
        self.timeout_s = timeout_s
        self.store = store
        self.hub = hub
        self.writes = writes  # when the database refuses a write, it waits there
        self.pending: dict[str, Pending] = {}

    def next_deadline(self) -> float:
        return min((p.deadline for p in self.pending.values()), default=math.inf)

    async def on_request(self, line: ControlRequestLine, tell: ActiveTell | None, send: Send, apply: Apply) -> None:
        """A ``can_use_tool`` request from the child."""
        body = line.request
        if tell is None or tell.machine.is_final:
            await send(permission_response(line.request_id, _deny("no tell is waiting for this tool")))
            return
        if self.mode == "deny":
            why = f"team {self.to_team} is configured with permissions: deny; do without {body.tool_name}"
            await send(permission_response(line.request_id, _deny(why)))
            return
        if await self._remembered(body.tool_name, body.input):
            log.info("allowed by a remembered rule", extra={"tool": body.tool_name, "tell_id": tell.id})
            await send(permission_response(line.request_id, {"behavior": "allow", "updatedInput": body.input}))
            return
        info = self._new(tell, body.tool_name, body.input, suggestions=body.permission_suggestions or [])
        await self._file(Pending(info, line.request_id, tell, trio.current_time() + self.timeout_s), apply)

    async def on_input(self, line: ControlRequestLine, tell: ActiveTell | None, send: Send, apply: Apply) -> None:
        """An ``elicitation`` request from the child: one of the team's MCP servers asks
        its person to fill in a form. Kept like a tool's approval, for a person to answer."""
        body = line.request
        if tell is None or tell.machine.is_final:
            await send(declined_input(line))
            return
        info = self._new(
            tell, body.mcp_server_name or "?", {}, kind="input", message=body.message, schema=body.requested_schema
        )
        await self._file(Pending(info, line.request_id, tell, trio.current_time() + self.timeout_s), apply)

    async def ask_budget(self, tell: ActiveTell, question: str, details: dict[str, Any], apply: Apply) -> Pending:
        """The chain ``tell`` belongs to reached its budget as its claude sends the next tell:
        ask the person whether it may go on. The returned record's ``done`` is set once it
        is decided (``info.status``: allowed, denied or expired)."""
        info = self._new(tell, "chainUsd", details, kind="budget", message=question)
        pending = Pending(info, "", tell, trio.current_time() + self.timeout_s, done=trio.Event())
        await self._file(pending, apply)
        return pending

    def _new(self, tell: ActiveTell, tool_name: str, tool_input: dict[str, Any], **more: Any) -> ApprovalInfo:
        """A pending approval of ``tell`` (of kind tool unless ``more`` says another)."""
        now_wall = time.time()
        return ApprovalInfo(
            id=new_approval_id(), from_team=self.from_team, to_team=self.to_team, tell_id=tell.id,
            tool_name=tool_name, input=tool_input, status="pending", created_at=now_wall,
            expires_at=now_wall + self.timeout_s, **more,
        )

    async def _file(self, pending: Pending, apply: Apply) -> None:
        """Store a new approval, keep it pending, make its tell wait for it and say so."""
        info, tell = pending.info, pending.tell
        await self._write(f"approval:{info.id}", approvals.insert, info, pending.request_id)
        self.pending[info.id] = pending
        if not tell.machine.is_final:
            tell.approval_id = info.id
            await apply(tell, tell.machine.approval_requested(trio.current_time()))
            tell.set_phase(_awaiting(info))
        self._announce(info)

    async def decide(
        self,
        approval_id: str,
        *,
        allow: bool,
        remember: bool,
        reason: str,
        by: str,
        send: Send,
        apply: Apply,
        content: dict[str, Any] | None = None,
    ) -> ApprovalInfo:
        pending = self.pending.get(approval_id)
        if pending is None:
            raise NotFoundError(f"approval {approval_id} is not pending")
        info = pending.info
        if info.kind == "budget":  # nothing to send to claude: the tell service waits for it
            del self.pending[approval_id]
            decided = msgspec.structs.replace(
                info, status="allowed" if allow else "denied", decided_at=time.time(), decided_by=by, reason=reason
            )
            await self._write(None, approvals.decide, decided)
            pending.info = decided
            await self._settle(pending.tell, apply, decided)
            self._announce(decided)
            if pending.done is not None:
                pending.done.set()
            return decided
        if info.kind == "input":
            # checked before it is taken: a wrong answer leaves the form pending, to answer again
            answer = check_content(info.schema, content or {}) if allow else {}
            del self.pending[approval_id]
            decided = msgspec.structs.replace(
                info, status="allowed" if allow else "denied", decided_at=time.time(), decided_by=by,
                reason=reason, content=answer,
            )
            await self._write(None, approvals.decide, decided)
            reply = {"action": "accept", "content": answer} if allow else {"action": "decline"}
            await send(permission_response(pending.request_id, reply))
            await self._settle(pending.tell, apply, decided)
            self._announce(decided)
            return decided
        del self.pending[approval_id]
        if allow:
            # Exactly the request the person saw, once. Never claude's permission_suggestions
            # (updatedPermissions): they can switch the session to acceptEdits, add directories
            # and write rules into the team's repository. --remember is Iris's own rule.
            decision: dict[str, Any] = {"behavior": "allow", "updatedInput": info.input}
        else:
            decision = _deny(reason or f"the user denied {info.tool_name}")
        decided = msgspec.structs.replace(
            info,
            status="allowed" if allow else "denied",
            decided_at=time.time(),
            decided_by=by,
            reason=reason,
            remembered=allow and remember,
        )
        await self._write(None, approvals.decide, decided)
        if decided.remembered:
            await self._write(
                None, approvals.remember, self.from_team, self.to_team, info.tool_name, info.input, info.id, time.time()
            )
        await send(permission_response(pending.request_id, decision))
        await self._settle(pending.tell, apply, decided)
        self._announce(decided)
        return decided

    async def on_timer(self, now: float, send: Send, apply: Apply) -> None:
        for approval_id, pending in list(self.pending.items()):
            if now >= pending.deadline:
                minutes = f"{self.timeout_s / 60:g} min" if self.timeout_s >= 60 else f"{self.timeout_s:g} s"
                outcome = "declined" if pending.info.kind == "input" else "denied"
                await self.decide(
                    approval_id,
                    allow=False,
                    remember=False,
                    reason=f"nobody decided within {minutes} (approvalTimeout); the request was {outcome}",
                    by="timeout",
                    send=send,
                    apply=apply,
                )

    async def expire(self, reason: str, tell: ActiveTell | None = None) -> None:
        """The tell ended or the child died: its pending approvals can no longer be used."""
        for approval_id, pending in list(self.pending.items()):
            if tell is not None and pending.tell is not tell:
                continue
            del self.pending[approval_id]
            expired = msgspec.structs.replace(pending.info, status="expired", decided_at=time.time(), reason=reason)
            await self._write(None, approvals.decide, expired)
            pending.info = expired
            self._announce(expired)
            if pending.done is not None:
                pending.done.set()

    async def _settle(self, tell: ActiveTell, apply: Apply, decided: ApprovalInfo) -> None:
        if tell.machine.status == "awaiting_approval":
            # The tell shows one it still waits for (none once all are decided).
            waiting = next((p.info for p in self.pending.values() if p.tell is tell), None)
            tell.approval_id = waiting.id if waiting is not None else ""
            await apply(tell, tell.machine.approval_settled(trio.current_time()))
            if waiting is not None:
                tell.set_phase(_awaiting(waiting))
            elif decided.kind == "budget":  # its claude's call to team_tell goes on (or is refused)
                tell.set_phase(TellPhase(name="running_tool", tool="team_tell"))
            elif decided.status == "allowed" and decided.kind == "input":
                tell.set_phase(TellPhase(name="running_tool", tool=decided.tool_name, detail="answered"))
            elif decided.status == "allowed":
                detail = tool_summary(decided.tool_name, decided.input)
                tell.set_phase(TellPhase(name="running_tool", tool=decided.tool_name, detail=detail))
            else:  # claude tells the model it was denied
                tell.set_phase(TellPhase(name="waiting_for_model"))

    async def _remembered(self, tool_name: str, tool_input: Any) -> bool:
        try:
            return await self.store.call(approvals.remembered, self.from_team, self.to_team, tool_name, tool_input)
        except StoreError as exc:  # then ask: the person decides
            log.warning("cannot read the remembered rules; asking", extra={"error": exc.message})
            return False

    async def _write(self, key: str | None, query: Callable[..., Any], *args: Any) -> None:
        if self.writes is None:
            await self.store.call(query, *args)
        else:
            await self.writes.save(key, query, *args)

    def _announce(self, info: ApprovalInfo) -> None:
        if self.hub is not None:
            self.hub.publish(ApprovalEvent(approval=info), info.from_team, info.to_team)


def _awaiting(info: ApprovalInfo) -> TellPhase:
    if info.kind == "budget":
        return TellPhase(name="awaiting_approval", tool="chainUsd", detail=info.message, approval_id=info.id)
    if info.kind == "input":
        return TellPhase(
            name="awaiting_approval", tool=info.tool_name, server=info.tool_name, approval_id=info.id,
            detail=" ".join(info.message.split())[:TOOL_DETAIL_CHARS * 2],
        )
    return TellPhase(
        name="awaiting_approval",
        tool=info.tool_name,
        detail=tool_summary(info.tool_name, info.input),
        approval_id=info.id,
    )


def _deny(message: str) -> dict[str, Any]:
    return {"behavior": "deny", "message": message}
