"""Which notices go out: deduplicated and rate-limited, pure (time is an argument).

How it works: a notice has a key (its kind and id: ``approval:ID``, ``health:stuck_tell:T``).
``NoticeGate.admit(notice, now)`` says yes once per key per ``every_s``, so a finding that
flaps (gone at one check, back at the next) or an event seen twice is said once; and at
most ``per_minute`` notices in any 60 s altogether, so a burst (twenty approvals at once)
cannot flood a phone. What is refused is counted (``dropped``), never queued: the person
sees the rest in ``iris status``, ``iris approvals`` and the dashboard.
"""

from __future__ import annotations

import collections
from typing import Literal

import msgspec

from irisd.health.rules import at_least
from protocol.health import Finding
from protocol.messages import ApprovalInfo, QuestionInfo

WINDOW_S = 60.0
MAX_KEYS = 10_000  # remembered keys at most (bounded memory whatever happens)


class Notice(msgspec.Struct, frozen=True):
    """One thing to tell the person: what, about which, and the command that decides it."""

    kind: Literal["approval", "question", "health"]
    id: str  # the approval's, the question's id; for health the finding's subject
    team: str  # the team it concerns ("" if none)
    title: str
    message: str
    command: str  # what decides it: 'iris approve ID', 'iris answer ID "TEXT"', the finding's fix
    severity: str = "warning"

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


class NoticeGate:
    def __init__(self, *, every_s: float, per_minute: int = 10) -> None:
        self.every_s = every_s
        self.per_minute = per_minute
        self._said: dict[str, float] = {}  # key -> when it last went out
        self._recent: collections.deque[float] = collections.deque()
        self.dropped = 0

    def admit(self, notice: Notice, now: float) -> bool:
        """True if ``notice`` goes out now (and it is recorded as said)."""
        said = self._said.get(notice.key)
        if said is not None and now - said < self.every_s:
            return False  # said recently: a repeat or a flap
        while self._recent and self._recent[0] <= now - WINDOW_S:
            self._recent.popleft()
        if len(self._recent) >= self.per_minute:
            self.dropped += 1
            return False
        self._recent.append(now)
        self._said[notice.key] = now
        if len(self._said) > MAX_KEYS:
            self.forget(now)
        return True

    def forget(self, now: float) -> None:
        """Drop keys said longer than ``every_s`` ago (they may go out again anyway)."""
        self._said = {key: at for key, at in self._said.items() if now - at < self.every_s}
        while len(self._said) > MAX_KEYS:  # still too many: the oldest go
            del self._said[min(self._said, key=self._said.__getitem__)]


# --- what becomes a notice --------------------------------------------------------------


def of_approval(approval: ApprovalInfo) -> Notice:
    pair = f"{approval.from_team or 'external'}->{approval.to_team}"
    if approval.kind == "input":
        return Notice(
            kind="approval", id=approval.id, team=approval.to_team,
            title=f"{approval.to_team}'s MCP server {approval.tool_name} asks for your input",
            message=f"{pair}: {approval.message}",
            command=f"iris approve {approval.id} --field NAME=VALUE  (or: iris deny {approval.id})",
        )
    if approval.kind == "budget":  # a chain reached settings.budget.chainUsd: may it go on?
        return Notice(
            kind="approval", id=approval.id, team=approval.to_team,
            title=f"a chain through {pair} reached its budget",
            message=approval.message,
            command=f"iris approve {approval.id}  (or: iris deny {approval.id})",
        )
    if approval.kind == "agent":  # an action iris-agent proposes
        return Notice(
            kind="approval", id=approval.id, team=approval.to_team,
            title=f"iris-agent proposes to {approval.tool_name.removeprefix('team_')} {approval.to_team}",
            message=f"iris-agent proposes to {approval.summary}",
            command=f"iris approve {approval.id}  (or: iris deny {approval.id})",
        )
    return Notice(
        kind="approval", id=approval.id, team=approval.to_team,
        title=f"{approval.to_team} asks to use {approval.tool_name}",
        message=f"{pair} wants to run {approval.tool_name}: {_short(approval.input)}",
        command=f"iris approve {approval.id}  (or: iris deny {approval.id})",
    )


def of_question(question: QuestionInfo) -> Notice:
    return Notice(
        kind="question", id=question.id, team=question.to_team,
        title=f"{question.to_team} asks a question",
        message=question.question,
        command=f'iris answer {question.id} "TEXT"',
        severity="info",
    )


def of_findings(findings: list[Finding]) -> list[Notice]:
    """Health findings of severity warning or worse."""
    return [
        Notice(kind="health", id=f"{f.kind}:{f.subject}", team=f.team, title=f"Iris health: {f.kind.replace('_', ' ')}",
               message=f.summary, command=f.fix, severity=f.severity)
        for f in at_least(findings, "warning")
    ]


def _short(value: object, limit: int = 200) -> str:
    text = str(value.get("command", value)) if isinstance(value, dict) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
