"""Every daemon reply rendered for a model (``render_reply``, by the reply's type).

Text for the model plus structured content (the reply as plain data, the shape
``iris ... --json`` prints), so a request whose reply type the daemon changes still
renders sensibly. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

import msgspec

from iris_common.money import usd
from iris_common.text import pair_name, tail, tell_data
from iris_common.text import short as text_short
from iris_mcp.asking import InputAsk, ask_your_person
from protocol import session_words
from protocol.forms import describe_form
from protocol.messages import (
    AnswerReply,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    CostRow,
    CostsReply,
    CountReply,
    NotificationInfo,
    NotificationReply,
    NotificationsReply,
    PairReply,
    PairsReply,
    ProcessInfo,
    QuestionInfo,
    QuestionReply,
    QuestionsReply,
    Reply,
    ReportReply,
    SessionReply,
    SessionsReply,
    StatusReply,
    TeamsReply,
    TellInfo,
    TellPhase,
    TellReply,
    TellsReply,
    TranscriptReply,
    Welcome,
)
from protocol.phases import awaited_approval, describe
from protocol.transcript import Step, steps

# Caps on what goes back to the model: Claude Code warns above ~25k tokens of tool output.
MAX_LISTED_TEXT = 300
MAX_LISTED_ANSWER = 2_000
MAX_TRANSCRIPT_CHARS = 20_000
MAX_TRANSCRIPT_ENTRIES = 200


@dataclass(frozen=True)
class ToolOutput:
    text: str
    data: dict[str, Any]
    is_error: bool = False
    ask: InputAsk | None = None  # instead of a result: ask the client's person first (MCP input_required)

    def structured(self) -> dict[str, Any]:
        """The structured content, standing on its own.

        Claude Code hands the model ``structuredContent`` INSTEAD of the text when a
        successful result has both (anthropics/claude-code#55677, #79944; seen here with
        2.1.330), so the data carries the text too, as ``summary``, unless it already
        holds it (a tell's answer is its ``text``; an error's, its message).
        """
        error = self.data.get("error")
        held = (self.data.get("text"), error.get("message") if isinstance(error, dict) else None)
        if not self.text or self.text in held:
            return self.data
        return {"summary": self.text, **self.data}

    def wire(self) -> dict[str, Any]:
        """The ``tools/call`` result, as sent: the SDK's path and the stdio fast path
        (``iris_mcp/fastpath.py``) both send this (the requestState of an ``ask`` is sealed
        on the way out, ``StateSeal``). A test checks it is what the SDK's models make."""
        if self.ask is not None:
            form = {"mode": "form", "message": self.ask.message, "requestedSchema": self.ask.schema}
            return {
                "resultType": "input_required",
                "inputRequests": {self.ask.key: {"method": "elicitation/create", "params": form}},
                "requestState": self.ask.state,
            }
        return {  # in the order the SDK's result sieve sends (irisd's /mcp answers byte for byte)
            "content": [{"text": self.text, "type": "text"}],
            "isError": self.is_error,
            "resultType": "complete",
            "structuredContent": self.structured(),
        }


def plain(value: object) -> Any:
    return msgspec.to_builtins(value)


def short(text: str, limit: int = MAX_LISTED_TEXT) -> str:
    return text_short(text, limit)


def ask_person(phase: TellPhase) -> str:
    """For the calling model, after the phase in words: a tell that waits for an approval
    (its own, or the one of the tell ahead of it) waits for a person."""
    approval = awaited_approval(phase)
    if approval is None:
        return ""
    return f"; {ask_your_person(approval.approval_id, 'input' if approval.server else 'tool')}"


def render_tell(reply: TellReply) -> ToolOutput:
    """A tell's answer for the model; anything but a plain answer says what to do next."""
    info, status = reply.tell, reply.status
    data = tell_data(reply)
    if status == "completed":
        if info.kind == "command":  # with what it printed ("Compacted"), if anything
            said = f": {info.text}" if info.text else "."
            return ToolOutput(f"{info.message} ran in {pair_name(info.from_team, info.to_team)}{said}", data)
        return ToolOutput(info.text or "(the team answered with no text)", data)
    if status == "in_progress":
        if not info.text:
            waits: str = info.status
            if info.phase is not None:
                waits = describe(info.phase)
            text = (
                f"Sent to {info.to_team} (tellId {info.id}); it is {waits}. "
                f"Fetch the answer later with team_result {{\"tellId\": \"{info.id}\"}}."
            )
        else:
            text = (
                f"{info.to_team} is still working (tellId {info.id}). The answer so far:\n\n{info.text}\n\n"
                f"Fetch the rest with team_result {{\"tellId\": \"{info.id}\"}}."
            )
        awaited = awaited_approval(info.phase) if info.phase is not None else None
        waiting = info.approval_id or (awaited.approval_id if awaited is not None else "")
        if waiting:  # its own, the tell's ahead of it, or one of a tell further down its chain
            kind = "input" if awaited is not None and awaited.server else "tool"  # an MCP server's form
            text += f"\nThe tell waits for {_what[kind]} {waiting}: {ask_your_person(waiting, kind)}."
        return ToolOutput(text, data)
    reason = f": {info.error}" if info.error else ""
    text = f"The tell to {info.to_team} {status.replace('_', ' ')}{reason} (tellId {info.id})."
    if info.text:
        text += f"\nWhat it said before that:\n\n{info.text}"
    return ToolOutput(text, data, is_error=True)


