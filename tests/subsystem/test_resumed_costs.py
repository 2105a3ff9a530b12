"""What a tell costs when its pair's claude was resumed (fake children, trio's autojump
clock): claude's result lines carry the SESSION's running total, so the first result of a
resumed claude is booked from what the session had spent (the transcript's last
cost-state, which claude restores; none: it starts from zero)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.child import FakeChild
from fakes.core import no_events, past_the_hold, running_core, teams_config
from harness import wait_until
from iris_common.paths import session_file
from irisd.caller import Caller
from irisd.dispatch import Dispatcher
from irisd.store import ledger
from protocol.messages import Sleep, Tell, TellReply


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Dispatcher]:
    async with running_core(tmp_path, teams_config(tmp_path)) as dispatcher:
        yield dispatcher


async def told(core: Dispatcher, index: int, total: float) -> TellReply:
    """A tell answered by the index-th child, whose result says the session's ``total``."""
    async with trio.open_nursery() as nursery:
        replies: list[TellReply] = []

        async def tell() -> None:
            replies.append(await core.tells.tell(Tell(to_team="alpha", message=f"tell {index}"), no_events))

        nursery.start_soon(tell)
        await wait_until(lambda: len(FakeChild.instances) > index and FakeChild.instances[index].sent, every=0.001)
        await FakeChild.instances[index].emit({"type": "result", "subtype": "success", "result": "ok",
                                               "total_cost_usd": total})
    return replies[0]


async def put_to_sleep(core: Dispatcher, tmp_path: Path, session_id: str, cost_state: str) -> None:
    """The pair's claude exits; claude leaves its session's transcript (with ``cost_state``)."""
    await core.dispatch(Sleep(to_team="alpha"), Caller(), no_events)
    transcript = session_file(tmp_path / "claude", str(tmp_path / "alpha"), session_id)
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text('{"type":"user"}\n' + cost_state)


@pytest.mark.parametrize(("cost_state", "resumed_total"), [
    (json.dumps({"type": "cost-state", "totalCostUSD": 0.5}) + "\n", 0.7),  # claude's exit wrote it: 0.5 + 0.2
    ("", 0.2),  # none (a claude killed with SIGKILL writes none): claude starts from zero
])
async def test_a_resumed_claudes_first_tell_costs_what_it_added(
    core: Dispatcher, tmp_path: Path, autojump_clock: trio.testing.MockClock, cost_state: str, resumed_total: float
) -> None:
    first = await told(core, 0, 0.5)
    assert first.tell.cost_usd == 0.5
    await put_to_sleep(core, tmp_path, first.tell.session_id, cost_state)
    resumed = await told(core, 1, resumed_total)  # the session's running total, as claude restored it
    assert resumed.tell.session_id == first.tell.session_id
    assert resumed.tell.cost_usd == pytest.approx(0.2)
    await past_the_hold()  # the answer leaves first; the pair then books the end (held for a next tell)
    assert await core.store.call(ledger.spent_since, 0.0) == pytest.approx(0.7)
