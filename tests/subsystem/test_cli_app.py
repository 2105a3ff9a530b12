"""The CLI's own surface, without a daemon: version, usage errors."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from iris_cli.app import app
from irisd import __version__
from protocol import PROTOCOL_VERSION


def test_version_names_the_release_and_the_protocol() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"iris {__version__} (protocol {PROTOCOL_VERSION})\n"


def test_a_missing_argument_is_a_usage_error_naming_it() -> None:
    result = CliRunner().invoke(app, ["tell"])
    assert result.exit_code == 2 and "Missing argument 'TEAM'" in result.output


def test_dash_h_is_help_everywhere_including_mcp() -> None:
    for args in (["-h"], ["tell", "-h"], ["mcp", "-h"], ["daemon", "logs", "-h"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and "Usage: iris" in result.output, args


def test_ttl_days_without_persist_is_an_error_in_cli_terms() -> None:
    result = CliRunner().invoke(app, ["tell", "alpha", "hi", "--ttl-days", "3"])
    assert result.exit_code == 1
    assert "--ttl-days only applies to a stored tell: add --persist" in result.output
    result = CliRunner().invoke(app, ["tell", "alpha", "hi", "--persist", "--ttl-days", "0"])
    assert result.exit_code == 1 and "--ttl-days 0 is out of range; use more than 0, up to 365" in result.output
    assert "ttlDays" not in result.output


def test_a_max_budget_out_of_range_is_an_error_in_cli_terms() -> None:
    result = CliRunner().invoke(app, ["tell", "alpha", "hi", "--max-budget-usd", "-1"])
    assert result.exit_code == 1
    assert "--max-budget-usd -1 is out of range; use more than 0, up to 10000" in result.output
    assert "$.max_budget_usd" not in result.output  # was: msgspec's words, from irisd


def test_every_command_is_listed_and_has_help() -> None:
    from iris_cli.app import COMMANDS

    result = CliRunner().invoke(app, ["--help"], terminal_width=200)
    for name in COMMANDS:
        assert f" {name} " in result.output, name
        assert CliRunner().invoke(app, [name, "--help"]).exit_code == 0, name


PROBE = """
import sys
sys.argv = ["iris", *sys.argv[1:]]
from iris_cli.entry import main
try:
    main()
except SystemExit:
    pass