def render_cancelled(reply: TellReply) -> ToolOutput:
    """What a cancel did: the tell is interrupted now, or had already ended."""
    info = reply.tell
    if reply.cancelled:
        text = f"Cancelled tell {info.id} to {info.to_team}."
    else:
        text = f"Tell {info.id} to {info.to_team} had already ended ({info.status}); nothing to cancel."
    if info.text:
        text += f" What it had said:\n\n{info.text}"
    return ToolOutput(text, tell_data(reply))


def render_process(process: ProcessInfo, message: str = "") -> str:
    pair = pair_name(process.from_team, process.to_team, process.thread)
    awake = "awake" if process.state not in ("stopped", "failed") else "asleep"
    details: list[str] = [process.state]
    if process.pid is not None:
        details.append(f"pid {process.pid}")
    if process.queued:
        details.append(f"{process.queued} queued")
    if process.reason:
        details.append(process.reason)
    line = f"{pair}: {awake} ({', '.join(details)})"
    return f"{message}. {line}" if message else line


def render_pair(reply: PairReply) -> ToolOutput:
    return ToolOutput(render_process(reply.process, reply.message), plain(reply))


def render_pairs(reply: PairsReply) -> ToolOutput:
    lines = [render_process(p) for p in reply.processes]
    lines += [f"{team}: not woken: {why}" for team, why in sorted(reply.errors.items())]
    return ToolOutput("\n".join(lines) or "no teams configured", plain(reply), is_error=bool(reply.errors))


def render_report(reply: ReportReply) -> ToolOutput:
    if not reply.tells:
        return ToolOutput("no tells yet", plain(reply))
    lines = []
    for tell in reply.tells:
        line = f"- {tell.id} [{tell.status}] {pair_name(tell.from_team, tell.to_team)}: {short(tell.message)}"
        if tell.text:
            line += f"\n  answer: {short(tell.text)}"
        if tell.error:
            line += f"\n  error: {short(tell.error)}"
        lines.append(line)
    data = plain(reply)
    for tell in data["tells"]:  # the list is for finding a tell; team_result has all of it
        if len(tell.get("text", "")) > MAX_LISTED_ANSWER:
            tell["text"] = tell["text"][:MAX_LISTED_ANSWER] + "…"
            tell["text_truncated"] = True
    return ToolOutput("\n".join(lines), data)


def step_line(step: Step) -> str:
    """One step of a transcript (protocol/transcript.py) in a line, for a model."""
    match step.kind:
        case "text":
            return f"assistant: {short(step.text)}"
        case "tool":
            return f"calls {step.tool} {short(json.dumps(step.input, ensure_ascii=False), 150)}"
        case "result":
            return f"tool {'error' if step.is_error else 'result'}: {short(step.text, 150)}"
        case "end":
            return f"result ({step.subtype}): {short(step.answer)}"
        case _:
            return short(step.text)


def render_transcript(reply: TranscriptReply) -> ToolOutput:
    shown = TranscriptTail()
    shown.add(reply.steps or steps(reply.entries, reply.tell))
    return shown.output(reply.tell)


