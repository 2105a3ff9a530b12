"""The health rules: facts irisd already has in, findings (and, with
``settings.health.recover``, safe actions) out. No trio, no I/O: time is an argument.

How it works
------------
Every ``healthCheckInterval`` the monitor (``irisd/health/monitor.py``) gathers
``Facts`` (plain values: the running tells and when each last printed, what waits for a
person, the pairs' states and memory, what was spent against which budget, claude's
version, what does not answer, whether the database takes writes) and calls
``HealthRules.check(facts, now)``. ``find`` turns facts into ``Finding``s, each with its
severity, its evidence and the command that fixes it; the rules remember since when
they see each finding (``Finding.since``), which is what the crash-loop backoff counts
from. With ``recover`` on, ``check`` also returns actions:

* ``RestartPair`` for a crash-looping (failed) pair, ``recoverAfter`` after it was first
  seen failed, then after twice that, and so on (capped at an hour): a claude that
  cannot start is not hammered;
* ``CancelTell`` for a running tell silent for ``cancelAfter``, once.

The monitor carries the actions out and records what came of them (``Recovery``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from iris_common.config import HealthConfig
from iris_common.locate import version_of
from iris_common.money import usd
from protocol.health import SEVERITIES, Finding, Severity
from protocol.pairs import pair_label as label_of

MAX_RECOVER_DELAY_S = 3600.0


class Limits(msgspec.Struct, frozen=True):
    """``settings.health`` in seconds and bytes."""

    stuck_after_s: float = 300.0
    cancel_after_s: float = 1800.0
    approval_after_s: float = 120.0
    question_after_s: float = 3600.0
    budget_share: float = 0.8
    memory_factor: float = 3.0
    memory_floor: int = 512 * 2**20
    recover: bool = False
    recover_after_s: float = 60.0

    @classmethod
    def of(cls, health: HealthConfig) -> Limits:
        return cls(
            stuck_after_s=health.stuck_after / 1000,
            cancel_after_s=health.cancel_after / 1000,
            approval_after_s=health.approval_after / 1000,
            question_after_s=health.question_after / 1000,
            budget_share=health.budget_share,
            memory_factor=health.memory_factor,
            memory_floor=health.memory_floor_mb * 2**20,
            recover=health.recover,
            recover_after_s=health.recover_after / 1000,
        )


# --- facts ---------------------------------------------------------------------------


class RunningTell(msgspec.Struct, frozen=True):
    id: str
    from_team: str | None
    to_team: str
    quiet_since: float  # wall clock: its last line from claude (or its start)
    awaiting_approval: bool = False  # silent because a person decides (an approval, a question): not stuck


class Waiting(msgspec.Struct, frozen=True):
    """An approval or a question that waits for a person."""

    kind: Literal["approval", "question"]
    id: str
    from_team: str | None
    to_team: str
    since: float  # wall clock
    what: str  # the tool, or the question, in short


class PairFacts(msgspec.Struct, frozen=True):
    from_team: str | None
    to_team: str
    state: str  # ProcessState
    reason: str = ""  # why it is failed
    rss: int = 0  # its claude's resident memory, bytes (0: not running or unknown)
    thread: str = ""  # which of the pair's conversations ("": the default one)


class Spent(msgspec.Struct, frozen=True):
    """Spending today against one daily budget."""

    team: str  # "" for all teams together
    spent: float
    limit: float
    key: str  # the config key of the limit


class Facts(msgspec.Struct, frozen=True):
    tells: tuple[RunningTell, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    pairs: tuple[PairFacts, ...] = ()
    spent: tuple[Spent, ...] = ()
    claude_version: str = ""
    claude_tested: str = ""
    unreachable: tuple[tuple[str, str], ...] = ()  # (team, why): mesh homes, A2A agents
    store_problem: str = ""  # the database's last refusal, while it refuses writes


# --- actions -------------------------------------------------------------------------


class RestartPair(msgspec.Struct, frozen=True):
    from_team: str | None
    to_team: str
    reason: str
    thread: str = ""

    @property
    def subject(self) -> str:
        return pair_label(self.from_team, self.to_team, self.thread)


class CancelTell(msgspec.Struct, frozen=True):
    tell_id: str
    reason: str

    @property
    def subject(self) -> str:
        return self.tell_id


Action = RestartPair | CancelTell


# --- the rules -----------------------------------------------------------------------


def pair_label(from_team: str | None, to_team: str, thread: str = "") -> str:
    return label_of(from_team, to_team, thread)


def _from(from_team: str | None) -> str:
    return f" --from {from_team}" if from_team else ""


def _span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def find(facts: Facts, limits: Limits, now: float) -> list[Finding]:
    """What is wrong, worst first (``since`` is when the fact began, where the facts say)."""
    found = [
        *_stuck(facts.tells, limits, now),
        *_waiting(facts.waiting, limits, now),
        *_crash_loops(facts.pairs),
        *_budgets(facts.spent, limits),
        *_memory(facts.pairs, limits),
        *_claude(facts.claude_version, facts.claude_tested),
        *(
            Finding(kind="unreachable", severity="warning", subject=team, team=team,
                    summary=f"team {team} cannot be reached", evidence=why,
                    fix="its tells wait (or fail) until it answers; 'iris doctor' checks the way to it")
            for team, why in facts.unreachable
        ),
    ]
    if facts.store_problem:
        found.append(Finding(
            kind="database", severity="error", subject="database", summary="the database refuses writes",
            evidence=facts.store_problem,
            fix="free disk space or fix the file's permissions (see the evidence); irisd retries the writes",
        ))
    return sorted(found, key=lambda f: (-SEVERITIES.index(f.severity), f.kind, f.subject))


def _stuck(tells: Iterable[RunningTell], limits: Limits, now: float) -> Iterable[Finding]:
    for tell in tells:
        quiet = now - tell.quiet_since
        if tell.awaiting_approval or quiet < limits.stuck_after_s:
            continue
        yield Finding(
            kind="stuck_tell", severity="warning", subject=tell.id, team=tell.to_team, since=tell.quiet_since,
            summary=f"tell {tell.id} ({pair_label(tell.from_team, tell.to_team)}) has printed nothing "
                    f"for {_span(quiet)}",
            evidence=f"running, no line from claude since {_span(quiet)} ago "
                     f"(settings.health.stuckAfter: {_span(limits.stuck_after_s)})",
            fix=f"iris cancel {tell.id}",
        )


def _waiting(items: Iterable[Waiting], limits: Limits, now: float) -> Iterable[Finding]:
    for item in items:
        age = now - item.since
        after = limits.approval_after_s if item.kind == "approval" else limits.question_after_s
        if age < after:
            continue
        pair = pair_label(item.from_team, item.to_team)
        if item.kind == "approval":
            yield Finding(
                kind="approval_waiting", severity="warning", subject=item.id, team=item.to_team, since=item.since,
                summary=f"approval {item.id} ({pair}: {item.what}) has waited {_span(age)} for a decision",
                evidence=f"pending since {_span(age)} ago (settings.health.approvalAfter: {_span(after)})",
                fix=f"iris approve {item.id}  (or: iris deny {item.id})",
            )
        else:
            yield Finding(
                kind="question_waiting", severity="info", subject=item.id, team=item.to_team, since=item.since,
                summary=f"question {item.id} from {item.to_team} has waited {_span(age)} for an answer: {item.what}",
                evidence=f"pending since {_span(age)} ago (settings.health.questionAfter: {_span(after)})",
                fix=f'iris answer {item.id} "TEXT"  (or: iris questions dismiss {item.id})',
            )


def _crash_loops(pairs: Iterable[PairFacts]) -> Iterable[Finding]:
    for pair in pairs:
        if pair.state != "failed":
            continue
        label = pair_label(pair.from_team, pair.to_team, pair.thread)
        yield Finding(
            kind="crash_loop", severity="error", subject=label, team=pair.to_team,
            summary=f"pair {label}: claude keeps failing to start",
            evidence=pair.reason or "the pair is failed",
            fix=f"iris doctor; then iris wake {pair.to_team}{_from(pair.from_team)}"
            + (f" --thread {pair.thread}" if pair.thread else ""),
        )


def _budgets(spent: Iterable[Spent], limits: Limits) -> Iterable[Finding]:
    for item in spent:
        if item.limit <= 0 or item.spent < item.limit * limits.budget_share:
            continue
        who = f"team {item.team}" if item.team else "all teams together"
        reached = item.spent >= item.limit
        yield Finding(
            kind="budget", severity="error" if reached else "warning", subject=item.team or "all",
            team=item.team,
            summary=f"{who} spent {usd(item.spent)} of {usd(item.limit)} today"
                    + (": new tells are refused" if reached else ""),
            evidence=f"{item.key}: {usd(item.limit)} ({item.spent / item.limit:.0%} spent; "
                     f"settings.health.budgetShare: {limits.budget_share:.0%})",
            fix=f"raise {item.key} in config.yaml and run 'iris reload', or wait until midnight",
        )


def _memory(pairs: Iterable[PairFacts], limits: Limits) -> Iterable[Finding]:
    running = [p for p in pairs if p.rss > 0]
    if len(running) < 2:
        return
    import statistics  # with two claudes running, not at irisd's start (fractions, about 2 ms)

    for pair in running:
        others = [p.rss for p in running if p is not pair]
        median = statistics.median(others)
        if pair.rss < limits.memory_floor or pair.rss < median * limits.memory_factor:
            continue
        label = pair_label(pair.from_team, pair.to_team, pair.thread)
        yield Finding(
            kind="memory", severity="warning", subject=label, team=pair.to_team,
            summary=f"pair {label}: its claude uses {pair.rss / 2**20:.0f} MiB, "
                    f"{pair.rss / max(median, 1):.1f} times the others' median",
            evidence=f"the others' median: {median / 2**20:.0f} MiB (settings.health.memoryFactor: "
                     f"{limits.memory_factor:g})",
            fix=f"iris sleep {pair.to_team}{_from(pair.from_team)}  (its conversation is kept; the next tell "
                "starts a fresh process)",
        )


def _claude(version: str, tested: str) -> Iterable[Finding]:
    if not version:
        yield Finding(
            kind="claude_version", severity="error", subject="claude", summary="no claude was found",
            evidence="irisd found no claude executable at start (or at the last reload)",
            fix=f"install claude {tested}, or set settings.claudePath in config.yaml; then iris reload",
        )
        return
    found, wanted = version_of(version), version_of(tested)
    if found is None or wanted is None or found == wanted:
        return
    newer = found > wanted
    yield Finding(
        kind="claude_version", severity="info" if newer else "warning", subject="claude",
        summary=f"claude {version} is {'newer' if newer else 'older'} than {tested}, the version Iris is tested with",
        evidence=f"claude --version: {version}",
        fix=f"install claude {tested} (scripts/install pins it) or set settings.claudePath; then iris reload",
    )


# --- remembering across checks ---------------------------------------------------------


class _Attempts(msgspec.Struct):
    count: int = 0
    last_at: float = 0.0


class HealthRules(msgspec.Struct):
    """The findings of each check, with the memory the rules need across checks: since
    when each finding has been seen, and what was done about which (for the backoff)."""

    limits: Limits
    first_seen: dict[str, float] = msgspec.field(default_factory=dict)
    _restarts: dict[str, _Attempts] = msgspec.field(default_factory=dict)
    _cancelled: set[str] = msgspec.field(default_factory=set)

    def check(self, facts: Facts, now: float, *, act: bool = True) -> tuple[list[Finding], list[Action]]:
        """The findings now (``since`` filled in from the first check that saw each) and,
        with ``recover`` (and ``act``: a look for ``iris status`` does not), what to do
        about the safe ones."""
        found = find(facts, self.limits, now)
        seen = {f.key for f in found}
        self.first_seen = {key: at for key, at in self.first_seen.items() if key in seen}
        for f in found:
            self.first_seen.setdefault(f.key, f.since or now)
        working = {pair_label(p.from_team, p.to_team, p.thread) for p in facts.pairs
                   if p.state in ("idle", "processing")}
        for key in [k for k in self._restarts if k in working]:
            del self._restarts[key]  # it started: a later loop begins the backoff anew
        self._cancelled &= {f.subject for f in found if f.kind == "stuck_tell"}
        found = [f if f.since else _with_since(f, self.first_seen[f.key]) for f in found]
        return found, self._actions(facts, found, now) if self.limits.recover and act else []

    def next_restart_at(self, subject: str) -> float | None:
        """When a crash-looping pair is restarted next (None: it is not failed now)."""
        since = self.first_seen.get(f"crash_loop:{subject}")
        if since is None:
            return None
        attempts = self._restarts.get(subject, _Attempts())
        delay = min(self.limits.recover_after_s * 2.0**attempts.count, MAX_RECOVER_DELAY_S)
        return (attempts.last_at if attempts.count else since) + delay

    def _actions(self, facts: Facts, found: list[Finding], now: float) -> list[Action]:
        actions: list[Action] = []
        pairs = {pair_label(p.from_team, p.to_team, p.thread): p for p in facts.pairs}
        tells = {t.id: t for t in facts.tells}
        for f in found:
            if f.kind == "crash_loop" and (pair := pairs.get(f.subject)) is not None:
                due = self.next_restart_at(f.subject)
                if due is not None and now >= due:
                    attempts = self._restarts.setdefault(f.subject, _Attempts())
                    attempts.count += 1
                    attempts.last_at = now
                    actions.append(RestartPair(pair.from_team, pair.to_team, f.summary, pair.thread))
            elif (
                f.kind == "stuck_tell" and f.subject not in self._cancelled and (tell := tells.get(f.subject))
                and now - tell.quiet_since >= self.limits.cancel_after_s
            ):
                self._cancelled.add(f.subject)
                actions.append(CancelTell(f.subject, f.summary))
        return actions


def _with_since(finding: Finding, since: float) -> Finding:
    return msgspec.structs.replace(finding, since=since)


def at_least(findings: Iterable[Finding], severity: Severity) -> list[Finding]:
    """The findings of ``severity`` or worse."""
    floor = SEVERITIES.index(severity)
    return [f for f in findings if SEVERITIES.index(f.severity) >= floor]
