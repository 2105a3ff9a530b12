"""What a queued tell waits for, before claude has it (``phase.before_start``)."""

from __future__ import annotations

from irisd.tell.phase import before_start
from protocol.messages import TellPhase
from protocol.phases import describe


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


def test_a_queued_tell_names_what_the_tell_ahead_waits_for() -> None:
    approval = TellPhase(
        name="awaiting_approval", since=5.0, tool="Bash", detail="rm -r build", approval_id="a-1234567890ab"
    )
    phase = before_start(2, state="processing", waiting_for_slot=0, head=approval, head_id="t-0123456789abcdef")
    assert phase == TellPhase(name="queued", ahead=2, head=approval, head_id="t-0123456789abcdef")
    assert phase is not None and describe(phase) == (
        "queued behind 2 tells; tell t-01234567 ahead awaits your approval of Bash `rm -r build`: "
        "run 'iris approve a-12345678' (or 'iris deny a-12345678')"
    )
    tool = TellPhase(name="running_tool", tool="Bash", detail="make test")
    behind_tool = before_start(1, state="processing", waiting_for_slot=0, head=tool, head_id="t-1")
    assert behind_tool is not None
    assert describe(behind_tool) == "queued behind 1 tell; tell t-1 ahead is running a tool: Bash `make test`"
    behind_model = before_start(1, state="processing", waiting_for_slot=0, head=TellPhase(name="waiting_for_model"))
    assert behind_model is not None and describe(behind_model) == "queued behind 1 tell (waiting for the model)"


def test_what_the_head_itself_was_queued_behind_is_not_repeated() -> None:
    inner = TellPhase(name="queued", ahead=1, head=TellPhase(name="answering"), head_id="t-0")
    phase = before_start(1, state="processing", waiting_for_slot=0, head=inner, head_id="t-1")
    assert phase is not None and phase.head == TellPhase(name="queued", ahead=1)


def test_the_first_tell_behind_a_turn_claude_took_on_its_own_says_so() -> None:
    phase = before_start(0, state="processing", waiting_for_slot=0, own_turn=True)
    assert phase is not None and describe(phase) == (
        "queued: claude is taking a turn of its own (a message from another Claude session); 'iris status' shows it"
    )
    assert before_start(0, state="idle", waiting_for_slot=0) is None  # nothing holds it: it starts now
