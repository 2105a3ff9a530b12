"""The spare claudes' pool (irisd/pool/spares.py) on the autojump clock, with fake children:
how many start, into which room, what a take hands over, and what an exit or a reload does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import FakeChild
from fakes.core import teams_config
from harness import wait_until
from iris_common.paths import IrisPaths
from irisd.caller import Caller
from irisd.claude.process import ChildLine
from irisd.pool.pair_events import PairEvent
from irisd.pool.spares import (
    AFTER_TURN_S,
    BLOCKED,
    BLOCKING_HOOK,
    HOOKS_OFF,
    NO_HOOKS,
    REPLACE_AFTER_S,
    RETRY_S,
    WARM_UP_PROMPT,
    WARM_UP_S,
    SparePool,
)
from irisd.tokens import Access

ALPHA_TWO = "    sessions:\n      spares: 2\n"


def pool_for(tmp_path: Path, room: list[bool], alpha: str = ALPHA_TWO) -> tuple[SparePool, Access]:
    FakeChild.instances.clear()
    access = Access(token_path=tmp_path / "token", grants_dir=tmp_path / "grants", child_url="http://127.0.0.1:1")
    access.grants_dir.mkdir()
    pool = SparePool(
        config=teams_config(tmp_path, alpha=alpha),
        paths=IrisPaths(home=tmp_path, socket=tmp_path / "s", claude_config_dir=tmp_path / "claude"),
        access=access, child_factory=FakeChild, may_start=lambda: room[0], changed=lambda: None,
    )
    return pool, access


async def test_a_team_gets_its_spares_each_a_new_session_and_a_token_with_no_pair(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool, access = pool_for(tmp_path, [True])
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: len(pool.pids().get("alpha", [])) == 2, every=0.01)
        assert "beta" not in pool.pids()  # settings.sessions.spares: 0
        ids = {spare.session_id for spare in pool.spares.values()}
        assert len(ids) == 2
        for child in FakeChild.instances:
            assert child.argv[child.argv.index("--session-id") + 1] in ids and "--resume" not in child.argv
        assert access.child_count == 2
        spare = pool.take("alpha")
        assert spare is not None and access.caller_for_token(spare.grant.token) == Caller.child("alpha", "")
        await wait_until(lambda: len(pool.pids().get("alpha", [])) == 2, every=0.01)  # replaced
        assert spare.process.pid not in pool.pids()["alpha"] and pool.take("beta") is None
        nursery.cancel_scope.cancel()
    assert access.child_count == 0  # every spare's process ended, taken or not (its token with it)


async def test_a_taken_spare_says_nothing_until_bound_then_everything_in_order(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        child = FakeChild.instances[0]
        await child.text("before it was taken")  # dropped: no pair's
        await trio.sleep(1)
        spare = pool.take("alpha")
        assert spare is not None
        await child.text("one")
        await child.text("two")
        send, receive = trio.open_memory_channel[PairEvent](10)
        await trio.sleep(1)
        assert receive.statistics().current_buffer_used == 0  # held until the pair knows its child
        spare.bind(send)
        got = [await receive.receive(), await receive.receive()]
        texts = [json.loads(e.raw)["event"]["delta"]["text"] for e in got if isinstance(e, ChildLine)]
        assert texts == ["one", "two"]
        nursery.cancel_scope.cancel()


async def test_an_untaken_spare_that_exits_is_replaced_after_a_pause(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        FakeChild.instances[0].exit(1)
        exited = trio.current_time()
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.01)
        assert trio.current_time() == pytest.approx(exited + RETRY_S, abs=0.02)  # seen within a poll
        nursery.cancel_scope.cancel()


async def test_spares_wait_for_room_and_a_reload_renews_a_changed_teams(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    room = [False]
    pool, _ = pool_for(tmp_path, room)
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await trio.sleep(60)
        assert FakeChild.instances == []  # a spare never evicts: no room, no spare
        room[0] = True
        pool.refill()  # what a released slot does
        await wait_until(lambda: len(pool.pids().get("alpha", [])) == 2, every=0.01)
        old = list(FakeChild.instances)
        pool.reconfigure(teams_config(tmp_path, alpha="    sessions:\n      spares: 1\n"), {"alpha"})
        await wait_until(lambda: len(pool.pids().get("alpha", [])) == 1 and len(FakeChild.instances) == 3,
                         every=0.01)
        assert all(child.stopped_at < float("inf") for child in old)
        nursery.cancel_scope.cancel()


WARM_UP = {"subtype": "get_context_usage", "detail": "summary"}


async def test_a_spare_is_offered_once_claude_answered_its_warm_up(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # claude builds a session's first request (system prompt, tools, skills) when first asked:
    # a spare asks it before any pair may take it, so that the pair's first turn finds it built.
    monkeypatch.setattr(FakeChild, "answers_context_usage", False)  # the test answers
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].sent, every=0.01)
        child = FakeChild.instances[0]
        assert [m["request"] for m in child.sent] == [WARM_UP]  # the warm-up, and no turn
        await trio.sleep(5)
        assert pool.pids() == {} and pool.take("alpha") is None  # not offered before it answered
        request_id = child.sent[0]["request_id"]
        await child.emit({"type": "control_response", "response": {"subtype": "error", "request_id": "other"}})
        await trio.sleep(1)
        assert pool.pids() == {}  # another request's answer is not the warm-up's
        await child.emit({"type": "control_response", "response": {
            "subtype": "success", "request_id": request_id, "response": {"categories": []}}})
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        spare = pool.take("alpha")
        # then a prompt a hook blocks (added before, removed after): claude runs what a prompt's
        # submission runs, with no model request and no turn; the pair's prompts run no hook
        assert spare is not None and spare.warmed == BLOCKED
        assert [m.get("request", m.get("message")) for m in child.sent[1:]] == [
            {"subtype": "get_settings"},  # do the team's settings let a hook run?
            {"subtype": "apply_flag_settings", "settings": BLOCKING_HOOK},
            {"role": "user", "content": [{"type": "text", "text": WARM_UP_PROMPT}]},
            {"subtype": "apply_flag_settings", "settings": NO_HOOKS},
        ]
        assert child.flag_settings == {}
        nursery.cancel_scope.cancel()


async def test_a_spare_whose_warm_up_prompt_is_not_blocked_is_never_offered_and_the_next_warms_up_without(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A team's settings may forbid hooks (disableAllHooks): the prompt then reaches the model and
    # is a turn of the spare's conversation, which a pair's new conversation must not have.
    async def not_blocked(self: FakeChild, data: bytes) -> None:
        message = json.loads(data)
        self.sent.append(message)
        if message.get("type") == "user":
            await self.emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "result": "?"})
        elif message.get("type") == "control_request":
            await self.emit({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"]}})

    monkeypatch.setattr(FakeChild, "send", not_blocked)
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].stopped_at < 1e9, every=0.01)
        assert pool.pids() == {} and pool.take("alpha") is None  # stopped, never offered
        stopped = FakeChild.instances[0].stopped_at
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)  # the next one, after a pause
        assert FakeChild.instances[1].created_at == pytest.approx(stopped + RETRY_S, abs=0.01)
        assert [m["request"] for m in FakeChild.instances[1].sent] == [WARM_UP]  # the context usage alone
        spare = pool.take("alpha")
        assert spare is not None and spare.warmed == "answered"
        nursery.cancel_scope.cancel()


async def test_a_team_whose_settings_turn_hooks_off_gets_spares_warmed_without_a_prompt(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # disableAllHooks in the team's settings: no hook would block the prompt, which would reach
    # the model (a paid request). claude says so when asked its settings: no hook, no prompt.
    monkeypatch.setattr(FakeChild, "settings", {"disableAllHooks": True})
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        child = FakeChild.instances[0]
        assert [m["request"] for m in child.sent] == [WARM_UP, {"subtype": "get_settings"}]
        spare = pool.take("alpha")
        assert spare is not None and spare.warmed == HOOKS_OFF and child.flag_settings == {}
        assert pool.block_warm_up  # another team's spares still warm up with the prompt
        nursery.cancel_scope.cancel()


async def test_a_spare_whose_hook_claude_would_not_remove_is_never_offered(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hook blocks every prompt while it is there: a spare that keeps it would block the pair's tells.
    monkeypatch.setattr(FakeChild, "answers_flag_settings", False)  # the test answers
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and len(FakeChild.instances[0].sent) == 3, every=0.01)
        child = FakeChild.instances[0]  # asked: the context usage, the settings, the hook
        child.flag_settings = dict(BLOCKING_HOOK)
        await child.emit({"type": "control_response", "response": {
            "subtype": "success", "request_id": child.sent[2]["request_id"]}})
        await wait_until(lambda: len(child.sent) == 5, every=0.01)  # the prompt, blocked; the hook's removal
        await child.emit({"type": "control_response", "response": {
            "subtype": "error", "request_id": child.sent[4]["request_id"], "error": "settings are locked"}})
        await wait_until(lambda: child.stopped_at < 1e9, every=0.01)
        assert pool.pids() == {} and pool.take("alpha") is None
        assert not pool.block_warm_up  # later spares warm up without a prompt
        nursery.cancel_scope.cancel()


async def test_a_spare_that_does_not_answer_its_hook_in_time_is_never_offered(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the hook was asked for, claude may have it: offered as it is, it could block the pair's tells.
    monkeypatch.setattr(FakeChild, "answers_flag_settings", False)
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and len(FakeChild.instances[0].sent) == 3, every=0.001)
        asked = trio.current_time()
        # To just before its time in one jump (a 1 ms poll over a minute took 10 s of real time)
        await trio.sleep(WARM_UP_S - 0.01)
        assert FakeChild.instances[0].stopped_at > 1e9
        await wait_until(lambda: FakeChild.instances[0].stopped_at < 1e9, every=0.001)
        assert FakeChild.instances[0].stopped_at == pytest.approx(asked + WARM_UP_S, abs=0.002)
        assert pool.pids() == {} and pool.take("alpha") is None
        assert pool.block_warm_up  # no answer is no proof that hooks cannot work
        nursery.cancel_scope.cancel()


async def test_a_spare_that_does_not_answer_its_warm_up_is_offered_after_a_while(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeChild, "answers_context_usage", False)  # a claude wedged while starting
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].sent, every=0.001)
        asked = trio.current_time()
        await trio.sleep(WARM_UP_S - 0.01)  # to just before its time in one jump, as above
        assert "alpha" not in pool.pids()
        await wait_until(lambda: "alpha" in pool.pids(), every=0.001)
        assert trio.current_time() == pytest.approx(asked + WARM_UP_S, abs=0.002)
        spare = pool.take("alpha")
        assert spare is not None and spare.warmed == ""
        nursery.cancel_scope.cancel()


async def test_a_spare_that_exits_during_its_warm_up_is_replaced_after_a_pause(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeChild, "answers_context_usage", False)
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].sent, every=0.01)
        FakeChild.instances[0].exit(1)
        exited = trio.current_time()
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.01)
        assert trio.current_time() == pytest.approx(exited + RETRY_S, abs=0.02)  # seen within a poll
        assert pool.pids() == {}  # the first was never offered; the second waits for its answer
        nursery.cancel_scope.cancel()


async def test_a_taken_spare_is_replaced_once_its_first_turn_ended_and_its_reply_is_out(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # A claude starting takes a core for about a second: the replacement waits for the
    # first turn, which would otherwise share the machine with it, and a while longer for
    # the turn's reply (starting one holds irisd's loop for a few milliseconds).
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        spare = pool.take("alpha")
        assert spare is not None
        send, receive = trio.open_memory_channel[PairEvent](10)
        spare.bind(send)
        await trio.sleep(5)
        assert len(FakeChild.instances) == 1  # its first turn runs: no new claude yet
        await FakeChild.instances[0].result("the first answer")
        ended = trio.current_time()
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.001)
        assert trio.current_time() == pytest.approx(ended + AFTER_TURN_S, abs=0.002)
        got = await receive.receive()  # the result is the pair's, as every line of its child
        assert isinstance(got, ChildLine) and json.loads(got.raw)["result"] == "the first answer"
        nursery.cancel_scope.cancel()


async def test_a_taken_spare_whose_first_turn_goes_on_is_replaced_after_a_while(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        spare = pool.take("alpha")
        taken = trio.current_time()
        assert spare is not None
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.001)
        assert trio.current_time() == pytest.approx(taken + REPLACE_AFTER_S, abs=0.002)
        nursery.cancel_scope.cancel()


async def test_a_taken_spare_whose_first_turn_ends_late_is_replaced_no_later_than_after_a_while(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: "alpha" in pool.pids(), every=0.01)
        spare = pool.take("alpha")
        taken = trio.current_time()
        assert spare is not None
        send, _receive = trio.open_memory_channel[PairEvent](10)
        spare.bind(send)
        await trio.sleep(REPLACE_AFTER_S - AFTER_TURN_S / 2)
        await FakeChild.instances[0].result("a late first answer")
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.001)
        assert trio.current_time() == pytest.approx(taken + REPLACE_AFTER_S, abs=0.002)
        nursery.cancel_scope.cancel()


async def test_a_spare_warming_up_is_a_spare_to_evict_and_its_stop_is_no_failure(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pair that needs its slot must not wait for its warm-up (up to WARM_UP_S).
    monkeypatch.setattr(FakeChild, "answers_context_usage", False)
    pool, _ = pool_for(tmp_path, [True], alpha="    sessions:\n      spares: 1\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.run)
        await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].sent, every=0.001)
        (view,) = pool.views()
        assert view.spare and view.state == "idle" and pool.holds(view.key) and pool.pids() == {}
        pool.stop(view.key, "its slot went to a pair")
        stopped = trio.current_time()
        await wait_until(lambda: len(FakeChild.instances) == 2, every=0.001)
        assert FakeChild.instances[0].stopped_at == stopped
        assert trio.current_time() == pytest.approx(stopped, abs=0.002)  # no pause: it did not fail
        assert not pool.holds(view.key)
        nursery.cancel_scope.cancel()
