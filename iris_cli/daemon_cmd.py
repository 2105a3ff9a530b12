"""``iris daemon ...``: install and drive the irisd user service."""

from __future__ import annotations

import typer

daemon_app = typer.Typer(help="Install, start, stop and inspect the irisd service.", no_args_is_help=True)
