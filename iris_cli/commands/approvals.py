"""``iris approvals [list|rules|forget]``, ``approve`` and ``deny``: the tool uses waiting
for a person, and the requests remembered with ``--remember``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from iris_cli.commands.common import JsonOption, print_json, send

app = typer.Typer()


class ListByDefault(TyperGroup):
    """``iris approvals [TEAM] [--all]`` lists; ``iris approvals rules|forget ...`` are
    subcommands: whatever is not a subcommand goes to ``list``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


approvals_app = typer.Typer(
    cls=ListByDefault,
    help="Tool uses waiting for your decision ('iris approvals [TEAM] [--all]'), and remembered rules.",
)
app.add_typer(approvals_app, name="approvals")


@approvals_app.command("list")
def approvals(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only requests of or for this team.")] = None,
    include_decided: Annotated[bool, typer.Option("--all", help="Decided and expired ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Requests of teams to use a tool, waiting for your decision."""
    from iris_cli import runs

    runs.approvals(team, include_decided, as_json)


@approvals_app.command()
def rules(
    team: Annotated[str | None, typer.Argument(metavar="TEAM", help="Only rules of pairs with this team.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Requests a pair may make without asking again (made with 'iris approve --remember')."""
    from iris_cli import render
    from protocol.messages import ListRules, RulesReply

    reply = send(ListRules(team=team), as_json)
    assert isinstance(reply, RulesReply)
    print_json(reply.rules) if as_json else render.rules(reply.rules)


@approvals_app.command()
def forget(
    rule_id: Annotated[str, typer.Argument(metavar="RULE", help="The rule's id (see 'iris approvals rules').")],
    as_json: JsonOption = False,
) -> None:
    """Stop allowing a remembered request without asking."""
    from iris_cli import render
    from iris_cli.text import pair_name
    from protocol.messages import ForgetRule, RuleReply
    from protocol.phases import tool_summary

    reply = send(ForgetRule(rule_id=rule_id), as_json)
    assert isinstance(reply, RuleReply)
    rule = reply.rule
    if as_json:
        print_json(rule)
    else:
        what = f"{rule.tool_name} `{tool_summary(rule.tool_name, rule.input)}`"
        render.out.print(f"forgot: {pair_name(rule.from_team, rule.to_team)} asks again for {what}")


@app.command()
def approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    remember: Annotated[
        bool,
        typer.Option(
            help="Also allow exactly this request (same tool, same input) from this pair from now on, "
            "without asking; nothing else is allowed, and 'iris approvals forget' undoes it."
        ),
    ] = False,
    field: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=VALUE",
            help="For a team's MCP server asking for input: a field of its form (repeat for each; "
            "'iris approvals' shows the fields). Approving answers the form, 'iris deny' declines it.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Allow a team's tool use (or answer its MCP server's form with --field)."""
    from iris_cli import runs

    runs.approve(approval_id, remember, as_json, field)


@app.command()
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id (see 'iris approvals').")],
    reason: Annotated[str, typer.Option(help="Why; the team's model reads it.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Refuse a team's tool use (or decline its MCP server's form)."""
    from iris_cli import runs

    runs.deny(approval_id, reason, as_json)
