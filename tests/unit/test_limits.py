"""A tell's limits are declared once (protocol/limits.py, on the wire's Structs); the HTTP
body and the MCP tool's arguments carry the same ones, and every front end names the field
and its range when a value breaks them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from iris_mcp.tools import DEFAULT_TELL_TIMEOUT_MS, TOOLS_BY_NAME, TellArgs, parse_args
from irisd.http.api import TellBody
from irisd.http.app import _decode as http_decode
from protocol.codec import decode_request, encode
from protocol.errors import InvalidRequestError, ProtocolError
from protocol.limits import (
    MAX_MESSAGE_CHARS,
    MAX_TELL_BUDGET_USD,
    MAX_THREAD_CHARS,
    MAX_TTL_DAYS,
    MAX_WAIT_MS,
    range_problem,
    thread_problem,
)
from protocol.messages import Tell

# The MCP tool's name for a Tell field, where it differs (the rest: the same, camelCased on the wire).
MCP_NAMES = {"timeout_ms": "timeout"}
# The one default that differs, on purpose: MCP clients give up on a call after 60 s.
MCP_DEFAULTS = {"timeout_ms": DEFAULT_TELL_TIMEOUT_MS}
# Over HTTP and MCP, ttl_days is left out unless given: without persist it is refused, as on the CLI.
HTTP_OPTIONAL = {"ttl_days"}


def fields(struct: type[msgspec.Struct]) -> dict[str, msgspec.inspect.Field]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    return {field.name: field for field in info.fields}


def limits(kind: msgspec.inspect.Type) -> Any:
    """A field's type without descriptions: its constraints and nothing else."""
    if isinstance(kind, msgspec.inspect.Metadata):
        return limits(kind.type)
    if isinstance(kind, msgspec.inspect.UnionType):
        return tuple(limits(t) for t in kind.types)
    if isinstance(kind, msgspec.inspect.StrType):
        return ("str", kind.max_length)  # the MCP tool adds min_length=1: an empty message helps nobody
    return kind


@pytest.mark.parametrize(
    "name", ["message", "from_team", "timeout_ms", "persist", "ttl_days", "max_budget_usd", "thread"]
)
def test_the_http_body_and_the_mcp_arguments_carry_the_wires_limits_and_defaults(name: str) -> None:
    wire = fields(Tell)[name]
    body = fields(TellBody)[name]
    args = fields(TellArgs)[MCP_NAMES.get(name, name)]
    if name in HTTP_OPTIONAL:
        for face in (body, args):
            assert limits(face.type) == (limits(wire.type), msgspec.inspect.NoneType()) and face.default is None
        return
    assert limits(body.type) == limits(wire.type)
    assert body.default == wire.default
    assert limits(args.type) == limits(wire.type)
    assert args.default == MCP_DEFAULTS.get(name, wire.default)


def test_a_range_is_worded_from_its_declaration() -> None:
    assert range_problem(Tell, "ttl_days", 0) == f"out of range; use more than 0, up to {MAX_TTL_DAYS}"
    assert range_problem(Tell, "ttl_days", 2) is None
    assert range_problem(Tell, "timeout_ms", -2) == f"out of range; use at least -1, up to {MAX_WAIT_MS}"
    assert range_problem(Tell, "max_budget_usd", MAX_TELL_BUDGET_USD * 2) == (
        f"out of range; use more than 0, up to {MAX_TELL_BUDGET_USD:g}"
    )
    assert range_problem(Tell, "max_budget_usd", None) is None


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("timeout_ms", MAX_WAIT_MS + 1, f"<= {MAX_WAIT_MS}"),
        ("timeout_ms", -2, ">= -1"),
        ("ttl_days", 0.0, "> 0"),
        ("ttl_days", MAX_TTL_DAYS + 1.0, f"<= {MAX_TTL_DAYS}"),
        ("max_budget_usd", -1.0, "> 0"),
        ("message", "x" * (MAX_MESSAGE_CHARS + 1), f"length <= {MAX_MESSAGE_CHARS}"),
        ("thread", "auth refactor", "matching regex"),
        ("thread", "-leading-dash", "matching regex"),
        ("thread", "a->b#c", "matching regex"),
        ("thread", "t" * (MAX_THREAD_CHARS + 1), f"length <= {MAX_THREAD_CHARS}"),
    ],
)
def test_every_front_end_names_the_field_and_its_range(field: str, value: Any, says: str) -> None:
    # The socket: irisd decodes the frame with the wire's own types.
    frame = encode(Tell(**{"to_team": "alpha", "message": "hi", field: value}), max_size=1 << 24)[4:]
    with pytest.raises(InvalidRequestError) as socket_error:  # answered; the connection is fine
        decode_request(frame)
    assert f"$.{field}" in socket_error.value.message and says in socket_error.value.message
    fix = socket_error.value.message.split("; ", 1)[1]  # and what to do instead
    # HTTP: the body's JSON, decoded into TellBody (irisd/http/app.py maps the error to a 400).
    with pytest.raises(InvalidRequestError) as http_error:
        http_decode(msgspec.json.encode({"message": "hi", field: value}), TellBody)
    assert f"$.{field}" in http_error.value.message and says in http_error.value.message
    assert http_error.value.message.endswith(fix)
    # MCP: the model's arguments, camelCased.
    name = MCP_NAMES.get(field, "".join(w if i == 0 else w.title() for i, w in enumerate(field.split("_"))))
    arguments = {"toTeam": "alpha", "message": "hi", name: value}
    with pytest.raises(InvalidRequestError) as mcp_error:
        parse_args(TOOLS_BY_NAME["team_tell"], arguments)
    assert f"$.{name}" in mcp_error.value.message and says in mcp_error.value.message
    assert fix in mcp_error.value.message


