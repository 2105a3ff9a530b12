"""``iris ask``: ask iris-agent, the assistant that answers from Iris's read-only data."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import JsonOption, print_json, read_stdin, send

app = typer.Typer()


@app.command()
def ask(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="What to ask ('-' reads standard input).")],
    new: Annotated[bool, typer.Option("--new", help="Start a new conversation with iris-agent.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Ask iris-agent about your teams, tells, costs and questions (it only reads)."""
    from iris_cli import render
    from protocol.messages import Ask, AskReply

    if question == "-":
        question = read_stdin()
    reply = send(Ask(question=question, new_session=new), as_json)
    assert isinstance(reply, AskReply)
    if as_json:
        print_json(reply)
    else:
        print(reply.text)
        if reply.tools:
            render.note(f"looked at: {', '.join(dict.fromkeys(reply.tools))}", render.err)
    if reply.is_error:
        raise typer.Exit(1)
