"""When Iris compacts a pair's conversation (``irisd/pool/compaction.py``), how the process
machine puts the compaction between two tells, and what a waiting tell is told. Plain values."""

from __future__ import annotations

import pytest

from irisd.claude.wire import SystemLine, decode_line
from irisd.pool.compaction import (
    DEFAULT_CONTEXT_WINDOW,
    Boundary,
    ContextSize,
    boundary,
    compaction_due,
    context_size,
    window_for,
)
from irisd.pool.process_machine import IllegalTransition, PersistState, SendTurn, StopChild
from irisd.tell.phase import CLAUDE_COMPACTS, IRIS_COMPACTS, after_line, before_start
from protocol.messages import SessionInfo, TellPhase
from protocol.phases import describe
from protocol.session_words import compactions, context
from unit.test_process_machine import idle, machine, processing, spawn_for

USAGE = {"input_tokens": 1000, "cache_read_input_tokens": 120_000, "cache_creation_input_tokens": 19_000,
         "output_tokens": 700}


# --- the size of the conversation ---------------------------------------------------------------


def test_the_context_is_what_the_model_read_for_the_last_answer_cached_or_not() -> None:
    size = context_size(USAGE, None)
    assert size == ContextSize(tokens=140_000, window=DEFAULT_CONTEXT_WINDOW)
    assert size.percent == 70.0


def test_the_window_is_the_setting_then_what_claude_says_then_the_table() -> None:
    said = {"claude-opus-5-5": {"contextWindow": 1_000_000}, "claude-haiku-4-5": {"contextWindow": 200_000}}
    assert context_size(USAGE, said) == ContextSize(140_000, 1_000_000)  # the conversation's model, the largest
    assert context_size(USAGE, said, override=150_000) == ContextSize(140_000, 150_000)
    assert context_size(USAGE, {"claude-sonnet-4-5": {"costUSD": 1.0}}) == ContextSize(140_000, 200_000)
    assert window_for("claude-opus-5-5") == 1_000_000
    assert window_for("claude-sonnet-4-5[1m]") == 1_000_000
    assert window_for("some-new-model") == DEFAULT_CONTEXT_WINDOW


def test_a_local_command_or_a_line_without_usage_says_nothing_of_the_size() -> None:
    assert context_size({"input_tokens": 0, "output_tokens": 0}, None) is None  # /compact's own result
    assert context_size(None, None) is None
    assert context_size({"output_tokens": 3}, None) is None
    assert context_size({"input_tokens": "many"}, None) is None


# --- when Iris compacts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "compact_at", "kind", "due"),
    [
        (140_000, 70, "tell", True),  # at the threshold
        (139_999, 70, "tell", False),
        (150_000, 70, "command", True),
        (150_000, 70, "notification", True),
        (199_000, 70, "compaction", False),  # a compaction never asks for another
        (199_000, 0, "tell", False),  # compactAt 0: never
        (2_000, 1, "tell", True),
    ],
)
def test_a_tell_ending_above_compact_at_calls_for_a_compaction(tokens: int, compact_at: int, kind: str,
                                                                due: bool) -> None:
    assert compaction_due(ContextSize(tokens, 200_000), compact_at, kind=kind) is due


def test_no_size_no_compaction() -> None:
    assert compaction_due(None, 70, kind="tell") is False


# --- what claude says of a compaction (2.1.330, tests/unit/recorded/child_resumed_compact.jsonl) -------


def test_a_compact_boundary_line_names_its_trigger_and_tokens() -> None:
    line = decode_line(
        b'{"type":"system","subtype":"compact_boundary","session_id":"s","compact_metadata":'
        b'{"trigger":"auto","pre_tokens":167000,"post_tokens":3110,"duration_ms":439}}'
    )
    assert isinstance(line, SystemLine)
    assert boundary(line.subtype, line.compact_metadata) == Boundary("auto", 167_000, 3110)
    assert boundary("compact_boundary", None) == Boundary("auto", None, None)
    assert boundary("init", {"trigger": "manual"}) is None


