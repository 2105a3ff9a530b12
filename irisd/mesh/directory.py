"""One team, one home: the directory of the mesh in two JetStream key-value buckets.

* ``iris-teams``: team -> its home irisd (and its description). A name is claimed with
  an atomic create; a second home claiming it is refused, loudly, and keeps it off the
  mesh (never silently shadowed); the first home frees it by no longer offering it.
* ``iris-homes``: irisd -> its heartbeat (the teams it offers, up, last seen). A home is
  reachable while it is up and its heartbeat is fresh; a clean stop says down at once,
  a killed one goes stale after ``STALE_S``.

``Directory`` keeps the whole of both buckets in memory (a watch), so every question
(``iris teams``, a tell's phase) is answered without a round trip.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable

import msgspec
import nats.errors
import nats.js.errors
import trio
from nats.js.kv import KeyValue

from iris_common.config import Team
from iris_common.mesh import HomeEntry, TeamEntry, reachable, unreachable_words
from irisd.mesh.bridge import Bridge
from irisd.mesh.engine import Link

log = logging.getLogger("irisd.mesh")

HEARTBEAT_S = 2.0


class Directory:
    """This irisd's view of the directory, and its own claims in it."""

    def __init__(self, link: Link, *, version: str, on_change: Callable[[], None]) -> None:
        self.link = link
        self.name = link.mesh.name
        self.version = version
        self.on_change = on_change
        self.teams: dict[str, TeamEntry] = {}
        self.homes: dict[str, HomeEntry] = {}
        self.refused: dict[str, str] = {}  # team -> why this irisd may not offer it
        self.offered: list[str] = []
        self.started_at = time.time()
        self.loaded = trio.Event()  # both buckets read once

    # --- this irisd's claims --------------------------------------------------------------

    async def announce(self, teams: list[Team]) -> None:
        """Claim the offered teams (refusing names another home holds) and release the
        ones this irisd no longer offers."""
        bridge, kv = self.link.bridge, self.link.teams
        refused: dict[str, str] = {}
        offered: list[str] = []
        for team in teams:
            entry = TeamEntry(name=team.name, home=self.name, description=team.description, color=team.color)
            value = msgspec.json.encode(entry)
            try:
                await bridge.call(kv.create, team.name, value)
                offered.append(team.name)
                continue
            except nats.js.errors.KeyWrongLastSequenceError:
                pass
            current = await _get(bridge, kv, team.name)
            if current is None or current.home == self.name:
                await bridge.call(kv.put, team.name, value)
                offered.append(team.name)
                continue
            refused[team.name] = (
                f"team {team.name!r} is already homed on irisd `{current.home}`; this irisd "
                f"(`{self.name}`) does not offer it: rename one of them, or take it out of "
                f"settings.mesh.offer on `{current.home}` first"
            )
            log.error(refused[team.name], extra={"team": team.name, "home": current.home})
        for name in self.offered:
            if name not in offered and name not in refused:
                current = await _get(bridge, kv, name)
                if current is not None and current.home == self.name:
                    await bridge.call(kv.delete, name)
        self.offered, self.refused = offered, refused
        await self.heartbeat()

    async def name_taken(self) -> str:
        """Why this irisd may not join as its name ("" when it may): another irisd holds it."""
        bridge, kv = self.link.bridge, self.link.homes
        try:
            entry = await bridge.call(kv.get, self.name)
        except nats.js.errors.KeyNotFoundError:
            return ""
        try:
            current = msgspec.json.decode(entry.value or b"", type=HomeEntry)
        except msgspec.ValidationError:
            return ""
        return name_taken(current, here=_here(), now=time.time(), alive=_alive)

    async def heartbeat(self, *, up: bool = True) -> None:
        entry = HomeEntry(
            name=self.name, teams=self.offered, up=up, seen_at=time.time(), started_at=self.started_at,
            version=self.version, **msgspec.structs.asdict(_here()),
        )
        await self.link.bridge.call(self.link.homes.put, self.name, msgspec.json.encode(entry))

    async def serve_heartbeat(self) -> None:
        while True:
            await trio.sleep(HEARTBEAT_S)
            try:
                await self.heartbeat()
            except (nats.errors.Error, TimeoutError) as exc:  # the server is away: next beat
                log.warning("mesh heartbeat not stored", extra={"error": str(exc) or type(exc).__name__})

    # --- the others ---------------------------------------------------------------------

    async def serve_watch(self) -> None:
        """Keep ``teams`` and ``homes`` current until cancelled."""
        teams_read, homes_read = trio.Event(), trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch, self.link.teams, self._on_team, teams_read)
            nursery.start_soon(self._watch, self.link.homes, self._on_home, homes_read)
            await teams_read.wait()
            await homes_read.wait()
            self.loaded.set()
            self.on_change()

    async def _watch(
        self, kv: KeyValue, apply: Callable[[str, bytes | None, float], None], read: trio.Event
    ) -> None:
        bridge = self.link.bridge
        watcher = await bridge.call(kv.watchall)
        while True:
            try:
                entry = await bridge.call(watcher.updates, 30)
            except nats.errors.TimeoutError:
                continue
            if entry is None:  # the initial values are all in
                read.set()
                continue
            deleted = entry.operation in ("DEL", "PURGE")
            created = entry.created
            server_at = created.timestamp() if hasattr(created, "timestamp") else 0.0
            apply(entry.key, None if deleted else entry.value, server_at)
            self.on_change()

    def _on_team(self, key: str, value: bytes | None, server_at: float) -> None:
        if value is None:
            self.teams.pop(key, None)
            return
        try:
            self.teams[key] = msgspec.json.decode(value, type=TeamEntry)
        except msgspec.ValidationError:
            log.warning("mesh: a directory entry that is not Iris's", extra={"key": key})

    def _on_home(self, key: str, value: bytes | None, server_at: float) -> None:
        if value is None:
            self.homes.pop(key, None)
            return
        try:
            entry = msgspec.json.decode(value, type=HomeEntry)
        except msgspec.ValidationError:
            log.warning("mesh: a heartbeat that is not Iris's", extra={"key": key})
            return
        entry.server_at = server_at
        self.homes[key] = entry

    def reachable(self, home: str) -> bool:
        return reachable(self.homes.get(home), time.time())

    def unreachable_words(self, home: str) -> str:
        return unreachable_words(home, self.homes.get(home), time.time())


