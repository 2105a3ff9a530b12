"""``iris questions``, ``iris answer``, ``iris dismiss``: answers that asked their caller
something while nobody was waiting (pending questions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from iris_cli.commands.common import JsonOption, me, print_json, read_stdin, send

if TYPE_CHECKING:
    from protocol.messages import QuestionInfo

app = typer.Typer()
QuestionId = Annotated[str, typer.Argument(metavar="QID", help="The question's id (see 'iris questions').")]


@app.command()
def questions(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only questions of or for this team.")] = None,
    include_closed: Annotated[bool, typer.Option("--all", help="Answered, dismissed and expired ones too.")] = False,
    stats: Annotated[
        bool, typer.Option("--stats", help="iris-agent's work instead: detection, its verdicts, its actions, cost.")
    ] = False,
    since_hours: Annotated[
        float | None, typer.Option("--since-hours", help="With --stats: only the last N hours.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Questions teams asked that nobody has answered yet."""
    from iris_cli import runs

    if stats:
        show_stats(since_hours, as_json)
        return
    runs.questions(team, include_closed, as_json)


@app.command()
def answer(
    question_id: QuestionId,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Your answer ('-' reads standard input).")],
    timeout: Annotated[
        int, typer.Option(help="Milliseconds to wait for the team's reply: 0 waits, -1 returns at once.")
    ] = 0,
    as_json: JsonOption = False,
) -> None:
    """Answer a pending question: TEXT becomes the next tell of the same pair."""
    from iris_cli import render
    from iris_cli.text import ANSWERED, pair_name, tell_data
    from protocol.messages import AnswerQuestion, AnswerReply, TellReply

    if text == "-":
        text = read_stdin()
    reply = send(AnswerQuestion(question_id=question_id, text=text, timeout_ms=timeout, by=me()), as_json)
    assert isinstance(reply, AnswerReply)
    info = reply.tell
    if as_json:
        print_json({"question": reply.question, "tell": tell_data(TellReply(status=reply.status, tell=info))})
        return
    q = reply.question
    render.err.print(f"answered {q.id}; sent to {pair_name(q.from_team, q.to_team)} as tell {info.id}", style="dim")
    render.answer(reply.status, info, id_if_empty=True)
    if reply.status not in ANSWERED:
        raise typer.Exit(1)


@app.command()
def dismiss(question_id: QuestionId, as_json: JsonOption = False) -> None:
    """Close a pending question without answering it."""
    from iris_cli import render
    from protocol.messages import DismissQuestion, QuestionReply

    reply = send(DismissQuestion(question_id=question_id, by=me()), as_json)
    assert isinstance(reply, QuestionReply)
    print_json(reply.question) if as_json else render.out.print(f"{reply.question.id}: dismissed")


def show_stats(since_hours: float | None, as_json: bool) -> None:
    """``iris questions --stats``: iris-agent's work, as tables (or JSON)."""
    import time

    from iris_cli import render
    from iris_cli.table import Column, Table
    from protocol.messages import AgentStats, AgentStatsReply

    since = time.time() - since_hours * 3600 if since_hours else 0.0
    reply = send(AgentStats(since=since), as_json)
    assert isinstance(reply, AgentStatsReply)
    if as_json:
        print_json({**to_builtins(reply), "detection_rate": reply.detection_rate})
        return
    statuses = ", ".join(f"{count} {status}" for status, count in sorted(reply.questions_by_status.items()))
    render.out.print(
        f"questions: {reply.questions} of {reply.tells_completed} completed tells "
        f"({reply.detection_rate:.0%}){f': {statuses}' if statuses else ''}",
        highlight=False,
    )
    render.out.print(f"iris-agent looked at {reply.looked}:", highlight=False)
    rows = [
        (c.classification or "(no verdict)", str(c.count), f"{c.confidence:.0%}", str(c.answered), str(c.dismissed),
         str(c.expired), str(c.pending))
        for c in reply.classified
    ]
    headers = ("classified", "questions", "confidence", "answered", "dismissed", "expired", "pending")
    render.show(Table([Column(h) for h in headers], rows)) if rows else render.out.print("  none yet")
    render.out.print("its actions:")
    rows = [
        (a.tool, str(a.proposed), str(a.allowed), str(a.denied), str(a.expired), str(a.pending), str(a.automatic))
        for a in reply.actions
    ]
    headers = ("action", "proposed", "allowed", "denied", "expired", "pending", "settings.agent.allow")
    render.show(Table([Column(h) for h in headers], rows)) if rows else render.out.print("  none yet")
    render.out.print(
        f"cost: {reply.ask_usd:.4f} USD for {reply.asks} asks, {reply.watch_usd:.4f} USD watching, "
        f"{reply.tells_usd:.4f} USD for its tells",
        highlight=False,
    )


def to_builtins(value: object) -> dict[str, object]:
    import msgspec

    built = msgspec.to_builtins(value)
    assert isinstance(built, dict)
    return built


def question_event(q: QuestionInfo) -> None:
    """A line for 'iris watch'."""
    from iris_cli import render
    from iris_cli.text import pair_name, short

    if q.status == "pending":
        from rich.text import Text

        render.out.print(Text.assemble(
            (f"? {q.id}", "yellow"), f" {pair_name(q.from_team, q.to_team)} asks: {short(q.question, 200)}"
        ))
    else:
        render.note(f"{q.id} {q.status}")
