"""The health rules (irisd/health/rules.py): plain facts in, findings and actions out,
with explicit times."""

from __future__ import annotations

import pytest

from irisd.health.rules import (
    CancelTell,
    Facts,
    HealthRules,
    Limits,
    PairFacts,
    RestartPair,
    RunningTell,
    Spent,
    Waiting,
    at_least,
    find,
)
from protocol.health import worst

LIMITS = Limits(stuck_after_s=300, cancel_after_s=1800, approval_after_s=120, question_after_s=3600,
                recover_after_s=60)
MB = 2**20


def kinds(facts: Facts, now: float, limits: Limits = LIMITS) -> list[tuple[str, str, str]]:
    return [(f.kind, f.severity, f.subject) for f in find(facts, limits, now)]


def test_nothing_wrong_is_no_finding() -> None:
    facts = Facts(claude_version="2.1.330", claude_tested="2.1.330")
    assert find(facts, LIMITS, 1000.0) == []
    assert worst([]) == "ok"


def test_a_silent_running_tell_is_stuck_from_stuck_after_with_cancel_as_its_fix() -> None:
    tell = RunningTell(id="t1", from_team="a", to_team="b", quiet_since=1000.0)
    facts = Facts(tells=(tell,), claude_version="1", claude_tested="1")
    assert find(facts, LIMITS, 1299.0) == []
    (finding,) = find(facts, LIMITS, 1300.0)
    assert (finding.kind, finding.severity, finding.subject, finding.team) == ("stuck_tell", "warning", "t1", "b")
    assert finding.fix == "iris cancel t1"
    assert finding.summary == "tell t1 (a->b) has printed nothing for 5 min"
    assert finding.since == 1000.0


def test_a_tell_waiting_for_a_person_is_not_stuck() -> None:
    tell = RunningTell(id="t1", from_team=None, to_team="b", quiet_since=0.0, awaiting_approval=True)
    assert find(Facts(tells=(tell,), claude_version="1", claude_tested="1"), LIMITS, 10_000.0) == []


def test_approvals_and_questions_waiting_past_their_thresholds() -> None:
    waiting = (
        Waiting(kind="approval", id="a1", from_team="x", to_team="y", since=0.0, what="Bash"),
        Waiting(kind="question", id="q1", from_team=None, to_team="y", since=0.0, what="Which port?"),
    )
    facts = Facts(waiting=waiting, claude_version="1", claude_tested="1")
    assert kinds(facts, 119.0) == []
    assert kinds(facts, 120.0) == [("approval_waiting", "warning", "a1")]
    found = find(facts, LIMITS, 3600.0)
    assert [(f.kind, f.subject) for f in found] == [("approval_waiting", "a1"), ("question_waiting", "q1")]
    assert found[0].fix == "iris approve a1  (or: iris deny a1)"
    assert found[1].fix.startswith('iris answer q1 "TEXT"')


def test_a_failed_pair_is_a_crash_loop_with_wake_as_its_fix() -> None:
    pair = PairFacts(from_team="a", to_team="b", state="failed", reason="claude keeps crashing on start (3 times)")
    (finding,) = find(Facts(pairs=(pair,), claude_version="1", claude_tested="1"), LIMITS, 0.0)
    assert (finding.kind, finding.severity, finding.subject) == ("crash_loop", "error", "a->b")
    assert finding.evidence == "claude keeps crashing on start (3 times)"
    assert finding.fix == "iris doctor; then iris wake b --from a"


def test_a_failed_thread_is_its_own_crash_loop_and_is_restarted_as_that_thread() -> None:
    thread = PairFacts(from_team="a", to_team="b", state="failed", thread="auth")
    default = PairFacts(from_team="a", to_team="b", state="idle")
    facts = Facts(pairs=(default, thread), claude_version="1", claude_tested="1")
    (finding,) = find(facts, LIMITS, 0.0)
    assert (finding.subject, finding.fix) == ("a->b#auth", "iris doctor; then iris wake b --from a --thread auth")
    rules = HealthRules(Limits(recover=True, recover_after_s=60))
    rules.check(facts, 0.0)
    restart = RestartPair("a", "b", "pair a->b#auth: claude keeps failing to start", "auth")
    assert rules.check(facts, 60.0)[1] == [restart]