heavy = ("rich", "trio", "mcp", "starlette", "hypercorn", "yaml", "iris_cli.commands", "iris_cli.render")
print("loaded:", " ".join(sorted(m for m in sys.modules if m.startswith(heavy))), file=sys.stderr)
"""


def loaded(*args: str) -> set[str]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "IRIS_SOCKET": "/nonexistent/irisd.sock"}
    ran = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60)
    line = next(line for line in ran.stderr.splitlines() if line.startswith("loaded:"))
    return set(line.split()[1:])


def loaded_all(*args: str) -> set[str]:
    """Every module ``iris ARGS`` imported."""
    import os
    import subprocess
    import sys

    probe = PROBE.replace('heavy = (', 'heavy = ("",  # every module\n').replace(
        'if m.startswith(heavy)', 'if m.startswith(heavy)')
    env = {**os.environ, "IRIS_SOCKET": "/nonexistent/irisd.sock"}
    ran = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=60)
    line = next(line for line in ran.stderr.splitlines() if line.startswith("loaded:"))
    return set(line.split()[1:])


def test_a_command_imports_only_what_it_needs() -> None:
    assert loaded("--version") == set()
    assert "typer" not in loaded_all("--version")  # scripts ask it: it answers without Typer
    assert loaded("status", "--json") == set()  # the hot path: no Typer command module, no rich
    assert loaded("status") == set()
    assert "typer" not in loaded_all("status")
    plain_tell = loaded_all("tell", "alpha", "hi", "--json")  # the plain form needs no Typer and no rich
    assert "typer" not in plain_tell and "rich" not in plain_tell
    assert "typer" not in loaded_all("tell", "alpha", "hi", "--timeout", "5000", "--from", "beta")  # a plain form too
    assert "typer" not in loaded_all("tell", "alpha", "hi", "--thread", "auth-refactor")
    assert "typer" in loaded_all("tell", "alpha", "hi", "--persist")  # the other options: Typer parses them


def test_a2a_tokens_are_issued_listed_and_revoked_without_a_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRIS_HOME", str(tmp_path))
    runner = CliRunner()
    issued = runner.invoke(app, ["a2a", "token", "--name", "crm-bot", "--json"])
    assert issued.exit_code == 0, issued.output
    answer = json.loads(issued.output)
    assert answer["sender"] == "a2a:crm-bot" and len(answer["token"]) >= 40
    listed = runner.invoke(app, ["a2a", "tokens"])
    assert listed.exit_code == 0 and "crm-bot" in listed.output and "a2a:crm-bot" in listed.output
    assert answer["token"] not in (tmp_path / "a2a-tokens.json").read_text()
    assert runner.invoke(app, ["a2a", "revoke", "crm-bot"]).exit_code == 0
    again = runner.invoke(app, ["a2a", "revoke", "crm-bot"])
    assert again.exit_code == 1 and "no A2A token named 'crm-bot'" in again.output
    bad = runner.invoke(app, ["a2a", "token", "--name", "a b"])
    assert bad.exit_code == 1 and "is not an agent name" in bad.output


def test_a_reader_that_goes_away_ends_the_hot_paths_without_a_traceback() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "IRIS_SOCKET": "/nonexistent/irisd.sock"}
    read_end, write_end = os.pipe()
    os.close(read_end)  # as 'iris status --json | head -1' once head has its line
    try:
        ran = subprocess.run(
            [sys.executable, "-c", "from iris_cli.entry import main; import sys; sys.argv[0] = 'iris'; main()",
             "status", "--json"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, timeout=60,
        )
    finally:
        os.close(write_end)
    assert ran.stderr == "" and ran.returncode == 1


# Modules the hot paths used to import and no longer need (each one measured, README
# Performance row 7): the socket module's enums, pathlib and what it pulls in, dataclasses,
# shutil, json, urllib, and typing_extensions with inspect behind it (msgspec's); what
# msgspec's __init__ imports beyond its core (iris_cli.entry.import_msgspec), the platform
# module uuid imports for its platform.system(), datetime's pure-Python half, and the
# hundred Structs of protocol.messages (each path creates those of its own module:
# protocol.core_messages, protocol.status_messages).
NOT_ON_THE_HOT_PATHS = (
    "socket", "pathlib", "dataclasses", "shutil", "json", "urllib.parse", "typing_extensions", "inspect",
    "threading", "rich", "typer", "platform", "textwrap", "msgspec.inspect", "msgspec.json", "msgspec._json_schema",
    "msgspec.toml", "msgspec.yaml", "msgspec.structs", "datetime", "protocol.messages",
)
# And what the plain tell alone does without: the status's Structs and the CLI's text helpers.
NOT_ON_THE_TELL_PATH = ("protocol.status_messages", "protocol.health", "iris_cli.text", "iris_common.money")

HOT_PATH_PROBE = """
import sys
sys.path[:0] = sys.argv[1].split(":")  # run with -S: no site, so nothing is imported before the command
before = set(sys.modules)
sys.argv = ["iris", *sys.argv[2:]]
from iris_cli.entry import main
try:
    main()
except SystemExit:
    pass
