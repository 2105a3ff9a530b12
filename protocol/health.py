"""What irisd's health monitor found (``irisd/health``): findings, each with its evidence
and the command that fixes it, and what irisd did about them itself
(``settings.health.recover``). Shown by ``iris status``, ``GET /api/health``, the
dashboard's Health view, ``iris doctor`` and the ``team_status`` tool."""

# No 'from __future__ import annotations' (see protocol.messages): iris status decodes these.

from typing import Literal

import msgspec

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")  # mildest first

FindingKind = Literal[
    "stuck_tell",  # a running tell printed nothing for longer than settings.health.stuckAfter
    "approval_waiting",  # a tool use waits for a person's decision longer than approvalAfter
    "question_waiting",  # a team's question waits for an answer longer than questionAfter
    "crash_loop",  # a pair's claude kept crashing on start: the pair is failed
    "budget",  # a team (or all teams) spent most of a daily budget
    "memory",  # one claude uses far more memory than the others
    "claude_version",  # the local claude is not the one Iris is tested with (or missing)
    "unreachable",  # a mesh home or an A2A agent does not answer
    "database",  # the database refuses writes
]


class Finding(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing that is wrong, for a person: what, why it is believed, how to fix it."""

    kind: FindingKind
    severity: Severity
    subject: str  # what it is about: a tell or approval id, a pair "from->to", a team, "claude"
    summary: str  # one line: what is wrong
    evidence: str = ""  # the facts it rests on
    fix: str = ""  # the command (or config change) that fixes it
    team: str = ""  # the team it concerns, if one
    since: float = 0.0  # wall clock: since when (0: unknown)

    @property
    def key(self) -> str:
        """Identity across checks: the same problem keeps its key while it lasts."""
        return f"{self.kind}:{self.subject}"


class Recovery(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Something irisd did on its own about a finding (``settings.health.recover``)."""

    at: float  # wall clock
    action: Literal["restart_pair", "cancel_tell"]
    subject: str  # the pair "from->to" or the tell id
    reason: str  # the finding's summary, when it acted
    outcome: str = ""  # what came of it ("restarted", or why it could not)


def worst(findings: list[Finding]) -> Literal["ok", "info", "warning", "error"]:
    """The most severe finding's severity, or ok."""
    if not findings:
        return "ok"
    return max((f.severity for f in findings), key=SEVERITIES.index)