def test_a_working_thread_does_not_reset_another_threads_backoff() -> None:
    """The backoff is per thread: the pair's default thread running well says nothing of
    a failing thread of the pair, and the other way round."""
    rules = HealthRules(Limits(recover=True, recover_after_s=60))
    thread_ok = PairFacts(from_team="a", to_team="b", state="idle", thread="auth")
    failed = Facts(pairs=(PairFacts(from_team="a", to_team="b", state="failed"), thread_ok),
                   claude_version="1", claude_tested="1")
    rules.check(failed, 0.0)
    assert len(rules.check(failed, 60.0)[1]) == 1
    rules.check(failed, 61.0)
    assert rules.next_restart_at("a->b") == 180.0  # twice as long, though a->b#auth is idle throughout
    assert rules.check(failed, 120.0)[1] == []


@pytest.mark.parametrize(
    ("spent", "expected"),
    [(7.99, []), (8.0, [("budget", "warning", "web")]), (10.0, [("budget", "error", "web")])],
)
def test_a_budget_nearly_spent_warns_and_a_reached_one_is_an_error(spent: float, expected: list[object]) -> None:
    facts = Facts(spent=(Spent(team="web", spent=spent, limit=10.0, key="teams.web.budget.dailyUsd"),),
                  claude_version="1", claude_tested="1")
    assert kinds(facts, 0.0) == expected
    if expected:
        assert "teams.web.budget.dailyUsd" in find(facts, LIMITS, 0.0)[0].fix


def test_all_teams_budget_is_named_as_such() -> None:
    facts = Facts(spent=(Spent(team="", spent=9.0, limit=10.0, key="settings.budget.dailyUsd"),),
                  claude_version="1", claude_tested="1")
    (finding,) = find(facts, LIMITS, 0.0)
    assert finding.subject == "all" and "all teams together" in finding.summary


def test_a_child_using_far_more_memory_than_the_others() -> None:
    pairs = (
        PairFacts(from_team=None, to_team="a", state="idle", rss=200 * MB),
        PairFacts(from_team=None, to_team="b", state="idle", rss=220 * MB),
        PairFacts(from_team=None, to_team="c", state="processing", rss=900 * MB),
    )
    facts = Facts(pairs=pairs, claude_version="1", claude_tested="1")
    assert kinds(facts, 0.0) == [("memory", "warning", "external->c")]
    assert find(facts, LIMITS, 0.0)[0].fix.startswith("iris sleep c")
    # Below the floor nothing counts, however lopsided; one process alone has nothing to compare with.
    small = (PairFacts(from_team=None, to_team="a", state="idle", rss=10 * MB),
             PairFacts(from_team=None, to_team="b", state="idle", rss=100 * MB))
    assert kinds(Facts(pairs=small, claude_version="1", claude_tested="1"), 0.0) == []
    alone = (PairFacts(from_team=None, to_team="c", state="idle", rss=9000 * MB),)
    assert kinds(Facts(pairs=alone, claude_version="1", claude_tested="1"), 0.0) == []


@pytest.mark.parametrize(
    ("version", "expected"),
    [("2.1.330", []), ("2.1.400", [("claude_version", "info", "claude")]),
     ("2.1.300", [("claude_version", "warning", "claude")]), ("", [("claude_version", "error", "claude")])],
)
def test_claude_newer_older_or_missing(version: str, expected: list[object]) -> None:
    assert kinds(Facts(claude_version=version, claude_tested="2.1.330"), 0.0) == expected


