"""Who is asking: decided by the connection, never by a field the client fills in.

Every front end (the Unix socket, the HTTP API, its WebSocket, MCP over HTTP) turns
its connection into a ``Caller`` and hands it to ``Dispatcher.dispatch`` with the
request:

* the **owner**: a process of irisd's own user on the socket (SO_PEERCRED), or an
  HTTP client with the owner's token or login cookie. The owner is the person: it may
  speak as any team (``from_team``, the CLI's ``--from``) and decide approvals.
* a **child**: one of irisd's own claude processes, known by the token minted for it
  when it was spawned (revoked when it exits). It serves one pair (``pair``, e.g.
  ``frontend->backend``) as its answering team (``team``). It speaks as that team
  only: a request naming another team as its sender is refused with
  ``permission_denied``; one that names none is sent as the child's team. Its tells
  are linked to the tell its pair is serving (chain, hops, loop guard), and it may not
  decide approvals (a team must not approve its own tool use).
* a **remote** caller: a team of another irisd of the mesh (irisd/mesh/home.py), named
  by the NATS credentials of its irisd. It speaks as ``team@irisd`` only (a name no
  local team can have), and may only tell, read and cancel tells.
* a **reader**: iris-agent (irisd/agent/runner.py), the person's assistant, known by a
  token minted for each of its runs. It sees what the owner sees and reads; of what
  changes something it may only *propose* the actions in ``_PROPOSES`` (tell, wake,
  sleep, cancel, answer): ``proposes`` says so, and the dispatcher files each as an
  approval for the person (irisd/agent/actions.py) instead of doing it. Its tells are
  sent as ``iris-agent`` (a chain of their own). Every other request is refused here,
  whatever its MCP server offers it: it never decides approvals, never changes config.
* an **agent**: an outside A2A agent, known by the token ``iris a2a token --name NAME``
  issued for it (iris_common/a2a_tokens.py). It speaks as ``a2a:NAME`` only, and may send
  only what the A2A face needs (``_AGENT``).

``Caller.apply`` is pure: it returns the request as the daemon must serve it, or raises.
It decides what a caller may SEND; which tells (transcripts, events, questions) it may
TOUCH is irisd/policy.py's, asked by the dispatcher for every face.
A new request type that carries a sender (``from_team``) belongs in ``_SENDERS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec

from iris_common.a2a_tokens import sender_of
from iris_common.config import AGENT_NAME
from iris_common.identity import sender
from irisd.events import SendEvent
from protocol.errors import PermissionDeniedError
from protocol.messages import (
    AgentStats,
    AnswerQuestion,
    ArchiveSession,
    Ask,
    CancelTell,
    ClearCache,
    Command,
    Costs,
    Decide,
    DismissQuestion,
    ForgetRule,
    GetHealth,
    GetPair,
    GetStatus,
    GetTell,
    HttpInfo,
    ListApprovals,
    ListNotifications,
    ListQuestions,
    ListRules,
    ListSessions,
    ListTeams,
    ListTells,
    ReadTranscript,
    Reload,
    Reply,
    Report,
    Request,
    ResetSession,
    RestoreSession,
    SessionStats,
    Sleep,
    Tell,
    TellMany,
    Wake,
    WakeAll,
)

# Requests whose ``from_team`` names who is asking (not a filter).
_SENDERS = (Tell, TellMany, Command, ResetSession, GetPair, Wake, WakeAll, Sleep, Report, ClearCache)
# Requests only the person may send (iris-agent is the person's assistant, not the teams').
# What each does, for the refusal ("only the person who owns irisd ...").
_OWNER_DOES: dict[type, str] = {
    Decide: "decides approvals",
    HttpInfo: "sees irisd's tokens",
    ForgetRule: "forgets remembered approvals",
    Ask: "asks iris-agent",
    DismissQuestion: "dismisses questions",
    Reload: "reloads config.yaml",
    ArchiveSession: "archives conversations",
    RestoreSession: "restores archived conversations",
    AgentStats: "sees what iris-agent did across all pairs",
}
_OWNER_ONLY = tuple(_OWNER_DOES)
# The only requests a reader may send: they change nothing.
_READS = (
    ListTeams, GetStatus, ListSessions, GetPair, Report, GetTell, ReadTranscript, ListTells,
    ListApprovals, ListRules, ListQuestions, Costs, ListNotifications, GetHealth, SessionStats, AgentStats,
)
# What iris-agent may propose (the person allows each, or settings.agent.allow does).
_PROPOSES = (Tell, Wake, Sleep, CancelTell, AnswerQuestion)
# The only requests an outside A2A agent may send (the A2A methods map onto these).
_AGENT = (Tell, GetTell, CancelTell, ListTells, ListQuestions, AnswerQuestion, DismissQuestion)


class Caller(msgspec.Struct, frozen=True):
    kind: Literal["owner", "child", "reader", "agent", "remote"] = "owner"
    team: str | None = None  # a child: the team whose claude it is; an agent: "a2a:NAME"; remote: "team@irisd"
    pair: str = ""  # a child: the pair it serves, "from->to" ("external->to" for no team)

    @classmethod
    def child(cls, team: str, pair: str) -> Caller:
        return cls(kind="child", team=team, pair=pair)

    @classmethod
    def reader(cls) -> Caller:
        return cls(kind="reader")

    @classmethod
    def agent(cls, name: str) -> Caller:
        return cls(kind="agent", team=sender_of(name))

    @classmethod
    def remote(cls, irisd: str, team: str | None) -> Caller:
        return cls(kind="remote", team=f"{team or 'external'}@{irisd}")

    @property
    def is_owner(self) -> bool:
        return self.kind == "owner"

    def proposes(self, request: Request) -> bool:
        """Whether ``request`` (as ``apply`` returned it) is an action iris-agent proposes:
        the person (or settings.agent.allow) decides it, the dispatcher does not just serve it."""
        return self.kind == "reader" and isinstance(request, _PROPOSES)

    def describe(self) -> str:
        if self.is_owner:
            return "the owner"
        if self.kind == "reader":
            return "iris-agent (it reads, and proposes actions to the person)"
        if self.kind == "agent":
            return f"the A2A agent {self.team!r}"
        if self.kind == "remote":
            return f"{self.team} (a team of another irisd of the mesh)"
        return f"team {self.team!r} (its claude serving {self.pair})"

    def apply(self, request: Request) -> Request:
        """The request as this caller may send it; PermissionDeniedError if it may not."""
        if self.is_owner:
            return request
        if self.kind == "reader":
            if isinstance(request, Tell):  # its own chain, as itself; never stored for later
                if request.persist:
                    raise PermissionDeniedError(f"{self.describe()} may not store tells for later (persist)")
                return msgspec.structs.replace(request, from_team=AGENT_NAME, parent_pair="", across=None)
            if isinstance(request, AnswerQuestion):  # the person's answer once allowed, never a team's
                return msgspec.structs.replace(request, as_team="", by=AGENT_NAME)
            if isinstance(request, Wake | Sleep) and request.from_team == AGENT_NAME:
                return msgspec.structs.replace(request, from_team=None)  # the person's pair with the team
            if not isinstance(request, _READS + _PROPOSES):
                raise PermissionDeniedError(
                    f"{self.describe()} may not send {type(request).__name__}: it changes something; "
                    "give the person the iris command that does it instead"
                )
            return request
        if self.kind == "agent":
            return self._as_agent(request)

        if self.kind == "remote":
            if not isinstance(request, Tell | GetTell | CancelTell):
                raise PermissionDeniedError(f"{self.describe()} may only tell, read and cancel tells")
            if isinstance(request, Tell):
                request = msgspec.structs.replace(request, from_team=self.team, parent_pair="")
            return request
        if isinstance(request, _OWNER_ONLY):
            raise PermissionDeniedError(
                f"{self.describe()} may not send {type(request).__name__}: only the person who owns "
                f"irisd {_OWNER_DOES[type(request)]}"
            )
        if isinstance(request, _SENDERS):
            team = sender(self.team, request.from_team, f"you are {self.describe()}")
            request = msgspec.structs.replace(request, from_team=team)
        if isinstance(request, Tell):
            request = msgspec.structs.replace(request, parent_pair=self.pair, across=None)
        elif isinstance(request, TellMany):
            request = msgspec.structs.replace(request, parent_pair=self.pair)
        if isinstance(request, Costs):  # a team sees what its own team's tells cost, not the others'
            request = msgspec.structs.replace(request, team=self.team)
        if isinstance(request, AnswerQuestion):  # a team answers only what was asked of it
            request = msgspec.structs.replace(request, as_team=self.team or "external")
        return request

    def _as_agent(self, request: Request) -> Request:
        if not isinstance(request, _AGENT):
            raise PermissionDeniedError(
                f"{self.describe()} may not send {type(request).__name__}: an A2A token only sends messages "
                "to teams and follows its own tasks"
            )
        if isinstance(request, Tell):
            if request.persist:
                raise PermissionDeniedError(f"{self.describe()} may not store tells for later (persist)")
            team = sender(self.team, request.from_team, f"you are {self.describe()}")
            return msgspec.structs.replace(request, from_team=team, parent_pair="")
        if isinstance(request, ListTells | ListQuestions):  # its own only
            if isinstance(request, ListTells):
                return msgspec.structs.replace(request, from_team=self.team)
            return msgspec.structs.replace(request, for_team=self.team or "")
        if isinstance(request, AnswerQuestion):
            return msgspec.structs.replace(request, as_team=self.team or "")
        return request


OWNER = Caller()

# Serve a request of a caller, its events sent with the SendEvent: the serve path
# (irisd/serving.py) as the faces below it (the A2A service, the mesh home) are handed it.
Dispatch = Callable[[Request, Caller, SendEvent], Awaitable[Reply]]
