"""The ``iris`` executable. Kept light: ``iris mcp`` (launched by Claude Code for every
session) must not pay for importing rich and the rest of the CLI before the MCP server
starts, so it runs the ``mcp`` Typer app alone (the same app the full CLI mounts)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

_CLI_ONLY = {"install", "uninstall", "--help", "-h"}


def run() -> NoReturn:
    """The ``iris`` command: ``main``, then the process ends at once with its exit code.
    A command has written and flushed all it says by then; the interpreter's teardown of
    the modules it imported only cost time (about 80 ms of each ``iris`` run on a loaded
    2-core machine: scripts and tests run it hundreds of times)."""
    code = 0
    try:
        main()
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:  # sys.exit("message"): Python prints it and exits 1
            print(exc.code, file=sys.stderr)
            code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone away, a stream closed: nothing more to say
            pass
    os._exit(code)


def main() -> None:
    try:
        try:
            _main(sys.argv[1:])
        finally:
            if sys.stdout is not None:  # None: started with stdout closed
                sys.stdout.flush()  # here, where a reader gone away is caught (also on sys.exit)
    except BrokenPipeError:
        # The reader went away ('iris status | head -1'): end quietly, as Typer's commands
        # do; stdout goes to /dev/null so that Python's last flush has nowhere to fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


def _main(args: list[str]) -> None:
    from iris_cli.utf8 import bad_argument

    if problem := bad_argument(args):
        print(f"iris: {problem}", file=sys.stderr)
        sys.exit(2)
    if args == ["--version"]:  # scripts ask it: no Typer either
        from iris_cli import version_line

        print(version_line())
        sys.exit(0)
    if args in (["status"], ["status", "--json"]):  # the hot path: no Typer, no rich
        import_msgspec()
        from iris_cli.status_cmd import run_status

        sys.exit(run_status(as_json=args[1:] == ["--json"]))
    if _plain_tell(args):  # 'iris tell TEAM MESSAGE [--json]': the other hot path
        import_msgspec()
        from iris_cli.tell_cmd import run_tell

        run_tell(args[1], args[2], from_team=None, timeout=0, max_budget_usd=None, as_json=args[3:] == ["--json"])
        sys.exit(0)
    if args[:1] == ["mcp"] and not _CLI_ONLY.intersection(args[1:2]):
        from iris_cli.mcp_stdio import mcp_app

        mcp_app(args[1:], prog_name="iris mcp")
    from iris_cli.app import main as cli

    cli()


def _plain_tell(args: list[str]) -> bool:
    """The plain form of ``iris tell``: one team, a message given in full, no option but
    ``--json``. Anything else (options, several teams, '-' for standard input) is Typer's."""
    return (
        len(args) in (3, 4)
        and args[0] == "tell"
        and args[3:] in ([], ["--json"])
        and not args[1].startswith("-")
        and "," not in args[1]
        and not args[2].startswith("-")
    )


def import_msgspec() -> None:
    """Import msgspec without typing_extensions, for the hot paths.

    msgspec does not depend on typing_extensions, but imports it when it is installed (Typer
    installs it) for two things: its ``get_type_hints``, which msgspec always calls with
    ``include_extras=True``, where on Python 3.11 and later it returns what
    ``typing.get_type_hints`` returns; and ``Required``/``NotRequired``, which there are
    typing's own objects. Without it,
    msgspec takes the same from ``typing`` (tests/unit/test_protocol.py checks that both give
    the Structs the same types). Importing it, and ``inspect``, ``ast``, ``dis`` and
    ``tokenize`` behind it, was a sixth of ``iris status``'s instructions. It is hidden only
    while msgspec is imported: whatever imports it later (Typer, rich) gets it as usual.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return  # too late to matter, or nothing to hide
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # None: "import fails"
    try:
        import msgspec  # noqa: F401 (imported for what it caches: its typing helpers)
    except ImportError:
        pass  # a later msgspec that needs it: the command imports it as it is
    finally:
        del sys.modules["typing_extensions"]
