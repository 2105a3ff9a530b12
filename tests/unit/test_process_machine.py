"""A pair's process lifecycle with plain floats for time: every transition, no trio."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from irisd.pool.process_machine import (
    Action,
    Answer,
    AwaitExit,
    AwaitStart,
    ExpireApprovals,
    FailTells,
    IllegalTransition,
    InterruptTells,
    Note,
    PersistState,
    ProbeSession,
    ProcessMachine,
    ReleaseSlot,
    RenewSession,
    RequestSlot,
    SendTurn,
    SessionProbe,
    Spawn,
    StopChild,
    StoppersDone,
    WakersDone,
)

LABEL = "external->alpha"
FRESH = SessionProbe(resumable=False, used=False)
RESUMABLE = SessionProbe(resumable=True, used=True)
GONE = SessionProbe(resumable=False, used=True)
EXPIRED = ExpireApprovals("claude exited before a decision")


def machine(now: float = 0.0, idle_s: float = 60.0) -> ProcessMachine:
    return ProcessMachine(label=LABEL, idle_timeout_s=idle_s, now=now)


def state_of(m: ProcessMachine) -> str:
    """Read afresh: mypy would keep ``m.state`` narrowed across the calls that change it."""
    return m.state


def phase_of(m: ProcessMachine) -> str:
    return m.phase


def spawning(now: float = 0.0, probe: SessionProbe = RESUMABLE) -> ProcessMachine:
    """A machine that was woken and is launching its child (slot held, probe done)."""
    m = machine(now)
    m.wake_requested(now)
    m.slot_granted(now)
    m.session_probed(now, probe)
    return m


def idle(now: float = 0.0, pid: int = 42, probe: SessionProbe = RESUMABLE) -> ProcessMachine:
    m = spawning(now, probe)
    m.spawned(now, pid)
    return m


def processing(tell: str = "t1", now: float = 0.0, spoke: bool = True) -> ProcessMachine:
    m = idle(now)
    if spoke:
        m.first_line(now)
    m.tell_queued(tell, now)
    return m


def terminating(now: float = 0.0) -> ProcessMachine:
    m = idle(now)
    m.first_line(now)
    m.stop_child("evicted")
    return m


def failed(now: float = 0.0) -> ProcessMachine:
    m = machine(now)
    m.tell_queued("t1", now)
    m.slot_granted(now)
    m.spawn_failed(now, "no such folder")
    return m


# --- stopped -----------------------------------------------------------------------------


def test_a_tell_on_a_stopped_pair_asks_for_a_slot() -> None:
    m = machine()
    assert m.tell_queued("t1", 1.0) == [PersistState("spawning"), RequestSlot()]
    assert m.state == "spawning" and m.phase == "slot" and list(m.queue) == ["t1"]
    assert m.busy and m.waiting_tells == 1


def test_wake_on_a_stopped_pair_parks_the_request_and_asks_for_a_slot() -> None:
    m = machine()
    assert m.wake_requested(1.0) == [AwaitStart(), PersistState("spawning"), RequestSlot()]
    assert not m.busy  # a wake is not work: the pair may be evicted once up


def test_stop_and_reset_of_a_stopped_pair() -> None:
    m = machine()
    assert m.stop_requested(1.0, force=True, reason="x") == [Answer(f"{LABEL} is not running")]
    assert m.reset_requested(1.0) == [RenewSession()]
    assert m.state == "stopped" and m.next_deadline() == math.inf and m.handle_timer(99.0) == []


def test_ending_a_tell_the_machine_does_not_know_does_nothing() -> None:
    m = machine()
    assert m.tell_ended("nope", 1.0) == []
    assert m.stop_child("x") == []


@pytest.mark.parametrize(
    "event",
    [
        lambda m: m.slot_granted(0.0),
        lambda m: m.session_probed(0.0, FRESH),
        lambda m: m.spawned(0.0, 1),
        lambda m: m.spawn_failed(0.0, "x"),
        lambda m: m.first_line(0.0),
        lambda m: m.exited(0.0, returncode=0, detail="x"),
    ],
)
def test_child_events_on_a_stopped_pair_are_illegal(event: Callable[[ProcessMachine], list[Action]]) -> None:
    with pytest.raises(IllegalTransition, match="which is stopped"):
        event(machine())


def test_the_same_tell_cannot_be_queued_twice() -> None:
    m = machine()
    m.tell_queued("t1", 0.0)
    with pytest.raises(IllegalTransition, match="already queued"):
        m.tell_queued("t1", 0.0)


# --- spawning: slot, probe, launch --------------------------------------------------------------


def test_the_slot_then_the_probe_then_the_launch() -> None:
    m = machine()
    m.tell_queued("t1", 0.0)
    assert m.slot_granted(1.0) == [ProbeSession()]
    assert m.holds_slot and phase_of(m) == "probe"
    assert m.session_probed(1.5, RESUMABLE) == [Spawn(resume=True)]
    assert phase_of(m) == "launch"
    assert m.spawned(2.0, 42) == [
        PersistState("processing"),
        SendTurn("t1", fresh_child=True),
    ]
    assert m.state == "processing" and m.pid == 42 and m.current == "t1" and m.resumed
    assert m.last_active == 2.0 and m.phase == ""


@pytest.mark.parametrize(
    ("probe", "expected", "noted"),
    [
        (RESUMABLE, Spawn(resume=True), False),
        (FRESH, Spawn(resume=False), False),  # a new session starts under its own id
        (GONE, Spawn(resume=False, renew=True), True),  # took turns, transcript gone: renew
        (SessionProbe(resumable=True, used=False), Spawn(resume=True), False),
    ],
)
def test_the_probe_decides_how_the_session_is_opened(probe: SessionProbe, expected: Spawn, noted: bool) -> None:
    m = machine()
    m.wake_requested(0.0)
    m.slot_granted(0.0)
    actions = m.session_probed(0.0, probe)
    assert actions[-1] == expected
    assert (Note("conversation lost; starting a new one") in actions) == noted


def test_a_new_session_is_said_on_the_first_tell_it_serves() -> None:
    m = spawning(probe=FRESH)
    m.tell_queued("t1", 1.0)
    assert m.spawned(2.0, 7) == [WakersDone(), PersistState("processing"), SendTurn("t1", fresh_child=True,
                                                                                      new_session=True)]
    m.first_line(2.5)
    m.tell_ended("t1", 3.0)
    m.tell_queued("t2", 4.0)  # same conversation now
    assert m.tell_queued("t3", 4.0) == []
    assert m.tell_ended("t2", 5.0) == [SendTurn("t3")]


def test_spawned_without_work_goes_idle_and_answers_the_wakers() -> None:
    m = spawning()
    assert m.spawned(1.0, 7) == [WakersDone(), PersistState("idle")]
    assert m.state == "idle" and m.has_child and not m.child_spoke


def test_requests_while_spawning() -> None:
    m = machine()
    m.tell_queued("t1", 0.0)
    assert m.tell_queued("t2", 0.0) == []  # waits in line
    assert m.wake_requested(0.0) == [AwaitStart()]
    assert m.stop_requested(0.0, force=True, reason="x") == [Answer(f"{LABEL} is not running")]
    reset = m.reset_requested(0.0)
    assert len(reset) == 1 and isinstance(reset[0], Answer) and reset[0].error == "busy"
    assert m.stop_child("x") == [] and m.handle_timer(100.0) == []
    assert m.tell_ended("t2", 1.0) == [] and list(m.queue) == ["t1"]  # cancelled while waiting


def test_a_reset_while_a_woken_child_starts_is_refused() -> None:
    m = machine()
    m.wake_requested(0.0)
    reset = m.reset_requested(0.0)
    assert isinstance(reset[0], Answer) and "is starting" in reset[0].message


@pytest.mark.parametrize(
    ("phase", "event"),
    [
        ("slot", lambda m: m.session_probed(0.0, FRESH)),
        ("slot", lambda m: m.spawned(0.0, 1)),
        ("slot", lambda m: m.spawn_failed(0.0, "x")),
        ("probe", lambda m: m.slot_granted(0.0)),
        ("probe", lambda m: m.spawned(0.0, 1)),
        ("launch", lambda m: m.slot_granted(0.0)),
        ("launch", lambda m: m.session_probed(0.0, FRESH)),
        ("launch", lambda m: m.first_line(0.0)),
        ("launch", lambda m: m.exited(0.0, returncode=1, detail="x")),
    ],
)
def test_spawn_events_out_of_order_are_illegal(
    phase: str, event: Callable[[ProcessMachine], list[Action]]
) -> None:
    m = machine()
    m.wake_requested(0.0)
    if phase in ("probe", "launch"):
        m.slot_granted(0.0)
    if phase == "launch":
        m.session_probed(0.0, FRESH)
    assert m.phase == phase
    with pytest.raises(IllegalTransition):
        event(m)


@pytest.mark.parametrize("phase", ["probe", "launch"])
def test_a_failed_spawn_fails_the_tells_and_the_wakers_and_frees_the_slot(phase: str) -> None:
    m = machine()
    m.tell_queued("t1", 0.0)
    m.tell_queued("t2", 0.0)
    m.wake_requested(0.0)
    m.slot_granted(0.0)
    if phase == "launch":
        m.session_probed(0.0, FRESH)
    actions = m.spawn_failed(1.0, "ssh: connect to host x port 22: Connection refused")
    reason = "ssh: connect to host x port 22: Connection refused"
    assert actions == [
        ReleaseSlot(),
        PersistState("failed"),
        WakersDone(error=f"{LABEL} cannot start: {reason}"),
        FailTells(("t1", "t2"), reason),
    ]
    assert m.state == "failed" and m.reason == reason and not m.holds_slot and not m.queue
    # No claude ran: cheap to try again, so the next tell does at once.
    assert m.tell_queued("t3", 1.0) == [PersistState("stopped"), PersistState("spawning"), RequestSlot()]
    assert m.reason == ""


# --- idle ---------------------------------------------------------------------------------------


def test_a_tell_on_an_idle_child_is_sent_at_once() -> None:
    m = idle()
    m.first_line(0.5)
    assert m.tell_queued("t1", 1.0) == [PersistState("processing"), SendTurn("t1")]
    assert m.current == "t1" and not m.queue


def test_requests_to_an_idle_child() -> None:
    m = idle(pid=42)
    assert m.wake_requested(1.0) == [Answer(f"{LABEL} is already awake (pid 42)")]
    assert m.stop_requested(1.0, force=False, reason="put to sleep") == [
        AwaitExit(),
        PersistState("terminating"),
        StopChild("put to sleep"),
    ]


def test_resetting_an_idle_pair_stops_its_child_and_the_next_tell_starts_a_new_conversation() -> None:
    m = idle()
    m.first_line(0.0)
    assert m.reset_requested(1.0) == [PersistState("terminating"), StopChild("session reset"), RenewSession()]
    m.exited(2.0, returncode=-15, detail="stopped")
    m.tell_queued("t1", 3.0)
    m.slot_granted(3.0)
    assert m.session_probed(3.0, FRESH) == [Spawn(resume=False)]
    assert m.spawned(4.0, 9)[-1] == SendTurn("t1", fresh_child=True, new_session=True)


def test_an_idle_child_is_reaped_after_the_idle_timeout() -> None:
    m = idle(now=10.0)
    assert m.next_deadline() == 70.0
    assert m.handle_timer(69.9) == []
    assert m.handle_timer(70.0) == [PersistState("terminating"), StopChild("idle for 60 s (idleTimeout)")]
    assert m.next_deadline() == math.inf


def test_the_idle_deadline_counts_from_the_last_tell() -> None:
    m = processing(now=0.0)
    assert m.next_deadline() == math.inf  # never reaped while busy
    m.tell_ended("t1", 100.0)
    assert m.next_deadline() == 160.0


def test_an_idle_child_that_dies_after_working() -> None:
    m = idle()
    m.first_line(0.0)
    actions = m.exited(5.0, returncode=1, detail="claude (pid 42) exited with code 1")
    assert actions == [
        ReleaseSlot(),
        EXPIRED,
        Note("claude exited: claude (pid 42) exited with code 1"),
        PersistState("stopped"),
    ]
    assert m.reason == "claude (pid 42) exited with code 1" and m.pid is None


def test_an_idle_child_that_ends_cleanly_leaves_no_reason() -> None:
    m = idle()
    m.first_line(0.0)
    m.exited(5.0, returncode=0, detail="claude exited with code 0")
    assert m.state == "stopped" and m.reason == ""


def test_slot_events_on_a_running_child_are_illegal() -> None:
    m = idle()
    events: list[Callable[[], list[Action]]] = [
        lambda: m.slot_granted(0.0),
        lambda: m.session_probed(0.0, FRESH),
        lambda: m.spawned(0.0, 1),
        lambda: m.spawn_failed(0.0, "x"),
    ]
    for event in events:
        with pytest.raises(IllegalTransition, match="which is idle"):
            event()


def test_only_the_first_line_is_a_first_line() -> None:
    m = idle()
    assert m.first_line(1.0) == [] and m.child_spoke
    with pytest.raises(IllegalTransition, match="heard from its child already"):
        m.first_line(2.0)


# --- processing ---------------------------------------------------------------------------------


def test_tells_are_served_in_order() -> None:
    m = processing("t1")
    assert m.tell_queued("t2", 1.0) == [] and m.tell_queued("t3", 1.0) == []
    assert m.tell_ended("t1", 2.0) == [SendTurn("t2")]
    assert m.tell_ended("t2", 3.0) == [SendTurn("t3")]
    assert m.tell_ended("t3", 4.0) == [PersistState("idle")]
    assert m.last_active == 4.0 and not m.busy


def test_a_queued_tell_cancelled_leaves_the_line() -> None:
    m = processing("t1")
    m.tell_queued("t2", 1.0)
    m.tell_queued("t3", 1.0)
    assert m.tell_ended("t2", 2.0) == []
    assert m.tell_ended("t1", 3.0)[-1] == SendTurn("t3")


def test_a_busy_child_is_not_stopped_without_force() -> None:
    m = processing("t1")
    answer = m.stop_requested(1.0, force=False, reason="put to sleep")
    assert answer == [Answer(f"{LABEL} is busy with a tell; not stopped (use --force to stop it anyway)")]
    assert m.state == "processing"
    reset = m.reset_requested(1.0)
    assert isinstance(reset[0], Answer) and reset[0].error == "busy"


def test_a_forced_stop_interrupts_the_running_tell_and_queued_ones_get_a_new_child() -> None:
    m = processing("t1")
    m.tell_queued("t2", 1.0)
    assert m.stop_requested(2.0, force=True, reason="put to sleep") == [
        InterruptTells(("t1",), "stopped: put to sleep"),
        AwaitExit(),
        PersistState("terminating"),
        StopChild("put to sleep"),
    ]
    assert m.current is None
    assert m.stop_requested(2.5, force=True, reason="again") == [AwaitExit()]
    assert m.tell_ended("t1", 2.6) == []  # it was let go of already
    assert m.exited(3.0, returncode=-15, detail="killed") == [
        ReleaseSlot(),
        EXPIRED,
        StoppersDone(),
        PersistState("stopped"),
        PersistState("spawning"),
        RequestSlot(),
    ]


def test_a_tell_that_stops_the_child_then_ends() -> None:
    """A response timeout: the tell's StopChild, then the tell ends; the exit is expected."""
    m = processing("t1")
    m.tell_queued("t2", 1.0)
    assert m.stop_child("response timeout") == [PersistState("terminating"), StopChild("response timeout")]
    assert m.stop_child("again") == []
    assert m.tell_ended("t1", 121.0) == []
    actions = m.exited(122.0, returncode=-15, detail="killed by SIGTERM")
    assert actions == [ReleaseSlot(), EXPIRED, PersistState("stopped"), PersistState("spawning"), RequestSlot()]
    assert m.reason == ""  # we stopped it: nothing wrong


