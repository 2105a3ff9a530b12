"""``iris approvals``, ``approve`` and ``deny``: the tool uses waiting for a person."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from iris_cli.commands.common import JsonOption, print_json, send

if TYPE_CHECKING:
    from protocol.messages import Decide

app = typer.Typer()


@app.command()
def approvals(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only requests of or for this team.")] = None,
    include_decided: Annotated[bool, typer.Option("--all", help="Decided and expired ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Requests of teams to use a tool, waiting for your decision."""
    from iris_cli import render
    from protocol.messages import ApprovalsReply, ListApprovals

    reply = send(ListApprovals(team=team, include_decided=include_decided), as_json)
    assert isinstance(reply, ApprovalsReply)
    print_json(reply.approvals) if as_json else render.approvals(reply.approvals)


@app.command()
def approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    remember: Annotated[
        bool, typer.Option(help="Also allow the same request from this pair from now on, without asking.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Allow a team's tool use."""
    from protocol.messages import Decide

    _decide(Decide(approval_id=approval_id, allow=True, remember=remember, by=_me()), as_json)


@app.command()
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    reason: Annotated[str, typer.Option(help="Why; the team's model reads it.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Refuse a team's tool use."""
    from protocol.messages import Decide

    _decide(Decide(approval_id=approval_id, allow=False, reason=reason, by=_me()), as_json)


def _decide(request: Decide, as_json: bool) -> None:
    from iris_cli import render
    from protocol.messages import ApprovalReply

    reply = send(request, as_json)
    assert isinstance(reply, ApprovalReply)
    if as_json:
        print_json(reply.approval)
    else:
        remembered = " (remembered for this pair)" if reply.approval.remembered else ""
        render.out.print(f"{reply.approval.tool_name}: {reply.approval.status}{remembered}")


def _me() -> str:
    import getpass

    return f"{getpass.getuser()} (cli)"
