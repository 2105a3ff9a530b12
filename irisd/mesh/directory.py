"""One team, one home: the directory of the mesh in two JetStream key-value buckets.

* ``iris-teams``: each home's claims, under keys of its own name (``<home>.<team>``,
  ``claim_key``): the NATS permissions let an irisd write only those, so no irisd can
  overwrite or delete another's claim. Of several homes claiming a name, the earliest
  claim holds it (``team_homes``); a later one is refused, loudly, and keeps the team off
  the mesh (never silently shadowed); the first home frees it by no longer offering it.
* ``iris-homes``: irisd -> its heartbeat (the teams it offers, up, last seen). A home is
  reachable while it is up and its heartbeat is fresh; a clean stop says down at once,
  a killed one goes stale after ``STALE_S``.

``Directory`` keeps the whole of both buckets in memory (a watch), so every question
(``iris teams``, a tell's phase) is answered without a round trip. Only a change of the
claims is a change of the directory (``on_change``: the caller's side registers the
remote teams anew); a heartbeat is not (reachability is read when asked), the buckets'
first reading is one change at its end, and the claims that come within ``SETTLE_S``
(an irisd's teams as it joins) are one change. Each heartbeat of every irisd used to be
one (every irisd redid its whole team list N/2 times a second on a mesh of N), and so was
every claim read at the start (quadratic in the mesh's teams): bench/bench_scale.py.
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
from iris_common.mesh import (
    HEARTBEAT_S,
    FirstReading,
    HomeEntry,
    TeamEntry,
    claim_key,
    reachable,
    read_claim,
    team_homes,
    unreachable_words,
)
from irisd.mesh.engine import Link

log = logging.getLogger("irisd.mesh")

SETTLE_S = 0.05  # claims that come this close together are one change of the directory
STATUS_RETRY_S = 1.0  # a bucket's size not given (the server away for a moment): asked again after this


class Directory:
    """This irisd's view of the directory, and its own claims in it."""

    def __init__(self, link: Link, *, version: str, on_change: Callable[[], None]) -> None:
        self.link = link
        self.name = link.mesh.name
        self.version = version
        self.on_change = on_change
        self.claims: dict[str, tuple[int, TeamEntry]] = {}  # key -> (revision, claim)
        self.teams: dict[str, TeamEntry] = {}  # team -> its home's claim (``team_homes``)
        self.homes: dict[str, HomeEntry] = {}
        self.refused: dict[str, str] = {}  # team -> why this irisd may not offer it
        self.offered: list[str] = []
        self.started_at = time.time()
        self.loaded = trio.Event()  # both buckets read once
        self._claims_read = False
        self._changed = trio.Event()  # claims changed since ``on_change`` was last called

    # --- this irisd's claims --------------------------------------------------------------

    async def announce(self, teams: list[Team]) -> None:
        """Claim the offered teams under this irisd's own keys (refusing names another home
        claimed first) and release the claims of teams it no longer offers. Reads the
        others' claims from the watch, so only once it has read the bucket."""
        await self.loaded.wait()
        bridge, kv = self.link.bridge, self.link.teams
        refused: dict[str, str] = {}
        offered: list[str] = []
        for team in teams:
            key = claim_key(self.name, team.name)
            entry = TeamEntry(name=team.name, home=self.name, description=team.description, color=team.color)
            mine = self.claims.get(key)
            rival = self._rival(team.name)
            if rival is not None and (mine is None or rival[0] < mine[0]):
                if mine is not None:  # claimed at the same moment as the other, which came first
                    await bridge.call(kv.delete, key)
                home = rival[1].home
                refused[team.name] = (
                    f"team {team.name!r} is already homed on irisd `{home}`; this irisd (`{self.name}`) does not "
                    f"offer it: rename one of them, or take it out of settings.mesh.offer on `{home}` first"
                )
                if self.refused.get(team.name) != refused[team.name]:
                    log.error(refused[team.name], extra={"team": team.name, "home": home})
                continue
            offered.append(team.name)
            if mine is None:
                try:
                    await bridge.call(kv.create, key, msgspec.json.encode(entry))
                except nats.js.errors.KeyWrongLastSequenceError:  # this irisd's, not in the watch yet
                    await bridge.call(kv.put, key, msgspec.json.encode(entry))
            elif mine[1] != entry and rival is None:
                # A rewrite is a later revision: never while another home contests the name.
                await bridge.call(kv.put, key, msgspec.json.encode(entry))
        for key, (_, claim) in list(self.claims.items()):
            if claim.home == self.name and claim.name not in offered:
                await bridge.call(kv.delete, key)
        self.offered, self.refused = offered, refused
        await self.heartbeat()

    def _rival(self, team: str) -> tuple[int, TeamEntry] | None:
        """The earliest claim of ``team`` by another home."""
        rivals = [claim for claim in self.claims.values() if claim[1].name == team and claim[1].home != self.name]
        return min(rivals, key=lambda claim: claim[0]) if rivals else None

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
            self._claims_read = True
            self.teams = team_homes(self.claims)
            self.loaded.set()
            self.on_change()
            while True:
                await self._changed.wait()
                await trio.sleep(SETTLE_S)
                self._changed = trio.Event()
                self.on_change()

    async def _watch(
        self, kv: KeyValue, apply: Callable[[str, bytes | None, float, int], bool], read: trio.Event
    ) -> None:
        bridge = self.link.bridge
        watcher = await bridge.call(kv.watchall)
        reading = FirstReading()
        while True:
            try:
                entry = await bridge.call(watcher.updates, 30)
            except nats.errors.TimeoutError:
                continue
            if entry is None:  # nats-py's word that the first values are in: not always true
                if not reading.done and reading.marker(await self._held(kv)):
                    read.set()
                continue
            last = reading.entry(entry.delta)
            deleted = entry.operation in ("DEL", "PURGE")
            created = entry.created
            server_at = created.timestamp() if hasattr(created, "timestamp") else 0.0
            changed = apply(entry.key, None if deleted else entry.value, server_at, entry.revision or 0)
            if changed and self.loaded.is_set():
                self._changed.set()
            if last:
                read.set()

    async def _held(self, kv: KeyValue) -> int:
        """How many values ``kv`` holds, asked until the server answers (the watch goes on
        where it was: a moment without the server is not a failure of the mesh)."""
        while True:
            try:
                return int((await self.link.bridge.call(kv.status)).values)
            except (nats.errors.Error, TimeoutError) as exc:
                log.info("mesh: a directory bucket's size not given yet; asking again",
                         extra={"error": str(exc) or type(exc).__name__})
                await trio.sleep(STATUS_RETRY_S)

    def _on_team(self, key: str, value: bytes | None, server_at: float, revision: int) -> bool:
        claim = read_claim(key, value) if value is not None else None
        if claim is not None:
            self.claims[key] = (revision, claim)
        else:
            if value is not None:
                log.warning("mesh: a directory entry that is not a home's own claim", extra={"key": key})
            self.claims.pop(key, None)
        if self._claims_read:  # while the bucket is first read: once, at its end
            self.teams = team_homes(self.claims)
        return True

    def _on_home(self, key: str, value: bytes | None, server_at: float, revision: int) -> bool:
        """A heartbeat: no team changes its home (the claims say where a team lives)."""
        if value is None:
            self.homes.pop(key, None)
            return False
        try:
            entry = msgspec.json.decode(value, type=HomeEntry)
        except msgspec.ValidationError:
            log.warning("mesh: a heartbeat that is not Iris's", extra={"key": key})
            return False
        entry.server_at = server_at
        self.homes[key] = entry
        return False

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
    if not 0 < pid < 2**31:  # no process (0 and -1 would mean process groups; past 2**31 os.kill overflows)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
