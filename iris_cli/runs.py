"""The bodies of the commands people and scripts run most after ``status`` (``tell`` in its
plain form, ``result``, ``cancel``, ``report``, ``sessions``, ``sleep``, ``wake``,
``approvals``, ``approve``, ``deny``, ``questions``, ``costs``, ``notifications``, ``reload``,
``teams``), without Typer: ``iris_cli.entry`` runs their plain forms
(``iris_cli.argv``) straight from here, and their Typer commands (``iris_cli.commands.*``,
for ``--help``, the other options and usage errors) call the same functions.

Each one sends its request, prints the reply (JSON, or lines through ``iris_cli.render``)
and ends with ``SystemExit`` for an exit code other than 0, which Typer passes through.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from iris_cli.calls import caller, fail, print_json, send

if TYPE_CHECKING:  # and not at run time: 'iris tell TEAM MESSAGE' imports this module too
    from typing import Literal

    from protocol.messages import AgentVerdict, CostRow, Decide

    CostsBy = Literal["team", "pair", "chain", "day"]
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float) -> float:
    """'today', '7d', '12h', '30m', '2w', or a date '2026-11-01' (local) -> epoch seconds."""
    from protocol.errors import InvalidRequestError

    text = text.strip().lower()
    if text in ("", "all"):
        return 0.0
    if text == "today":
        from iris_common.money import day_start

        return day_start(now)
    import re

    relative = re.match(r"^(\d+(?:\.\d+)?)\s*([mhdw])$", text)
    if relative:
        return now - float(relative.group(1)) * _UNIT_S[relative.group(2)]
    import datetime

    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InvalidRequestError(
            f"--since {text!r} is not a time; use 'today', 'all', a span such as 7d, 12h, 30m, 2w, "
            "or a date such as 2026-11-01"
        ) from None


def thread_named(thread: str, as_json: bool) -> str:
    """``--thread`` as given, or exit with what a thread name is (before anything is sent)."""
    from protocol.errors import InvalidRequestError
    from protocol.limits import thread_problem

    if problem := thread_problem(thread):
        fail(InvalidRequestError(f"--thread: {problem}"), as_json)
    return thread


def tell(
    team: str, message: str, from_team: str | None = None, timeout: int = 0, thread: str = "", as_json: bool = False
) -> None:
    """``iris tell TEAM MESSAGE``: the tell streamed, its answer printed (``iris_cli.tell_cmd``)."""
    from iris_cli.tell_cmd import run_tell

    thread = thread_named(thread, as_json)
    run_tell(team, message, from_team=caller(from_team), timeout=timeout, max_budget_usd=None, as_json=as_json,
             thread=thread)


def result(tell_id: str, wait: int = 0, as_json: bool = False) -> None:
    """``iris result ID``: a tell's status and answer; exit 1 if it ended other than completed."""
    from iris_cli import render
    from iris_cli.text import ANSWERED, pair_name, tell_data
    from iris_cli.watcher import approval_hint
    from protocol.messages import GetTell, TellReply
    from protocol.phases import awaited_approval, describe

    reply = send(GetTell(tell_id=tell_id, wait_ms=wait), as_json)
    assert isinstance(reply, TellReply)
    info = reply.tell
    if as_json:
        print_json(tell_data(reply))
    else:
        pair = pair_name(info.from_team, info.to_team, info.thread)
        phase = f" · {describe(info.phase)}" if info.phase is not None else ""
        render.err.print(f"{pair} · {info.status}{phase} · {render.ago(info.created_at)}", style="dim")
        if info.phase is not None and (approval := awaited_approval(info.phase)) is not None:
            render.err.print(approval_hint(info.phase, approval.approval_id))
        render.answer(reply.status, info)
    if reply.status not in ANSWERED:
        raise SystemExit(1)


def cancel(tell_id: str, as_json: bool = False) -> None:
    """``iris cancel ID``: interrupt a tell (its claude stays warm)."""
    from iris_cli import render
    from iris_cli.text import tell_data
    from protocol.messages import CancelTell, TellReply

    reply = send(CancelTell(tell_id=tell_id), as_json)
    assert isinstance(reply, TellReply)
    if as_json:
        print_json(tell_data(reply))
    else:
        status = reply.tell.status
        if not reply.cancelled and status in ("completed", "failed", "timed_out", "interrupted"):
            render.out.print(f"tell {reply.tell.id} had already ended ({status}); nothing to cancel")
            return
        render.out.print(f"tell {reply.tell.id} is {status}")  # the whole id, not the prefix typed
        if reply.tell.text:
            print(reply.tell.text)


