"""A bucket's first reading ends with its last value, not with nats-py's marker: the
marker can come first (the server gave the watch's pending count as 0 while the values
were still on their way), and then `iris mesh status` listed no team (seen in CI under
load), and irisd would have claimed its teams before reading the others' claims."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import msgspec
import trio

from iris_common.mesh import FirstReading, HomeEntry, Mesh, TeamEntry, claim_key
from iris_common.mesh_probe import first_values
from irisd.mesh.directory import Directory
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

    def __init__(self, entries: list[Entry], *, marker_first: bool = True) -> None:
        self.updates_sent: list[Entry | None] = [None, *entries] if marker_first else [*entries, None]
        self.held = len(entries)

    async def watchall(self) -> Bucket:
        return self

    async def updates(self, timeout: float) -> Entry | None:  # noqa: ASYNC109 (nats-py's signature)
        if not self.updates_sent:  # nothing more: like a quiet bucket, until the caller gives up
            await trio.sleep_forever() if trio_running() else await asyncio.Event().wait()
        return self.updates_sent.pop(0)

    async def status(self) -> Status:
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


async def test_irisd_has_read_every_claim_when_its_directory_says_it_is_loaded() -> None:
    beat = Entry(key="ws5", value=msgspec.json.encode(HomeEntry(name="ws5", teams=["books", "ops"])),
                 revision=1, delta=0)
    link = Link(mesh=Mesh(servers=("nats://127.0.0.1:4222",), name="ws4"), bridge=cast(Any, Bridge()),
                client=cast(Any, None), js=cast(Any, None), teams=cast(Any, Bucket(claims("ws5", "books", "ops"))),
                homes=cast(Any, Bucket([beat], marker_first=False)), replicas=1, state=LinkState())
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
