"""The Iris MCP tools on a transport: the stdio ``iris mcp`` (iris_cli/mcp_stdio.py, a thin
client of irisd's socket) and, in irisd itself, ``/mcp`` for irisd's own claude children
(irisd/http/mcp.py). Both run the same ``Shim``: its tools build the protocol Requests; a
``Link`` carries them (the CLI's ``DaemonLink``: the socket; irisd's ``ServingLink``: the
dispatcher, in process) and the replies render the same way (``iris_mcp.tools``).

Start-up is on every Claude Code session's path, so this module imports only trio;
``protocol/``, msgspec and the tool definitions load on the first ``tools/list``, and the
MCP SDK when a server is built (``build_server``) or a ``requestState`` sealed
(``StateSeal``): the stdio ``iris mcp`` answers a session of the 2026-07-28 era without it
(``iris_mcp/stdio.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from iris_mcp import sdk

sdk.lean()  # before the first import of mcp (it imports nothing): only the server parts load then

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server

    from iris_mcp.asking import Asking, AskState, SpentStates
    from iris_mcp.identity import Identity
    from iris_mcp.progress_sender import Progress, ReportProgress
    from iris_mcp.render import ToolOutput
    from iris_mcp.tools import CacheReadArgs
    from iris_mcp.watch import TellWatch
    from protocol.messages import ApprovalInfo, Event, GetTell, Reply, Request, Tell, TellPhase

log = logging.getLogger("iris.mcp")

CALL_TIMEOUT_S = 120.0  # a request that is not a tell: waking every team can take a while
TELL_GRACE_S = 15.0  # beyond the tell's own timeout, before the shim stops waiting for irisd
CANCEL_TIMEOUT_S = 5.0  # a CancelTell sent while the call is being torn down
STATE_TTL_S = 3600.0  # how long a requestState (an approval asked in the client) stays valid
DAEMON_START_TIMEOUT_S = 15.0


class Link(Protocol):
    """How the tools reach irisd's core: a request in, its reply (or IrisError) out,
    pushed events handed to ``on_event``."""

    async def call(
        self,
        request: Request,
        *,
        idempotent: bool,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        start_daemon: bool = True,
    ) -> Reply: ...


# --- the tools ------------------------------------------------------------------------


class Shim:
    """The tools: validate arguments, derive the caller, send requests, render replies."""

    def __init__(
        self,
        link: Link,
        *,
        team: str | None = None,
        cwd: str = "",
        env: Mapping[str, str] | None = None,
        identity: Identity | None = None,
        read_only: bool = False,
        may_decide: bool = True,
        proposes: bool = False,
    ) -> None:
        from iris_mcp.listing import offered_tools

        self.link = link
        self.may_decide = may_decide  # its caller is the person (approvals may be asked of it)
        self.read_only = read_only  # iris-agent's server: only the tools that read ...
        # ... and with ``proposes`` (irisd's /mcp, iris-agent's token) those irisd files as approvals
        self.offered = offered_tools(read_only=read_only, proposes=proposes)
        self.explicit_team = team
        self.cwd = cwd
        self.parent_pair = (env or {}).get("IRIS_PARENT_PAIR", "").strip()
        self._identity = identity  # known up front when the connection decided it (irisd's /mcp)
        self._handlers: dict[str, Callable[[Any, ReportProgress], Awaitable[ToolOutput]]] = {
            "team_tell": self.team_tell,
            "team_isAwake": self.team_is_awake,
            "team_wake": self.team_wake,
            "team_sleep": self.team_sleep,
            "team_wake_all": self.team_wake_all,
            "team_report": self.team_report,
            "team_command": self.team_command,
            "team_cache_read": self.team_cache_read,
            "team_cache_clear": self.team_cache_clear,
            "team_teams": self.team_teams,
            "team_getTeamName": self.team_get_team_name,
            "team_result": self.team_result,
            "team_cancel": self.team_cancel,
            "team_approvals": self.team_approvals,
            "team_approve": self.team_approve,
            "team_deny": self.team_deny,
            "team_questions": self.team_questions,
            "team_answer": self.team_answer,
            "team_costs": self.team_costs,
            "team_status": self.team_status,
            "team_sessions": self.team_sessions,
        }

    async def call(
        self, name: str, arguments: dict[str, Any] | None, report: ReportProgress, asking: Asking | None = None
    ) -> ToolOutput:
        """Run one tool; every failure becomes a tool error the model can act on. ``asking``:
        what the client can do about the person's input (team_tell may ask for it)."""
        from iris_mcp.asking import NO_ASKING
        from iris_mcp.render import error_output
        from iris_mcp.tools import TOOLS_BY_NAME, parse_args
        from protocol.errors import IrisError

        retry = asking is not None and asking.state is not None
        log.debug("tools/call %s%s", name, f" (a retry answering {dict(asking.responses)})" if retry and asking else "")
        tool = TOOLS_BY_NAME.get(name)
        if tool is None or name not in self.offered:
            known = ", ".join(self.offered)
            return error_output(f"unknown tool {name!r}; the Iris tools are: {known}", "invalid_request")
        try:
            args = parse_args(tool, arguments)
            if name == "team_tell":
                return await self.team_tell(args, report, asking or NO_ASKING)
            return await self._handlers[name](args, report)
        except IrisError as exc:
            log.info("%s failed: %s", name, exc.message)
            return error_output(exc.message, exc.code)
        except Exception as exc:  # a bug here must not take the MCP session down
            log.exception("%s crashed", name)
            return error_output(
                f"the Iris MCP server failed on {name} ({type(exc).__name__}: {exc}); see its stderr log",
                "internal",
            )

    # identity ------------------------------------------------------------------------

    async def identity(self) -> Identity:
        """Who this shim speaks for; the configured team folders are asked for once."""
        from iris_mcp.identity import resolve_identity
        from protocol.messages import ListTeams, TeamsReply

        if self._identity is None and self.read_only:
            self._identity = resolve_identity(None, self.cwd, [])  # iris-agent is no team
        if self._identity is None:
            teams = []
            if self.explicit_team is None:
                reply = await self.request(ListTeams())
                assert isinstance(reply, TeamsReply)
                teams = reply.teams
            self._identity = resolve_identity(self.explicit_team, self.cwd, teams)
            log.info("identity: %s", self._identity.describe())
        return self._identity

    async def sender(self, claimed: str | None) -> str | None:
        return (await self.identity()).check_from_team(claimed)

    async def simple(
        self, request: Request, *, idempotent: bool = True, within: float = CALL_TIMEOUT_S
    ) -> ToolOutput:
        """A request whose reply renders by its type."""
        from iris_mcp.render import render_reply

        return render_reply(await self.request(request, idempotent=idempotent, within=within))

    async def request(
        self,
        request: Request,
        *,
        idempotent: bool = True,
        within: float = CALL_TIMEOUT_S,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
    ) -> Reply:
        """The daemon's reply (its events before it to ``on_event``), or an error after
        ``within`` seconds (irisd wedged)."""
        from protocol.errors import IrisError

        with trio.move_on_after(within):
            return await self.link.call(request, idempotent=idempotent, on_event=on_event)
        raise IrisError(f"irisd did not answer {type(request).__name__} within {within:g} s; see its log")

    # tells -----------------------------------------------------------------------------

    async def team_tell(self, args: Any, report: ReportProgress, asking: Asking | None = None) -> ToolOutput:
        from iris_mcp.asking import NO_ASKING
        from iris_mcp.progress_sender import open_progress
        from iris_mcp.watch import TellWatch
        from protocol.errors import InvalidRequestError
        from protocol.limits import stored_ttl
        from protocol.messages import Tell

        asking = asking or NO_ASKING

        if args.to_teams:
            if args.to_team or args.persist:
                raise InvalidRequestError(
                    "give either toTeam or toTeams, not both (and persist works for one team at a time)"
                )
            return await self.fan_out(args, report, asking)
        if not args.to_team:
            raise InvalidRequestError("team_tell needs toTeam (the team to tell), or toTeams for several")
        can_ask = asking.can_ask and self.may_decide and not args.persist
        async with open_progress(report) as progress:
            if asking.state is not None:  # the person answered what the last call asked: go on with its tell
                output = await self.resume_tell(args, asking, progress, can_ask=can_ask)
                output.data.pop("message", None)
                return output
            request = Tell(
                to_team=args.to_team,
                message=args.message,
                from_team=await self.sender(args.from_team),
                timeout_ms=args.timeout,
                # Events only for somebody: progress the client asked for (its first event
                # also names the tell, so a cancelled call cancels it), or the phase a form
                # for the person waits on.
                stream=progress.wanted or can_ask,
                # Else one event naming the tell, so a cancelled call still cancels it.
                announce=not (progress.wanted or can_ask),
                persist=args.persist,
                ttl_days=stored_ttl(args.persist, args.ttl_days, names=("ttlDays", "persist")),
                parent_pair=self.parent_pair,
                max_budget_usd=args.max_budget_usd,
                thread=args.thread,
            )
            output = await self.run_tell(request, progress, TellWatch(request.to_team), can_ask=can_ask)
        output.data.pop("message", None)  # the caller's own words, long perhaps: not echoed back
        return output

    async def fan_out(self, args: Any, report: ReportProgress, asking: Asking | None = None) -> ToolOutput:
        """toTeams: one tell per team; a progress notification as each one answers. When the
        client can show a form, each approval (or input request) any of them waits for is
        asked of the person, one form at a time, in the order they come; the retry waits
        for all the tells again (``wait_fan_out``)."""
        from iris_mcp.asking import NO_ASKING, asks_person
        from iris_mcp.render import render_reply
        from protocol.errors import ConnectionLost, DaemonNotRunningError
        from protocol.messages import FanOutEvent, TellMany, TellPhaseEvent, TellState

        asking = asking or NO_ASKING
        can_ask = asking.can_ask and self.may_decide
        if asking.state is not None:
            return await self.resume_fan_out(args, asking, report, can_ask=can_ask)

        request = TellMany(
            to_teams=args.to_teams,
            message=args.message,
            from_team=await self.sender(args.from_team),
            timeout_ms=args.timeout,
            # its events are progress, for a client that wants it, and the phases a form waits on
            stream=report is not None or can_ask,
            parent_pair=self.parent_pair,
            max_budget_usd=args.max_budget_usd,
            thread=args.thread,
        )
        answered = 0
        team_of: dict[str, str] = {}  # tell id -> its team
        refused: dict[str, str] = {}  # team -> why
        waiting: list[tuple[str, TellPhase]] = []
        stop = trio.CancelScope()

        async def on_event(event: Event) -> None:
            nonlocal answered
            match event:
                case FanOutEvent(result=result):
                    answered += 1
                    if result.status == "refused":
                        refused[result.to_team] = result.error
                    if report is not None:  # one per team: not coalesced
                        await report(answered, f"{result.to_team}: {result.status}")
                case TellState(tell_id=tell_id, to_team=to_team) if to_team:
                    team_of[tell_id] = to_team
                case TellPhaseEvent(tell_id=tell_id, phase=phase) if can_ask and asks_person(phase):
                    waiting.append((tell_id, phase))
                    stop.cancel()

        grace = max(args.timeout, 0) / 1000 + TELL_GRACE_S if args.timeout != 0 else float("inf")
        try:
            with trio.move_on_after(grace):
                with stop:
                    return render_reply(await self.link.call(request, idempotent=False, on_event=on_event))
                ids = {team: tell_id for tell_id, team in team_of.items()}
                teams = dict.fromkeys(t.strip() for t in request.to_teams if t.strip())  # as irisd reads them
                targets = [(team, ids.get(team, ""), refused.get(team, "")) for team in teams]
                tell_id, phase = waiting[0]
                return await self.form_for(tell_id, team_of.get(tell_id, "?"), phase, targets)
        except ConnectionLost:
            raise DaemonNotRunningError(
                "the connection to irisd broke while the tells were under way; see team_report for each team"
            ) from None
        from protocol.errors import IrisError

        raise IrisError(f"irisd did not answer the fan-out within {grace:g} s; see team_report for each team")

    async def run_tell(
        self, request: Tell | GetTell, progress: Progress, watch: TellWatch, *, can_ask: bool = False
    ) -> ToolOutput:
        """Send a tell (or resume the wait for one), forward its text as progress, cancel
        it if the call is cancelled. With ``can_ask``, stop waiting when the tell waits for
        an approval, and ask the client's person (the tell waits on)."""
        from iris_mcp.render import render_reply
        from iris_mcp.watch import render_unanswered
        from protocol.errors import ConnectionLost, DaemonNotRunningError
        from protocol.messages import GetTell

        stop = trio.CancelScope()

        async def on_event(event: Event) -> None:
            said = watch.feed(event)
            if said is not None:
                await progress.say(said)
            if can_ask and watch.waiting is not None:
                stop.cancel()

        # The daemon answers by the tell's own deadline; this one only guards against a
        # daemon that never does. 0 ("wait for the end") has no deadline at all.
        timeout_ms = request.wait_ms if isinstance(request, GetTell) else request.timeout_ms
        grace = max(timeout_ms, 0) / 1000 + TELL_GRACE_S if timeout_ms != 0 else float("inf")
        resending = isinstance(request, GetTell)  # waiting again does nothing twice
        try:
            with trio.move_on_after(grace):
                with stop:
                    return render_reply(await self.link.call(request, idempotent=resending, on_event=on_event))
                return await self.ask_person(watch)
        except ConnectionLost:
            raise DaemonNotRunningError(watch.lost_message()) from None
        except trio.Cancelled:
            await self.cancel_quietly(watch.tell_id)
            raise
        return render_unanswered(watch, grace)

    async def ask_person(self, watch: TellWatch) -> ToolOutput:
        """The tell waits for an approval: the call ends with a form for the client's person
        (MCP ``input_required``); its answer comes with the next call (``resume_tell``)."""
        phase, tell_id = watch.waiting, watch.tell_id
        assert phase is not None and tell_id is not None
        return await self.form_for(tell_id, watch.to_team, phase)

    async def form_for(
        self, tell_id: str, to_team: str, phase: TellPhase, fan_out: list[tuple[str, str, str]] | None = None
    ) -> ToolOutput:
        """The form for the approval ``phase`` names (a tool's, an MCP server's input, a
        chain's budget), as the call's ``input_required`` result; ``fan_out``: the targets
        of a fan-out to wait for again on the retry."""
        from iris_mcp.asking import InputAsk, approval_form, budget_form, input_form, new_state
        from iris_mcp.render import ToolOutput

        approval = await self.approval(phase.approval_id)
        if approval is not None and approval.kind == "input":  # one of the team's MCP servers asks
            message, schema = input_form(approval)
        elif approval is not None and approval.kind == "budget":  # a chain reached its budget: go on?
            message, schema = budget_form(approval)
        else:
            message, schema = approval_form(to_team, phase.approval_id, phase, approval)
        kind = approval.kind if approval is not None else "tool"
        data = {
            "id": tell_id, "to_team": to_team, "status": "in_progress", "tell_status": "awaiting_approval",
            "approval_id": phase.approval_id,
        }
        ask = InputAsk(message, schema, new_state(tell_id, phase.approval_id, kind, fan_out))
        return ToolOutput(message, data, ask=ask)

    async def approval(self, approval_id: str) -> ApprovalInfo | None:
        """The pending approval in full (the phase has its input only in short)."""
        from protocol.errors import IrisError
        from protocol.messages import ApprovalsReply, ListApprovals

        try:
            reply = await self.request(ListApprovals())
        except IrisError as exc:
            log.info("could not list the approvals: %s", exc.message)
            return None
        if isinstance(reply, ApprovalsReply):
            for approval in reply.approvals:
                if approval.id == approval_id:
                    return approval
        return None

    async def resume_tell(self, args: Any, asking: Asking, progress: Progress, *, can_ask: bool) -> ToolOutput:
        """The retry of a call that asked the person: their answer goes through the one
        decision path (``Decide``: the first answer from any front end wins), then the call
        waits again for the same tell. No answer (cancel, decline): the approval is left to
        the other front ends, and the reply says how to decide it."""
        import dataclasses

        from iris_mcp.render import ToolOutput, render_reply
        from iris_mcp.watch import TellWatch
        from protocol.limits import MAX_WAIT_MS, MIN_WAIT_MS
        from protocol.messages import GetTell

        state, note = await self.decide_answer(asking)
        if note is None:
            from iris_mcp.asking import ask_your_person

            told = render_reply(await self.request(GetTell(tell_id=state.tell_id)))
            text = (
                f"Not decided in this session: approval {state.approval_id} waits; "
                f"{ask_your_person(state.approval_id, state.kind)}. The tell goes on "
                f'(tellId {state.tell_id}): fetch its answer with team_result {{"tellId": "{state.tell_id}"}}.'
            )
            return ToolOutput(text, told.data)
        watch = TellWatch(args.to_team, tell_id=state.tell_id)
        wait_ms = MAX_WAIT_MS if args.timeout == 0 else min(max(args.timeout, MIN_WAIT_MS), MAX_WAIT_MS)
        while True:
            wait = GetTell(tell_id=state.tell_id, wait_ms=wait_ms, stream=progress.wanted or can_ask)
            output = await self.run_tell(wait, progress, watch, can_ask=can_ask)
            if args.timeout != 0 or output.ask is not None or output.data.get("status") != "in_progress":
                break
        if note and output.ask is None:
            return dataclasses.replace(output, text=note + output.text)
        return output

    async def decide_answer(self, asking: Asking) -> tuple[AskState, str | None]:
        """The retry's answer, through the one decision path (``Decide``: the first answer
        from any front end wins). The verified state, and None when the person decided
        nothing here (cancel, decline of an approval), else a note ('' or why the decision
        did not count: decided first elsewhere, expired)."""
        from iris_mcp.asking import APPROVAL_KEY, read_answer, read_input, read_state
        from protocol.errors import InvalidRequestError, NotFoundError
        from protocol.messages import Decide

        assert asking.state is not None
        state = read_state(asking.state)
        if asking.spent is not None and not asking.spent.spend(state):
            raise InvalidRequestError(
                f"this answer to approval {state.approval_id} was already given (a requestState is used once); "
                f'follow the tell with team_result {{"tellId": "{state.tell_id}"}}'
            )
        response = asking.responses.get(APPROVAL_KEY)
        answer = read_input(response) if state.kind == "input" else read_answer(response)
        if answer is None:
            return state, None
        decide = Decide(
            approval_id=state.approval_id, allow=answer.allow, remember=answer.remember, reason=answer.reason,
            by=await self.decider(), content=answer.content,
        )
        try:
            await self.request(decide, idempotent=False)
        except (InvalidRequestError, NotFoundError) as exc:  # decided first elsewhere (or expired)
            return state, f"({exc.message})\n\n"
        return state, ""

    async def resume_fan_out(self, args: Any, asking: Asking, report: ReportProgress, *, can_ask: bool) -> ToolOutput:
        """The retry of a fan-out that asked the person: their answer is decided, then the
        call waits for every target's tell again, asking the next decision any of them waits for."""
        import dataclasses

        from iris_mcp.asking import ask_your_person

        state, note = await self.decide_answer(asking)
        if note is None:
            ids = ", ".join(f"{team} {tell_id}" for team, tell_id, _ in state.fan_out if tell_id)
            output = await self.wait_fan_out(state.fan_out, args, report, can_ask=False, wait=False)
            text = (
                f"Not decided in this session: approval {state.approval_id} waits; "
                f"{ask_your_person(state.approval_id, state.kind)}. The tells go on "
                f"({ids}): fetch each answer with team_result.\n\n{output.text}"
            )
            return dataclasses.replace(output, text=text)
        output = await self.wait_fan_out(state.fan_out, args, report, can_ask=can_ask)
        if note and output.ask is None:
            return dataclasses.replace(output, text=note + output.text)
        return output

    async def wait_fan_out(
        self, targets: list[tuple[str, str, str]], args: Any, report: ReportProgress, *, can_ask: bool,
        wait: bool = True,
    ) -> ToolOutput:
        """Wait for the tells of a fan-out's targets (``(team, tell id, why refused)``), all
        at once; stop at the first decision one of them waits for, to ask it (``can_ask``)."""
        from iris_mcp.asking import asks_person
        from iris_mcp.render import render_reply
        from protocol.limits import MAX_WAIT_MS, MIN_WAIT_MS
        from protocol.messages import FanOutResult, GetTell, TellPhaseEvent, TellReply, TellsReply

        wait_ms = MAX_WAIT_MS if args.timeout == 0 else min(max(args.timeout, MIN_WAIT_MS), MAX_WAIT_MS)
        wait_ms = wait_ms if wait else 0
        results: dict[str, FanOutResult] = {}
        waiting: list[tuple[str, str, TellPhase]] = []
        stop = trio.CancelScope()

        async def one(team: str, tell_id: str) -> None:
            async def on_event(event: Event) -> None:
                if can_ask and isinstance(event, TellPhaseEvent) and asks_person(event.phase):
                    waiting.append((tell_id, team, event.phase))
                    stop.cancel()

            while True:
                reply = await self.link.call(GetTell(tell_id=tell_id, wait_ms=wait_ms, stream=can_ask),
                                             idempotent=True, on_event=on_event)
                assert isinstance(reply, TellReply)
                if not wait or args.timeout != 0 or reply.status != "in_progress":
                    break
            results[team] = FanOutResult(to_team=team, status=reply.status, tell=reply.tell)

        with stop:
            async with trio.open_nursery() as nursery:
                for team, tell_id, why in targets:
                    if tell_id:
                        nursery.start_soon(one, team, tell_id)
                    else:
                        results[team] = FanOutResult(to_team=team, status="refused", error=why or "not sent")
        if waiting:
            tell_id, team, phase = waiting[0]
            return await self.form_for(tell_id, team, phase, targets)
        if report is not None:
            await report(len(targets), "every team answered")
        return render_reply(TellsReply(results=[results[team] for team, _, _ in targets if team in results]))

    async def cancel_quietly(self, tell_id: str | None) -> None:
        """On a cancelled call: cancel its tell too, bounded, whatever the outcome."""
        from protocol.errors import IrisError
        from protocol.messages import CancelTell

        if tell_id is None:
            # Cancelled before irisd accepted the tell (and named it): nothing runs yet, or it
            # was refused; a tell accepted at that very moment runs on (readable by id).
            log.warning("call cancelled before irisd named its tell; a tell accepted meanwhile runs on")
            return
        with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                # No daemon, no tell to cancel: never start one just for this.
                await self.link.call(CancelTell(tell_id=tell_id), idempotent=True, start_daemon=False)
                log.info("cancelled tell %s", tell_id)
            except IrisError as exc:
                log.warning("could not cancel tell %s: %s", tell_id, exc.message)

    async def team_command(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import render_reply
        from protocol.errors import ConnectionLost, DaemonNotRunningError
        from protocol.messages import Command

        request = Command(
            to_team=args.team,
            command="/" + args.command.strip().lstrip("/"),
            args=args.args,
            from_team=await self.sender(args.from_team),
            timeout_ms=args.timeout,
            thread=args.thread,
        )
        grace = max(args.timeout, 0) / 1000 + TELL_GRACE_S if args.timeout != 0 else float("inf")
        try:
            return render_reply(await self.request(request, idempotent=False, within=grace))
        except ConnectionLost:
            raise DaemonNotRunningError(
                "the connection to irisd broke after the command was sent; it may have run: "
                f"see team_report {{\"team\": \"{args.team}\"}}"
            ) from None

    async def team_result(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import GetTell

        request = GetTell(tell_id=args.tell_id, wait_ms=args.wait)
        return await self.simple(request, within=args.wait / 1000 + TELL_GRACE_S)

    async def team_cancel(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import render_cancelled, render_reply
        from protocol.messages import CancelTell, TellReply

        reply = await self.request(CancelTell(tell_id=args.tell_id))
        if not isinstance(reply, TellReply):  # iris-agent's: an approval for the person
            return render_reply(reply)
        return render_cancelled(reply)

    # approvals -------------------------------------------------------------------------

    async def team_approvals(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import ListApprovals

        return await self.simple(ListApprovals(team=args.team, include_decided=args.all))

    async def team_approve(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import Decide

        decide = Decide(
            approval_id=args.approval_id, allow=True, remember=args.remember, by=await self.decider(),
            content=args.content or {},
        )
        return await self.simple(decide, idempotent=False)  # sent again, it would be "already decided"

    async def team_deny(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import Decide

        decide = Decide(approval_id=args.approval_id, allow=False, reason=args.reason, by=await self.decider())
        return await self.simple(decide, idempotent=False)

    # questions and costs ---------------------------------------------------------------

    async def team_questions(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import ListQuestions

        me = (await self.identity()).team
        for_team = "" if args.all_callers else (me or "external")
        return await self.simple(ListQuestions(team=args.team, include_closed=args.all, for_team=for_team))

    async def team_answer(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import AnswerQuestion

        me = (await self.identity()).team
        request = AnswerQuestion(
            question_id=args.question_id,
            text=args.text,
            timeout_ms=args.timeout,
            by=await self.decider(),
            as_team=me or "external",
        )
        grace = max(args.timeout, 0) / 1000 + TELL_GRACE_S if args.timeout != 0 else float("inf")
        return await self.simple(request, idempotent=False, within=grace)

    async def team_costs(self, args: Any, report: ReportProgress) -> ToolOutput:
        import time

        from protocol.messages import Costs

        since = time.time() - args.since_hours * 3600 if args.since_hours else 0.0
        return await self.simple(Costs(by=args.by, since=since, team=args.team))

    async def team_status(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import GetStatus

        return await self.simple(GetStatus())

    async def team_sessions(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import ListSessions

        return await self.simple(ListSessions(to_team=args.team, archived=args.archived))

    async def decider(self) -> str:
        return f"{(await self.identity()).team or 'external'} (Claude Code)"

    # pairs -----------------------------------------------------------------------------

    async def team_is_awake(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import render_awake
        from protocol.messages import GetPair, GetStatus, StatusReply

        me = await self.sender(args.from_team)
        if args.team is not None:
            return await self.simple(GetPair(to_team=args.team, from_team=me))
        status = await self.request(GetStatus())
        assert isinstance(status, StatusReply)
        return render_awake(status, me)

    async def team_wake(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import Wake

        return await self.simple(Wake(to_team=args.team, from_team=await self.sender(args.from_team)))

    async def team_sleep(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import Sleep

        me = await self.sender(args.from_team)
        return await self.simple(Sleep(to_team=args.team, from_team=me, force=args.force))

    async def team_wake_all(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import WakeAll

        me = await self.sender(args.from_team)
        return await self.simple(WakeAll(from_team=me, parallel=args.parallel))

    async def team_report(self, args: Any, report: ReportProgress) -> ToolOutput:
        from protocol.messages import Report

        me = await self.sender(args.from_team)
        request = Report(to_team=args.team, from_team=me, all_callers=args.all_callers, limit=args.limit)
        return await self.simple(request)

    async def team_cache_read(self, args: CacheReadArgs, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import ToolOutput
        from protocol.errors import InvalidRequestError
        from protocol.messages import Report, ReportReply

        me = await self.sender(args.from_team)
        tell_id = args.tell_id
        if tell_id is None:
            if args.team is None:
                raise InvalidRequestError(
                    "team_cache_read needs a tellId, or a team to read your latest tell to it"
                )
            latest = await self.request(Report(to_team=args.team, from_team=me, limit=1))
            assert isinstance(latest, ReportReply)
            if not latest.tells:
                return ToolOutput(f"no tells between you and {args.team} yet", {"tells": []})
            tell_id = latest.tells[0].id
        return await self.read_transcript(tell_id)

    async def read_transcript(self, tell_id: str) -> ToolOutput:
        """A tell's steps, read in pages (irisd holds one at a time), gathered as the tool
        shows them (``TranscriptTail``: bounded, whatever the transcript's length)."""
        from iris_mcp.render import TranscriptTail
        from protocol.messages import ReadTranscript, TranscriptPage, TranscriptReply

        shown = TranscriptTail()

        async def on_event(event: Event) -> None:
            if isinstance(event, TranscriptPage):
                shown.add(event.steps)

        # Not resent on a lost connection: the pages shown would repeat (the model may ask again).
        request = ReadTranscript(tell_id=tell_id, steps=True, paged=True)
        reply = await self.request(request, idempotent=False, on_event=on_event)
        assert isinstance(reply, TranscriptReply)
        shown.add(reply.steps)  # none from irisd; a daemon that knows no pages sends them whole
        return shown.output(reply.tell)

    async def team_cache_clear(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_common.text import pair_name
        from iris_mcp.render import ToolOutput
        from protocol.messages import ClearCache, CountReply

        me = await self.sender(args.from_team)
        reply = await self.request(ClearCache(to_team=args.team, from_team=me))
        assert isinstance(reply, CountReply)
        text = f"forgot {reply.count} finished tells of {pair_name(me, args.team)}; the conversation is kept"
        return ToolOutput(text, {"cleared": reply.count, "from_team": me, "to_team": args.team})

    # who is who ------------------------------------------------------------------------

    async def team_teams(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import render_teams
        from protocol.messages import GetStatus, StatusReply

        me = (await self.identity()).team
        status = await self.request(GetStatus())
        assert isinstance(status, StatusReply)
        return render_teams(status, me)

    async def team_get_team_name(self, args: Any, report: ReportProgress) -> ToolOutput:
        from iris_mcp.render import ToolOutput

        me = await self.identity()
        data = {
            "team": me.team,
            "source": me.source,
            "cwd": me.cwd,
            "team_path": me.team_path,
            "parent_pair": self.parent_pair,
        }
        described = me.describe()
        return ToolOutput(f"{described[0].upper()}{described[1:]}.", data)


# --- the MCP server -------------------------------------------------------------------


Principal = Callable[["ServerRequestContext[Any]"], "str | None"]


def build_server(
    shim: Shim | Callable[[ServerRequestContext[Any]], Shim],
    *,
    principal: Principal | None = None,
    seal: StateSeal | None = None,
) -> Server[Any]:
    """The low-level SDK server (MCPServer would add schema generation we do not need).
    ``shim`` serves every call, or names the Shim for each call's context (irisd's /mcp:
    the caller is the HTTP request's). ``principal`` names a call's caller, to bind the
    ``requestState`` of the input this server asks for to it (None: one client, stdio).

    It speaks both eras: the 2026-07-28 one (``server/discover``, capabilities in each
    request's ``_meta``, ``resultType`` on results; the SDK's runner) and the
    ``initialize`` handshake. ``seal``: the ``StateSeal`` to use (the stdio fast path
    shares it, ``iris_mcp/stdio.py``), else one of its own for ``principal``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    shim_for = shim if callable(shim) else (lambda ctx: shim)
    listed: dict[tuple[str, ...], list[types.Tool]] = {}  # offered -> the tools (one server serves every kind)
    seal = seal or StateSeal(principal or (lambda ctx: None))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        offered = shim_for(ctx).offered
        if offered not in listed:
            listed[offered] = mcp_tool_list(offered=offered)
        return types.ListToolsResult(tools=listed[offered])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        from iris_mcp.asking import Asking

        async def report_progress(progress: float, message: str) -> None:
            await ctx.session.report_progress(progress, None, message)

        # Progress (and irisd streaming the tell) only for a client that asked for it.
        report = report_progress if ctx.meta is not None and "progress_token" in ctx.meta else None

        responses = {
            key: response.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, response in (params.input_responses or {}).items()
        }
        can_ask = can_elicit(ctx.protocol_version, ctx.session.client_capabilities)
        asking = Asking(can_ask=can_ask, state=params.request_state, responses=responses, spent=seal.spent())
        output = await shim_for(ctx).call(params.name, params.arguments, report, asking)
        if output.ask is not None:  # the wire form the stdio fast path sends, as the SDK's model
            return types.InputRequiredResult.model_validate(output.wire(), by_name=False)
        return types.CallToolResult.model_validate(output.wire(), by_name=False)

    from iris_common import __version__
    from iris_mcp.listing import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE

    server = Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.append(seal)
    return server


def can_elicit(protocol_version: str, capabilities: types.ClientCapabilities | None) -> bool:
    """The client can show its person a form in answer to an ``input_required`` result:
    it speaks 2026-07-28 and declared form elicitation (in this request's ``_meta``)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    elicitation = capabilities.elicitation if capabilities is not None else None
    # An empty declaration means form (the spec's default); url alone is no form.
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


class StateSeal:
    """The SDK's ``RequestStateBoundary`` on ``tools/call``: every ``requestState`` this
    server hands out is sealed (AES-GCM under a key made by this process: the shim's, or
    irisd's for /mcp) and bound to the tool, its arguments and the caller; a retry's state
    is verified before the tool sees it, and a forged, altered, expired or someone else's
    one is refused (-32602 "Invalid or expired requestState"). Loaded on the first call:
    it costs ``iris mcp``'s start-up nothing."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self._boundary: Any = None
        self._spent: SpentStates | None = None

    def spent(self) -> SpentStates:
        """The states already answered here (a replayed one is refused)."""
        if self._spent is None:
            from iris_mcp.asking import SpentStates

            self._spent = SpentStates()
        return self._spent

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        if self._boundary is None:
            import os

            from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

            security = RequestStateSecurity(keys=[os.urandom(32)], ttl=STATE_TTL_S, bind_principal=self.principal)
            self._boundary = RequestStateBoundary(security, default_audience="iris")
        result: HandlerResult = await self._boundary(ctx, call_next)
        return result


def mcp_tool_list(read_only: bool = False, offered: tuple[str, ...] | None = None) -> list[types.Tool]:
    """The tools to list: ``offered`` (a shim's), else all of them or (``read_only``) those that
    read; built from the wire form irisd's /mcp also answers with (``iris_mcp/listing.py``)."""
    from iris_mcp.listing import offered_tools, tool_dicts

    if offered is None:
        offered = offered_tools(read_only=read_only)
    import mcp_types as types

    return [types.Tool.model_validate(tool) for tool in tool_dicts(offered)]
