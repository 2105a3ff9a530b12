"""A pair's compactions with a fake claude on the autojump clock: claude's own compaction in
the middle of a tell, and a compaction of Iris's that fails (the pair goes on)."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from fakes.child import FakeChild
from fakes.core import running_core, teams_config
from harness import wait_until
from irisd.store import sessions

FULL = {"input_tokens": 150_000, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 9}


async def first_child() -> FakeChild:
    await wait_until(lambda: FakeChild.instances and FakeChild.instances[0].sent, every=0.001)
    return FakeChild.instances[0]


async def test_claudes_own_compaction_mid_tell_is_its_phase_and_the_sessions_history(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # compactAt 0: Iris never compacts, so only claude's own compaction is counted.
    async with running_core(tmp_path, teams_config(tmp_path, "  sessions:\n    compactAt: 0\n")) as core:
        with trio.fail_after(60):
            tell = (await core.tells.submit("alpha", "long work", None, -1))
            child = await first_child()
            await child.emit({"type": "system", "subtype": "status", "status": "compacting"})
            await trio.testing.wait_all_tasks_blocked()
            assert (tell.phase.name, tell.phase.text) == ("compacting", tell.phase.detail)
            assert "claude is compacting the conversation" in tell.phase.text
            await child.emit({"type": "system", "subtype": "status", "status": None, "compact_result": "success"})
            await child.emit({"type": "system", "subtype": "compact_boundary",
                              "compact_metadata": {"trigger": "auto", "pre_tokens": 190_000, "post_tokens": 9000}})
            await trio.testing.wait_all_tasks_blocked()
            assert tell.phase.name == "waiting_for_model"
            await child.emit({"type": "result", "subtype": "success", "result": "done", "usage": FULL})
            await tell.finished.wait()
        row = await core.store.call(sessions.get, None, "alpha")
    assert row is not None
    assert (row.compactions, row.compact_trigger, row.compact_tokens_before, row.compact_tokens_after) == (
        1, "auto", 190_000, 9000)
    assert (row.context_tokens, row.context_window, row.status) == (150_000, 200_000, "active")


async def test_a_compaction_that_fails_leaves_the_pair_active_and_the_next_tell_runs(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    config = teams_config(tmp_path, "  sessions:\n    compactAt: 50\n")
    async with running_core(tmp_path, config) as core:
        with trio.fail_after(60):
            first = await core.tells.submit("alpha", "one", None, -1)
            child = await first_child()
            await child.emit({"type": "result", "subtype": "success", "result": "ok", "usage": FULL})  # 75%
            await first.finished.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert child.sent[-1]["message"] == {"role": "user", "content": [{"type": "text", "text": "/compact"}]}
            pending = await core.store.call(sessions.get, None, "alpha")
            assert pending is not None and pending.status == "compact_pending"
            second = await core.tells.submit("alpha", "two", None, -1)
            await trio.testing.wait_all_tasks_blocked()
            assert second.phase.name == "compacting"  # it waits for the compaction
            await child.emit({"type": "result", "subtype": "error_during_execution", "is_error": True,
                              "result": "compaction failed"})
            await trio.testing.wait_all_tasks_blocked()
            assert child.sent[-1]["message"] == {"role": "user", "content": [{"type": "text", "text": "two"}]}
            await child.emit({"type": "result", "subtype": "success", "result": "fine"})
            await second.finished.wait()
        row = await core.store.call(sessions.get, None, "alpha")
    assert row is not None and (row.status, row.compactions) == ("active", 0)
