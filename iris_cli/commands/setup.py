"""``iris init`` and ``iris demo``: getting started."""

from __future__ import annotations

from typing import Annotated

import typer

from iris_cli.commands.common import JsonOption, fail

app = typer.Typer()


@app.command()
def init(
    team: Annotated[
        list[str] | None,
        typer.Option("--team", help="A team as NAME=FOLDER (repeat for each); '.' is this folder."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing config.yaml.")] = False,
    http_port: Annotated[
        int | None,
        typer.Option(
            "--http-port", min=0, max=65535,
            help="The HTTP face's port (default 1615; 0: any free port), if 1615 is taken on this machine.",
        ),
    ] = None,
) -> None:
    """Write a starter config.yaml with your teams (checked before it is written)."""
    from iris_cli import render
    from iris_cli.setup import write_starter_config
    from protocol.errors import IrisError

    try:
        path, teams = write_starter_config(team or [], force=force, http_port=http_port)
    except IrisError as exc:
        fail(exc)
    render.out.print(f"wrote {path} with {len(teams)} team(s): {', '.join(teams)}")
    render.out.print(
        f"next: start the daemon ('iris daemon start', or 'irisd' in a terminal), then "
        f"'iris tell {teams[0]} \"hello\"'; 'iris doctor' checks the set-up",
    )


@app.command()
def demo(
    claude: Annotated[
        str | None,
        typer.Option(
            help="The claude executable (default: $IRIS_CLAUDE_BIN, the one next to iris, then 'claude' on PATH)."
        ),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the temporary folder (for a look inside).")] = False,
) -> None:
    """Run Iris end to end, offline: a scripted model, two teams, the daemon, a few tells."""
    from iris_cli.demo import run_demo
    from protocol.errors import IrisError

    try:
        run_demo(claude, keep=keep)
    except IrisError as exc:
        fail(exc)


@app.command()
def doctor(as_json: JsonOption = False) -> None:
    """Check the set-up, one line each with the fix; exits 1 when something must be fixed.

    It checks claude, credentials, config, teams (remote ones over ssh), the socket, irisd,
    the service and Claude Code."""
    import json

    from iris_cli import render
    from iris_cli.doctor import run_checks

    checks = run_checks()
    if as_json:
        print(json.dumps([vars(c) for c in checks], indent=2, ensure_ascii=False))
    else:
        from rich.text import Text

        marks = {"ok": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "red"), "skip": ("-", "dim")}
        width = max(len(c.name) for c in checks)
        for c in checks:
            fix = (f" → {c.fix}", "dim") if c.fix else ""
            render.out.print(Text.assemble(marks[c.verdict], f" {c.name:<{width}}  ", c.detail, fix))
        failed = sum(c.verdict == "fail" for c in checks)
        render.out.print("\nall good" if not failed else f"\n{failed} problem(s) to fix", style="bold")
    if any(c.verdict == "fail" for c in checks):
        raise typer.Exit(1)

