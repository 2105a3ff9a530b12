"""Sending a request and failing, for every command, without Typer: the hot paths
(``iris status``, ``iris tell TEAM MESSAGE``) run from ``iris_cli.entry`` with no Typer at
all, and the Typer commands call the same functions. A command ends with ``SystemExit``
(its exit code), which Typer passes through."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from iris_cli.client import EventHandler, Expected
    from protocol.errors import IrisError
    from protocol.messages import Reply, Request


def fail(error: IrisError, as_json: bool = False) -> NoReturn:
    """End the command with ``error``'s message on stderr and exit code 1."""
    if as_json:
        import json

        print(json.dumps({"error": {"code": error.code, "message": error.message}}), file=sys.stderr)
    else:
        from iris_cli import render

        render.error(error.message)
    raise SystemExit(1)


def read_stdin() -> str:
    """All of standard input as text; not UTF-8 ends the command (exit 2), never a traceback."""
    from iris_cli.utf8 import not_utf8

    raw = sys.stdin.buffer.read()
    if problem := not_utf8(raw):
        from iris_cli import render

        render.error(
            f"standard input is not valid UTF-8: {problem}; convert it "
            "(e.g. 'iconv -f LATIN1 -t UTF-8') or send the file's name instead"
        )
        raise SystemExit(2)
    return raw.decode("utf-8")


def send(
    request: Request,
    as_json: bool = False,
    on_event: EventHandler | None = None,
    explain: Callable[[IrisError], IrisError] | None = None,
    expect: Expected = (),
) -> Reply:
    """One request to irisd; an IrisError ends the command with its message (``explain``
    may first add what the command knows, e.g. the id of a tell under way). ``expect``: the
    reply and event types the command takes (``Client.request``)."""
    from iris_cli.client import Client
    from protocol.errors import IrisError

    try:
        with Client() as client:
            return client.request(request, on_event, expect=expect)
    except IrisError as exc:
        fail(explain(exc) if explain else exc, as_json)


def print_json(value: object) -> None:
    import json

    import msgspec

    print(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False))


def me() -> str:
    """Who decides, for the record: the user, at the CLI."""
    import getpass

    return f"{getpass.getuser()} (cli)"


def caller(name: str | None) -> str | None:
    """The asking team as the protocol wants it: ``None`` for you (``external``)."""
    return None if name in (None, "", "external", "-") else name

