"""The plain forms that ``iris`` parses without Typer (``iris_cli.argv``): what is
certainly valid becomes the runner's keyword arguments; anything else is Typer's (None)."""

from __future__ import annotations

import pytest

from iris_cli.argv import plain_form


def test_a_plain_form_gives_its_runner_the_arguments_given() -> None:
    assert plain_form(["approvals"]) == ("approvals", {})
    assert plain_form(["approvals", "alpha", "--all", "--json"]) == (
        "approvals", {"team": "alpha", "include_decided": True, "as_json": True})
    assert plain_form(["report", "--limit", "5", "alpha", "--from=beta"]) == (
        "report", {"team": "alpha", "limit": 5, "from_team": "beta"})  # options before, after, with '='
    assert plain_form(["result", "abc", "--wait", "2000"]) == ("result", {"tell_id": "abc", "wait": 2000})
    assert plain_form(["costs", "--by", "day", "--since", "7d"]) == ("costs", {"by": "day", "since": "7d"})
    assert plain_form(["sleep", "alpha", "--force", "--thread", "t1"]) == (
        "sleep", {"team": "alpha", "force": True, "thread": "t1"})
    assert plain_form(["teams", "--json"]) == ("teams", {"as_json": True})
    assert plain_form(["tell", "alpha", "hi", "--json"]) == (
        "tell", {"team": "alpha", "message": "hi", "as_json": True})
    assert plain_form(["tell", "alpha", "hi", "--timeout", "-1", "--from", "beta"]) == (
        "tell", {"team": "alpha", "message": "hi", "timeout": -1, "from_team": "beta"})
    assert plain_form(["tell", "alpha", "hi", "--thread", "auth-refactor"]) == (
        "tell", {"team": "alpha", "message": "hi", "thread": "auth-refactor"})
    assert plain_form(["approve", "ap-1", "--remember"]) == ("approve", {"approval_id": "ap-1", "remember": True})
    assert plain_form(["deny", "ap-1", "--reason", "not now"]) == (
        "deny", {"approval_id": "ap-1", "reason": "not now"})
    assert plain_form(["report", "alpha", "--limit", "3", "--limit", "4"]) == (
        "report", {"team": "alpha", "limit": 4})  # the last one, as click takes it


@pytest.mark.parametrize("args", [
    [],
    ["dashboard"],  # not a command with a plain form
    ["tell", "alpha,beta", "hi"],  # several teams: Typer's (iris_cli.commands.fanout)
    ["tell", "alpha", "-"],  # standard input
    ["tell", "alpha", "hi", "--persist"], ["tell", "alpha", "hi", "--max-budget-usd", "1"],  # Typer's only
    ["tell", "alpha", "hi", "--timeout", "--json"],  # --timeout forgot its value
    ["report"],  # TEAM missing: Typer's usage error names it
    ["report", "alpha", "beta"],  # one argument too many
    ["report", "alpha", "--limit"],  # an option without its value
    ["report", "alpha", "--limit", "five"],  # a value that does not convert
    ["report", "alpha", "--limit", "٣"],  # a digit that is not ASCII
    ["costs", "--by", "week"],  # not one of the choices
    ["teams", "-h"], ["teams", "--help"],  # help is Typer's
    ["teams", "--json=yes"],  # a flag takes no value
    ["sleep", "alpha", "--no-force"],  # an option the form does not know
    ["sleep", "-"],  # '-' is no team here
    ["sessions", "--", "alpha"],
    ["sessions", "archive", "beta", "alpha"],  # 'iris session archive': Typer's (iris_cli.app.LazyGroup)
    ["approvals", "rules"], ["approvals", "forget", "r1"], ["approvals", "list"],  # subcommands
    ["questions", "--stats"],  # the other command behind the same name
    ["wake", "--all"], ["wake"],  # every team: Typer's
    ["deny", "ap-1", "--reason", ""],  # an empty value: Typer's
])
def test_anything_else_is_typers(args: list[str]) -> None:
    assert plain_form(args) is None
