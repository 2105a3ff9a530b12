"""What irisds say to each other through NATS: msgspec Structs, JSON on the wire.

Subjects carry who speaks: ``iris.tell.<home>.<caller>``, ``iris.reply.<caller>.<home>``,
``iris.live.<caller>.<home>``. A server that names each irisd by its credentials can
let each one publish only under its own name (README "Teams on many hosts"), so the
caller's name a home reads from the subject is the one its credentials carry.
"""

from __future__ import annotations

from typing import Literal, TypeVar

import msgspec

from protocol.codec import UNDECODABLE
from protocol.messages import TellStatus


class RemoteTellMsg(msgspec.Struct, tag="tell", kw_only=True, omit_defaults=True):
    """A tell for a team homed on another irisd; ``id`` is the caller's tell id (and the
    JetStream message id, so a resent tell is stored once)."""

    id: str
    from_team: str | None  # the team asking, on the caller's irisd
    to_team: str
    message: str
    kind: str = "tell"
    chain_id: str = ""
    hops: int = 0  # how many tells led to this one, on the caller's side
    path: list[str] = []  # the chain so far, "team@irisd" each: the loop guard across irisds
    max_budget_usd: float | None = None
    sent_at: float = 0.0


class CancelMsg(msgspec.Struct, tag="cancel", kw_only=True):
    id: str


class LiveMsg(msgspec.Struct, tag="live", kw_only=True, omit_defaults=True):
    """A change of a running remote tell, for the live view (not stored: the final
    result comes durably as a ``FinalMsg``)."""

    id: str
    status: TellStatus | Literal[""] = ""
    text: str = ""  # a delta: what the answer grew by
    phase: str = ""  # what it waits for (a TellPhase name) ...
    detail: str = ""  # ... in words


class FinalMsg(msgspec.Struct, tag="final", kw_only=True, omit_defaults=True):
    id: str
    status: TellStatus
    text: str = ""
    error: str = ""
    cost_usd: float | None = None


Inbound = RemoteTellMsg | CancelMsg

INBOUND = msgspec.json.Decoder(Inbound)
LIVE = msgspec.json.Decoder(LiveMsg)
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
ENCODER = msgspec.json.Encoder()


def tell_subject(home: str, caller: str) -> str:
    return f"iris.tell.{home}.{caller}"


def reply_subject(caller: str, home: str) -> str:
    return f"iris.reply.{caller}.{home}"


def live_subject(caller: str, home: str) -> str:
    return f"iris.live.{caller}.{home}"


def speaker(subject: str) -> str:
    """The irisd that published on ``subject`` (its last token)."""
    return subject.rsplit(".", 1)[-1]
