"""The limits of a request, declared once, on the types of its fields.

The wire Structs (``messages.py``) use these types, so the socket's decoder enforces them;
irisd's HTTP bodies and the MCP tools' arguments are built from the same types (a test
checks they agree: tests/unit/test_limits.py), and ``range_problem`` words a broken range
for people from the same declaration. A limit changes here and nowhere else.

What a range cannot say stays with the daemon's checks: a wait of 1 to 999 ms (seconds
typed as milliseconds get a "did you mean"), an empty message, a NUL character.
"""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any

import msgspec

MAX_MESSAGE_CHARS = 1_000_000
MIN_WAIT_MS, MAX_WAIT_MS = 1_000, 3_600_000
MAX_TTL_DAYS = 365  # a persisted tell is given up after at most this long
DEFAULT_TTL_DAYS = 30.0
MAX_TELL_BUDGET_USD = 10_000.0  # a sanity bound on one tell's --max-budget-usd

# ``extra={"fix": ...}``: what to do instead, added to the error of a value out of range.
MessageText = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_MESSAGE_CHARS,
        description="What to tell or ask the team, self-contained.",
        extra={"fix": "point the team at a file instead"},
    ),
]
TimeoutMs = Annotated[
    int,
    msgspec.Meta(
        ge=-1,
        le=MAX_WAIT_MS,
        description=f"Milliseconds to wait for the answer: -1 returns at once with the tell's id, 0 waits until "
        f"the answer is complete, N ({MIN_WAIT_MS} to {MAX_WAIT_MS}) waits up to N ms and then returns the "
        "answer so far while the team works on.",
        extra={"fix": f"use -1 (return at once), 0 (wait for the answer) or {MIN_WAIT_MS} to {MAX_WAIT_MS} ms"},
    ),
]
TtlDays = Annotated[
    float,
    msgspec.Meta(
        gt=0,
        le=MAX_TTL_DAYS,
        description="With persist: drop the message if undelivered after this many days.",
        extra={"fix": f"give more than 0 days, up to {MAX_TTL_DAYS}"},
    ),
]
BudgetUsd = Annotated[
    float,
    msgspec.Meta(
        gt=0,
        le=MAX_TELL_BUDGET_USD,
        description="Stop the team's work on this message once it has cost this many USD.",
        extra={"fix": f"give a positive number of dollars up to {MAX_TELL_BUDGET_USD:g} (e.g. 0.5), or leave it out"},
    ),
]
ListLimit = Annotated[
    int,
    msgspec.Meta(ge=1, le=1000, description="How many tells, at most (1 to 1000).", extra={"fix": "use 1 to 1000"}),
]
ResultWaitMs = Annotated[
    int,
    msgspec.Meta(
        ge=0,
        le=MAX_WAIT_MS,
        description=f"Wait up to this many ms for the tell's end: 0 answers at once, or {MIN_WAIT_MS} to "
        f"{MAX_WAIT_MS}.",
        extra={"fix": f"use 0 (answer at once) or {MIN_WAIT_MS} to {MAX_WAIT_MS} ms"},
    ),
]

# A conversation of a pair (threads): a short slug, validated once here. "" is the pair's
# default thread (its one conversation before threads existed); any other name opens or
# continues a conversation of its own, with its own claude session.
MAX_THREAD_CHARS = 64
THREAD_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$"
THREAD_RULE = (
    f"a thread name is letters, digits, '.', '_' or '-' (starting with a letter or digit), up to "
    f"{MAX_THREAD_CHARS} characters, e.g. auth-refactor; leave it out for the pair's default thread"
)
ThreadName = Annotated[
    str,
    msgspec.Meta(
        pattern=THREAD_PATTERN,
        max_length=MAX_THREAD_CHARS,
        description="The conversation of the pair to continue (e.g. auth-refactor): each thread has its own "
        "claude session; leave it out for the pair's default conversation.",
        extra={"fix": THREAD_RULE},
    ),
]
_THREAD = re.compile(THREAD_PATTERN)

MAX_COMMAND_NAME_CHARS = 256
SlashCommand = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_COMMAND_NAME_CHARS,
        description='The command, with or without "/", e.g. "compact".',
        extra={"fix": "use e.g. 'compact' or '/compact'"},
    ),
]
SlashArgs = Annotated[str, msgspec.Meta(max_length=MAX_MESSAGE_CHARS, description="Its arguments, if any.")]


def thread_problem(thread: str) -> str:
    """Why ``thread`` is not a thread name; "" if it is one (or "", the default thread)."""
    if _THREAD.match(thread):
        return ""
    return f"thread {thread!r} is not a thread name: {THREAD_RULE}"


