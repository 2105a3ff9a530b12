"""The ``iris`` executable. Kept light: ``iris mcp`` (launched by Claude Code for every
session) must not pay for importing rich and the rest of the CLI before the MCP server
starts, so it runs the ``mcp`` Typer app alone (the same app the full CLI mounts)."""

from __future__ import annotations

import os
import sys

# typing.TYPE_CHECKING without importing typing, a third of 'iris --version' (mypy takes any
# name TYPE_CHECKING as true); the commands that talk to irisd import it with msgspec.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
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
            try:
                _main(sys.argv[1:])
            except Exception as exc:  # an Iris error a command met before asking irisd: its words, no traceback
                from protocol.errors import IrisError

                if not isinstance(exc, IrisError):
                    raise
                from iris_cli.calls import fail

                fail(exc, "--json" in sys.argv[1:])
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
    from iris_cli.argv import plain_form

    if (plain := plain_form(args)) is not None:  # 'iris tell TEAM MESSAGE', 'iris approvals', ...: no Typer
        run_plain(*plain)
    if args[:1] == ["mcp"] and not _CLI_ONLY.intersection(args[1:2]):
        from iris_cli.mcp_stdio import mcp_app

        mcp_app(args[1:], prog_name="iris mcp")
    from iris_cli.app import main as cli

    cli()


def run_plain(runner: str, arguments: dict[str, object]) -> NoReturn:
    """Run a command of ``iris_cli.runs`` in its plain form (``iris_cli.argv``), as Typer
    would: exit 0 when it returns, 130 on Ctrl-C."""
    import_msgspec()
    from iris_cli import runs

    try:
        getattr(runs, runner)(**arguments)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)


def import_msgspec() -> None:
    """Import msgspec for the hot paths, without what msgspec loads that they never use.

    - ``typing_extensions`` (and ``inspect``, ``ast``, ``dis``, ``tokenize`` behind it), a
      sixth of ``iris status``'s instructions: msgspec imports it, when installed (Typer
      installs it), for its ``get_type_hints``, which msgspec always calls with
      ``include_extras=True``, where on Python 3.11 and later it returns what
      ``typing.get_type_hints`` returns, and for ``Required``/``NotRequired``, which there
      are typing's own objects; without it msgspec takes the same from ``typing``
      (tests/unit/test_protocol.py checks that both give the Structs the same types).
    - The pure-Python half of ``datetime``: msgspec's core asks ``datetime`` for the C API
      of ``_datetime``, whose types ``datetime`` re-exports, so it is given ``_datetime``
      itself; a later ``import datetime`` loads the real module, with the same types.
    - ``platform`` (eight regular expressions compiled at import): ``uuid``, which msgspec
      imports for its ``UUID`` type, calls ``platform.system()`` once to know whether it
      runs on AIX or Linux; it is given a stand-in whose ``system()`` answers what
      ``platform.system()`` does, and a later ``import platform`` loads the real module.
    - Running ``msgspec/__init__.py`` before something asks for a name the core does not
      give: it imports ``msgspec.inspect`` (forty Structs), ``json`` with its schema module
      and ``textwrap``, ``toml``, ``yaml`` and ``structs``, a fifth of msgspec's import.
      The package is made from msgspec's own spec, with the core's names; the first other
      name asked for (``msgspec.json``, ``msgspec.field``, ...) runs ``__init__.py`` in
      it, so from then on it is the package as ``import msgspec`` makes it.

    Each stand-in is in ``sys.modules`` only while msgspec's core is imported; whatever
    imports these modules later (Typer, rich) gets them as usual. Any surprise (another
    msgspec that is no package of files, a core that fails to load) imports msgspec the
    ordinary way (tests/subsystem/test_cli_app.py compares the two).
    """
    if "msgspec" in sys.modules:
        return  # too late to matter
    stand_ins: dict[str, ModuleType | None] = {}
    if "typing_extensions" not in sys.modules:
        stand_ins["typing_extensions"] = None  # None: "import fails"
    if "datetime" not in sys.modules:
        try:
            import _datetime  # type: ignore[import-not-found]  # the C module, no stubs
        except ImportError:  # a Python without it: datetime is its pure-Python self
            pass
        else:
            stand_ins["datetime"] = _datetime
    if "uuid" not in sys.modules and "platform" not in sys.modules:
        platform = type(sys)("platform", "A stand-in for uuid's import (iris_cli.entry.import_msgspec).")
        platform.system = _system  # type: ignore[attr-defined]
        stand_ins["platform"] = platform
    sys.modules.update(stand_ins)  # type: ignore[arg-type]  # None entries: "import fails"
    try:
        _import_msgspec_core()
    except Exception:  # any surprise (a later msgspec, a later Python): the ordinary import
        _forget("msgspec")
    finally:
        for name in stand_ins:
            del sys.modules[name]
    import msgspec  # noqa: F401  # the lean package made above, or the ordinary one


def _forget(*packages: str) -> None:
    """Drop what a failed lean import left half made. Not ``uuid``: msgspec's core keeps the
    ``UUID`` class it met, and a second ``uuid`` module's would be another class (its
    platform stand-in served its import and is not used after)."""
    for name in [name for name in sys.modules if name.split(".")[0] in packages]:
        del sys.modules[name]


# The names msgspec/__init__.py takes from its core, that the hot paths use.
_CORE_NAMES = (
    "NODEFAULT", "UNSET", "DecodeError", "EncodeError", "Meta", "MsgspecError", "Raw", "Struct", "StructMeta",
    "UnsetType", "ValidationError", "convert", "defstruct", "to_builtins",
)


def _import_msgspec_core() -> None:
    """The ``msgspec`` package with its core loaded and ``__init__.py`` not run yet (see
    ``import_msgspec``); the ordinary import where msgspec is not a package of files."""
    spec = next((found for finder in sys.meta_path if (found := _find_spec(finder, "msgspec"))), None)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        import msgspec  # noqa: F401

        return
    package = type(sys)("msgspec")  # types.ModuleType
    package.__spec__ = spec
    package.__loader__ = spec.loader
    package.__file__ = spec.origin
    package.__cached__ = spec.cached  # type: ignore[attr-defined]
    package.__path__ = list(spec.submodule_search_locations)
    package.__package__ = "msgspec"
    loader = spec.loader
    running = False

    def rest_of_msgspec(name: str) -> object:
        """PEP 562: a name the core did not give runs msgspec's ``__init__.py``, once."""
        nonlocal running
        if running:
            raise AttributeError(f"module 'msgspec' has no attribute {name!r}")
        running = True
        del vars(package)["__getattr__"]
        loader.exec_module(package)
        return getattr(package, name)

    vars(package)["__getattr__"] = rest_of_msgspec
    sys.modules["msgspec"] = package
    __import__("msgspec._core")  # not 'from msgspec import _core': that asks the package for the name first
    core = sys.modules["msgspec._core"]
    for name in _CORE_NAMES:
        setattr(package, name, getattr(core, name))


def _find_spec(finder: object, name: str) -> ModuleSpec | None:
    find_spec = getattr(finder, "find_spec", None)
    return find_spec(name, None) if find_spec is not None else None


def _system() -> str:
    """What ``platform.system()`` answers on a POSIX system: the kernel's name."""
    return os.uname().sysname
