"""The pure child-line router on lines the pinned claude printed as Iris's child (recorded
against the scripted model with Iris's own argv; see recorded/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from irisd.claude.spend import Spent
from irisd.claude.wire import (
    AnyLine,
    CommandLifecycleLine,
    ControlRequestLine,
    ControlResponseLine,
    ResultLine,
    decode_line,
)
from irisd.pool.child_router import ChildLineRouter, Routed, is_permission_request
from irisd.pool.unsolicited_turn import UnsolicitedTurn

RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> list[AnyLine]:
    return [decode_line(raw) for raw in (RECORDED / name).read_bytes().splitlines()]


def record(now: float = 0.0) -> UnsolicitedTurn:
    return UnsolicitedTurn(from_team=None, to_team="alpha", session_id="s", response_timeout_s=60, now=now, wall=now)


def test_every_line_of_a_running_tell_is_the_tells_and_its_permission_request_the_desks() -> None:
    router = ChildLineRouter()
    lines = recorded("child_two_turns.jsonl")
    routes = [router.route(line, tell_running=True, record=None, stopping=False) for line in lines]
    permission = [i for i, line in enumerate(lines) if isinstance(line, ControlRequestLine)]
    assert len(permission) == 1 and is_permission_request(lines[permission[0]])
    assert [i for i, routed in enumerate(routes) if routed.to == "permission"] == permission
    assert {routed.to for i, routed in enumerate(routes) if i not in permission} == {"tell"}


def test_each_result_gets_its_share_of_the_process_running_total() -> None:
    router = ChildLineRouter()
    lines = recorded("child_two_turns.jsonl")
    shares = [router.route(line, tell_running=True, record=None, stopping=False).spent for line in lines]
    totals = [line.total_cost_usd for line in lines if isinstance(line, ResultLine)]
    assert totals == [0.000144, 0.000652]  # claude's total_cost_usd: the session's running total
    assert [share.cost_usd for share in shares if share is not None] == pytest.approx([0.000144, 0.000508])
    assert [i for i, share in enumerate(shares) if share is not None] == [
        i for i, line in enumerate(lines) if isinstance(line, ResultLine)
    ]


def test_a_new_child_starts_from_its_sessions_total_and_a_total_never_gives_a_negative_share() -> None:
    def share(router: ChildLineRouter, total: float) -> float | None:
        spent = router.route(ResultLine(total_cost_usd=total), tell_running=True, record=None, stopping=False).spent
        return spent.cost_usd if spent is not None else None

    first = ChildLineRouter()
    assert [share(first, 0.5), share(first, 0.2), share(first, 0.7)] == pytest.approx([0.5, 0.2, 0.5])
    assert share(ChildLineRouter(), 0.3) == 0.3
    assert share(ChildLineRouter(Spent(cost_usd=0.25)), 0.3) == pytest.approx(0.05)  # resumed from 0.25


def test_with_no_tell_running_the_lines_are_unsolicited_and_still_counted() -> None:
    router = ChildLineRouter()
    lines = recorded("child_two_turns.jsonl")
    routes = [router.route(line, tell_running=False, record=None, stopping=False) for line in lines]
    assert {routed.to for routed in routes} == {"unsolicited"}
    assert [r.spent.cost_usd for r in routes if r.spent is not None] == pytest.approx([0.000144, 0.000508])


def test_the_answer_to_irises_interrupt_is_the_tells_while_it_runs_else_ignored() -> None:
    lines = recorded("child_interrupted.jsonl")
    answer = next(line for line in lines if isinstance(line, ControlResponseLine))
    assert ChildLineRouter().route(answer, tell_running=True, record=None, stopping=False) == Routed("tell")
    assert ChildLineRouter().route(answer, tell_running=False, record=None, stopping=False) == Routed("ignore")
    result = lines[-1]
    assert isinstance(result, ResultLine) and result.subtype == "error_during_execution"
    routed = ChildLineRouter().route(result, tell_running=True, record=None, stopping=False)
    assert routed.to == "tell" and routed.spent is not None and routed.spent.cost_usd == 0.0


def test_the_last_words_of_a_child_being_stopped_go_nowhere_unless_a_tell_runs() -> None:
    router = ChildLineRouter()
    for line in recorded("child_two_turns.jsonl"):
        assert router.route(line, tell_running=False, record=None, stopping=True).to == "ignore"
    line = recorded("child_two_turns.jsonl")[0]
    assert ChildLineRouter().route(line, tell_running=True, record=None, stopping=True).to == "tell"


def test_a_turn_claude_queued_itself_stays_out_of_the_running_tell() -> None:
    """claude 2.1.330 frames a turn it queued itself with command_lifecycle started ...
    completed; a turn written to its stdin has no frame."""
    router = ChildLineRouter()
    started, completed = CommandLifecycleLine(state="started"), CommandLifecycleLine(state="completed")
    assert router.route(started, tell_running=True, record=None, stopping=False).to == "unsolicited"
    turn = record()
    turn.child_line(started, b"", 0.0)
    assert turn.holding
    for line in recorded("child_two_turns.jsonl")[:12]:  # a whole turn, up to its result
        assert router.route(line, tell_running=True, record=turn, stopping=False).to == "unsolicited"
        turn.child_line(line, b"", 0.0)
    assert not turn.holding  # its result ended it; the frame's end is still the record's
    assert router.route(completed, tell_running=True, record=turn, stopping=False).to == "unsolicited"
    next_line = recorded("child_two_turns.jsonl")[12]
    assert router.route(next_line, tell_running=True, record=turn, stopping=False).to == "tell"


def test_a_resume_that_finds_no_conversation_is_recognised_on_stdout_and_on_stderr() -> None:
    (lost,) = recorded("child_resume_lost.jsonl")
    assert ChildLineRouter.says_conversation_lost(lost)
    assert ChildLineRouter.stderr_says_conversation_lost((RECORDED / "child_resume_lost.stderr").read_text())
    results = [line for line in recorded("child_two_turns.jsonl") if isinstance(line, ResultLine)]
    assert results and not any(ChildLineRouter.says_conversation_lost(line) for line in results)
    assert not ChildLineRouter.says_conversation_lost(recorded("child_interrupted.jsonl")[-1])
    assert not ChildLineRouter.stderr_says_conversation_lost("Error: connect ECONNREFUSED")


def test_a_turn_no_tell_asked_for_costs_its_share_not_the_sessions_total() -> None:
    router = ChildLineRouter(Spent(cost_usd=0.000408))  # a claude resumed from what its session had spent
    turn = record()
    for line in recorded("child_resumed.jsonl"):
        routed = router.route(line, tell_running=False, record=turn, stopping=False)
        turn.child_line(line, b"", 0.0, routed.spent)
    assert turn.info().cost_usd == pytest.approx(0.000324 + 0.000404)  # not 0.000732 + 0.001136


def test_an_mcp_servers_input_request_is_recognised_and_declined_when_no_tell_waits() -> None:
    import json

    from irisd.pool.approvals import declined_input
    from irisd.pool.child_router import is_input_request

    raw = (
        b'{"type":"control_request","request_id":"r-7","request":{"subtype":"elicitation",'
        b'"mcp_server_name":"asker","message":"Which database?","requested_schema":{"type":"object"}}}'
    )
    line = decode_line(raw)
    assert is_input_request(line) and not is_permission_request(line)
    assert isinstance(line, ControlRequestLine)
    assert line.request.requested_schema == {"type": "object"}
    assert json.loads(declined_input(line)) == {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "r-7", "response": {"action": "decline"}},
    }
    # While a tell runs it is the tell's line (the approval desk keeps it for a person).
    assert ChildLineRouter().route(line, tell_running=True, record=None, stopping=False) == Routed("tell")