codec = sys.modules["protocol.codec"]
print("loaded:", *sorted(set(sys.modules) - before), file=sys.stderr)
built = getattr(codec._server_decoder, "cache_info", None)  # a function that makes it on first use
print("whole-union decoder:", built().currsize if built else "made at import", file=sys.stderr)
"""


class FakeIrisd:
    """A Unix socket that answers the way irisd does: a Welcome to the hello, then ``answers``
    to each request (events first, the reply last)."""

    def __init__(self, path: Path, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        from protocol.codec import decode_request, encode
        from protocol.framing import HEADER
        from protocol.messages import Welcome

        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            with connection:
                while header := connection.recv(HEADER.size, socket.MSG_WAITALL):
                    (size,) = HEADER.unpack(header)
                    request = decode_request(connection.recv(size, socket.MSG_WAITALL))
                    name = type(request).__name__
                    replies = [Welcome(protocol_version=PROTOCOL_VERSION, daemon_version="t", pid=1)] \
                        if name == "Hello" else self.answers[name]
                    for message in replies:
                        connection.sendall(encode(message))

    def close(self) -> None:
        self.listener.close()


def test_the_hot_paths_import_only_what_they_use(tmp_path: Path) -> None:
    """``iris status`` and ``iris tell TEAM MESSAGE``, each against a daemon that answers, import
    none of ``NOT_ON_THE_HOT_PATHS`` and decode with a decoder of their own replies only."""
    import os
    import site
    import subprocess
    import sys

    from protocol.messages import StatusReply, TeamInfo, TellInfo, TellReply, TellText

    tell = TellInfo(id="t1", from_team=None, to_team="alpha", message="hi", status="completed", text="hello")
    irisd = FakeIrisd(tmp_path / "irisd.sock", {
        "GetStatus": [StatusReply(pid=1, daemon_version="t", started_at=0.0, socket_path="/s", config_path="/c",
                                  teams=[TeamInfo(name="alpha", path="/a")], processes=[], max_processes=4)],
        "Tell": [TellText(tell_id="t1", text="hello"), TellReply(status="completed", tell=tell)],
    })
    path = ":".join([str(Path(__file__).resolve().parents[2]), *site.getsitepackages()])
    env = {**os.environ, "IRIS_SOCKET": str(tmp_path / "irisd.sock")}
    try:
        for args, shown in ((["status"], "alpha"), (["tell", "alpha", "hi"], "hello")):
            ran = subprocess.run([sys.executable, "-S", "-c", HOT_PATH_PROBE, path, *args],
                                 capture_output=True, text=True, env=env, timeout=60)
            assert ran.returncode == 0 and shown in ran.stdout, (args, ran.stdout, ran.stderr)
            lines = dict(line.split(": ", 1) for line in ran.stderr.splitlines() if ": " in line)
            loaded = set(lines["loaded"].split())
            assert "protocol.core_messages" in loaded and "iris_cli.client" in loaded  # the probe saw the command
            assert loaded.isdisjoint(NOT_ON_THE_HOT_PATHS), (args, sorted(loaded & set(NOT_ON_THE_HOT_PATHS)))
            if args[0] == "tell":
                assert loaded.isdisjoint(NOT_ON_THE_TELL_PATH), sorted(loaded & set(NOT_ON_THE_TELL_PATH))
            assert lines["whole-union decoder"] == "0", args
    finally:
        irisd.close()


def test_iris_version_imports_no_typing() -> None:
    """``iris --version`` (scripts ask it) imports neither msgspec nor ``typing``, which was a
    third of its instructions: ``iris_cli.entry`` imports nothing of typing at its top."""
    import site
    import subprocess
    import sys

    shown = 'print("loaded:", *sorted(set(sys.modules) - before), file=sys.stderr)'
    probe = HOT_PATH_PROBE.split("codec = ")[0] + shown  # no codec: --version talks to no irisd
    path = ":".join([str(Path(__file__).resolve().parents[2]), *site.getsitepackages()])
    ran = subprocess.run([sys.executable, "-S", "-c", probe, path, "--version"], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0 and ran.stdout.startswith("iris "), ran.stderr
    loaded = set(ran.stderr.split("loaded:", 1)[1].split())
    assert "iris_cli.entry" in loaded and not loaded & {"typing", "msgspec", "re", "enum"}, sorted(loaded)


MSGSPEC_PROBE = """
import sys, json
lean = sys.argv[1] == "lean"
if lean:
    from iris_cli.entry import import_msgspec
    import_msgspec()
    before = sorted(name for name in sys.modules if name.split(".")[0] in (
        "msgspec", "datetime", "platform", "uuid", "typing_extensions", "textwrap"))
import msgspec
import datetime, decimal, uuid, platform
core = {name: getattr(msgspec, name) is getattr(msgspec._core, name) for name in ("Struct", "Meta", "to_builtins")}
when = datetime.datetime(2026, 11, 27, 16, 0, tzinfo=datetime.timezone.utc)
values = [when, when.date(), datetime.timedelta(seconds=3), uuid.UUID(int=7), decimal.Decimal("1.25")]
class Point(msgspec.Struct):
    at: datetime.datetime
    id: uuid.UUID
    amount: decimal.Decimal