def test_a_child_that_dies_mid_tell_ends_it_interrupted() -> None:
    m = processing("t1")
    m.line_heard()  # the turn is under way
    detail = "claude (pid 42) was killed by SIGKILL"
    assert m.exited(5.0, returncode=-9, detail=detail) == [
        ReleaseSlot(),
        EXPIRED,
        Note(f"claude exited: {detail}"),
        PersistState("stopped"),
        InterruptTells(("t1",), detail),
    ]
    assert m.reason == detail and m.current is None
    assert m.tell_queued("t2", 6.0) == [PersistState("spawning"), RequestSlot()]  # no backoff: it had worked


def test_a_child_that_dies_before_it_read_its_tell_hands_the_tell_to_a_new_child_once() -> None:
    """Killed while idle, its exit not read yet when the tell was written to it: it printed
    nothing for the tell, so the turn never started (and no tool ran)."""
    m = processing("t1")
    detail = "claude (pid 42) was killed by SIGKILL"
    assert m.exited(5.0, returncode=-9, detail=detail) == [
        ReleaseSlot(),
        EXPIRED,
        Note(f"claude exited before it read tell t1; the tell goes to a new claude: {detail}"),
        PersistState("stopped"),
        PersistState("spawning"),
        RequestSlot(),  # no backoff: it had worked
    ]
    assert m.current == "t1" and m.reason == detail
    m.slot_granted(5.1)
    m.session_probed(5.1, RESUMABLE)
    assert m.spawned(5.2, 43) == [PersistState("processing"), SendTurn("t1", restarted=True, fresh_child=True)]
    m.first_line(5.3)  # (the actor says line_heard too; left out: the second death would go again)
    again = m.exited(6.0, returncode=-9, detail=detail)
    assert again[-2:] == [PersistState("stopped"), InterruptTells(("t1",), detail)]


