"""``iris dashboard``: irisd's web page in a browser, logged in."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from iris_cli.commands.common import send

app = typer.Typer()


def can_open_a_browser() -> bool:
    """A graphical browser is within reach: macOS, Windows, a display, or $BROWSER. (On a
    server over ssh, Python's webbrowser would start a text browser in the terminal.)"""
    if sys.platform == "darwin" or os.name == "nt":
        return True
    return any(os.environ.get(name) for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"))


@app.command()
def dashboard(
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the login URL (it holds the token: keep it to yourself).")
    ] = False,
) -> None:
    """Open irisd's dashboard in a browser, logged in (or print its login URL)."""
    from protocol.messages import HttpInfo, HttpInfoReply

    opening = not print_only and can_open_a_browser()
    reply = send(HttpInfo(login_code=opening))
    assert isinstance(reply, HttpInfoReply)
    if opening:
        import webbrowser

        # A single-use code, not the token: the browser's command line is readable by every user.
        if webbrowser.open(f"{reply.url}/login?code={reply.login_code}"):
            print(f"opened {reply.url} in your browser")
            return
    if not print_only:
        print("no browser here: open this URL in yours (it holds the token: keep it to yourself)", file=sys.stderr)
    print(f"{reply.url}/login?token={reply.token}")
