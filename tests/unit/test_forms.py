"""The one check of an answer to an MCP server's form (``protocol.forms``)."""

from __future__ import annotations

import re

import pytest

from protocol.errors import InvalidRequestError
from protocol.forms import check_content, describe_form, parse_fields

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Database", "maxLength": 8},
        "engine": {"type": "string", "enum": ["postgres", "sqlite"]},
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "backup": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["name"],
}


def test_text_becomes_the_fields_type() -> None:
    content = parse_fields(["name=main", "size=3", "ratio=0.5", "backup=yes", "tags=a, b", "engine=sqlite"])
    assert check_content(SCHEMA, content) == {
        "name": "main", "size": 3, "ratio": 0.5, "backup": True, "tags": ["a", "b"], "engine": "sqlite",
    }
    # Typed values (an MCP client's, the dashboard's checkbox) pass as they are.
    typed = {"name": "x", "backup": False, "size": 10}
    assert check_content(SCHEMA, typed) == typed


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({}, "the form needs name (Database: string)"),
        ({"name": "x", "colour": "red"}, "the form has no field 'colour'"),
        ({"name": "x", "size": "many"}, "field size (integer): takes a number"),
        ({"name": "x", "size": 11}, "field size (integer): is at most 10"),
        ({"name": "x", "engine": "mysql"}, "takes one of postgres, sqlite"),
        ({"name": "far too long"}, "takes at most 8 characters"),
        ({"name": "x", "backup": "maybe"}, "takes true or false"),
        ({"name": "x", "tags": "c"}, "c not among a, b"),
        ({"name": 3}, "takes text, not 3"),
    ],
)
def test_a_wrong_answer_names_the_field_and_what_it_takes(content: dict[str, object], said: str) -> None:
    with pytest.raises(InvalidRequestError, match=re.escape(said)):
        check_content(SCHEMA, content)


def test_the_form_in_words_and_a_malformed_field_argument() -> None:
    assert describe_form(SCHEMA).startswith("name (Database: string) *, engine (postgres | sqlite), size (integer)")
    with pytest.raises(InvalidRequestError, match="--field takes NAME=VALUE"):
        parse_fields(["name"])
