"""Every message on the irisd socket, as msgspec Structs.

Three tagged unions, one per direction and kind:

* ``Request``: client -> daemon. The first request on a connection must be ``Hello``.
* ``Reply``: daemon -> client, exactly one per request (``ErrorReply`` on failure).
* ``Event``: daemon -> client, pushed before the reply of a streaming request
  (``Tell(stream=True)``, ``Watch``).

Compatibility rules: new fields get defaults; a field's type never changes; a new
message is a new tag. ``Hello`` carries ``PROTOCOL_VERSION`` so both sides can refuse
a peer they do not understand.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# A tell's own state. Final states never change again.
TellStatus = Literal[
    "queued", "running", "completed", "timed_out", "interrupted", "failed"
]
FINAL_TELL_STATUSES: frozenset[str] = frozenset(
    {"completed", "timed_out", "interrupted", "failed"}
)

# What a caller sees: the final state, or "in_progress" when it stopped waiting first.
ReplyStatus = Literal["completed", "timed_out", "interrupted", "failed", "in_progress"]

ProcessState = Literal["stopped", "spawning", "idle", "processing", "terminating", "failed"]


class _Message(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    """Base of every wire message: tagged with its snake_case class name."""


# --- shared records -------------------------------------------------------------


class TeamInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    path: str
    description: str = ""
    color: str = ""


class TellInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tell as stored: its identity, state and (partial or final) answer."""

    id: str
    from_team: str | None
    to_team: str
    message: str
    status: TellStatus
    text: str = ""
    session_id: str = ""
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    error: str = ""
    cost_usd: float | None = None
    new_session: bool = False  # this tell started a new conversation (first, or recovered)


class ProcessInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One (from_team, to_team) pair's process, for ``iris status``."""

    from_team: str | None
    to_team: str
    state: ProcessState
    session_id: str = ""
    pid: int | None = None
    queued: int = 0
    current_tell: str = ""
    last_used_at: float | None = None
    reason: str = ""  # why the pair is failed / was stopped


# --- requests -------------------------------------------------------------------


class Hello(_Message, tag="hello"):
    protocol_version: int
    client: str = ""


class Tell(_Message, tag="tell"):
    """Send ``message`` to ``to_team`` in the conversation of the pair (from_team, to_team).

    ``timeout_ms``: -1 returns at once; 0 waits for the end; N waits up to N ms and
    then returns the answer so far while the tell runs on.
    """

    to_team: str
    message: str
    from_team: str | None = None
    timeout_ms: int = 0
    stream: bool = False  # push TellText events while waiting


class GetTell(_Message, tag="get_tell"):
    tell_id: str


class ListTeams(_Message, tag="list_teams"):
    pass


class GetStatus(_Message, tag="get_status"):
    pass


Request = Hello | Tell | GetTell | ListTeams | GetStatus


# --- replies --------------------------------------------------------------------


class Welcome(_Message, tag="welcome"):
    protocol_version: int
    daemon_version: str
    pid: int


class ErrorReply(_Message, tag="error"):
    code: str
    message: str


class TellReply(_Message, tag="tell_reply"):
    status: ReplyStatus
    tell: TellInfo


class TeamsReply(_Message, tag="teams_reply"):
    teams: list[TeamInfo]


class StatusReply(_Message, tag="status_reply"):
    pid: int
    daemon_version: str
    started_at: float
    socket_path: str
    config_path: str
    teams: list[TeamInfo]
    processes: list[ProcessInfo]
    max_processes: int


Reply = Welcome | ErrorReply | TellReply | TeamsReply | StatusReply


# --- events ---------------------------------------------------------------------


class TellText(_Message, tag="tell_text"):
    """New text of a running tell (a token-level delta)."""

    tell_id: str
    text: str


class TellState(_Message, tag="tell_state"):
    """A tell changed state."""

    tell_id: str
    status: TellStatus


Event = TellText | TellState

ServerMessage = Reply | Event