point = Point(at=when, id=uuid.UUID(int=7), amount=decimal.Decimal("1.25"))
round_trip = msgspec.msgpack.decode(msgspec.msgpack.encode(point), type=Point) == point
encoded = [msgspec.json.encode(values).decode(), msgspec.msgpack.encode(values).hex()]  # json: the rest of msgspec
names = {name: type(getattr(msgspec, name)).__name__ for name in dir(msgspec) }
print(json.dumps({
    "loaded_first": before if lean else None,
    "names": names,
    "core": core,
    "encoded": encoded,
    "round_trip": round_trip,
    "modules": [sys.modules["datetime"].__name__, sys.modules["platform"].__name__, platform.system(),
                uuid._LINUX, "__getattr__" in vars(msgspec)],
}))
"""


def test_msgspec_for_the_hot_paths_is_msgspec_once_asked_for_more() -> None:
    """``iris_cli.entry.import_msgspec`` loads msgspec's core without its __init__'s
    submodules, ``datetime``'s pure-Python half or ``platform``; anything more asked of it
    then gives what an ordinary ``import msgspec`` gives: the same names, the same
    encodings of dates, UUIDs and decimals, the real datetime and platform modules."""
    import subprocess
    import sys

    def probe(how: str) -> dict[str, Any]:
        ran = subprocess.run([sys.executable, "-c", MSGSPEC_PROBE, how], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
        answer: dict[str, Any] = json.loads(ran.stdout)
        return answer

    lean, ordinary = probe("lean"), probe("ordinary")
    assert lean["loaded_first"] == ["msgspec", "msgspec._core", "msgspec._utils", "uuid"]
    assert lean["core"] == {"Struct": True, "Meta": True, "to_builtins": True}
    assert {**lean, "loaded_first": None} == ordinary
    assert ordinary["modules"] == ["datetime", "platform", "Linux", True, False]


def test_a_lean_msgspec_import_that_fails_in_any_way_falls_back_to_the_ordinary_one() -> None:
    """A later msgspec or Python that the lean import does not fit (here: a core name that is
    not there) must cost the command nothing but the time: msgspec imported as usual, and
    no stand-in left behind."""
    import subprocess
    import sys

    probe = (
        "import sys, json\n"
        "from iris_cli import entry\n"
        "entry._CORE_NAMES = (*entry._CORE_NAMES, 'NoSuchName')\n"
        "entry.import_msgspec()\n"
        "import msgspec, uuid, platform, datetime\n"
        "print(json.dumps([msgspec.json.encode({'a': uuid.UUID(int=1)}).decode(), platform.__file__ is not None,\n"
        "                  hasattr(datetime, 'datetime_CAPI'), platform.system() == 'Linux']))\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ['{"a":"00000000-0000-0000-0000-000000000001"}', True, True, True]


# What the plain forms of the commands of iris_cli.runs (iris_cli.argv) run without: Typer and
# rich cost more CPU than the rest of such a command; a usage error goes through Typer, but
# not through typer.rich_utils, whose import (rich's markdown and traceback) cost 0.1 s.
NOT_ON_THE_PLAIN_FORMS = ("typer", "rich", "iris_cli.commands", "iris_cli.app")
NOT_FOR_A_USAGE_ERROR = ("typer.rich_utils", "rich.markdown", "rich.traceback", "markdown_it")


def test_the_plain_forms_run_without_typer_or_rich_and_usage_errors_without_rich_help(tmp_path: Path) -> None:
    import os
    import site
    import subprocess
    import sys

    from protocol.messages import ApprovalInfo, ApprovalsReply, CostRow, CostsReply, ReportReply, TeamInfo, TeamsReply

    waiting = ApprovalInfo(id="ap-1", from_team=None, to_team="alpha", tell_id="t1", tool_name="Bash",
                           input={"command": "ls"}, status="pending", created_at=0.0, expires_at=0.0)
    irisd = FakeIrisd(tmp_path / "irisd.sock", {
        "ListApprovals": [ApprovalsReply(approvals=[waiting])],
        "Report": [ReportReply(tells=[])],
        "ListTeams": [TeamsReply(teams=[TeamInfo(name="alpha", path="/a")])],
        "Costs": [CostsReply(by="pair", since=0.0, rows=[CostRow(key="external->alpha", tells=2)],
                             total=CostRow(key="total", tells=2))],
    })
    shown = 'print("loaded:", *sorted(set(sys.modules) - before), file=sys.stderr)'
    probe = HOT_PATH_PROBE.split("codec = ")[0] + shown
    path = ":".join([str(Path(__file__).resolve().parents[2]), *site.getsitepackages()])
    env = {**os.environ, "IRIS_SOCKET": str(tmp_path / "irisd.sock")}

    def run(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        ran = subprocess.run([sys.executable, "-S", "-c", probe, path, *args],
                             capture_output=True, text=True, env=env, timeout=60)
        return ran, set(ran.stderr.split("loaded:", 1)[1].split())

    try:
        for args, said in (
            (["approvals", "--json"], '"id": "ap-1"'),
            (["approvals"], "ap-1 external->alpha wants Bash"),
            (["report", "alpha", "--limit=5"], "no tells yet"),
            (["teams"], "alpha"),
            (["costs", "--by", "pair"], "external->alpha"),
        ):
            ran, loaded = run(*args)
            assert ran.returncode == 0 and said in ran.stdout, (args, ran.stdout, ran.stderr)
            assert "iris_cli.runs" in loaded and "iris_cli.client" in loaded  # the probe saw the command
            assert not {m for m in loaded if m.startswith(NOT_ON_THE_PLAIN_FORMS)}, (args, sorted(loaded))
        ran, loaded = run("approvals", "--bogus")  # not a plain form: Typer's usage error, in click's words
        assert "Error: No such option: --bogus" in ran.stderr, ran.stderr  # (the probe ends with exit code 0)
        assert "Try 'iris approvals list -h' for help." in ran.stderr and "Traceback" not in ran.stderr
        assert "typer" in loaded and not loaded & set(NOT_FOR_A_USAGE_ERROR), sorted(loaded)
    finally:
        irisd.close()


def test_each_plain_form_takes_what_its_typer_command_takes() -> None:
    """``iris_cli.argv.FORMS`` against the Typer commands: the same arguments in the same
    order, the same flags and options with values of the same kind; and each runner's
    defaults are the Typer command's (an option left out means the same either way)."""
    import inspect

    import typer.main

    from iris_cli import runs
    from iris_cli.argv import FORMS

    root: Any = typer.main.get_command(app)  # the LazyGroup
    ctx = root.context_class(root)
    for name, form in FORMS.items():
        command = root.get_command(ctx, name)
        if form.reserved:  # a group whose default subcommand is the form's (iris approvals -> list)
            assert set(form.reserved) <= set(command.commands), name
            command = command.commands["list"]
        params = {param.name: param for param in command.params}
        arguments = [param for param in command.params if param.param_type_name == "argument"]
        assert [param.name for param in arguments] == list(form.arguments), name
        # The form may ask for more than Typer ('iris wake' needs a TEAM unless --all, Typer's).
        assert sum(param.required for param in arguments) <= form.required, name
        for option, parameter in form.flags.items():
            assert option in params[parameter].opts and params[parameter].is_flag, (name, option)
        for option, (parameter, kind) in form.options.items():
            param = params[parameter]
            assert option in param.opts and not param.is_flag, (name, option)
            if isinstance(kind, tuple):
                assert tuple(param.type.choices) == kind, (name, option)
            else:
                assert param.type.name == kind, (name, option, param.type.name)
        runner = inspect.signature(getattr(runs, form.runner)).parameters
        assert {*form.arguments, *form.flags.values(), *(p for p, _ in form.options.values())} <= set(runner), name
        for argument in runner.values():
            default = params[argument.name].default
            assert argument.default is inspect.Parameter.empty or argument.default == default, (name, argument.name)


def test_a_malformed_field_of_an_approval_is_an_error_in_cli_terms() -> None:
    result = CliRunner().invoke(app, ["approve", "ap-1", "--field", "=x"])
    assert result.exit_code == 1 and "--field takes NAME=VALUE (got '=x')" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    result = CliRunner().invoke(app, ["approve", "ap-1", "--field", "a", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["error"] == {"code": "invalid_request",
                                                  "message": "--field takes NAME=VALUE (got 'a')"}


def test_an_iris_error_a_command_meets_before_asking_irisd_is_said_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The net under every command: a check of its own that raises an IrisError (as
    ``--field`` did) ends it with the error's words and exit code 1 (in JSON with --json)."""
    import sys

    from iris_cli import entry
    from protocol.errors import InvalidRequestError

    def command(args: list[str]) -> None:
        raise InvalidRequestError("--thing takes a number; use --thing 3")

    monkeypatch.setattr(entry, "_main", command)
    for argv, said in ((["iris", "thing"], "error: --thing takes a number; use --thing 3"),
                       (["iris", "thing", "--json"], '"code": "invalid_request"')):
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as ended:
            entry.main()
        assert ended.value.code == 1
        captured = capsys.readouterr()
        assert said in captured.err and "Traceback" not in captured.err
