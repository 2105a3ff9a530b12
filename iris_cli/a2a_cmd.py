"""``iris a2a token --name NAME``, ``iris a2a tokens``, ``iris a2a revoke NAME``: the tokens of
outside A2A agents (iris_common/a2a_tokens.py). They work on the token file directly, so
also while irisd is down; irisd sees a change at the next request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from iris_cli.calls import fail

a2a_app = typer.Typer(help="Every team an A2A agent: tokens for the outside agents that may ask them.")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _path() -> Path:
    from iris_common.a2a_tokens import tokens_file
    from iris_common.paths import IrisPaths

    return tokens_file(IrisPaths.from_env().home)


@a2a_app.command("token")
def token(
    name: Annotated[str, typer.Option("--name", help="Who the agent is: its tells are sent as a2a:NAME.")],
    as_json: JsonOption = False,
) -> None:
    """Issue a token for one outside A2A agent (again: a new token; the old one stops working).

    It is shown once; the agent sends it as 'Authorization: Bearer TOKEN'."""
    from iris_common import a2a_tokens
    from protocol.errors import IrisError

    path = _path()
    try:
        value = a2a_tokens.issue(path, name)
    except IrisError as exc:
        fail(exc, as_json)
    if as_json:
        print(json.dumps({"name": name, "token": value, "sender": a2a_tokens.sender_of(name)}))
        return
    print(value)


@a2a_app.command("tokens")
def tokens(as_json: JsonOption = False) -> None:
    """List the agents that hold a token (the tokens themselves are not kept)."""
    from iris_common import a2a_tokens
    from protocol.errors import IrisError

    path = _path()
    try:
        agents = a2a_tokens.read(path)
    except IrisError as exc:
        fail(exc, as_json)
    if as_json:
        print(json.dumps([{"name": a.name, "created_at": a.created_at} for a in agents]))
        return
    from iris_cli import render
    from iris_cli.table import Column, Table

    if not agents:
        render.out.print("no A2A tokens; issue one with 'iris a2a token --name NAME'")
        return
    rows = [(a.name, a2a_tokens.sender_of(a.name), render.ago(a.created_at)) for a in agents]
    render.show(Table([Column(h) for h in ("agent", "sends as", "issued")], rows))

@a2a_app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The agent whose token stops working.")], as_json: JsonOption = False
) -> None:
    """Revoke an agent's token: its next request is refused (401)."""
    from iris_common import a2a_tokens
    from protocol.errors import IrisError

    path = _path()
    try:
        a2a_tokens.revoke(path, name)
    except IrisError as exc:
        fail(exc, as_json)
    print(json.dumps({"revoked": name}) if as_json else f"revoked the A2A token of {name}")
