"""Setting up the mesh's streams and buckets (irisd/mesh/engine.py) where a cluster has
just formed: a creation refused, then still not found, is tried again, on trio's
autojump clock."""

from __future__ import annotations

import nats.js.errors
import pytest
import trio
import trio.testing

from irisd.mesh.engine import SETUP_ATTEMPTS, SETUP_RETRY_S, _found_or_made


class Cluster:
    """A stream that the cluster refuses to make ``refusals`` times, then makes."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.made = False
        self.asked: list[tuple[str, float]] = []

    async def find(self) -> str:
        self.asked.append(("find", trio.current_time()))
        if not self.made:
            raise nats.js.errors.NotFoundError(code=404, err_code=10059, description="stream not found")
        return "found"

    async def make(self) -> str:
        self.asked.append(("make", trio.current_time()))
        if self.refusals:
            self.refusals -= 1
            raise nats.js.errors.BadRequestError(code=400, description="cluster not ready")
        self.made = True
        return "made"


async def test_a_refused_stream_is_read_again_then_made_once_the_cluster_takes_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = Cluster(refusals=2)
    start = trio.current_time()
    assert await _found_or_made(cluster.find, cluster.make) == "made"
    assert [what for what, _ in cluster.asked] == ["find", "make", "find", "make", "find", "make"]
    # the first refusal is read again at once (another irisd may have made it), later ones after a pause
    assert [round(t - start, 3) for _, t in cluster.asked] == [0, 0, 0, SETUP_RETRY_S, SETUP_RETRY_S,
                                                               2 * SETUP_RETRY_S]


async def test_one_made_meanwhile_by_another_irisd_is_found(autojump_clock: trio.testing.MockClock) -> None:
    cluster = Cluster(refusals=0)
    calls: list[str] = []

    async def make() -> str:
        calls.append("make")
        cluster.made = True
        raise nats.js.errors.BadRequestError(code=400, description="stream name already in use")

    assert await _found_or_made(cluster.find, make) == "found"
    assert calls == ["make"]


async def test_a_cluster_that_keeps_refusing_is_named_with_its_refusal(autojump_clock: trio.testing.MockClock) -> None:
    cluster = Cluster(refusals=SETUP_ATTEMPTS)
    with pytest.raises(nats.js.errors.BadRequestError, match="cluster not ready"):
        await _found_or_made(cluster.find, cluster.make)
    assert [what for what, _ in cluster.asked].count("make") == SETUP_ATTEMPTS
