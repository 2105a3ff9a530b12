"""Any unique prefix of an id stands for the id, on every front end: a request naming a
tell, an approval, a rule, a question or an unsolicited turn by the start of its id is
served as if it named the whole id. An ambiguous prefix is refused with the matches (to a
caller who sees every tell; to others without them), and
so is one shorter than MIN_PREFIX that some id starts with; a prefix that matches nothing
goes on unchanged, so its handler says "no ... with id"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from protocol.errors import InvalidRequestError, NotFoundError
from protocol.messages import (
    AnswerQuestion,
    CancelTell,
    Decide,
    DismissQuestion,
    ForgetRule,
    GetTell,
    ReadTranscript,
    ReadUnsolicited,
    Request,
)

MIN_PREFIX = 4  # shorter than this is no id anyone meant
# request type -> (its id field, the kind of id)
ID_FIELDS: dict[type, tuple[str, str]] = {
    GetTell: ("tell_id", "tell"),
    CancelTell: ("tell_id", "tell"),
    ReadTranscript: ("tell_id", "tell"),
    Decide: ("approval_id", "approval"),
    ForgetRule: ("rule_id", "rule"),
    AnswerQuestion: ("question_id", "question"),
    DismissQuestion: ("question_id", "question"),
    ReadUnsolicited: ("turn_id", "turn"),
}

Lookup = Callable[[str, str], Awaitable[list[str]]]  # (kind, prefix) -> matching ids


async def with_whole_ids(request: Request, lookup: Lookup, *, name_matches: bool = True) -> Request:
    """``request`` with a unique id prefix replaced by the whole id. ``name_matches``: an
    ambiguous prefix's refusal lists the ids it starts (not for a caller who may not see
    every tell: they may be other pairs')."""
    named = _named_id(request)
    if named is None:
        return request
    name, kind, prefix = named
    if not prefix:
        return request  # no id: the request names what it is about otherwise, or its handler says what is missing
    found = await lookup(kind, prefix)
    if prefix in found or not found:
        return request
    if len(prefix) < MIN_PREFIX:  # an id starts so, but this is too little to name one
        raise InvalidRequestError(f"{kind} id {prefix!r} is too short: give at least {MIN_PREFIX} characters of it")
    if len(found) > 1:
        if not name_matches:
            raise InvalidRequestError(f"{kind} id {prefix!r} is ambiguous: it starts more than one id; "
                                      "give more of the id")
        listed = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise InvalidRequestError(f"{kind} id {prefix!r} is ambiguous: it starts {listed}; give more of the id")
    return msgspec.structs.replace(request, **{name: found[0]})


def unknown(request: Request) -> NotFoundError:
    """The answer to a caller whose id prefix stood for an id it may not see: as if no id
    started so (the refusal would name the whole id and whose it is, so prefixes would
    list another pair's tells one by one)."""
    named = _named_id(request)
    assert named is not None, "only a request that names an id stands for one"
    _, kind, prefix = named
    return NotFoundError(f"no {kind} with id {prefix!r}")


def _named_id(request: Request) -> tuple[str, str, str] | None:
    """The field of ``request`` that names an id, the kind of id and what it holds (None:
    the request names none)."""
    field = ID_FIELDS.get(type(request))
    if field is None:
        return None
    name, kind = field
    value: str = getattr(request, name)
    if kind == "tell" and value.startswith("u-"):
        kind = "turn"  # ``iris cache read`` takes an unsolicited turn's id too
    return name, kind, value
