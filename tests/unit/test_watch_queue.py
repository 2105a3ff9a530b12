"""The queue of one watcher (irisd/events.py): a tell's text coalesced, order kept, bounded."""

from __future__ import annotations

from irisd.events import WatchQueue
from protocol.messages import TellState, TellText


def text(tell_id: str, value: str) -> TellText:
    return TellText(tell_id=tell_id, text=value)


def test_a_tells_deltas_become_one_event_per_batch() -> None:
    queue = WatchQueue()
    for word in ("one ", "two ", "three"):
        assert queue.push(text("t", word))
    assert len(queue) == 1
    assert queue.take() == [text("t", "one two three")]
    assert queue.take() == []
    queue.push(text("t", "four"))
    assert queue.take() == [text("t", "four")]


def test_text_of_two_tells_coalesces_per_tell_in_order_of_first_arrival() -> None:
    queue = WatchQueue()
    for tell_id, word in [("a", "1"), ("b", "x"), ("a", "2"), ("b", "y"), ("a", "3")]:
        queue.push(text(tell_id, word))
    assert queue.take() == [text("a", "123"), text("b", "xy")]


def test_text_never_jumps_over_another_event() -> None:
    done = TellState(tell_id="t", status="completed")
    queue = WatchQueue()
    queue.push(text("t", "before "))
    queue.push(done)
    queue.push(text("t", "after"))
    assert queue.take() == [text("t", "before "), done, text("t", "after")]


def test_a_watcher_too_far_behind_is_dropped_with_a_reason_and_holds_nothing() -> None:
    queue = WatchQueue(max_events=3)
    for i in range(3):
        assert queue.push(TellState(tell_id=str(i), status="running"))
    assert not queue.push(TellState(tell_id="3", status="running"))
    assert queue.dropped == (
        "this watcher fell behind and was disconnected (3 events waited for this watcher: it reads too "
        "slowly); events were lost, watch again"
    )
    assert len(queue) == 0
    assert not queue.push(text("t", "more"))  # dropped for good
    assert queue.take() == []


def test_text_is_bounded_by_its_size_too() -> None:
    queue = WatchQueue(max_text=10)
    assert queue.push(text("t", "x" * 10))
    assert not queue.push(text("t", "y"))
    assert "10 characters of text waited" in queue.dropped
