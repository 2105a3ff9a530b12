"""Who may see and change which tell: one decision for every face, pure.

``irisd/caller.py`` decides what a caller may SEND (which requests, as whom); this module
decides which tells (and what hangs on a tell: its transcript, its events, its question,
its approval, a persisted tell) a caller may TOUCH. The dispatcher asks it for every
request of every face (the socket, the HTTP API and its WebSocket, ``/mcp``, A2A, the
mesh); a face never decides it again, it only words the refusal in its protocol (a 403,
a JSON-RPC error, an MCP tool error, an ``ErrorReply``).

A thing is known by ``Owned``: who sent its tell (``from_team``: a team, None for the
person, ``a2a:NAME`` for an outside agent, ``team@irisd`` for a team of another irisd),
the team that answers it (``to_team``) and its chain. The rules, by kind of caller:

* the **owner** (the person: the socket, the owner's token, the dashboard's cookie) and
  the **reader** (iris-agent, whose changes are only proposals the person decides:
  caller.py, irisd/agent/actions.py) see everything;
* a **child** (team T's claude serving the pair F->T) sees and cancels the tells its
  team sent (``from_team == T``), the tells of its own pair (F->T: what it is asked),
  and the tells of the chain its pair is serving now (``chains``: the nested tells
  further down); the same for events, questions, approvals, notifications. A thread
  belongs to its pair: the claude of any thread of F->T has the same rights;
* an **agent** (``a2a:NAME``) only what it sent (``from_team`` is its name); a
  **remote** caller (another irisd of the mesh, ``team@irisd``) only what that irisd's
  teams sent (``from_team`` ends with ``@irisd``).

A refusal is ``PermissionDeniedError`` (HTTP 403 on every face), with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import msgspec

from irisd.caller import Caller
from protocol.errors import PermissionDeniedError
from protocol.health import Finding, worst
from protocol.messages import (
    ApprovalsReply,
    HealthReply,
    NotificationsReply,
    PairsReply,
    QuestionsReply,
    Reply,
    ReportReply,
    SessionsReply,
    SessionStatsReply,
    StatusReply,
)
from protocol.pairs import parse_pair_label

if TYPE_CHECKING:
    from irisd.events import EventFilter  # whether a subscriber gets an event: (from, to, chain)

EVERYONE = frozenset({"owner", "reader"})  # the kinds of caller that see every tell


class Owned(msgspec.Struct, frozen=True):
    """The facts of a tell (or of what hangs on one) that decide who may touch it."""

    from_team: str | None  # who sent it (None: the person, "external")
    to_team: str  # the team that answers it
    chain_id: str = ""  # the chain of nested tells it is part of ("" unknown)


def pair_of(caller: Caller) -> tuple[str | None, str]:
    """A child's pair as (from_team, to_team); "external" is None. A thread belongs to its
    pair: the claude of a thread (``F->T#thread``) has the rights of the pair's claude."""
    from_team, to_team, _ = parse_pair_label(caller.pair)
    return from_team, to_team


def sees(caller: Caller, thing: Owned, chains: frozenset[str] = frozenset()) -> bool:
    """Whether ``caller`` may read ``thing``. ``chains``: the chains a child's pair is
    serving now (the dispatcher knows them)."""
    if caller.kind in EVERYONE:
        return True
    if caller.kind == "child":
        return (
            thing.from_team == caller.team
            or (thing.from_team, thing.to_team) == pair_of(caller)
            or (bool(thing.chain_id) and thing.chain_id in chains)
        )
    if caller.kind == "remote":  # another irisd: what any of its teams sent ("team@irisd")
        return thing.from_team is not None and _irisd(thing.from_team) == _irisd(caller.team or "")
    return thing.from_team is not None and thing.from_team == caller.team  # an agent: "a2a:NAME"


def _irisd(sender: str) -> str:
    """The irisd of a remote sender "team@irisd" ("" for any other sender)."""
    return sender.rpartition("@")[2] if "@" in sender else ""


def may_change(caller: Caller, thing: Owned, chains: frozenset[str] = frozenset()) -> bool:
    """Whether ``caller`` may cancel ``thing`` (or dismiss its question): what it sees, but
    iris-agent changes nothing."""
    return caller.kind != "reader" and sees(caller, thing, chains)


def check_sees(caller: Caller, thing: Owned, what: str, chains: frozenset[str] = frozenset()) -> None:
    """PermissionDeniedError unless ``caller`` may read ``what`` (e.g. "tell t-1")."""
    if not sees(caller, thing, chains):
        raise PermissionDeniedError(f"{caller.describe()} may not read {what}: {_whose(caller, thing)}")


def check_changes(caller: Caller, thing: Owned, what: str, chains: frozenset[str] = frozenset()) -> None:
    """PermissionDeniedError unless ``caller`` may cancel (or dismiss) ``what``."""
    if caller.kind == "reader":
        raise PermissionDeniedError(f"{caller.describe()} may not change {what}; give the person the iris command")
    if not may_change(caller, thing, chains):
        raise PermissionDeniedError(f"{caller.describe()} may not change {what}: {_whose(caller, thing)}")


def check_answers(caller: Caller, asked_of: str | None, question_id: str) -> None:
    """PermissionDeniedError unless ``caller`` may answer a question asked of ``asked_of``
    (the asking pair's caller): the person answers any, a team or an agent only its own."""
    if caller.kind == "owner":
        return
    if caller.kind == "reader" or asked_of != caller.team:
        raise PermissionDeniedError(
            f"{caller.describe()} may not answer question {question_id}: it was asked of "
            f"{asked_of or 'the person (external)'}; only that caller, or the person with 'iris answer', answers it"
        )




class HasPair(Protocol):
    @property
    def from_team(self) -> str | None: ...
    @property
    def to_team(self) -> str: ...


def owned(thing: HasPair) -> Owned:
    """The facts policy decides on: a tell's own chain, or (questions, approvals, turns,
    notifications) the pair only."""
    return Owned(thing.from_team, thing.to_team, getattr(thing, "chain_id", ""))


def visible(reply: Reply, caller: Caller, chains: frozenset[str]) -> Reply:
    """``reply`` with only what ``caller`` may see of its lists (``chains``: the chain a
    child's pair serves now)."""

    def seen(thing: HasPair) -> bool:
        return sees(caller, owned(thing), chains)

    match reply:
        case ReportReply():
            return ReportReply(tells=[t for t in reply.tells if seen(t)])
        case QuestionsReply():
            return QuestionsReply(questions=[q for q in reply.questions if seen(q)])
        case ApprovalsReply():
            return ApprovalsReply(approvals=[a for a in reply.approvals if seen(a)])
        case NotificationsReply():
            return NotificationsReply(notifications=[n for n in reply.notifications if seen(n)])
        case SessionsReply():
            return SessionsReply(sessions=[s for s in reply.sessions if seen(s)])
        case SessionStatsReply():
            return SessionStatsReply(pairs=[p for p in reply.pairs if seen(p)], days=[d for d in reply.days if seen(d)])
        case PairsReply():
            return msgspec.structs.replace(reply, processes=[p for p in reply.processes if seen(p)])
        case StatusReply() if caller.kind not in EVERYONE:
            return msgspec.structs.replace(
                reply,
                processes=[p for p in reply.processes if seen(p)],
                unsolicited=[u for u in reply.unsolicited if seen(u)],
                findings=_findings_seen(caller, reply.findings),
                recoveries=[],  # each names a tell or a pair it acted on
                recent_errors=[],  # irisd's log, of every pair: the person's
            )
        case HealthReply() if caller.kind not in EVERYONE:
            found = _findings_seen(caller, reply.findings)
            return msgspec.structs.replace(reply, findings=found, worst=worst(found), recoveries=[])
    return reply


# Findings about one tell, approval or question: their pair is not in the finding.
ITEM_FINDINGS = frozenset({"stuck_tell", "approval_waiting", "question_waiting"})


def _findings_seen(caller: Caller, findings: list[Finding]) -> list[Finding]:
    """What a caller who does not see every tell may see of the health monitor's findings:
    those of irisd as a whole (its claude, its database, every team's budget) and of its
    own team, none about one tell, approval or question."""
    return [f for f in findings if f.kind not in ITEM_FINDINGS and f.team in ("", caller.team)]


def event_filter(caller: Caller, chains: Callable[[], frozenset[str]]) -> EventFilter | None:
    """The predicate a subscription of ``caller`` applies to each event; None: every event.
    A child's current chains (``chains``) are asked only for an event of a chain that the
    cheaper rules do not already decide, as its pair moves from tell to tell."""
    if caller.kind in EVERYONE:
        return None

    def wanted(from_team: str | None, to_team: str, chain_id: str) -> bool:
        thing = Owned(from_team, to_team, chain_id)
        if sees(caller, thing):
            return True
        return caller.kind == "child" and bool(chain_id) and sees(caller, thing, chains())

    return wanted


def _whose(caller: Caller, thing: Owned) -> str:
    sender = thing.from_team or "the person (external)"
    if caller.kind == "child":
        return (
            f"it is {sender}'s tell to {thing.to_team}, not one of team {caller.team!r}'s, of its pair "
            f"{caller.pair} or of the chain it serves"
        )
    return f"it is {sender}'s tell to {thing.to_team}, not one of yours"