def test_a_tell_goes_again_only_if_its_child_printed_nothing_since_it_was_handed() -> None:
    m = processing("t1")
    m.tell_queued("t2", 1.0)
    m.line_heard()
    assert m.tell_ended("t1", 2.0)[-1] == SendTurn("t2")  # a new turn: unheard again
    actions = m.exited(3.0, returncode=-9, detail="killed")
    assert actions[-2:] == [PersistState("spawning"), RequestSlot()] and m.current == "t2"


# --- crashes on start, retries, failed -------------------------------------------------------------


def test_a_child_that_crashes_on_start_is_retried_after_a_backoff_with_the_same_tell() -> None:
    m = processing("t1", now=0.0, spoke=False)
    actions = m.exited(1.0, returncode=1, detail="bad flag")
    assert actions == [ReleaseSlot(), EXPIRED, Note("claude crashed on start (1 times): bad flag"),
                       PersistState("stopped")]
    assert m.current == "t1" and m.start_failures == 1
    assert m.next_deadline() == 1.25
    assert m.tell_queued("t2", 1.1) == []  # waits for the backoff too
    assert m.handle_timer(1.2) == []
    assert m.handle_timer(1.25) == [PersistState("spawning"), RequestSlot()]
    m.slot_granted(1.3)
    m.session_probed(1.3, RESUMABLE)
    assert m.spawned(1.4, 43) == [PersistState("processing"), SendTurn("t1", restarted=True, fresh_child=True)]
    m.first_line(1.5)
    assert m.start_failures == 0  # it spoke: the count starts over
    assert m.tell_ended("t1", 2.0)[-1] == SendTurn("t2")


