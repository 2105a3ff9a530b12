"""irisd's core in process, on a temporary folder, with fake claude children: the one way
subsystem tests start it (each test adds only what it is about)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import apsw
import trio

from fakes.child import FakeChild
from iris_common.config import IrisConfig, parse_config
from iris_common.paths import IrisPaths
from irisd.core import Services, run_core
from irisd.dispatch import Dispatcher
from irisd.pool.pair import ChildFactory
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.messages import Event


def teams_config(tmp_path: Path, settings: str = "", *, teams: str = "alpha beta", alpha: str = "") -> IrisConfig:
    """``teams``, all in tmp_path/alpha; ``settings`` and ``alpha`` are YAML lines (indented)
    under ``settings:`` and under the team alpha."""
    (tmp_path / "alpha").mkdir(exist_ok=True)
    entries = "".join(
        f"  {name}:\n    path: {tmp_path / 'alpha'}\n{alpha if name == 'alpha' else ''}" for name in teams.split()
    )
    settings = settings or "  {}\n"
    return parse_config(f"settings:\n{settings}teams:\n{entries}".encode(), source="test")


@asynccontextmanager
async def running_core(
    tmp_path: Path,
    config: IrisConfig,
    *,
    connection: apsw.Connection | None = None,
    child_factory: ChildFactory = FakeChild,
) -> AsyncIterator[Dispatcher]:
    """The core's dispatcher, running until the block ends, with fake children; its store
    in tmp_path (or on ``connection``)."""
    FakeChild.instances.clear()
    paths = IrisPaths(home=tmp_path, socket=tmp_path / "s", claude_config_dir=tmp_path / "claude")
    store = Store(connection or open_database(tmp_path / "iris.db"), inline=True)
    async with trio.open_nursery() as nursery:
        services: Services = await nursery.start(
            lambda task_status: run_core(config, paths, store, child_factory=child_factory, task_status=task_status)
        )
        yield services.dispatcher
        nursery.cancel_scope.cancel()
    store.close()


async def no_events(event: Event) -> None:
    """A caller that does not stream."""


async def past_the_hold() -> None:
    """On the autojump clock: past the time a tell's end is held for the start of a tell
    sent right after its answer (``HOLD_END_S``); none came, so it is written alone."""
    import trio.testing

    from irisd.pool.pair_tells import HOLD_END_S

    await trio.sleep(HOLD_END_S)
    await trio.testing.wait_all_tasks_blocked()


def note_commits(core: Dispatcher, happened: list[str]) -> None:
    """From now on, each commit of ``core``'s database appends "commit" to ``happened``."""

    def committing() -> bool:
        happened.append("commit")
        return False  # and it goes ahead

    core.store._connection.set_commit_hook(committing)


class NoTellEnds:
    """A mesh's ``TellEnds`` where no tell may run to its end (a test of the records alone)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def end_awaited(self, tell_id: str) -> None:
        raise AssertionError(f"{self.why}: {tell_id}")

    async def end_written(self, tell_id: str) -> None:
        raise AssertionError(f"{self.why}: {tell_id}")