def test_unreachable_teams_and_a_database_refusing_writes() -> None:
    facts = Facts(unreachable=(("far", "home irisd ws-2 unreachable (last seen 2 min ago)"),),
                  store_problem="the disk is full", claude_version="1", claude_tested="1")
    found = find(facts, LIMITS, 0.0)
    assert [(f.kind, f.severity) for f in found] == [("database", "error"), ("unreachable", "warning")]
    assert found[1].evidence.startswith("home irisd ws-2")
    assert at_least(found, "error") == found[:1]
    assert worst(found) == "error"


def test_findings_keep_since_from_the_first_check_that_saw_them() -> None:
    rules = HealthRules(LIMITS)
    failed = Facts(pairs=(PairFacts(from_team=None, to_team="b", state="failed"),), claude_version="1",
                   claude_tested="1")
    (first,), _ = rules.check(failed, 100.0)
    (later,), _ = rules.check(failed, 130.0)
    assert first.since == later.since == 100.0
    rules.check(Facts(claude_version="1", claude_tested="1"), 140.0)  # gone: forgotten
    (again,), _ = rules.check(failed, 150.0)
    assert again.since == 150.0


def test_without_recover_nothing_is_done() -> None:
    rules = HealthRules(LIMITS)
    failed = Facts(pairs=(PairFacts(from_team=None, to_team="b", state="failed"),), claude_version="1",
                   claude_tested="1")
    assert rules.check(failed, 0.0)[1] == []
    assert rules.check(failed, 10_000.0)[1] == []


def test_recover_restarts_a_crash_looping_pair_after_a_doubling_backoff() -> None:
    rules = HealthRules(Limits(recover=True, recover_after_s=60))
    failed = Facts(pairs=(PairFacts(from_team="a", to_team="b", state="failed"),), claude_version="1",
                   claude_tested="1")
    spawning = Facts(pairs=(PairFacts(from_team="a", to_team="b", state="spawning"),), claude_version="1",
                     claude_tested="1")
    assert rules.check(failed, 0.0)[1] == []
    assert rules.check(failed, 59.0)[1] == []
    assert rules.check(failed, 60.0)[1] == [RestartPair("a", "b", "pair a->b: claude keeps failing to start")]
    assert rules.check(failed, 61.0)[1] == []  # once per backoff
    rules.check(spawning, 62.0)  # it tries, and fails again: the next wait is twice as long
    assert rules.check(failed, 70.0)[1] == []
    assert rules.next_restart_at("a->b") == 180.0
    assert rules.check(failed, 179.0)[1] == []
    assert len(rules.check(failed, 180.0)[1]) == 1
    assert rules.next_restart_at("a->b") == 180.0 + 240.0
    # Once it works the backoff starts anew.
    rules.check(Facts(pairs=(PairFacts(from_team="a", to_team="b", state="idle"),), claude_version="1",
                      claude_tested="1"), 200.0)
    rules.check(failed, 300.0)
    assert rules.next_restart_at("a->b") == 360.0


def test_a_look_never_acts() -> None:
    rules = HealthRules(Limits(recover=True, recover_after_s=60))
    failed = Facts(pairs=(PairFacts(from_team="a", to_team="b", state="failed"),), claude_version="1",
                   claude_tested="1")
    rules.check(failed, 0.0)
    assert rules.check(failed, 100.0, act=False)[1] == []
    assert len(rules.check(failed, 100.0)[1]) == 1


def test_recover_cancels_a_tell_silent_past_cancel_after_once() -> None:
    rules = HealthRules(Limits(recover=True, stuck_after_s=300, cancel_after_s=1800))
    facts = Facts(tells=(RunningTell(id="t1", from_team=None, to_team="b", quiet_since=0.0),), claude_version="1",
                  claude_tested="1")
    found, actions = rules.check(facts, 300.0)
    assert [f.kind for f in found] == ["stuck_tell"] and actions == []
    assert rules.check(facts, 1799.0)[1] == []
    assert rules.check(facts, 1800.0)[1] == [CancelTell("t1", "tell t1 (external->b) has printed nothing for 30 min")]
    assert rules.check(facts, 1900.0)[1] == []
