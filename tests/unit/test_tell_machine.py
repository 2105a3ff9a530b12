"""The tell lifecycle with plain floats for time: no trio, no sleeping."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from irisd.claude.wire import AnyLine, decode_line
from irisd.tell.machine import (
    IllegalTransition,
    ReplyToCaller,
    SendInterrupt,
    StopChild,
    TellMachine,
)

RESULT = b'{"type":"result","subtype":"success","is_error":false,"result":"final answer"}'
ERROR_RESULT = b'{"type":"result","subtype":"error_during_execution","is_error":true,"result":""}'


def delta(text: str) -> AnyLine:
    return decode_line(
        ('{"type":"stream_event","event":{"type":"content_block_delta","delta":'
         f'{{"type":"text_delta","text":"{text}"}}}}}}').encode()
    )


def line(raw: bytes) -> AnyLine:
    return decode_line(raw)


def machine(caller_ms: int = 0, response_s: float = 120.0, now: float = 0.0) -> TellMachine:
    return TellMachine(response_timeout_s=response_s, caller_timeout_ms=caller_ms, now=now)


def status_of(m: TellMachine) -> str:
    """Read afresh: mypy would keep ``m.status`` narrowed across the calls that change it."""
    return m.status


def test_happy_path_queued_running_completed() -> None:
    m = machine()
    assert m.status == "queued" and m.caller_attached(0.0) == []
    assert m.next_deadline() == math.inf
    assert m.start(1.0) == [] and status_of(m) == "running"
    assert m.next_deadline() == 121.0
    assert m.child_line(delta("fin"), 2.0) == []
    assert m.text == "fin" and m.reply_status() == "in_progress"
    assert m.child_line(line(RESULT), 3.0) == [ReplyToCaller()]
    assert status_of(m) == "completed" and m.text == "final answer" and m.finished_at == 3.0
    assert m.reply_status() == "completed" and m.next_deadline() == math.inf


def test_response_deadline_restarts_on_every_line_and_expires_after_silence() -> None:
    m = machine(response_s=120.0)
    m.start(0.0)
    for t in (10.0, 20.0, 45.0):
        m.child_line(delta("x"), t)
        assert m.next_deadline() == t + 120.0
    assert m.handle_timer(164.9) == []
    actions = m.handle_timer(165.0)
    assert actions == [StopChild("response timeout"), ReplyToCaller()]
    assert m.status == "timed_out" and m.text == "xxx"  # the output so far is kept
    assert "120 s" in m.error


def test_seed_example_caller_30s_response_120s() -> None:
    """ARCHITECTURE.md: caller gets the partial answer at 30 s, the tell completes at 50 s."""
    m = machine(caller_ms=30_000, response_s=120.0)
    m.caller_attached(0.0)
    m.start(0.0)
    m.child_line(delta("a"), 10.0)
    m.child_line(delta("b"), 20.0)
    assert m.next_deadline() == 30.0
    assert m.handle_timer(30.0) == [ReplyToCaller()]
    assert m.status == "running" and m.reply_status() == "in_progress" and m.text == "ab"
    assert m.next_deadline() == 140.0  # now only the response deadline
    m.child_line(delta("c"), 45.0)
    assert m.next_deadline() == 165.0
    assert m.child_line(line(RESULT), 50.0) == []  # the caller was answered already
    assert status_of(m) == "completed"


def test_async_caller_is_answered_at_once() -> None:
    m = machine(caller_ms=-1, now=5.0)
    assert m.caller_attached(5.0) == [ReplyToCaller()]
    assert m.status == "queued" and m.reply_status() == "in_progress"


def test_caller_deadline_counts_time_spent_queued() -> None:
    m = machine(caller_ms=2_000, now=0.0)
    m.caller_attached(0.0)
    assert m.next_deadline() == 2.0
    assert m.handle_timer(2.0) == [ReplyToCaller()] and m.status == "queued"


def test_error_result_fails_the_tell_with_its_text() -> None:
    m = machine()
    m.start(0.0)
    bad = b'{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 bad"}'
    assert m.child_line(line(bad), 1.0) == [ReplyToCaller()]
    assert m.status == "failed" and m.error == "API Error: 400 bad"


def test_a_claude_without_credentials_fails_the_tell_with_irises_fix() -> None:
    # As claude 2.1.330 ends a turn when it has no key and no login (checked).
    m = machine()
    m.start(0.0)
    raw = b'{"type":"result","subtype":"success","is_error":true,"result":"Not logged in \xc2\xb7 Please run /login"}'
    m.child_line(line(raw), 1.0)
    assert m.status == "failed" and m.error.startswith("Not logged in · Please run /login: ")
    assert "ANTHROPIC_API_KEY=... in $IRIS_HOME/irisd.env" in m.error and "'iris reload'" in m.error


def test_child_exit_interrupts_and_keeps_output() -> None:
    m = machine()
    m.start(0.0)
    m.child_line(delta("half"), 1.0)
    assert m.child_exited(2.0, "claude was killed by SIGKILL") == [ReplyToCaller()]
    assert m.status == "interrupted" and m.text == "half" and "SIGKILL" in m.error


def test_cancel_of_a_queued_tell_ends_it_at_once() -> None:
    m = machine()
    assert m.cancel(1.0) == [ReplyToCaller()]
    assert m.status == "interrupted"


def test_cancel_of_a_running_tell_interrupts_through_the_child() -> None:
    m = machine(response_s=120.0)
    m.start(0.0)
    assert m.cancel(10.0) == [SendInterrupt()]
    assert m.cancel(11.0) == []  # once is enough
    assert m.next_deadline() == 15.0  # grace for the child to honour it
    m.child_line(delta("x"), 12.0)
    assert m.next_deadline() == 15.0  # output does not extend the grace
    assert m.child_line(line(ERROR_RESULT), 13.0) == [ReplyToCaller()]
    assert m.status == "interrupted" and m.text == "x"


def test_an_ignored_interrupt_stops_the_child() -> None:
    m = machine()
    m.start(0.0)
    m.cancel(10.0)
    actions = m.handle_timer(15.0)
    assert isinstance(actions[0], StopChild) and actions[1:] == [ReplyToCaller()]
    assert m.status == "interrupted"


def test_fail_from_any_unfinished_state() -> None:
    queued = machine()
    assert queued.fail(1.0, "could not start claude") == [ReplyToCaller()]
    assert queued.status == "failed" and queued.error == "could not start claude"
    running = machine()
    running.start(0.0)
    running.fail(1.0, "x")
    assert running.status == "failed"


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.child_line(delta("x"), 1.0),
        lambda m: m.child_exited(1.0, "gone"),
    ],
)
def test_events_that_need_a_running_tell_refuse_a_queued_one(call: object) -> None:
    with pytest.raises(IllegalTransition, match="queued"):
        call(machine())  # type: ignore[operator]


def test_nothing_moves_a_finished_tell() -> None:
    m = machine()
    m.start(0.0)
    m.child_line(line(RESULT), 1.0)
    calls: tuple[Callable[[], object], ...] = (
        lambda: m.start(2.0),
        lambda: m.child_line(delta("x"), 2.0),
        lambda: m.child_exited(2.0, "x"),
        lambda: m.cancel(2.0),
        lambda: m.fail(2.0, "x"),
        lambda: m.interrupt(2.0, "x"),
    )
    for call in calls:
        with pytest.raises(IllegalTransition):
            call()
    assert m.status == "completed"


def test_start_twice_is_illegal() -> None:
    m = machine()
    m.start(0.0)
    with pytest.raises(IllegalTransition, match="start\\(\\) on a tell that is running"):
        m.start(1.0)


def test_partial_text_spans_messages_and_blocks() -> None:
    m = machine()
    m.start(0.0)
    m.child_line(delta("Let me look."), 1.0)
    whole = b'{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look."}]}}'
    m.child_line(line(whole), 2.0)
    m.child_line(line(b'{"type":"stream_event","event":{"type":"content_block_start"}}'), 3.0)
    m.child_line(delta("Found"), 4.0)
    assert m.text == "Let me look.\nFound"


def test_caller_timeout_below_minus_one_is_refused() -> None:
    with pytest.raises(ValueError):
        machine(caller_ms=-2)


def test_a_fresh_child_gets_the_start_up_grace_for_its_first_line() -> None:
    m = machine(response_s=2.0)
    m.start(0.0, startup_s=30.0)
    assert m.next_deadline() == 30.0  # claude is still starting: not a stall yet
    m.child_line(delta("x"), 5.0)
    assert m.next_deadline() == 7.0  # from the first line on, the response timeout
    assert m.child_restarted(6.0, startup_s=30.0) == [] and m.next_deadline() == 36.0


def test_a_tell_cancelled_while_its_child_went_is_not_handed_again() -> None:
    m = machine()
    m.start(0.0)
    assert m.cancel(1.0) == [SendInterrupt()]
    assert m.child_restarted(2.0) == [ReplyToCaller()]
    assert status_of(m) == "interrupted" and m.error == "interrupted by request"


def test_child_restarted_needs_a_running_tell() -> None:
    with pytest.raises(IllegalTransition):
        machine().child_restarted(1.0)


def test_a_remote_tell_is_kept_by_the_same_machine() -> None:
    m = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0)
    assert m.remote_started(1.0) == [] and m.status == "running" and m.next_deadline() == math.inf
    m.remote_progress(2.0, "hal")
    assert m.text == "hal"
    assert m.remote_finished(3.0, "completed", "hallo") == [ReplyToCaller()]
    assert (m.status, m.text, m.finished_at) == ("completed", "hallo", 3.0)
    with pytest.raises(IllegalTransition):
        m.remote_finished(4.0, "failed", "")


def test_a_silent_remote_times_out_and_a_cancelled_one_ends_interrupted() -> None:
    silent = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0)
    silent.remote_started(0.0, silence_s=30)
    silent.remote_progress(20.0)  # the far side spoke: 30 s from now
    assert silent.next_deadline() == 50.0
    assert silent.handle_timer(50.0)[0] == StopChild("response timeout")
    assert silent.status == "timed_out" and "no word from the remote team for 30 s" in silent.error
    cancelled = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0)
    cancelled.remote_started(0.0)
    assert cancelled.cancel(1.0) == [SendInterrupt()]
    cancelled.remote_finished(2.0, "completed", "too late")
    assert cancelled.status == "interrupted" and cancelled.text == "too late"
    with pytest.raises(IllegalTransition, match="not final"):
        TellMachine(response_timeout_s=1, caller_timeout_ms=0, now=0).remote_finished(0.0, "running", "")


def test_a_remote_tell_answers_no_caller_before_the_far_side_holds_it() -> None:
    m = TellMachine(response_timeout_s=10, caller_timeout_ms=-1, now=0)
    m.await_handoff(0.0, 30)
    assert m.caller_attached(0.0) == [] and m.next_deadline() == 30.0
    assert m.remote_accepted(2.0) == [ReplyToCaller()]  # the caller's -1 was due long ago
    assert m.remote_accepted(3.0) == []
    never = TellMachine(response_timeout_s=10, caller_timeout_ms=5000, now=0)
    never.await_handoff(0.0, 30)
    assert never.handle_timer(6.0) == []  # the caller's 5 s passed: still nothing to say
    assert never.handle_timer(30.0) == [StopChild("not taken in time"), ReplyToCaller()]
    assert never.status == "failed" and "did not take it within 30 s" in never.error


def test_a_remote_tell_that_left_is_never_failed_not_sent_but_settled_by_the_far_side() -> None:
    # Sent, never confirmed (the server stopped answering as it went): it may be held there.
    waiting = TellMachine(response_timeout_s=10, caller_timeout_ms=-1, now=0)
    waiting.await_handoff(0.0, 30)
    assert waiting.remote_sent(1.0) == []
    assert waiting.handle_timer(29.9) == []  # no caller hears of it before the handoff time
    assert waiting.handle_timer(30.0) == [ReplyToCaller()]  # in progress: unknown, not "not sent"
    assert not waiting.is_final and waiting.reply_status() == "in_progress" and not waiting.error
    assert waiting.handoff_unconfirmed  # its runner says why in its phase
    assert waiting.remote_accepted(40.0) == []  # confirmed later: goes on as any remote tell
    assert not waiting.handoff_unconfirmed
    waiting.remote_started(41.0)
    assert waiting.remote_finished(42.0, "completed", "the answer") == []  # its caller was answered
    assert waiting.status == "completed" and waiting.text == "the answer"
    patient = TellMachine(response_timeout_s=10, caller_timeout_ms=60_000, now=0)
    patient.await_handoff(0.0, 30)
    patient.remote_sent(1.0)
    assert patient.handle_timer(30.0) == [] and patient.next_deadline() == 60.0  # its caller waits on
    # Sent after it was accepted, or after it ended: nothing changes.
    done = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0)
    done.await_handoff(0.0, 30)
    done.remote_accepted(1.0)
    assert done.remote_sent(2.0) == [] and done.next_deadline() == math.inf