def test_a_value_of_the_wrong_type_is_a_broken_message_not_a_range() -> None:
    frame = msgspec.msgpack.encode({"type": "tell", "to_team": "alpha", "message": 5})
    with pytest.raises(ProtocolError, match=r"Expected `str`, got `int` - at `\$.message`"):
        decode_request(frame)


def test_a_number_too_large_to_send_is_refused_as_out_of_range_before_it_leaves() -> None:
    """``iris tell TEAM MSG --timeout 99999999999999999999``: past 64 bits no frame carries
    it; the client says what a decoder would (the field, its range, the fix), no traceback."""
    with pytest.raises(InvalidRequestError) as error:
        encode(Tell(to_team="alpha", message="hi", timeout_ms=10**20))
    assert error.value.message == (f"invalid request: Expected `int` <= {MAX_WAIT_MS} - at `$.timeout_ms`; use -1 "
                                   f"(return at once), 0 (wait for the answer) or 1000 to {MAX_WAIT_MS} ms")


def test_the_budget_error_says_what_to_give() -> None:
    with pytest.raises(InvalidRequestError, match="positive number of dollars up to 10000"):
        decode_request(encode(Tell(to_team="alpha", message="hi", max_budget_usd=float("nan")))[4:])


def test_the_cli_sends_the_wires_defaults_and_checks_its_ranges() -> None:
    import inspect

    from iris_cli.commands.tells import tell

    options = inspect.signature(tell).parameters
    wire = fields(Tell)
    assert options["timeout"].default == wire["timeout_ms"].default
    assert options["persist"].default == wire["persist"].default
    assert options["ttl_days"].default is None  # no --ttl-days: the wire's default
    assert options["max_budget_usd"].default == wire["max_budget_usd"].default


def test_a_thread_name_is_a_short_slug_and_its_error_gives_a_valid_one() -> None:
    for good in ("", "auth-refactor", "v2.1_notes", "0", "t" * MAX_THREAD_CHARS):
        assert thread_problem(good) == ""
        assert decode_request(encode(Tell(to_team="alpha", message="hi", thread=good))[4:]) is not None
    problem = thread_problem("auth refactor")
    assert problem.startswith("thread 'auth refactor' is not a thread name: ")
    assert "e.g. auth-refactor" in problem and "leave it out for the pair's default thread" in problem
    with pytest.raises(InvalidRequestError, match=r"\$\.thread.*e\.g\. auth-refactor"):
        decode_request(encode(Tell(to_team="alpha", message="hi", thread="../etc"))[4:])


def test_the_cli_refuses_a_thread_name_before_it_sends_anything() -> None:
    from typer.testing import CliRunner

    from iris_cli.app import app

    result = CliRunner().invoke(app, ["tell", "alpha", "hi", "--thread", "auth refactor"])
    assert result.exit_code != 0
    assert "--thread: thread 'auth refactor' is not a thread name" in result.output
    assert "e.g. auth-refactor" in result.output
