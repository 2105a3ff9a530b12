from __future__ import annotations

from irisd.pool.policy import (
    ChildExit,
    Died,
    Evict,
    Expected,
    GiveUp,
    Grant,
    NewConversation,
    PairView,
    RetryStart,
    Wait,
    classify_exit,
    decide_slot,
    idle_deadline,
    least_recently_used_idle,
    may_start_spare,
    start_retry_delay,
)


def view(name: str, state: str = "idle", last: float = 0.0, queued: int = 0) -> PairView:
    return PairView(key=(None, name), state=state, last_used_at=last, queued=queued,  # type: ignore[arg-type]
                    holds_slot=state != "stopped")


def test_grant_while_there_is_room() -> None:
    assert decide_slot((None, "new"), [view("a"), view("b")], max_processes=3) == Grant()


def test_full_pool_evicts_the_least_recently_used_idle_pair() -> None:
    pairs = [view("a", last=30), view("b", last=10), view("c", "processing", last=1), view("d", last=20)]
    assert decide_slot((None, "new"), pairs, max_processes=4) == Evict((None, "b"))


def spare(team: str, n: int, last: float) -> PairView:
    return PairView(key=(f"spare #{n}", team), state="idle", last_used_at=last, holds_slot=True, spare=True)


def test_under_pressure_spares_go_first_the_oldest_first() -> None:
    pairs = [view("a", last=1), spare("b", 1, last=50), spare("c", 2, last=40), view("d", last=2)]
    assert decide_slot((None, "new"), pairs, max_processes=4) == Evict(("spare #2", "c"))
    assert decide_slot((None, "new"), pairs[:2] + pairs[3:], max_processes=3) == Evict(("spare #1", "b"))
    assert decide_slot((None, "new"), [view("a", last=1), view("d", last=2)], max_processes=2) == Evict((None, "a"))
    # a new conversation of c may take c's spare: another team's goes first
    assert decide_slot(("x", "c"), pairs, max_processes=4) == Evict(("spare #1", "b"))


def test_a_spare_starts_only_into_a_free_slot() -> None:
    pairs = [view("a"), spare("b", 1, last=0), view("c", "stopped")]
    assert may_start_spare(pairs, max_processes=3)
    assert not may_start_spare(pairs, max_processes=2)  # it would have to evict: it does not start


def test_busy_pairs_and_pairs_with_queued_work_are_never_evicted() -> None:
    pairs = [view("a", "processing"), view("b", "spawning"), view("c", "idle", queued=2)]
    assert decide_slot((None, "new"), pairs, max_processes=3) == Wait(busy=3)


def test_no_second_eviction_while_one_is_terminating() -> None:
    pairs = [view("a", "terminating"), view("b", last=0)]
    assert decide_slot((None, "new"), pairs, max_processes=2) == Wait(busy=2)


def test_the_requester_does_not_count_against_itself() -> None:
    assert decide_slot((None, "a"), [view("a")], max_processes=1) == Grant()


def test_stopped_pairs_hold_no_slot() -> None:
    assert decide_slot((None, "new"), [view("a", "stopped")], max_processes=1) == Grant()


def test_lru_of_nothing_is_nothing() -> None:
    assert least_recently_used_idle([]) is None


def test_start_retries_back_off_then_give_up() -> None:
    assert [start_retry_delay(n) for n in range(4)] == [0.0, 0.25, 1.0, None]


def test_idle_deadline_only_while_idle() -> None:
    assert idle_deadline("idle", last_active=100.0, idle_timeout_s=60) == 160.0
    assert idle_deadline("processing", last_active=100.0, idle_timeout_s=60) is None


def exit_(stopped_by_us: bool = False, spoke: bool = False, code: int | None = 1, lost: bool = False,
          renewed: bool = False) -> ChildExit:
    return ChildExit(stopped_by_us=stopped_by_us, spoke=spoke, returncode=code, conversation_lost=lost,
                     renewed_already=renewed)


def test_a_child_we_stopped_needs_nothing() -> None:
    assert classify_exit(exit_(stopped_by_us=True, lost=True), start_failures=2) == Expected()


def test_a_child_that_worked_and_died_interrupts_its_tell() -> None:
    assert classify_exit(exit_(spoke=True, code=-9), start_failures=0) == Died()
    assert classify_exit(exit_(spoke=False, code=0), start_failures=0) == Died()


def test_a_lost_conversation_is_renewed_once_then_counts_as_a_crash() -> None:
    assert classify_exit(exit_(lost=True), start_failures=0) == NewConversation()
    assert classify_exit(exit_(lost=True, renewed=True), start_failures=0) == RetryStart(0.25, 1)


def test_crashes_on_start_are_retried_then_given_up() -> None:
    assert classify_exit(exit_(), start_failures=0) == RetryStart(0.25, 1)
    assert classify_exit(exit_(), start_failures=1) == RetryStart(1.0, 2)
    assert classify_exit(exit_(), start_failures=2) == GiveUp(3)
