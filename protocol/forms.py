"""The forms a team's MCP server asks its person to fill in (MCP elicitation's
``requestedSchema``: a flat object of primitive fields) and the answers to them. One
check for every front end: irisd checks each answer before it reaches the server; the CLI
reads ``--field NAME=VALUE`` with ``parse_fields``. Pure: no I/O.

A field is a string (``enum`` for a choice, ``minLength``/``maxLength``), a number or
integer (``minimum``/``maximum``), a boolean, or an array of strings from ``items.enum``
(several choices). ``required`` names the fields an answer must have.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from protocol.errors import InvalidRequestError

MAX_SHOWN_FIELDS = 20


def fields(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The form's fields by name, in the form's order (malformed entries dropped)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {str(name): dict(spec) for name, spec in properties.items() if isinstance(spec, Mapping)}


def required(schema: Mapping[str, Any]) -> list[str]:
    names = schema.get("required")
    return [str(n) for n in names] if isinstance(names, list) else []


def describe_field(name: str, spec: Mapping[str, Any]) -> str:
    """``name`` (its title, its type or choices), for a person reading a prompt or a list."""
    kind = spec.get("type", "string")
    choices = _choices(spec)
    what = " | ".join(choices) if choices else str(kind)
    title = spec.get("title")
    return f"{name} ({title}: {what})" if isinstance(title, str) and title and title != name else f"{name} ({what})"


def describe_form(schema: Mapping[str, Any]) -> str:
    """Every field on one line, the required ones marked."""
    must = set(required(schema))
    shown = [describe_field(n, s) + (" *" if n in must else "") for n, s in fields(schema).items()]
    more = len(shown) - MAX_SHOWN_FIELDS
    return ", ".join(shown[:MAX_SHOWN_FIELDS]) + (f", and {more} more" if more > 0 else "")


def check_content(schema: Mapping[str, Any], content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` as the form's answer: text given for a number, a boolean (true/false,
    yes/no) or several choices (comma-separated) becomes one, as a command line or an HTML
    form gives it; then every required field must be there, each value of its field's type
    and within its limits, and no field the form does not have. Else InvalidRequestError
    naming the field and what it takes."""
    known = fields(schema)
    content = {
        name: _typed(known[name], value) if name in known and isinstance(value, str) else value
        for name, value in content.items()
    }
    for name in content:
        if name not in known:
            raise InvalidRequestError(
                f"the form has no field {name!r}; its fields: {describe_form(schema) or 'none'}"
            )
    missing = [n for n in required(schema) if n not in content]
    if missing:
        raise InvalidRequestError(
            f"the form needs {', '.join(describe_field(n, known.get(n, {})) for n in missing)}; "
            f"give {'each' if len(missing) > 1 else 'it'} as NAME=VALUE"
        )
    for name, value in content.items():
        problem = _problem(known[name], value)
        if problem:
            raise InvalidRequestError(f"field {describe_field(name, known[name])}: {problem}")
    return dict(content)


def parse_fields(pairs: Iterable[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings (the CLI's ``--field``) as a mapping; irisd types and checks
    the values against the form (``check_content``)."""
    content: dict[str, str] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidRequestError(f"--field takes NAME=VALUE (got {pair!r})")
        content[name] = text
    return content


def _choices(spec: Mapping[str, Any]) -> list[str]:
    source = spec.get("enum")
    if source is None and isinstance(spec.get("items"), Mapping):
        source = spec["items"].get("enum")
    if source is None and isinstance(spec.get("oneOf"), list):
        source = [c.get("const") for c in spec["oneOf"] if isinstance(c, Mapping)]
    return [str(c) for c in source] if isinstance(source, list) else []


def _typed(spec: Mapping[str, Any], text: str) -> Any:
    """A CLI value as its field's type; left as text when it is not one (the check says why)."""
    match spec.get("type"):
        case "boolean":
            word = text.strip().lower()
            return {"true": True, "yes": True, "y": True, "false": False, "no": False, "n": False}.get(word, text)
        case "integer":
            try:
                return int(text)
            except ValueError:
                return text
        case "number":
            try:
                number = float(text)
            except ValueError:
                return text
            return number if math.isfinite(number) else text
        case "array":
            return [part.strip() for part in text.split(",") if part.strip()]
    return text


def _problem(spec: Mapping[str, Any], value: Any) -> str:
    """What is wrong with ``value`` for the field ``spec``, or ''."""
    kind = spec.get("type", "string")
    choices = _choices(spec)
    match kind:
        case "boolean":
            return "" if isinstance(value, bool) else "takes true or false"
        case "integer" | "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"takes a number, not {json.dumps(value)}"
            if kind == "integer" and not float(value).is_integer():
                return "takes a whole number"
            low, high = spec.get("minimum"), spec.get("maximum")
            if isinstance(low, int | float) and value < low:
                return f"is at least {low}"
            if isinstance(high, int | float) and value > high:
                return f"is at most {high}"
            return ""
        case "array":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return "takes a list of choices"
            wrong = [v for v in value if choices and v not in choices]
            return f"{', '.join(wrong)} not among {', '.join(choices)}" if wrong else ""
    if not isinstance(value, str):
        return f"takes text, not {json.dumps(value)}"
    if choices and value not in choices:
        return f"takes one of {', '.join(choices)}"
    low, high = spec.get("minLength"), spec.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        return f"takes at least {low} characters"
    if isinstance(high, int) and len(value) > high:
        return f"takes at most {high} characters"
    return ""
