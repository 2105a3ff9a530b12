"""What a queued tell waits for, before claude has it (``phase.before_start``)."""

from __future__ import annotations

from irisd.tell.phase import before_start
from protocol.messages import TellPhase


def test_a_tell_behind_others_says_how_many_are_ahead_whatever_the_process_does() -> None:
    for state in ("stopped", "spawning", "idle", "processing", "terminating", "failed"):
        assert before_start(2, state=state, waiting_for_slot=3) == TellPhase(name="queued", ahead=2)


def test_the_first_tell_waits_for_a_slot_then_for_claudes_start() -> None:
    assert before_start(0, state="spawning", waiting_for_slot=2) == TellPhase(name="waiting_for_slot", ahead=2)
    for state in ("spawning", "stopped", "terminating"):
        assert before_start(0, state=state, waiting_for_slot=0) == TellPhase(name="starting_claude")


def test_nothing_to_say_when_the_child_is_about_to_take_it() -> None:
    assert before_start(0, state="idle", waiting_for_slot=0) is None
    assert before_start(0, state="processing", waiting_for_slot=1) is None
