"""What every command module shares: options, and (from ``iris_cli.calls``, which needs no
Typer) sending a request, failing, JSON output.

Only Typer is imported at the top: rich, msgspec, the protocol types and the client
load when a command first needs them (see ``iris_cli.app``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.calls import caller as caller
from iris_cli.calls import fail as fail
from iris_cli.calls import me as me
from iris_cli.calls import print_json as print_json
from iris_cli.calls import read_stdin as read_stdin
from iris_cli.calls import send as send
from iris_cli.runs import thread_named as thread_named

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
FromOption = Annotated[
    str | None, typer.Option("--from", help="The team asking (default: you, outside any team; 'external' says so).")
]

ThreadOption = Annotated[
    str,
    typer.Option(
        "--thread",
        metavar="NAME",
        help="A conversation of the pair (e.g. auth-refactor): each thread has its own claude session; "
        "left out, the pair's default conversation.",
    ),
]
