"""What a turn cost, on lines the pinned claude wrote (tests/unit/recorded/README.md):
its result lines carry running totals of the SESSION, so a resumed claude's first result
holds the session's earlier spending, and the transcript's last ``cost-state`` says how much."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import astuple

from irisd.claude.launcher import read_stored_total
from irisd.claude.spend import Spent, running_total, stored_total, turn_share
from irisd.claude.wire import ResultLine, decode_line
from irisd.pool.child_router import ChildLineRouter

RECORDED = Path(__file__).parent / "recorded"


def results(name: str) -> list[ResultLine]:
    lines = [decode_line(raw) for raw in (RECORDED / name).read_bytes().splitlines()]
    return [line for line in lines if isinstance(line, ResultLine)]


def shares(router: ChildLineRouter, name: str) -> list[tuple[float, int, int, int, int]]:
    routed = [router.route(line, tell_running=True, record=None, stopping=False) for line in results(name)]
    return [astuple(r.spent) for r in routed if r.spent is not None]


def figures(*values: float) -> Any:
    """A Spent's fields (``astuple``), the cost compared as a float."""
    return pytest.approx(values, rel=1e-9)


def fields(spent: Spent | None) -> tuple[float, int, int, int, int] | None:
    return astuple(spent) if spent is not None else None


def test_the_session_transcript_says_what_a_resumed_claude_starts_from() -> None:
    tail = (RECORDED / "session_two_exits.jsonl").read_bytes()
    assert fields(stored_total(tail)) == figures(0.001136, 204, 16, 0, 0)
    first_exit = tail[: tail.index(b'"type":"queue-operation"', tail.index(b"cost-state"))]
    assert fields(stored_total(first_exit)) == figures(0.000408, 62, 8, 0, 0)
    assert stored_total(b'{"type":"user"}\n') is None
    assert stored_total(b'-state","totalCostUSD":1}\n{"type":"cost-state","totalCostUSD":0.5}') == Spent(cost_usd=0.5)


def test_a_resumed_claude_books_each_turn_at_the_difference_it_made() -> None:
    lines = results("child_resumed.jsonl")
    assert [line.total_cost_usd for line in lines] == pytest.approx([0.000732, 0.001136])  # the session's totals
    before = Spent(cost_usd=0.000408, input_tokens=62, output_tokens=8)  # the first process's cost-state
    assert shares(ChildLineRouter(before), "child_resumed.jsonl") == [
        figures(0.000324, 61, 4, 0, 0),
        figures(0.000404, 81, 4, 0, 0),
    ]
    # the turns' own usage agrees with the differences
    assert [(line.usage or {})["input_tokens"] for line in lines] == [61, 81]


def test_compact_is_booked_at_its_own_model_call_with_its_tokens() -> None:
    before = Spent(cost_usd=0.001136, input_tokens=204, output_tokens=16)
    compact, hello = results("child_resumed_compact.jsonl")
    assert (compact.usage or {})["output_tokens"] == 0  # claude's usage says nothing of the summary it had written
    assert shares(ChildLineRouter(before), "child_resumed_compact.jsonl") == [
        figures(0.022304, 101, 1095, 0, 0),
        figures(0.000284, 51, 4, 0, 0),
    ]
    assert hello.total_cost_usd == pytest.approx(0.001136 + 0.022304 + 0.000284)


def test_without_model_usage_a_share_takes_the_turns_own_usage() -> None:
    total = running_total(0.3, None)
    assert total == Spent(cost_usd=0.3)
    share = turn_share(total, Spent(cost_usd=0.1), None, {"input_tokens": 7, "output_tokens": 2})
    assert astuple(share) == figures(0.2, 7, 2, 0, 0)
    assert running_total(None, {"m": {"inputTokens": 1}}) is None


def test_a_total_below_the_start_is_all_new_and_shares_add_up() -> None:
    assert Spent(cost_usd=0.2, input_tokens=5).since(Spent(cost_usd=0.5, input_tokens=9)) == Spent(0.2, 5)
    assert astuple(Spent(0.1, 1, 2, 3, 4).plus(Spent(0.2, 1, 1, 1, 1))) == figures(0.3, 2, 3, 4, 5)


def test_the_transcript_is_read_from_its_end_and_a_missing_one_is_unknown(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_bytes((RECORDED / "session_two_exits.jsonl").read_bytes() + b'{"type":"user"}\n' * 50)
    assert fields(read_stored_total(transcript)) == figures(0.001136, 204, 16, 0, 0)
    assert read_stored_total(transcript, limit=100) is None  # not within the tail read: not known
    assert read_stored_total(tmp_path / "missing.jsonl") is None
    transcript.write_bytes(b'{"type":"user"}\n' * 50)  # no process of it exited cleanly: claude starts from 0
    assert read_stored_total(transcript) == Spent()