class TranscriptTail:
    """What ``team_cache_read`` shows of a tell's steps, gathered page by page: one line per
    step (the raw JSON stays with the daemon, 'iris cache read --raw': the model reads this
    data, and raw transcripts run to megabytes), the last ``MAX_TRANSCRIPT_ENTRIES`` steps
    and the last ``MAX_TRANSCRIPT_CHARS`` characters of their lines. It holds no more than
    that however long the transcript (irisd's own /mcp reads it in irisd)."""

    def __init__(self) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=MAX_TRANSCRIPT_ENTRIES)
        self.count = 0
        self._lines: deque[str] = deque()
        self._chars = 0  # of _lines, with their newlines

    def add(self, found: list[Step]) -> None:
        for step in found:
            if step.kind == "thinking":  # what it did, not what it thought
                continue
            line = step_line(step)
            self.entries.append({"at": step.at, "kind": step.kind, "line": line})
            self.count += 1
            self._lines.append(line)
            self._chars += len(line) + 1
            while len(self._lines) > 1 and self._chars - len(self._lines[0]) - 1 >= MAX_TRANSCRIPT_CHARS:
                self._chars -= len(self._lines.popleft()) + 1

    def output(self, tell: TellInfo) -> ToolOutput:
        pair = pair_name(tell.from_team, tell.to_team)
        header = f"tell {tell.id} [{tell.status}] {pair}: {short(tell.message)}"
        data: dict[str, Any] = {"tell": plain(tell), "entries": list(self.entries)}
        if self.count > MAX_TRANSCRIPT_ENTRIES:
            data["entries_truncated"] = True
        body = "\n".join(self._lines)
        return ToolOutput(tail(f"{header}\n{body}", MAX_TRANSCRIPT_CHARS), data)


def render_teams(status: StatusReply, me: str | None) -> ToolOutput:
    """Every team with its description and the state of the caller's process to it."""
    mine = {p.to_team: p for p in status.processes if p.from_team == me}
    rows = []
    for team in status.teams:
        process = mine.get(team.name)
        state = process.state if process is not None else "stopped"
        rows.append({**plain(team), "state": state, "awake": state not in ("stopped", "failed")})
    lines = [
        f"- {r['name']}{' (you)' if r['name'] == me else ''}: {r.get('description') or 'no description'} "
        f"[{'awake' if r['awake'] else 'asleep'}] {r['path']}"
        for r in rows
    ]
    text = "\n".join(lines) if lines else "no teams configured; add them under 'teams:' in config.yaml"
    return ToolOutput(text, {"teams": rows, "you": me})


def render_awake(status: StatusReply, me: str | None) -> ToolOutput:
    teams = render_teams(status, me).data["teams"]
    running = sum(p.pid is not None for p in status.processes)
    lines = [f"{t['name']}: {'awake' if t['awake'] else 'asleep'} ({t['state']})" for t in teams]
    lines.append(f"{running} of at most {status.max_processes} Claude processes run")
    pool = {"processes": running, "max_processes": status.max_processes}
    return ToolOutput("\n".join(lines), {"teams": {t["name"]: t for t in teams}, "pool": pool})


def render_notification(info: NotificationInfo) -> str:
    return (
        f"notification {info.id} for {info.to_team}: {info.status}"
        f"{f' (tell {info.tell_id})' if info.tell_id else ''}{f': {info.error}' if info.error else ''}"
    )


_what = {"tool": "approval", "input": "input request"}


def render_approval(a: ApprovalInfo) -> str:
    """One approval, readable: who wants which tool with what input (an MCP server: which
    form; a chain's budget: the question), and its state."""
    if a.kind == "agent":  # an action of iris-agent: what it will do, once the person allows it
        state = a.status if a.status == "pending" else f"{a.status} by {a.decided_by or '-'}"
        reason = f" ({a.reason})" if a.reason else ""
        wait = f"; nothing is done until the person allows it ('iris approve {a.id}')" if a.status == "pending" else ""
        return f"{a.id}: iris-agent proposes to {a.summary} [{state}{reason}]{wait}"
    what = json.dumps(a.input, ensure_ascii=False)
    if a.tool_name == "Bash" and isinstance(a.input.get("command"), str):
        what = f"$ {a.input['command']}"
    state = a.status if a.status == "pending" else f"{a.status} by {a.decided_by or '-'}"
    reason = f" ({a.reason})" if a.reason else ""
    if a.kind == "input":
        return (f"{a.id}: {pair_name(a.from_team, a.to_team)}'s MCP server {a.tool_name} asks for input: "
                f"{a.message} (fields: {describe_form(a.schema) or 'none'}) [{state}{reason}]")
    if a.kind == "budget":
        return f"{a.id}: {pair_name(a.from_team, a.to_team)}: {a.message} [{state}{reason}]"
    return f"{a.id}: {pair_name(a.from_team, a.to_team)} wants {a.tool_name}: {what} [{state}{reason}]"


def render_question(q: QuestionInfo) -> str:
    asked_of = q.from_team or "external"
    state = q.status if q.status == "pending" else f"{q.status}{f' by {q.closed_by}' if q.closed_by else ''}"
    return f"{q.id}: {q.to_team} asks {asked_of} [{state}]: {q.question}"


def render_answer(reply: AnswerReply) -> ToolOutput:
    told = render_tell(TellReply(status=reply.status, tell=reply.tell))
    data = {"question": plain(reply.question), **told.data}
    return ToolOutput(f"Answered {reply.question.id}. {reply.tell.to_team} replied:\n\n{told.text}", data,
                      is_error=told.is_error)


