"""``iris``: the command line. Thin: build a request, send it to irisd, render the reply.

Start-up is most of what a command costs, so this module imports only Typer: the
commands live in ``iris_cli.commands.*`` (and ``daemon_cmd``, ``mcp_cmd``), and
``LazyGroup`` imports the one module that holds the command being run. Each command
module imports rich, the protocol types and the client only when it needs them.
``iris --help`` lists them all, and so imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

# Command name -> "module:attribute", where the attribute is a Typer app. Either the
# app holds the command of that name (``iris_cli.commands.*``: one app per module), or
# it IS that command group (``daemon``, ``mcp``). The order is the order of ``--help``.
COMMANDS: dict[str, str] = {
    "tell": "iris_cli.commands.tells:app",
    "result": "iris_cli.commands.tells:app",
    "cancel": "iris_cli.commands.tells:app",
    "command": "iris_cli.commands.tells:app",
    "status": "iris_cli.commands.info:app",
    "teams": "iris_cli.commands.info:app",
    "watch": "iris_cli.commands.info:app",
    "reload": "iris_cli.commands.info:app",
    "monitor": "iris_cli.commands.monitor:app",
    "report": "iris_cli.commands.pairs:app",
    "sessions": "iris_cli.commands.pairs:app",
    "session": "iris_cli.commands.pairs:app",
    "wake": "iris_cli.commands.pairs:app",
    "sleep": "iris_cli.commands.pairs:app",
    "cache": "iris_cli.commands.pairs:app",
    "notifications": "iris_cli.commands.info:app",
    "approvals": "iris_cli.commands.approvals:app",
    "approve": "iris_cli.commands.approvals:app",
    "deny": "iris_cli.commands.approvals:app",
    "questions": "iris_cli.commands.questions:app",
    "answer": "iris_cli.commands.questions:app",
    "dismiss": "iris_cli.commands.questions:app",
    "costs": "iris_cli.commands.costs:app",
    "ask": "iris_cli.commands.ask:app",
    "init": "iris_cli.commands.setup:app",
    "demo": "iris_cli.commands.setup:app",
    "doctor": "iris_cli.commands.setup:app",
    "dashboard": "iris_cli.commands.web:app",
    "http": "iris_cli.http_cmd:http_app",
    "a2a": "iris_cli.a2a_cmd:a2a_app",
    "mesh": "iris_cli.mesh_cmd:mesh_app",
    "daemon": "iris_cli.daemon_cmd:daemon_app",
    "mcp": "iris_cli.mcp_cmd:mcp_app",
}


class LazyGroup(TyperGroup):
    """The top-level group: builds only the command asked for (Typer builds every
    command's parameters up front, which costs more than running most commands)."""

    _built: dict[str, TyperGroup] = {}  # noqa: RUF012 -- a cache shared on purpose, per process

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Typer's ``main``, but a usage error is printed as click prints it ("Usage: ...",
        "Try 'iris report -h' for help.", "Error: Missing argument 'TEAM'.") instead of in
        Typer's rich box, whose module imports rich's markdown and traceback (0.1 s of CPU
        for a mistyped command); ``--help`` keeps Typer's rich layout."""
        return typer.core._main(  # private, and typer is pinned (pyproject.toml)
            self, args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=standalone_mode,
            windows_expand_args=windows_expand_args, rich_markup_mode=None, **extra,
        )

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(name for name in super().list_commands(ctx) if name not in COMMANDS)]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # 'iris sessions archive FROM TO' is what a person who just listed 'iris sessions'
        # types: it is 'iris session archive FROM TO' (as a TEAM, 'archive' took FROM TO as
        # extra arguments and failed). 'iris sessions archive' alone still lists team archive's.
        if args[:1] == ["sessions"] and args[1:2] in (["reset"], ["archive"], ["restore"]) and len(args) > 2:
            args = ["session", *args[1:]]
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        group = self._built.get(target)
        if group is None:
            module, _, attribute = target.partition(":")
            sub_app: typer.Typer = getattr(importlib.import_module(module), attribute)
            group = self._built[target] = typer.main.get_group(sub_app)
        if module_is_the_command(target):
            group.name = cmd_name
            return group
        return group.get_command(ctx, cmd_name)


def module_is_the_command(target: str) -> bool:
    return not target.startswith("iris_cli.commands.")


app = typer.Typer(
    name="iris",
    cls=LazyGroup,
    help="Let the Claude Code agents of your projects talk to each other.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(wanted: bool) -> None:
    if wanted:
        from iris_cli import version_line

        print(version_line())
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Let the Claude Code agents of your projects talk to each other."""


def main() -> None:
    app()