def report(
    team: str, from_team: str | None = None, all_callers: bool = False, limit: int = 20, as_json: bool = False
) -> None:
    """``iris report TEAM``: recent tells of a pair."""
    from iris_cli import render
    from protocol.messages import Report, ReportReply

    request = Report(to_team=team, from_team=caller(from_team), all_callers=all_callers, limit=limit)
    reply = send(request, as_json)
    assert isinstance(reply, ReportReply)
    print_json(reply.tells) if as_json else render.report(reply.tells)


def sessions(team: str | None = None, archived: bool = False, as_json: bool = False) -> None:
    """``iris sessions [TEAM]``: the pairs' persistent conversations."""
    from iris_cli import render
    from protocol.messages import ListSessions, SessionsReply

    reply = send(ListSessions(to_team=team, archived=archived), as_json)
    assert isinstance(reply, SessionsReply)
    if as_json:
        print_json(reply.sessions)
    else:
        render.sessions(reply.sessions, archived=archived)


def sleep(
    team: str, from_team: str | None = None, force: bool = False, thread: str = "", as_json: bool = False
) -> None:
    """``iris sleep TEAM``: stop a pair's claude; exit 1 if it was busy (and not forced)."""
    from iris_cli import render
    from protocol.messages import PairReply, Sleep

    request = Sleep(to_team=team, from_team=caller(from_team), force=force, thread=thread_named(thread, as_json))
    reply = send(request, as_json)
    assert isinstance(reply, PairReply)
    print_json(reply) if as_json else render.out.print(reply.message)
    if "busy" in reply.message:
        raise SystemExit(1)


def wake(team: str, from_team: str | None = None, thread: str = "", as_json: bool = False) -> None:
    """``iris wake TEAM``: start a pair's claude now (``--all``: Typer's ``iris wake``)."""
    from iris_cli import render
    from protocol.messages import PairReply, Wake

    reply = send(Wake(to_team=team, from_team=caller(from_team), thread=thread_named(thread, as_json)), as_json)
    assert isinstance(reply, PairReply)
    print_json(reply) if as_json else render.out.print(reply.message)


def approve(approval_id: str, remember: bool = False, as_json: bool = False, field: list[str] | None = None) -> None:
    """``iris approve ID``: allow a team's tool use (or answer its MCP server's form)."""
    from iris_cli.calls import me
    from protocol.errors import InvalidRequestError
    from protocol.forms import parse_fields
    from protocol.messages import Decide

    try:
        content = parse_fields(field or [])
    except InvalidRequestError as exc:
        fail(exc, as_json)
    decide(Decide(approval_id=approval_id, allow=True, remember=remember, by=me(), content=content), as_json)


def deny(approval_id: str, reason: str = "", as_json: bool = False) -> None:
    """``iris deny ID``: refuse a team's tool use (or decline its MCP server's form)."""
    from iris_cli.calls import me
    from protocol.messages import Decide

    decide(Decide(approval_id=approval_id, allow=False, reason=reason, by=me()), as_json)


def decide(request: Decide, as_json: bool) -> None:
    from iris_cli import render
    from protocol.messages import ApprovalReply

    reply = send(request, as_json)
    assert isinstance(reply, ApprovalReply)
    if as_json:
        print_json(reply.approval)
    else:
        decided = reply.approval
        remembered = " (remembered for this pair)" if decided.remembered else ""
        if decided.kind == "input":
            said = "answered" if decided.status == "allowed" else "declined"
            render.out.print(f"{decided.tool_name}: {said}")
        elif decided.kind == "budget":
            said = "the chain goes on" if decided.status == "allowed" else "the chain stops"
            render.out.print(f"{decided.tool_name}: {said}")
        else:
            render.out.print(f"{decided.tool_name}: {decided.status}{remembered}")


def approvals(team: str | None = None, include_decided: bool = False, as_json: bool = False) -> None:
    """``iris approvals [TEAM]``: tool uses waiting for a person's decision."""
    from iris_cli import render
    from protocol.messages import ApprovalsReply, ListApprovals

    reply = send(ListApprovals(team=team, include_decided=include_decided), as_json)
    assert isinstance(reply, ApprovalsReply)
    print_json(reply.approvals) if as_json else render.approvals(reply.approvals)