def test_three_crashes_on_start_fail_the_pair_for_a_cooldown() -> None:
    m = processing("t1", spoke=False)
    m.tell_queued("t2", 0.0)
    now = 0.0
    for failures, delay in ((1, 0.25), (2, 1.0)):
        m.exited(now, returncode=1, detail="boom")
        assert m.start_failures == failures and m.next_deadline() == now + delay
        now += delay
        m.handle_timer(now)
        m.slot_granted(now)
        m.session_probed(now, RESUMABLE)
        m.spawned(now, 50 + failures)
    reason = "claude keeps crashing on start (3 times): boom"
    assert m.exited(now, returncode=1, detail="boom") == [
        ReleaseSlot(),
        EXPIRED,
        PersistState("failed"),
        FailTells(("t1", "t2"), reason),
    ]
    assert m.state == "failed" and m.reason == reason and m.next_deadline() == math.inf
    assert m.tell_queued("t3", now + 29.9) == [FailTells(("t3",), reason)]
    assert m.stop_requested(now + 1, force=False, reason="x") == [Answer(f"{LABEL} is not running")]
    assert m.handle_timer(now + 100) == []
    assert m.tell_queued("t4", now + 30.0) == [PersistState("stopped"), PersistState("spawning"), RequestSlot()]
    assert m.start_failures == 0 and m.reason == ""


