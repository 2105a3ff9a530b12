"""What irisds say to each other through NATS: msgspec Structs, JSON on the wire.

Subjects carry who speaks: ``iris.tell.<home>.<caller>``, ``iris.reply.<caller>.<home>``,
``iris.live.<caller>.<home>``. A server that names each irisd by its credentials can
let each one publish only under its own name (README "Teams on many hosts"), so the
caller's name a home reads from the subject is the one its credentials carry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

import msgspec

from protocol.codec import UNDECODABLE
from protocol.limits import MAX_CHAIN_PATH, ChainHops, ChainPath, ThreadName
from protocol.messages import ChainRef, TellStatus


class RemoteTellMsg(msgspec.Struct, tag="tell", kw_only=True, omit_defaults=True):
    """A tell for a team homed on another irisd; ``id`` is the caller's tell id (and the
    JetStream message id, so a resent tell is stored once)."""

    id: str
    from_team: str | None  # the team asking, on the caller's irisd
    to_team: str
    message: str
    kind: str = "tell"
    chain_id: str = ""
    hops: ChainHops = 0  # how many tells led to this one, on the caller's side
    path: ChainPath = []  # the teams waiting in the chain, "team@irisd" each: the loop guard across irisds
    max_budget_usd: float | None = None
    sent_at: float = 0.0
    thread: ThreadName = ""  # the pair's conversation over there ("": its default one)


class CancelMsg(msgspec.Struct, tag="cancel", kw_only=True):
    id: str


class LiveMsg(msgspec.Struct, tag="live", kw_only=True, omit_defaults=True):
    """A change of a running remote tell, for the live view (not stored: the final
    result comes durably as a ``FinalMsg``, and first as a copy on the live subject)."""

    id: str
    status: TellStatus | Literal[""] = ""
    text: str = ""  # a delta: what the answer grew by
    phase: str = ""  # what it waits for (a TellPhase name) ...
    detail: str = ""  # ... in words


class FinalMsg(msgspec.Struct, tag="final", kw_only=True, omit_defaults=True):
    """A remote tell's end. Sent twice, the same bytes: on the live subject, which the
    caller answers from at once, and stored in ``IRIS_REPLIES``, which counts (a caller
    that missed the first copy, or was down, reads it there)."""

    id: str
    status: TellStatus
    text: str = ""
    error: str = ""
    cost_usd: float | None = None
    # How long it ran on the home (its start to its end there, one clock): a caller that
    # heard no "running" before the end dates the start from it, instead of showing a
    # tell that ran as one that waited in its queue all along. None: it never ran.
    ran_s: float | None = None


Inbound = RemoteTellMsg | CancelMsg

INBOUND = msgspec.json.Decoder(Inbound)
LIVE = msgspec.json.Decoder(LiveMsg | FinalMsg)  # what comes on the live subject
FINAL = msgspec.json.Decoder(FinalMsg)

T = TypeVar("T")


def read(decoder: msgspec.json.Decoder[T], data: bytes) -> T | None:
    """The message, or None for one that is not Iris's: not JSON, the wrong shape, or
    nested past the decoder's depth (RecursionError), which would otherwise end the
    consumer's task and be redelivered forever."""
    try:
        return decoder.decode(data)
    except UNDECODABLE:  # a string that is not UTF-8 too: it would restart the consumer's tasks
        return None


class _Named(msgspec.Struct):
    id: str = ""


_NAMED = msgspec.json.Decoder(_Named)


def invalid_tell(data: bytes) -> tuple[str, str] | None:
    """(id, why) for a tell whose shape is Iris's but whose values break a limit (negative
    hops, a path too long...): its caller is answered that it was refused, not left waiting;
    None for a message that is fine, or not Iris's at all."""
    try:
        INBOUND.decode(data)
        return None
    except msgspec.ValidationError as exc:
        try:
            named = _NAMED.decode(data)
        except (msgspec.DecodeError, RecursionError):
            return None
        return (named.id, str(exc)) if named.id else None
    except (msgspec.DecodeError, RecursionError):
        return None


ENCODER = msgspec.json.Encoder()


def path_out(path: Sequence[str], sender: str | None, here: str) -> list[str]:
    """The teams waiting in a tell's chain as a mesh tell carries them: each "team@irisd"
    (a team of this irisd named after ``here``). ``path`` is the tell's own (its team last,
    left out: the home names it); a tell with none starts at ``sender``. At most the last
    ``MAX_CHAIN_PATH`` (a hop limit set past it: the earliest teams are left out)."""
    waiting = list(path[:-1]) or [sender or "external"]
    return [team if "@" in team else f"{team}@{here}" for team in waiting[-MAX_CHAIN_PATH:]]


def chain_in(tell: RemoteTellMsg, here: str) -> ChainRef:
    """The chain a mesh tell continues on its home ``here``: its teams of this irisd by
    their names here, so admission's loop guard finds them."""
    suffix = f"@{here}"
    path = [team.removesuffix(suffix) for team in tell.path]
    return ChainRef(chain_id=tell.chain_id, hops=tell.hops, path=path)


def tell_subject(home: str, caller: str) -> str:
    return f"iris.tell.{home}.{caller}"


def reply_subject(caller: str, home: str) -> str:
    return f"iris.reply.{caller}.{home}"


def live_subject(caller: str, home: str) -> str:
    return f"iris.live.{caller}.{home}"


def speaker(subject: str) -> str:
    """The irisd that published on ``subject`` (its last token)."""
    return subject.rsplit(".", 1)[-1]