class Process(msgspec.Struct, frozen=True, kw_only=True):
    """Where an irisd runs, as far as its pid means anything."""

    host: str
    pid: int
    pid_namespace: str = ""


def _here() -> Process:
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:  # not Linux: one PID space per host
        namespace = ""
    return Process(host=socket.gethostname(), pid=os.getpid(), pid_namespace=namespace)


def name_taken(current: HomeEntry, *, here: Process, now: float, alive: Callable[[int], bool]) -> str:
    """Why an irisd (the process ``here``) may not join under ``current``'s name ("" when
    it may).

    Two irisds of one name would share its tells' consumer, each taking tells for the
    other's teams: a name held by an irisd that is up refuses the second. A clean stop
    frees it at once, a killed irisd after ``STALE_S`` (or at once where its pid can be
    checked: the same host and PID namespace; containers of one hostname each have their
    own)."""
    if not reachable(current, now):
        return ""
    if (current.host, current.pid_namespace) == (here.host, here.pid_namespace) and (
        current.pid == here.pid or not alive(current.pid)
    ):
        return ""  # this irisd again, or one beside it that died without saying so
    return (
        f"irisd name `{current.name}` is taken by another irisd (host {current.host}, pid {current.pid}, "
        f"last seen {max(0.0, now - current.seen_at):.0f} s ago); this irisd stays off the mesh: give it "
        f"its own settings.mesh.name in config.yaml (the default is the host name), then 'iris reload'"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


async def _get(bridge: Bridge, kv: KeyValue, key: str) -> TeamEntry | None:
    try:
        entry = await bridge.call(kv.get, key)
    except nats.js.errors.KeyNotFoundError:
        return None
    if entry.value is None:
        return None
    try:
        return msgspec.json.decode(entry.value, type=TeamEntry)
    except msgspec.ValidationError:
        return None