def test_a_wake_clears_a_failure_at_once() -> None:
    m = failed()
    assert m.wake_requested(1.0) == [PersistState("stopped"), AwaitStart(), PersistState("spawning"), RequestSlot()]


def test_a_failed_pair_without_work_stays_failed_after_its_cooldown() -> None:
    m = failed()
    assert m.handle_timer(100.0) == [] and m.state == "failed"
    assert m.tell_ended("t1", 100.0) == []  # it was failed by the machine already


# --- conversation lost on resume -------------------------------------------------------------------


def test_a_resume_that_finds_no_conversation_renews_the_session_once_with_the_same_tell() -> None:
    m = processing("t1", spoke=False)  # started with --resume
    assert m.first_line(1.0, conversation_lost=True) == [] and not m.child_spoke  # swallowed
    actions = m.exited(1.1, returncode=1, detail="No conversation found with session ID: x")
    assert actions == [
        ReleaseSlot(),
        EXPIRED,
        Note("resume failed; starting a new conversation (No conversation found with session ID: x)"),
        PersistState("stopped"),
        PersistState("spawning"),
        RequestSlot(),
    ]
    assert m.start_failures == 0  # not a crash
    m.slot_granted(1.2)
    assert m.session_probed(1.2, RESUMABLE) == [Note("conversation lost; starting a new one"),
                                                Spawn(resume=False, renew=True)]
    assert m.spawned(1.3, 44) == [
        PersistState("processing"),
        SendTurn("t1", restarted=True, fresh_child=True, new_session=True),
    ]
    assert not m.resumed
    # The renewed session was started, not resumed: claude's "no conversation" is no longer news.
    m.first_line(1.4, conversation_lost=True)
    assert m.child_spoke


