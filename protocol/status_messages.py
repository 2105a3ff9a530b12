"""The messages of ``iris status``: a part of ``protocol.messages``, which re-exports all of
them (import them from there, but on the CLI's hot path, which imports this module and
``core_messages`` alone: ``iris status`` creates these Structs and none of the others).
"""

# No 'from __future__ import annotations' (see protocol.messages).

from typing import Literal

import msgspec

from protocol.core_messages import TellStatus, _Message
from protocol.health import Finding, Recovery

ProcessState = Literal["stopped", "spawning", "idle", "processing", "terminating", "failed"]


class TeamInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    path: str
    description: str = ""
    color: str = ""
    host: str = ""  # the ssh destination of a team on another machine ("" for this one)
    unavailable: str = ""  # why it cannot answer now (its folder is missing), with the fix
    kind: str = ""  # "" a claude here or over ssh; "a2a" an A2A agent; "mesh" a team homed on another irisd
    remote: str = ""  # where a remote team lives: the agent's URL, the home irisd's name


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
    unsolicited: str = ""  # the id of a turn no tell asked for, under way (the next tell waits)
    host: str = ""  # where its claude runs: an ssh destination, "" for this machine
    # A remote team's pair ("a2a": an A2A agent, "mesh": a team of another irisd): no claude
    # process here (``host`` then says where the team is); "" for a claude of Iris's own.
    kind: str = ""
    # Spent on the pair's tells, all time: the cost ledger's sum when the pair's actor
    # started, plus each tell's share as claude reports it.
    cost_usd: float = 0.0
    thread: str = ""  # the pair's conversation this process serves ("": the default thread)


class UnsolicitedInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A turn a pair's claude took while no tell of Iris was running (a message from
    another Claude Code session, a background task finishing): kept, never dropped, and
    never part of a tell's answer. ``id`` starts with ``u-``; its lines are read with
    ``ReadUnsolicited``."""

    id: str
    from_team: str | None
    to_team: str
    status: TellStatus  # running, then completed / failed / timed_out / interrupted
    started_at: float
    text: str = ""  # what it said
    session_id: str = ""
    finished_at: float | None = None
    error: str = ""
    cost_usd: float | None = None


class LogEntry(msgspec.Struct, kw_only=True):
    """A warning or error irisd logged (for the dashboard's health view)."""

    at: float
    level: str
    logger: str
    message: str


class GetStatus(_Message, tag="get_status"):
    pass


class StatusReply(_Message, tag="status_reply"):
    pid: int
    daemon_version: str
    started_at: float
    socket_path: str
    config_path: str
    teams: list[TeamInfo]
    processes: list[ProcessInfo]
    max_processes: int
    pending_approvals: int = 0
    http_url: str = ""  # irisd's HTTP face (API, dashboard, MCP for its children)
    environment: dict[str, list[str]] = {}  # team -> the NAMES of its claude's variables
    unsolicited: list[UnsolicitedInfo] = []  # the latest turns no tell asked for, newest first
    memory_rss: int = 0  # irisd's resident memory, bytes (0 where /proc is missing)
    children_rss: int = 0  # its claude processes' resident memory, bytes
    # Spare claudes (settings.sessions.spares): started, idle, no pair's yet; team -> their pids.
    spares: dict[str, list[int]] = {}
    recent_errors: list[LogEntry] = []  # the newest warnings and errors irisd logged, newest first
    claude_version: str = ""  # the local claude irisd runs ("" when none was found)
    claude_tested: str = ""  # the claude version this Iris was tested with
    config_problem: str = ""  # why the last reload of config.yaml was refused ("" once one works)
    findings: list[Finding] = []  # what the health monitor finds wrong now, worst first
    recoveries: list[Recovery] = []  # what irisd did about findings itself (settings.health.recover), newest first