# A chain of nested tells, as it is carried between tells and between Irises (``ChainRef``,
# the mesh's and A2A's chain): a hop count that cannot go below zero, and a path of team
# names of bounded length (far past any hop limit: a longer one is not a chain but a flood).
MAX_CHAIN_PATH = 64
MAX_CHAIN_NAME_CHARS = 256
ChainHops = Annotated[
    int,
    msgspec.Meta(ge=0, description="How many tells led to this one.", extra={"fix": "give 0 or more hops"}),
]
ChainName = Annotated[str, msgspec.Meta(max_length=MAX_CHAIN_NAME_CHARS)]
ChainPath = Annotated[
    list[ChainName],
    msgspec.Meta(
        max_length=MAX_CHAIN_PATH,
        description="The teams waiting in the chain, first to last.",
        extra={"fix": f"a chain holds at most {MAX_CHAIN_PATH} teams of up to {MAX_CHAIN_NAME_CHARS} characters"},
    ),
]


def explain(error: msgspec.ValidationError, structs: typing.Iterable[type[msgspec.Struct]]) -> str | None:
    """msgspec's words for a value that breaks a declared limit (they name the field and the
    range), and what to do instead; None if the error is not about such a field of ``structs``
    (then it is a malformed message, not a value out of range)."""
    found = re.search(_FIELD, str(error))
    if found is None or ", got `" in str(error):  # a wrong type is a malformed message, not a range
        return None
    for struct in structs:
        info = msgspec.inspect.type_info(struct)
        assert isinstance(info, msgspec.inspect.StructType)
        for field in info.fields:
            if field.encode_name == found[1] and (fix := _fix(field.type)):
                return f"{error}; {fix}"
    return None


_FIELD = r"- at `\$\.(\w+)`$"  # compiled (and cached by re) at the first error: a client may never see one


def _fix(kind: msgspec.inspect.Type) -> str | None:
    if isinstance(kind, msgspec.inspect.Metadata):
        return (kind.extra or {}).get("fix") or _fix(kind.type)
    if isinstance(kind, msgspec.inspect.UnionType):
        return next((fix for t in kind.types if (fix := _fix(t))), None)
    return None


def _numeric(kind: msgspec.inspect.Type) -> msgspec.inspect.IntType | msgspec.inspect.FloatType | None:
    """The int or float inside a field's type (through Annotated descriptions and ``| None``)."""
    if isinstance(kind, msgspec.inspect.Metadata):
        return _numeric(kind.type)
    if isinstance(kind, msgspec.inspect.UnionType):
        found = [t for t in (_numeric(t) for t in kind.types) if t is not None]
        return found[0] if found else None
    return kind if isinstance(kind, (msgspec.inspect.IntType, msgspec.inspect.FloatType)) else None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def allowed_range(struct: type[msgspec.Struct], field: str) -> str:
    """The range of a numeric field in words: "more than 0, up to 365"."""
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    kind = next(_numeric(f.type) for f in info.fields if f.name == field)
    assert kind is not None, f"{struct.__name__}.{field} is not a number"
    words = []
    if kind.gt is not None:
        words.append(f"more than {_number(kind.gt)}")
    if kind.ge is not None:
        words.append(f"at least {_number(kind.ge)}")
    if kind.lt is not None:
        words.append(f"less than {_number(kind.lt)}")
    if kind.le is not None:
        words.append(f"up to {_number(kind.le)}")
    return ", ".join(words)


def range_problem(struct: type[msgspec.Struct], field: str, value: Any) -> str | None:
    """None if ``value`` fits the field's declared range, else "out of range; use <range>"."""
    try:
        msgspec.convert(value, typing.get_type_hints(struct, include_extras=True)[field], strict=False)
    except msgspec.ValidationError:
        return f"out of range; use {allowed_range(struct, field)}"
    return None


def stored_ttl(persist: bool, ttl_days: float | None, *, names: tuple[str, str] = ("ttl_days", "persist")) -> float:
    """A tell's time to live: ``ttl_days`` given without ``persist`` is a mistake on every
    face (InvalidRequestError naming the face's own ``names``: the ttl's, then persist's)."""
    from protocol.errors import InvalidRequestError

    if ttl_days is not None and not persist:
        ttl, store = names
        raise InvalidRequestError(f"{ttl} only applies to a stored tell: add {store}, or leave it out")
    return DEFAULT_TTL_DAYS if ttl_days is None else ttl_days