def questions(team: str | None = None, include_closed: bool = False, as_json: bool = False) -> None:
    """``iris questions [TEAM]``: questions teams asked that nobody has answered yet."""
    from iris_cli import render
    from iris_cli.table import Column, Table
    from iris_cli.text import pair_name
    from protocol.messages import ListQuestions, QuestionsReply

    reply = send(ListQuestions(team=team, include_closed=include_closed), as_json)
    assert isinstance(reply, QuestionsReply)
    if as_json:
        print_json(reply.questions)
        return
    if not reply.questions:
        render.out.print("no pending questions" if not include_closed else "no questions")
        return
    rows = [
        (q.id, pair_name(q.from_team, q.to_team), q.status, render.ago(q.created_at), q.question)
        for q in reply.questions
    ]
    columns = [Column(h) for h in ("id", "pair", "status", "when")]
    render.show(Table([*columns, Column("message", free=True, fold=render.MESSAGE_MIN)], rows))
    for q in reply.questions:  # what iris-agent's watcher made of them (settings.agent.watch)
        if q.agent is not None:
            render.out.print(f"{q.id} iris-agent: {verdict(q.agent)}")
    if any(q.status == "pending" for q in reply.questions):
        render.note('answer with: iris answer QID "TEXT" (it continues that conversation)', render.err)


def verdict(a: AgentVerdict) -> str:
    """What iris-agent's watcher made of a question, in a line."""
    why = f": {a.reason}" if a.reason else ""
    suggests = f"; suggests {a.suggestion!r}" if a.suggestion else ""
    approval = f" (iris approve {a.approval_id})" if a.approval_id else ""
    return f"{a.classification}, {a.confidence:.0%}{why}{suggests}{approval}"


def costs(by: CostsBy = "team", since: str = "all", team: str | None = None, as_json: bool = False) -> None:
    """``iris costs``: what the tells cost, summed per team, pair, chain or day."""
    from iris_cli import render
    from iris_cli.table import Column, Table
    from protocol.errors import InvalidRequestError
    from protocol.messages import Costs, CostsReply

    try:
        start = parse_since(since, time.time())
    except InvalidRequestError as exc:
        fail(exc, as_json)
    reply = send(Costs(by=by, since=start, team=team), as_json)
    assert isinstance(reply, CostsReply)
    if as_json:
        print_json(reply)
        return
    if not reply.rows:
        render.out.print("no costs recorded yet" + (" in that time" if start else ""))
        return
    maintenance = reply.total.maintenance_usd > 0  # a column only when Iris compacted something
    rows = [_cost_cells(row, maintenance) for row in [*reply.rows, reply.total]]
    headers = (by, "tells", "cost", *(("maintenance",) if maintenance else ()), "input", "output", "cache read",
               "cache write", "turns", "claude time")
    render.show(Table([Column(h) for h in headers], rows))
    if maintenance:
        render.note("maintenance: of the cost, what the compactions Iris ran between tells cost")


def _cost_cells(row: CostRow, maintenance: bool = False) -> tuple[str, ...]:
    from iris_cli.text import usd

    return (
        row.key or "-",
        str(row.tells),
        usd(row.cost_usd),
        *((usd(row.maintenance_usd),) if maintenance else ()),
        f"{row.input_tokens:,}",
        f"{row.output_tokens:,}",
        f"{row.cache_read_tokens:,}",
        f"{row.cache_creation_tokens:,}",
        str(row.num_turns),
        f"{row.duration_ms / 1000:.1f} s",
    )


def notifications(team: str | None = None, include_done: bool = False, as_json: bool = False) -> None:
    """``iris notifications [TEAM]``: stored tells and whether they were delivered."""
    from iris_cli import render
    from protocol.messages import ListNotifications, NotificationsReply

    reply = send(ListNotifications(to_team=team, include_done=include_done), as_json)
    assert isinstance(reply, NotificationsReply)
    print_json(reply.notifications) if as_json else render.notifications(reply.notifications)


def reload(as_json: bool = False) -> None:
    """``iris reload``: irisd reads config.yaml again."""
    from protocol.messages import Reload, ReloadReply

    reply = send(Reload(), as_json)
    assert isinstance(reply, ReloadReply)
    if as_json:
        print_json(reply)
        return
    for change in reply.changes:
        print(f"reloaded: {change}")


def teams(as_json: bool = False) -> None:
    """``iris teams``: the configured teams."""
    from iris_cli import render
    from protocol.messages import ListTeams, TeamsReply

    reply = send(ListTeams(), as_json)
    assert isinstance(reply, TeamsReply)
    if as_json:
        print_json(reply.teams)
    elif not reply.teams:
        render.err.print("no teams configured; add them under 'teams:' in config.yaml")
    else:
        render.teams(reply.teams)
