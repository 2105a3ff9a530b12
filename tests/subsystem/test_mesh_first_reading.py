"""A bucket's first reading ends with its last value, not with nats-py's marker: the
marker can come first (the server gave the watch's pending count as 0 while the values
were still on their way), and then `iris mesh status` listed no team (seen in CI under
load), and irisd would have claimed its teams before reading the others' claims."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import msgspec
import nats.errors
import trio
import trio.testing

from iris_common.mesh import FirstReading, HomeEntry, Mesh, TeamEntry, claim_key
from iris_common.mesh_probe import first_values
from irisd.mesh.directory import STATUS_RETRY_S, Directory
from irisd.mesh.engine import Link, LinkState


class Entry(msgspec.Struct):
    key: str
    value: bytes | None
    revision: int
    delta: int
    operation: str | None = None
    created: None = None


class Status(msgspec.Struct):
    values: int


class Bucket:
    """A key-value bucket whose watch sends nats-py's marker before its values."""

    def __init__(self, entries: list[Entry], *, marker_first: bool = True, status_fails: int = 0) -> None:
        self.updates_sent: list[Entry | None] = [None, *entries] if marker_first else [*entries, None]
        self.held = len(entries)
        self.status_fails = status_fails  # times its size is not given (the server away)

    async def watchall(self) -> Bucket:
        return self

    async def updates(self, timeout: float) -> Entry | None:  # noqa: ASYNC109 (nats-py's signature)
        if not self.updates_sent:  # nothing more: like a quiet bucket, until the caller gives up
            await trio.sleep_forever() if trio_running() else await asyncio.Event().wait()
        return self.updates_sent.pop(0)

    async def status(self) -> Status:
        if self.status_fails:
            self.status_fails -= 1
            raise nats.errors.TimeoutError
        return Status(values=self.held)

    async def stop(self) -> None:
        pass


def trio_running() -> bool:
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


class Bridge:
    """Runs the bucket's calls in trio, each a trip through the loop (as across irisd's bridge)."""

    async def call(self, function: Any, *args: Any) -> Any:
        await trio.lowlevel.checkpoint()
        return await function(*args)


def claims(home: str, *teams: str) -> list[Entry]:
    return [Entry(key=claim_key(home, team), value=msgspec.json.encode(TeamEntry(name=team, home=home)),
                  revision=n + 1, delta=len(teams) - n - 1) for n, team in enumerate(teams)]


def test_the_marker_ends_the_first_reading_only_of_an_empty_bucket() -> None:
    reading = FirstReading()
    assert not reading.marker(held=2) and not reading.done  # values on their way
    assert not reading.entry(1)
    assert reading.entry(0) and reading.done
    assert not reading.entry(0) and not reading.marker(0)  # once
    empty = FirstReading()
    assert empty.marker(held=0) and empty.done


def test_the_probe_reads_the_values_that_come_after_an_early_marker() -> None:
    bucket = Bucket(claims("ws5", "books", "ops"))
    entries = asyncio.run(first_values(cast(Any, bucket)))
    assert [entry.key for entry in entries] == ["ws5.books", "ws5.ops"]
    empty = Bucket([])
    assert asyncio.run(first_values(cast(Any, empty))) == []


def link_of(teams: Bucket, homes: Bucket) -> Link:
    return Link(mesh=Mesh(servers=("nats://127.0.0.1:4222",), name="ws4"), bridge=cast(Any, Bridge()),
                client=cast(Any, None), js=cast(Any, None), teams=cast(Any, teams), homes=cast(Any, homes),
                replicas=1, state=LinkState())


async def test_irisd_has_read_every_claim_when_its_directory_says_it_is_loaded() -> None:
    beat = Entry(key="ws5", value=msgspec.json.encode(HomeEntry(name="ws5", teams=["books", "ops"])),
                 revision=1, delta=0)
    link = link_of(Bucket(claims("ws5", "books", "ops")), Bucket([beat], marker_first=False))
    changes: list[set[str]] = []
    directory = Directory(link, version="test", on_change=lambda: changes.append(set(directory.teams)))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(directory.serve_watch)
            await directory.loaded.wait()
            assert set(directory.teams) == {"books", "ops"}
            assert changes == [{"books", "ops"}]
            assert directory.homes["ws5"].teams == ["books", "ops"]
            nursery.cancel_scope.cancel()


async def test_a_bucket_size_not_given_at_once_is_asked_again_not_a_failure_of_the_mesh(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The size that decides whether nats-py's marker is true (an empty bucket) is asked
    again while the server does not give it; the directory loads then (it failed the
    mesh's tasks, which started over, logged with a traceback)."""
    link = link_of(Bucket([], status_fails=2), Bucket([], status_fails=1))
    directory = Directory(link, version="test", on_change=lambda: None)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(directory.serve_watch)
            began = trio.current_time()
            await directory.loaded.wait()
            assert trio.current_time() - began == 2 * STATUS_RETRY_S
            assert directory.teams == {} and directory.homes == {}
            nursery.cancel_scope.cancel()
