"""The archive sweep on irisd's own schedule (trio's autojump clock, exact virtual times),
against a real store: what it archives and when, the event it sends, the files it deletes
only when told to, and the restore."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from fakes.core import teams_config
from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths, transcript_path
from irisd.events import EventHub
from irisd.pool.archive import DAY_S, SWEEP_EVERY_S
from irisd.pool.archiver import Archiver
from irisd.store import sessions
from irisd.store.db import open_database
from irisd.store.facade import Store
from protocol.errors import NotFoundError
from protocol.messages import SessionEvent

BASE = 1_800_000_000.0  # the wall clock when the test's virtual time is 0


def setup(tmp_path: Path, settings: str = "") -> tuple[Archiver, Store, EventHub, IrisConfig, IrisPaths]:
    config = teams_config(tmp_path, settings)
    paths = IrisPaths(home=tmp_path, socket=tmp_path / "s", claude_config_dir=tmp_path / "claude")
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    hub = EventHub()
    archiver = Archiver(config=lambda: config, paths=paths, store=store, pairs=lambda key: None, hub=hub,
                        clock=lambda: BASE + trio.current_time())
    return archiver, store, hub, config, paths


async def used(store: Store, team: str, at: float) -> sessions.SessionRow:
    return await store.call(sessions.get_or_create, None, team, at)


async def test_the_sweep_archives_a_pair_at_the_first_sweep_after_it_is_due(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    archiver, store, hub, _, _ = setup(tmp_path)
    await used(store, "alpha", BASE - 90 * DAY_S + 600)  # due 10 minutes from now
    await used(store, "beta", BASE - DAY_S)
    events = hub.subscribe()
    with trio.fail_after(3 * SWEEP_EVERY_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(archiver.run)  # the first sweep: at start-up
            assert (await store.call(sessions.get, None, "alpha")).status == "active"  # type: ignore[union-attr]
            (event,) = await events.wait_batch()  # the next sweep, an hour later
            assert trio.current_time() == SWEEP_EVERY_S
            nursery.cancel_scope.cancel()
    assert isinstance(event, SessionEvent) and event.change == "archived"
    assert (event.session.to_team, event.session.status, event.session.archived_at) == (
        "alpha", "archived", BASE + SWEEP_EVERY_S)
    assert "unused for 90 days" in event.detail
    alpha, beta = [await store.call(sessions.get, None, team) for team in ("alpha", "beta")]
    assert alpha is not None and (alpha.status, alpha.archived_at) == ("archived", BASE + SWEEP_EVERY_S)
    assert beta is not None and beta.status == "active"


async def test_a_restart_sweeps_at_once_what_fell_due_while_irisd_was_down(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    archiver, store, _, _, _ = setup(tmp_path, "  sessions:\n    archiveAfterDays: 30\n")
    await used(store, "alpha", BASE - 31 * DAY_S)
    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            await nursery.start(archiver.run)  # started once the start-up sweep is done
            nursery.cancel_scope.cancel()
    row = await store.call(sessions.get, None, "alpha")
    assert row is not None and (row.status, row.archived_at) == ("archived", BASE)


async def test_files_are_deleted_only_with_delete_archived_after_days(tmp_path: Path) -> None:
    for settings, deleted in (("", False), ("  sessions:\n    deleteArchivedAfterDays: 7\n", True)):
        folder = tmp_path / str(deleted)
        folder.mkdir()
        archiver, store, _, config, paths = setup(folder, settings)
        row = await used(store, "alpha", BASE - 100 * DAY_S)
        transcript = transcript_path(paths, config.teams, "alpha", row.session_id)
        assert transcript is not None
        transcript.parent.mkdir(parents=True)
        transcript.write_text("{}\n")
        first = await archiver.sweep(BASE)
        assert first.archive == ((None, "alpha", ""),) and first.delete_files == ()
        assert transcript.exists()
        later = await archiver.sweep(BASE + 7 * DAY_S)
        assert later.delete_files == (((None, "alpha", ""),) if deleted else ())
        assert transcript.exists() is not deleted
        stored = await store.call(sessions.get, None, "alpha")
        assert stored is not None and (stored.files_deleted_at is not None) is deleted
        assert stored.status == "archived" and stored.message_count == row.message_count  # its history stays


async def test_restore_resumes_the_same_conversation_or_a_fresh_one(tmp_path: Path) -> None:
    archiver, store, _, _, _ = setup(tmp_path)
    row = await used(store, "alpha", BASE)
    await used(store, "beta", BASE)
    assert await archiver.restore((None, "alpha", ""), BASE, fresh=False, why="test") is None  # not archived
    for team in ("alpha", "beta"):
        await archiver.archive((None, team, ""), BASE + 1, why="by hand")
    same = await archiver.restore((None, "alpha", ""), BASE + 2, fresh=False, why="test")
    assert same is not None and (same.status, same.session_id, same.archived_at) == ("active", row.session_id, None)
    fresh = await archiver.restore((None, "beta", ""), BASE + 2, fresh=True, why="test")
    assert fresh is not None and fresh.status == "active" and fresh.session_id != row.session_id
    with pytest.raises(NotFoundError, match="has no conversation yet"):
        await archiver.archive(("alpha", "beta", ""), BASE, why="by hand")
