"""The events watchers read (irisd/events.py EventLog): a tell's text coalesced per read,
order kept, a bounded window, a cursor that falls out of it told so."""

from __future__ import annotations

import pytest

from irisd.events import (
    FLUSH_BURST,
    FLUSH_INTERVAL_S,
    FRAMES_PER_S,
    EventHub,
    EventLog,
    FellBehindError,
    Pace,
    Published,
)
from protocol.messages import TellState, TellText


def text(tell_id: str, value: str) -> TellText:
    return TellText(tell_id=tell_id, text=value)


def log_of(*events: TellText | TellState, **limits: int) -> EventLog:
    log = EventLog(**limits)
    for event in events:
        log.append(event, "alpha", "beta")
    return log


def test_a_tells_deltas_become_one_event_per_read() -> None:
    log = log_of(text("t", "one "), text("t", "two "), text("t", "three"))
    assert log.read(0) == [text("t", "one two three")]
    assert log.read(1) == [text("t", "two three")]
    assert log.read(log.next) == []


def test_text_of_two_tells_coalesces_per_tell_in_order_of_first_arrival() -> None:
    log = log_of(text("a", "1"), text("b", "x"), text("a", "2"), text("b", "y"), text("a", "3"))
    assert log.read(0) == [text("a", "123"), text("b", "xy")]


def test_text_never_jumps_over_another_event() -> None:
    done = TellState(tell_id="t", status="completed")
    log = log_of(text("t", "before "), text("t", "then "), done, text("t", "after"))
    assert log.read(0) == [text("t", "before then "), done, text("t", "after")]


def test_a_reader_sees_only_what_it_wants() -> None:
    log = EventLog()
    log.append(text("a", "mine"), "alpha", "beta")
    log.append(text("g", "not mine"), "gamma", "delta")
    log.append(text("a", "!"), "alpha", "beta")

    def wants(published: Published) -> bool:
        return "alpha" in (published.from_team, published.to_team)

    assert log.read(0, wants) == [text("a", "mine!")]


def test_the_window_is_bounded_and_a_cursor_out_of_it_fell_behind() -> None:
    log = log_of(*(TellState(tell_id=str(i), status="running") for i in range(8)), max_events=4)
    assert log.first == 4 and log.next == 8  # at twice the bound, the older half went
    assert log.read(4) == [TellState(tell_id=str(i), status="running") for i in range(4, 8)]
    with pytest.raises(FellBehindError) as fell:
        log.read(3)
    assert str(fell.value) == (
        "this watcher fell behind and was disconnected (5 events were published while it read none: "
        "it reads too slowly); events were lost, watch again"
    )


def test_text_is_bounded_by_its_size_too() -> None:
    log = log_of(text("t", "x" * 10), text("t", "y" * 10), text("t", "z" * 10), max_text=10)
    assert log.first == 2  # over twice the bound: only what fits in it is kept
    assert log.read(2) == [text("t", "z" * 10)]


def test_watchers_together_send_a_bounded_number_of_batches_a_second() -> None:
    hub = EventHub()
    assert hub.flush_interval() == FLUSH_INTERVAL_S
    for _ in range(250):
        hub.subscribe()
    assert hub.flush_interval() == 250 / FRAMES_PER_S  # 0.625 s: FRAMES_PER_S for all of them


def test_a_watcher_sends_a_burst_at_once_then_one_batch_an_interval_and_a_quiet_spell_gives_it_back() -> None:
    pace = Pace(burst=3)
    assert [pace.sent(0.0, 0.25) for _ in range(3)] == [0.0, 0.0, 0.25]  # the third took the last token
    assert [pace.sent(0.25, 0.25), pace.sent(0.5, 0.25)] == [0.25, 0.25]  # from then on: one an interval
    assert [pace.sent(1.5, 0.25) for _ in range(3)] == [0.0, 0.0, 0.25]  # a quiet second: the burst is back
    assert pace.sent(1.6, 0.25) == pytest.approx(0.4)  # 0.1 s later: 0.4 of a token back, so 0.6 owed
    assert Pace().burst == FLUSH_BURST and FLUSH_BURST >= 4  # a warm tell's steps: queued, running, text, end


def test_the_burst_shrinks_as_more_watch_so_all_bursts_together_stay_bounded() -> None:
    hub = EventHub()
    assert hub.flush_burst() == FLUSH_BURST  # one watcher, or none yet
    for _ in range(10):
        hub.subscribe()
    assert hub.flush_burst() == 5  # 10 x 5 batches at once: FRAMES_PER_S x FLUSH_INTERVAL_S
    for _ in range(90):
        hub.subscribe()
    assert hub.flush_burst() == 1  # a hundred: a batch, then the interval, each
    pace = Pace()
    assert [pace.sent(0.0, 0.5, burst=1), pace.sent(0.5, 0.5, burst=1)] == [0.5, 0.5]  # never at once
    assert pace.sent(10.0, 0.25, burst=FLUSH_BURST) == 0.0  # the watchers went: the burst is back