def test_a_lost_conversation_may_be_said_on_stderr_only() -> None:
    m = processing("t1", spoke=False)
    actions = m.exited(1.0, returncode=1, detail="x", conversation_lost=True)
    assert Note("resume failed; starting a new conversation (x)") in actions


def test_a_child_that_was_not_resumed_cannot_lose_its_conversation() -> None:
    m = spawning(probe=FRESH)
    m.tell_queued("t1", 0.0)
    m.spawned(0.0, 1)
    actions = m.exited(1.0, returncode=1, detail="x", conversation_lost=True)
    assert Note("claude crashed on start (1 times): x") in actions


def test_a_lost_conversation_on_a_woken_child_renews_the_session_on_the_next_spawn() -> None:
    m = idle()
    m.first_line(0.0, conversation_lost=True)
    m.exited(0.1, returncode=1, detail="x")
    assert m.state == "stopped" and m.next_deadline() == math.inf  # nothing wants a child
    m.tell_queued("t1", 5.0)
    m.slot_granted(5.0)
    assert m.session_probed(5.0, RESUMABLE)[-1] == Spawn(resume=False, renew=True)


# --- terminating ---------------------------------------------------------------------------------


def test_requests_while_terminating_wait_for_the_exit() -> None:
    m = terminating()
    assert m.stop_requested(1.0, force=False, reason="x") == [AwaitExit()]
    assert m.wake_requested(1.0) == [AwaitStart()]
    assert m.tell_queued("t1", 1.0) == []
    assert m.handle_timer(1000.0) == []  # no reaping twice
    assert m.exited(2.0, returncode=-15, detail="x") == [
        ReleaseSlot(),
        EXPIRED,
        StoppersDone(),
        PersistState("stopped"),
        PersistState("spawning"),
        RequestSlot(),
    ]


def test_a_reset_while_terminating_only_renews() -> None:
    m = terminating()
    assert m.reset_requested(1.0) == [RenewSession()]


# --- the end -------------------------------------------------------------------------------------------


def test_abandon_interrupts_every_tell_and_answers_every_parked_request() -> None:
    m = processing("t1")
    m.tell_queued("t2", 0.0)
    m.stop_child("evicted")
    m.stop_requested(0.0, force=False, reason="x")
    m.wake_requested(0.0)
    assert m.abandon("irisd stopped before this tell finished") == [
        InterruptTells(("t1", "t2"), "irisd stopped before this tell finished"),
        WakersDone(error="irisd is stopping"),
        StoppersDone(error="irisd is stopping"),
    ]
    assert m.state == "stopped" and not m.busy and not m.holds_slot and m.pid is None


def test_abandon_of_a_quiet_pair_does_nothing() -> None:
    assert machine().abandon("x") == []


def test_a_wake_that_cannot_start_a_child_is_answered_with_the_reason() -> None:
    m = spawning()
    assert m.spawn_failed(1.0, "no claude") == [
        ReleaseSlot(),
        PersistState("failed"),
        WakersDone(error=f"{LABEL} cannot start: no claude"),
    ]


# --- a tell with a budget of its own (--max-budget-usd) -------------------------------------


def spawn_for(m: ProcessMachine, now: float, pid: int = 43) -> list[Action]:
    """The slot, the probe and the launch of the child the machine asked for."""
    m.slot_granted(now)
    spawn = m.session_probed(now, RESUMABLE)
    return [*spawn, *m.spawned(now, pid)]