def render_costs(reply: CostsReply) -> ToolOutput:
    def counted(n: int, thing: str) -> str:
        return f"{n} {thing}" if n == 1 else f"{n} {thing}s"

    def line(row: CostRow) -> str:
        return (
            f"- {row.key}: {usd(row.cost_usd)} over {counted(row.tells, 'tell')} ({row.input_tokens} input, "
            f"{row.output_tokens} output, {row.cache_read_tokens} cache-read tokens; {counted(row.num_turns, 'turn')})"
        )

    lines = [line(row) for row in reply.rows] or ["no costs recorded"]
    lines.append(f"total: {usd(reply.total.cost_usd)} over {counted(reply.total.tells, 'tell')}")
    return ToolOutput("\n".join(lines), plain(reply))


def render_fan_out(reply: TellsReply) -> ToolOutput:
    """Every target's answer under its team's name; an error only if none answered."""
    parts, results = [], []
    for result in reply.results:
        if result.tell is not None:
            told = render_tell(TellReply(status=result.status if result.status != "refused" else "failed",
                                         tell=result.tell))
            parts.append(f"## {result.to_team} ({result.status})\n{told.text}")
            results.append({**told.data, "status": result.status})
            results[-1].pop("message", None)
        else:
            parts.append(f"## {result.to_team} (refused)\n{result.error}")
            results.append({"to_team": result.to_team, "status": "refused",
                            "error": {"code": result.error_code, "message": result.error}})
    none_answered = all(r.status not in ("completed", "in_progress") for r in reply.results)
    return ToolOutput("\n\n".join(parts), {"results": results}, is_error=none_answered)


def render_status(status: StatusReply) -> ToolOutput:
    lines = [f"irisd {status.daemon_version} (pid {status.pid}), {len(status.teams)} teams, "
             f"{status.pending_approvals} approvals waiting"]
    lines += [render_process(p) + (f", tell {p.current_tell}" if p.current_tell else "") for p in status.processes]
    lines += [f"health {f.severity}: {f.summary} (fix: {f.fix})" for f in status.findings]
    return ToolOutput("\n".join(lines), plain(status))


def render_reply(reply: Reply) -> ToolOutput:
    """Any daemon reply as tool output, by its type."""
    match reply:
        case TellReply():
            return render_tell(reply)
        case PairReply():
            return render_pair(reply)
        case PairsReply():
            return render_pairs(reply)
        case ReportReply():
            return render_report(reply)
        case TranscriptReply():
            return render_transcript(reply)
        case CountReply(count):
            return ToolOutput(f"done ({count})", plain(reply))
        case NotificationReply(notification):
            text = render_notification(notification) + ". It will be delivered when the team is free."
            return ToolOutput(text, plain(reply))
        case NotificationsReply(notifications):
            text = "\n".join(render_notification(n) for n in notifications) or "no notifications"
            return ToolOutput(text, plain(reply))
        case ApprovalsReply(approvals):
            text = "\n\n".join(render_approval(a) for a in approvals) or "no approvals waiting"
            return ToolOutput(text, plain(reply))
        case ApprovalReply(approval):
            return ToolOutput(render_approval(approval), plain(reply))
        case TeamsReply(teams):
            return ToolOutput("\n".join(f"- {t.name}: {t.description}" for t in teams), plain(reply))
        case QuestionsReply(questions):
            text = "\n\n".join(render_question(q) for q in questions) or "no pending questions"
            return ToolOutput(text, plain(reply))
        case QuestionReply(question):
            return ToolOutput(render_question(question), plain(reply))
        case AnswerReply():
            return render_answer(reply)
        case CostsReply():
            return render_costs(reply)
        case TellsReply():
            return render_fan_out(reply)
        case StatusReply():
            return render_status(reply)
        case SessionsReply(sessions):
            lines = [
                f"- {pair_name(s.from_team, s.to_team, s.thread)}: session {s.session_id}, {s.message_count} turns, "
                f"{s.process_state}, cost {usd(s.cost_usd)}, context {session_words.context(s)}, "
                f"compactions {session_words.compactions(s)}" + (f", {s.status}" if s.status != "active" else "")
                for s in sessions
            ]
            return ToolOutput("\n".join(lines) or "no conversations yet", plain(reply))
        case SessionReply() | Welcome():
            return ToolOutput(json.dumps(plain(reply), indent=1), plain(reply))
    return ToolOutput(f"irisd answered with {type(reply).__name__}", {"type": type(reply).__name__})


def error_output(message: str, code: str) -> ToolOutput:
    return ToolOutput(message, {"error": {"code": code, "message": message}}, is_error=True)
