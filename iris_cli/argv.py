"""The plain forms of the commands in ``iris_cli.runs``: what ``iris_cli.entry`` parses
itself, so that they run without Typer (importing it and building a command costs more CPU
than the rest of such a command).

A form takes only arguments that are certainly valid for the Typer command of the same
name: its positional arguments, its boolean flags and its options with a value (``--x V`` or
``--x=V``) that converts. Anything else (``-h``, an option it does not know, a value that
does not convert or starts with '-', a missing or extra argument, a subcommand's name)
gives ``None``, and Typer runs the command as always: its help, its other options, its
usage errors. tests/subsystem/test_cli_app.py checks each form against its Typer command.

Pure: no I/O and no imports, a list of strings in, keyword arguments out.
"""

from __future__ import annotations

# A value's kind: "str", "int", or the choices it must be one of.
Kind = str | tuple[str, ...]


class Form:
    """A command's plain form: ``runner`` (a function of ``iris_cli.runs``) takes the
    keyword arguments that ``parse`` makes from the words after the command's name."""

    __slots__ = ("arguments", "flags", "options", "required", "reserved", "runner", "single")

    def __init__(
        self,
        runner: str,
        *,
        arguments: tuple[str, ...] = (),
        required: int = 0,
        flags: dict[str, str] | None = None,
        options: dict[str, tuple[str, Kind]] | None = None,
        reserved: tuple[str, ...] = (),
        single: tuple[str, ...] = (),
    ) -> None:
        self.runner = runner
        self.arguments = arguments  # the positional parameters, in order
        self.required = required  # how many of them must be given
        self.flags = {"--json": "as_json", **(flags or {})}  # option -> parameter set to True
        self.options = options or {}  # option -> (parameter, kind of its value)
        self.reserved = reserved  # words that are the Typer group's subcommands, not an argument
        self.single = single  # arguments naming one team: several ('alpha,beta') are Typer's

    def parse(self, words: list[str]) -> dict[str, object] | None:
        """The runner's keyword arguments, or None when Typer must decide."""
        given: dict[str, object] = {}
        positional: list[str] = []
        index = 0
        while index < len(words):
            word = words[index]
            index += 1
            if not word.startswith("-"):
                positional.append(word)
                continue
            name, has_value, value = word.partition("=")
            if name in self.flags and not has_value:
                given[self.flags[name]] = True
            elif name in self.options:
                if not has_value:
                    if index == len(words):
                        return None
                    value = words[index]
                    index += 1
                parameter, kind = self.options[name]
                converted = _converted(value, kind)
                if converted is None:
                    return None
                given[parameter] = converted
            else:
                return None  # '-h', '--help', '--', an option of Typer's only, '-' alone
        if not self.required <= len(positional) <= len(self.arguments):
            return None
        if positional[:1] and positional[0] in self.reserved:
            return None
        given.update(zip(self.arguments, positional, strict=False))
        if any("," in str(given.get(parameter, "")) for parameter in self.single):
            return None
        return given


def _converted(value: str, kind: Kind) -> object | None:
    if kind == "int":  # '-1' too ('iris tell --timeout -1'), as click reads it
        digits = value.removeprefix("-")
        return int(value) if digits.isascii() and digits.isdigit() else None
    if value.startswith("-") or not value:
        return None  # an option that forgot its value, or nothing: Typer says what is wrong
    if isinstance(kind, tuple):
        return value if value in kind else None
    return value


FROM = {"--from": ("from_team", "str")}

# Command name -> its plain form.
FORMS: dict[str, Form] = {
    # 'iris tell TEAM MESSAGE': the hot path (no Typer, no rich, only the tell's own Structs);
    # '-' for standard input, --persist, --max-budget-usd and the rest are Typer's.
    "tell": Form(
        "tell", arguments=("team", "message"), required=2,
        options={**FROM, "--timeout": ("timeout", "int"), "--thread": ("thread", "str")}, single=("team",),
    ),
    "result": Form("result", arguments=("tell_id",), required=1, options={"--wait": ("wait", "int")}),
    "report": Form(
        "report", arguments=("team",), required=1, flags={"--all-callers": "all_callers"},
        options={**FROM, "--limit": ("limit", "int")},
    ),
    "sessions": Form("sessions", arguments=("team",), flags={"--archived": "archived"}),
    "sleep": Form(
        "sleep", arguments=("team",), required=1, flags={"--force": "force"},
        options={**FROM, "--thread": ("thread", "str")},
    ),
    "approvals": Form(
        "approvals", arguments=("team",), flags={"--all": "include_decided"}, reserved=("list", "rules", "forget"),
    ),
    "questions": Form("questions", arguments=("team",), flags={"--all": "include_closed"}),
    "costs": Form(
        "costs",
        options={"--by": ("by", ("team", "pair", "chain", "day")), "--since": ("since", "str"),
                 "--team": ("team", "str")},
    ),
    "cancel": Form("cancel", arguments=("tell_id",), required=1),
    "wake": Form("wake", arguments=("team",), required=1, options={**FROM, "--thread": ("thread", "str")}),
    "approve": Form("approve", arguments=("approval_id",), required=1, flags={"--remember": "remember"}),
    "deny": Form("deny", arguments=("approval_id",), required=1, options={"--reason": ("reason", "str")}),
    "notifications": Form("notifications", arguments=("team",), flags={"--all": "include_done"}),
    "reload": Form("reload"),
    "teams": Form("teams"),
}


def plain_form(args: list[str]) -> tuple[str, dict[str, object]] | None:
    """``(runner, keyword arguments)`` for ``iris ARGS`` in a plain form, else None."""
    form = FORMS.get(args[0]) if args else None
    if form is None:
        return None
    given = form.parse(args[1:])
    return None if given is None else (form.runner, given)
