"""``iris dashboard``: irisd's web page in a browser, logged in."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import fail, send

app = typer.Typer()


@app.command()
def dashboard(
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the login URL (it holds the token: keep it to yourself).")
    ] = False,
) -> None:
    """Open irisd's dashboard in a browser (logged in), or print its login URL."""
    from protocol.messages import HttpInfo, HttpInfoReply

    reply = send(HttpInfo(login_code=not print_only))
    assert isinstance(reply, HttpInfoReply)
    if print_only:
        print(f"{reply.url}/login?token={reply.token}")
        return
    import webbrowser

    # A single-use code, not the token: the browser's command line is readable by every user.
    url = f"{reply.url}/login?code={reply.login_code}"
    if not webbrowser.open(url):
        from protocol.errors import IrisError

        fail(IrisError("no browser found; run 'iris dashboard --print' and open the URL yourself"))
    print(f"opened {reply.url} in your browser")