def test_claudes_own_compaction_shows_in_the_tells_phase_until_it_ends() -> None:
    # As claude 2.1.330 printed them (CLAUDE_CODE_AUTO_COMPACT_WINDOW=20000,
    # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=1, the scripted model): an automatic compaction that failed.
    status = decode_line(b'{"type":"system","subtype":"status","status":"compacting","compact_output_chars":0,'
                         b'"session_id":"s","uuid":"u1"}')
    phase = after_line(status, TellPhase(name="waiting_for_model"))
    assert phase == TellPhase(name="compacting", detail=CLAUDE_COMPACTS)
    failed = decode_line(b'{"type":"system","subtype":"status","status":null,"compact_result":"failed",'
                         b'"compact_error":"too_few_groups","session_id":"s","uuid":"u2"}')
    assert after_line(failed, phase) == TellPhase(name="waiting_for_model")
    assert after_line(failed, TellPhase(name="answering")) is None  # another status line changes nothing


# --- the process machine: between two tells, never during one ---------------------------------------


def test_the_compaction_goes_right_after_the_tell_that_asked_and_before_those_waiting() -> None:
    m = processing("t1")
    m.tell_queued("t2", 1.0)  # arrived while t1 ran
    assert m.can_compact("t1")
    assert m.compaction_queued("c1", after="t1") == []
    assert list(m.queue) == ["c1", "t2"]
    assert m.tell_ended("t1", 2.0) == [SendTurn("c1")]  # the child stays processing: no PersistState
    assert m.current == "c1" and m.busy
    assert m.tell_queued("t3", 2.5) == []  # waits for the compaction
    assert m.tell_ended("c1", 3.0) == [SendTurn("t2")]
    assert m.tell_ended("t2", 4.0) == [SendTurn("t3")]
    assert m.tell_ended("t3", 5.0) == [PersistState("idle")]


def test_a_compaction_queued_when_nothing_waits_runs_at_once_after_the_tell() -> None:
    m = processing("t1")
    m.compaction_queued("c1", after="t1")
    assert m.tell_ended("t1", 2.0) == [SendTurn("c1")]
    assert m.tell_ended("c1", 3.0) == [PersistState("idle")]


def test_no_compaction_after_a_tell_that_is_not_running_or_on_a_child_with_a_budget() -> None:
    m = idle()
    m.first_line(0.0)
    assert not m.can_compact("t1")
    with pytest.raises(IllegalTransition):
        m.compaction_queued("c1", after="t1")
    assert not processing("t1").can_compact("t2")
    # A tell with its own budget has a child of its own, stopped when it ends: nothing to compact.
    own = machine()
    own.tell_queued("tb", 0.0, max_budget_usd=0.5)
    spawn_for(own, 1.0)
    own.first_line(1.5)
    assert own.current == "tb" and not own.can_compact("tb")
    assert StopChild("its tell had a budget of its own (--max-budget-usd)") in own.tell_ended("tb", 2.0)


def test_the_same_compaction_twice_is_a_bug() -> None:
    m = processing("t1")
    m.compaction_queued("c1", after="t1")
    with pytest.raises(IllegalTransition):
        m.compaction_queued("c1", after="t1")


# --- what a waiting tell is told ------------------------------------------------------------------------


def test_the_tell_next_behind_a_compaction_says_the_conversation_is_being_compacted() -> None:
    phase = before_start(1, state="processing", waiting_for_slot=0, head=TellPhase(name="compacting"),
                         head_id="c1", compacting=True)
    assert phase == TellPhase(name="compacting", detail=IRIS_COMPACTS)
    assert describe(phase).startswith("compacting the conversation")
    further = before_start(2, state="processing", waiting_for_slot=0, head=TellPhase(name="compacting"),
                           head_id="c1", compacting=True)
    assert further is not None and further.name == "queued" and further.ahead == 2
    assert describe(TellPhase(name="compacting")) == "compacting the conversation"


# --- the words for people -----------------------------------------------------------------------------


def test_the_session_in_words() -> None:
    fresh = SessionInfo(from_team=None, to_team="alpha", session_id="s", created_at=0, last_used_at=0)
    assert (context(fresh), compactions(fresh)) == ("-", "none")
    used = SessionInfo(from_team=None, to_team="alpha", session_id="s", created_at=0, last_used_at=0,
                       message_count=45, context_tokens=41_234, context_window=200_000, compactions=2,
                       compact_trigger="iris", compact_tokens_before=150_000, compact_tokens_after=3110,
                       compact_messages_before=40)
    assert context(used) == "41.2k of 200k (21%)"
    assert compactions(used) == "2, last by Iris: 150k -> 3.11k tokens after 40 messages; 5 messages since"