def test_a_budgeted_tell_on_a_stopped_pair_starts_a_child_with_its_budget() -> None:
    m = machine()
    m.tell_queued("t1", 0.0, max_budget_usd=0.25)
    assert spawn_for(m, 1.0) == [
        Spawn(resume=True, max_budget_usd=0.25),
        PersistState("processing"),
        SendTurn("t1", fresh_child=True),
    ]


def test_the_budgeted_child_is_stopped_when_its_tell_ends() -> None:
    m = machine()
    m.tell_queued("t1", 0.0, max_budget_usd=0.25)
    spawn_for(m, 1.0)
    m.first_line(1.5)
    assert m.tell_ended("t1", 2.0) == [
        PersistState("terminating"),
        StopChild("its tell had a budget of its own (--max-budget-usd)"),
    ]
    # the next tell, queued meanwhile, gets a child with no budget
    m.tell_queued("t2", 2.5)
    assert m.exited(3.0, returncode=0, detail="stopped") == [
        ReleaseSlot(), EXPIRED, PersistState("stopped"), PersistState("spawning"), RequestSlot(),
    ]
    assert spawn_for(m, 3.5)[0] == Spawn(resume=True)


def test_a_budgeted_tell_does_not_run_on_the_warm_child_it_finds() -> None:
    m = processing("t1")
    assert m.tell_queued("t2", 1.0, max_budget_usd=1.0) == []
    assert m.tell_ended("t1", 2.0) == [
        PersistState("terminating"),
        StopChild("the next tell has a budget of its own (--max-budget-usd)"),
    ]
    assert m.current is None and list(m.queue) == ["t2"]  # it waits for its own child
    exit_actions = m.exited(3.0, returncode=0, detail="stopped")
    assert InterruptTells not in [type(a) for a in exit_actions] and exit_actions[-1] == RequestSlot()
    assert spawn_for(m, 4.0) == [
        Spawn(resume=True, max_budget_usd=1.0),
        PersistState("processing"),
        SendTurn("t2", fresh_child=True),
    ]


def test_an_idle_warm_child_is_replaced_for_a_budgeted_tell() -> None:
    m = idle()
    m.first_line(0.5)
    assert m.tell_queued("t1", 1.0, max_budget_usd=0.5) == [
        PersistState("terminating"),
        StopChild("the next tell has a budget of its own (--max-budget-usd)"),
    ]


def test_two_budgeted_tells_each_get_their_own_child_even_with_the_same_budget() -> None:
    m = machine()
    m.tell_queued("t1", 0.0, max_budget_usd=0.5)
    m.tell_queued("t2", 0.0, max_budget_usd=0.5)
    spawn_for(m, 1.0)
    m.first_line(1.0)
    assert m.tell_ended("t1", 2.0)[-1] == StopChild("its tell had a budget of its own (--max-budget-usd)")
    m.exited(2.5, returncode=0, detail="stopped")
    assert spawn_for(m, 3.0) == [
        Spawn(resume=True, max_budget_usd=0.5),
        PersistState("processing"),
        SendTurn("t2", fresh_child=True),
    ]


def test_a_budgeted_child_whose_tell_was_cancelled_while_it_started_serves_no_other_tell() -> None:
    m = machine()
    m.tell_queued("t1", 0.0, max_budget_usd=0.5)
    m.tell_queued("t2", 0.0)
    m.slot_granted(1.0)
    assert m.session_probed(1.0, RESUMABLE) == [Spawn(resume=True, max_budget_usd=0.5)]
    assert m.tell_ended("t1", 1.5) == []  # cancelled while its child starts
    assert m.spawned(2.0, 9) == [
        PersistState("terminating"),
        StopChild("the next tell has a budget of its own (--max-budget-usd)"),
    ]
    m.exited(2.5, returncode=0, detail="stopped")
    assert spawn_for(m, 3.0)[0] == Spawn(resume=True)


def test_a_budgeted_tell_restarted_after_a_crash_on_start_keeps_its_budget() -> None:
    m = machine()
    m.tell_queued("t1", 0.0, max_budget_usd=0.5)
    spawn_for(m, 1.0)
    m.exited(1.5, returncode=1, detail="crashed")  # before its first line
    m.handle_timer(m.next_deadline())
    assert spawn_for(m, 10.0) == [
        Spawn(resume=True, max_budget_usd=0.5),
        PersistState("processing"),
        SendTurn("t1", restarted=True, fresh_child=True),
    ]
