"""``iris http token [--rotate]``: the owner's token for irisd's HTTP face (the API,
the dashboard). ``iris dashboard`` is in ``iris_cli.commands.web``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from iris_cli.commands.common import fail

http_app = typer.Typer(help="irisd's HTTP face: the API, the dashboard, MCP for irisd's own children.")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


@http_app.command("token")
def token(
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Make a new token; the old one and every browser login stop working.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print the owner's token for the HTTP API ('Authorization: Bearer TOKEN')."""
    from iris_cli.client import Client
    from iris_common.owner_token import load_or_create_owner_token, token_file, write_owner_token
    from iris_common.paths import IrisPaths
    from protocol.errors import IrisError
    from protocol.messages import HttpInfo, HttpInfoReply

    url = ""
    try:
        with Client() as client:
            reply = client.request(HttpInfo(rotate=rotate))
        assert isinstance(reply, HttpInfoReply)
        value, url = reply.token, reply.url
    except IrisError as exc:
        if exc.code != "daemon_not_running":
            fail(exc, as_json)
        # No irisd: the token file is the truth; irisd reads it when it starts.
        path = token_file(IrisPaths.from_env().home)
        value = write_owner_token(path) if rotate else load_or_create_owner_token(path)
    if as_json:
        print(json.dumps({"token": value, "url": url, "rotated": rotate}))
    else:
        print(value)
        if rotate:
            from iris_cli import render

            render.note("rotated: the old token and every browser login no longer work", render.err)
